#include "node/admin_server.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <functional>
#include <string_view>

#include <CivetServer.h>
#include <fmt/format.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "mesh/asio/asio_scheduler.hpp"
#include "mesh/asio/listener.hpp"
#include "mesh/base/assert.hpp"
#include "node/health.hpp"

namespace matchmesh::node {
namespace {

struct Response {
    int status = 200;
    std::string_view content_type;
    std::string body;
};

constexpr std::string_view text_type = "text/plain; charset=utf-8";
constexpr std::string_view metrics_type = "text/plain; version=0.0.4; charset=utf-8";
// Threads serving the port: two, so that a probe never queues behind a scrape.
constexpr const char* server_threads = "2";
// What http_get reads at most: a node's metrics are a few tens of KiB.
constexpr std::size_t reply_bytes_max = 4 * 1024 * 1024;

Response probe_response(const HealthVerdict& verdict) {
    return {verdict.ok ? 200 : 503, text_type, verdict.text + "\n"};
}

}  // namespace

// One path's answer to GET, on civetweb's threads.
class AdminServer::Page final : public CivetHandler {
public:
    explicit Page(std::function<Response()> respond) : respond_(std::move(respond)) {}

    using CivetHandler::handleGet;
    bool handleGet(CivetServer* /*server*/, mg_connection* connection) override {
        const Response response = respond_();
        MM_ASSERT(response.status == 200 || response.status == 503);
        const std::string head = fmt::format(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
            "Cache-Control: no-store\r\n\r\n",
            response.status, response.status == 200 ? "OK" : "Service Unavailable",
            response.content_type, response.body.size());
        mg_write(connection, head.data(), head.size());
        mg_write(connection, response.body.data(), response.body.size());
        return true;
    }

private:
    std::function<Response()> respond_;
};

std::expected<std::unique_ptr<AdminServer>, std::string> AdminServer::create(
    const std::string& listen, Collectables metrics, const Health& health) {
    MM_ASSERT(!metrics.empty() && std::ranges::none_of(metrics, [](const auto& collectable) {
        return collectable == nullptr;
    }));
    std::unique_ptr<AdminServer> admin(new AdminServer());
    try {
        admin->server_ = std::make_unique<CivetServer>(
            std::vector<std::string>{"listening_ports", listen, "num_threads", server_threads});
    } catch (const std::exception& error) {
        return std::unexpected(
            fmt::format("cannot serve the admin port on {}: {}", listen, error.what()));
    }
    const auto add = [&admin](const std::string& path, std::function<Response()> respond) {
        admin->pages_.push_back(std::make_unique<Page>(std::move(respond)));
        admin->server_->addHandler(path, admin->pages_.back().get());
    };
    add("/metrics", [metrics = std::move(metrics)] {
        std::vector<prometheus::MetricFamily> families;
        for (const auto& collectable : metrics) {
            std::ranges::move(collectable->Collect(), std::back_inserter(families));
        }
        return Response{200, metrics_type, prometheus::TextSerializer().Serialize(families)};
    });
    add("/livez", [&health] { return probe_response(health.liveness(mesh::steady_now())); });
    add("/readyz", [&health] { return probe_response(health.readiness(mesh::steady_now())); });
    const auto ports = admin->server_->getListeningPorts();
    const auto colon = listen.rfind(':');
    admin->address_ =
        fmt::format("{}:{}", listen.substr(0, colon), ports.empty() ? 0 : ports.front());
    return admin;
}

// The server goes first (it is declared last): it stops serving and joins its threads.
AdminServer::~AdminServer() = default;

std::expected<HttpReply, std::string> http_get(const std::string& address,
                                               const std::string& path) {
    auto parts = mesh::split_host_port(address);
    if (!parts) {
        return std::unexpected(parts.error());
    }
    std::string response;
    try {
        asio::io_context context;
        asio::ip::tcp::socket socket(context);
        socket.connect({asio::ip::make_address(parts->host), parts->port});
        const std::string request =
            fmt::format("GET {} HTTP/1.0\r\nHost: {}\r\n\r\n", path, address);
        asio::write(socket, asio::buffer(request));
        std::error_code error;  // the end of the stream, or a reset: parse what came
        asio::read(socket, asio::dynamic_buffer(response, reply_bytes_max), error);
    } catch (const std::exception& error) {
        return std::unexpected(fmt::format("GET {}{}: {}", address, path, error.what()));
    }
    // "HTTP/1.1 503 Service Unavailable\r\n<headers>\r\n\r\n<body>"
    const auto space = response.find(' ');
    const auto body = response.find("\r\n\r\n");
    HttpReply reply;
    if (!response.starts_with("HTTP/") || space == std::string::npos || body == std::string::npos ||
        std::from_chars(response.data() + space + 1, response.data() + response.size(),
                        reply.status)
                .ec != std::errc()) {
        return std::unexpected(fmt::format("GET {}{}: not an HTTP response", address, path));
    }
    reply.body = response.substr(body + 4);
    return reply;
}

}  // namespace matchmesh::node
