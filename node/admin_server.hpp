#pragma once
// AdminServer: the node's admin port, a small HTTP server that answers
//   GET /metrics  the node's Prometheus metrics, in the text format;
//   GET /livez    200 while the event loop answers within its bound, else 503 (see Health);
//   GET /readyz   200 while the node should be sent players, else 503 naming why (see Health).
// The probes' bodies are one line of text.
//
// The server is civetweb's CivetServer, the one prometheus-cpp's exposer runs on. The exposer
// serves collectables only and keeps its server to itself, so the node runs the server and gives
// it its three pages.
//
// Owned by the node. civetweb's own threads serve it; they read only the metrics (whose types are
// thread-safe) and the Health's atomics, never what the loop owns, so the port answers even while
// the loop is stuck. The destructor stops the server and waits for its threads; the Health must
// outlive it.

#include <expected>
#include <memory>
#include <string>
#include <vector>

class CivetServer;

namespace prometheus {  // kept out of the node's public headers
class Collectable;
}  // namespace prometheus

namespace matchmesh::node {

class Health;

class AdminServer {
public:
    using Collectables = std::vector<std::shared_ptr<const prometheus::Collectable>>;
    // Serves on host:port (port 0 picks one); /metrics is every collectable's families, in
    // order. The error names the address.
    [[nodiscard]] static std::expected<std::unique_ptr<AdminServer>, std::string> create(
        const std::string& listen, Collectables metrics, const Health& health);
    ~AdminServer();
    AdminServer(const AdminServer&) = delete;
    AdminServer& operator=(const AdminServer&) = delete;

    // host:port, with the port it got.
    [[nodiscard]] const std::string& address() const { return address_; }

private:
    class Page;
    AdminServer() = default;

    std::string address_;
    // Declared before the server, which points to them: it stops before they go.
    std::vector<std::unique_ptr<Page>> pages_;
    std::unique_ptr<CivetServer> server_;
};

// An answer to GET, for tools and tests.
struct HttpReply {
    int status = 0;
    std::string body;
};

// GET `path` from the admin port at host:port (HTTP/1.0, read until the node closes), or why not.
[[nodiscard]] std::expected<HttpReply, std::string> http_get(const std::string& address,
                                                             const std::string& path);

}  // namespace matchmesh::node
