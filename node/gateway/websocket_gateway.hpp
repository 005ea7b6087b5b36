#pragma once
// WebSocketGateway: the WebSocket entrance to a node's client port, for browsers and engines
// that cannot open raw TCP. Each WebSocket connection becomes one connection to a node's client
// port, and each binary WebSocket message one client-protocol frame: the message is the frame's
// Cap'n Proto body, and the gateway adds and strips the 8-byte frame header. The node sees an
// ordinary client, so commands, replies, pushes, limits, tokens and errors are the client
// port's own; the gateway adds the checks a browser-facing port needs in front of them: the
// Origin of a browser's handshake, a connection limit, the node's frame limit applied to each
// message before it crosses (so an oversized message costs the node nothing), handshake and
// write deadlines, and one message in flight each way per connection (bounded memory whatever a
// client sends or fails to read).
//
// The same port answers plain HTTP GETs for the files under `web_root` (the playground) and
// `/cluster`, the nodes' metrics (their admin ports' /metrics, one after the other, each under a
// `# node <address>` line), so that a page served here can show the cluster without reaching
// the admin ports itself.
//
// Built on Boost.Beast over Boost.Asio, in its own process: the node's loop is standalone Asio,
// which Beast does not run on. One thread; run() returns after stop().

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "mesh/host_port.hpp"

namespace matchmesh::gateway {

using Address = mesh::HostPort;

struct GatewayOptions {
    Address listen{"127.0.0.1", 7300};
    std::vector<Address> nodes;   // the nodes' client ports: each connection goes to the next
    std::vector<Address> admins;  // the nodes' admin ports, for /cluster (may be empty)
    std::string web_root;         // files served over HTTP; empty: none
    // Origins whose pages may open a WebSocket here ("*": any). A page served by the gateway
    // itself is always allowed; a client that sends no Origin (not a browser) is too.
    std::vector<std::string> allowed_origins;
    std::size_t connections_max = 10000;     // WebSocket and HTTP together
    std::size_t message_bytes_max = 64 * 1024;  // as the node's limits.maxClientFrameBytes
    std::size_t node_frame_bytes_max = 16 * 1024 * 1024;  // what the node may send
    std::chrono::milliseconds handshake_timeout{10000};  // HTTP request and WebSocket upgrade
    std::chrono::milliseconds write_timeout{10000};  // a client that takes no message this long
    std::chrono::milliseconds idle_ping{30000};      // a silent client is pinged, then dropped
};

struct GatewayCounters {
    std::uint64_t websockets = 0;      // upgrades accepted
    std::uint64_t http_requests = 0;   // plain requests answered
    std::uint64_t refused_origin = 0;  // upgrades refused for their Origin
    std::uint64_t refused_limit = 0;   // connections turned away at the limit
    std::uint64_t accept_failures = 0;  // accepts that failed (out of descriptors), each a pause
    std::uint64_t bad_messages = 0;    // messages that closed their connection
    std::uint64_t slow_readers = 0;    // clients that did not take a message in time
    std::uint64_t node_unreachable = 0;  // upgrades no node would take
    std::uint64_t messages_in = 0;     // client to node
    std::uint64_t messages_out = 0;    // node to client
};

class WebSocketGateway {
public:
    WebSocketGateway(GatewayOptions options, std::shared_ptr<spdlog::logger> log);
    ~WebSocketGateway();
    WebSocketGateway(const WebSocketGateway&) = delete;
    WebSocketGateway& operator=(const WebSocketGateway&) = delete;

    // Binds the port; "host:port" as bound (port 0 picks a free one), or why not.
    [[nodiscard]] std::string listen(std::string& error);
    // Serves until stop(); call from one thread.
    void run();
    // Thread-safe: stops serving, and run() returns; destroying the gateway then closes the port
    // and every connection.
    void stop();

    [[nodiscard]] GatewayCounters counters() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace matchmesh::gateway
