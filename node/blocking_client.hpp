#pragma once
// BlockingClient: a synchronous connection to a node's client port, one request at a time, for
// tools and tests. Every call has a deadline; nothing blocks forever.

#include <chrono>
#include <deque>
#include <expected>
#include <string>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>

#include "node/client_protocol.hpp"

namespace matchmesh::node {

class BlockingClient {
public:
    // With `tls_ca_file`, the connection speaks TLS and the node's certificate must be signed by
    // that CA and name the host connected to.
    [[nodiscard]] static std::expected<BlockingClient, std::string> connect(
        const std::string& address, std::chrono::milliseconds timeout = std::chrono::seconds(5),
        const std::string& tls_ca_file = "");

    // Sends the request (its id is set by the client) and waits for the reply.
    [[nodiscard]] std::expected<ClientReply, std::string> call(
        Command command, std::chrono::milliseconds timeout = std::chrono::seconds(10));

    // Raw access for tests that send what a well-behaved client would not.
    [[nodiscard]] std::expected<void, std::string> send_bytes(const void* data, std::size_t size);
    // The next reply; pushes that arrive first are kept for next_push().
    [[nodiscard]] std::expected<ClientReply, std::string> read_reply(
        std::chrono::milliseconds timeout);
    // The next message of either kind, in arrival order.
    [[nodiscard]] std::expected<ServerMessage, std::string> read_message(
        std::chrono::milliseconds timeout);
    // The next push (kept earlier, or read now).
    [[nodiscard]] std::expected<ticket::PushMessage, std::string> next_push(
        std::chrono::milliseconds timeout);
    // Whether the node closed the connection (waits up to `timeout` for it).
    [[nodiscard]] bool closed_by_peer(std::chrono::milliseconds timeout);

private:
    BlockingClient();
    std::unique_ptr<asio::io_context> context_;
    std::unique_ptr<asio::ip::tcp::socket> socket_;
    std::shared_ptr<asio::ssl::context> tls_context_;
    std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;

    // Runs `operation` on the TLS stream once there is one, else on the socket.
    template <typename Operation>
    void on_stream(Operation&& operation) {
        if (tls_) {
            operation(*tls_);
        } else {
            operation(*socket_);
        }
    }
    std::uint64_t next_id_ = 1;
    std::deque<ticket::PushMessage> pushes_;  // read while waiting for a reply
};

}  // namespace matchmesh::node
