// matchmesh-gateway: the WebSocket entrance to the nodes' client ports, and the playground's
// web server.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>

#include "mesh/asio/listener.hpp"
#include "node/gateway/websocket_gateway.hpp"

namespace {

using matchmesh::gateway::Address;

std::expected<std::vector<Address>, std::string> addresses_of(const std::vector<std::string>& list) {
    std::vector<Address> out;
    for (const std::string& text : list) {
        auto parts = matchmesh::mesh::split_host_port(text);
        if (!parts) {
            return std::unexpected(parts.error());
        }
        out.push_back(*parts);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "matchmesh gateway: browsers and engines reach the nodes' client ports over WebSocket "
        "(one binary message per client-protocol message), and the playground is served"};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-gateway"));
    std::string listen = "127.0.0.1:7300";
    std::vector<std::string> nodes;
    std::vector<std::string> admins;
    matchmesh::gateway::GatewayOptions options;
    std::string log_level = "info";
    std::size_t write_timeout_ms = 10000;
    app.add_option("--listen", listen, "host:port of the WebSocket and HTTP port")
        ->capture_default_str();
    app.add_option("--nodes", nodes,
                   "the nodes' client ports, host:port; each connection goes to the next one "
                   "that answers")
        ->delimiter(',')
        ->required();
    app.add_option("--admin", admins,
                   "the nodes' admin ports, host:port, whose metrics /cluster shows")
        ->delimiter(',');
    app.add_option("--web-root", options.web_root,
                   "folder whose files are served over HTTP (the playground)")
        ->check(CLI::ExistingDirectory);
    app.add_option("--allow-origin", options.allowed_origins,
                   "an origin (scheme://host:port) whose pages may open a WebSocket here, or * "
                   "for any; pages served by the gateway itself always may")
        ->delimiter(',');
    app.add_option("--max-connections", options.connections_max,
                   "open connections at most (WebSocket and HTTP together)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--max-message-bytes", options.message_bytes_max,
                   "largest message a client may send: keep it at the nodes' "
                   "limits.maxClientFrameBytes")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{8}, std::size_t{16} * 1024 * 1024));
    app.add_option("--write-timeout-ms", write_timeout_ms,
                   "a client that takes no message within this long is dropped")
        ->capture_default_str()
        ->check(CLI::Range(100, 600000));
    app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
    CLI11_PARSE(app, argc, argv);

    auto listen_at = addresses_of({listen});
    auto node_addresses = addresses_of(nodes);
    auto admin_addresses = addresses_of(admins);
    for (const auto* parsed : {&listen_at, &node_addresses, &admin_addresses}) {
        if (!*parsed) {
            std::fprintf(stderr, "matchmesh-gateway: %s\n", parsed->error().c_str());
            return 2;
        }
    }
    options.listen = listen_at->front();
    options.nodes = std::move(*node_addresses);
    options.admins = std::move(*admin_addresses);
    options.write_timeout = std::chrono::milliseconds(write_timeout_ms);

    auto log = std::make_shared<spdlog::logger>("gateway",
                                                std::make_shared<spdlog::sinks::stderr_sink_mt>());
    log->set_level(spdlog::level::from_str(log_level));
    matchmesh::gateway::WebSocketGateway gateway(options, log);
    std::string error;
    const std::string bound = gateway.listen(error);
    if (bound.empty()) {
        log->critical("matchmesh-gateway: {}", error);
        return 1;
    }

    // SIGINT and SIGTERM stop it; a thread waits for them, so that the loop needs no handler.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::thread waiter([&gateway, &signals, log] {
        int received = 0;
        sigwait(&signals, &received);
        log->info("gateway: stopping on signal {}", received);
        gateway.stop();
    });
    waiter.detach();

    std::printf("matchmesh-gateway ready: websocket ws://%s/ws http http://%s/\n", bound.c_str(),
                bound.c_str());
    std::fflush(stdout);
    gateway.run();
    const auto counters = gateway.counters();
    log->info("gateway: stopped; {} WebSocket connections ({} messages in, {} out), {} HTTP "
              "requests; refused {} for their origin, {} at the connection limit, {} with no "
              "node; closed {} for a bad message, {} slow readers",
              counters.websockets, counters.messages_in, counters.messages_out,
              counters.http_requests, counters.refused_origin, counters.refused_limit,
              counters.node_unreachable, counters.bad_messages, counters.slow_readers);
    return 0;
}
