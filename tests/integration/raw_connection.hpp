#pragma once
// RawConnection: a blocking TCP connection that sends whatever bytes a test wants, for checking
// how a node treats malformed, hostile or unauthenticated traffic. It can also complete the mesh
// handshake as a fake peer, to send well-framed but unexpected frames after authentication.

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include "mesh/frame.hpp"

namespace integration {

class RawConnection {
public:
    explicit RawConnection(const std::string& address);

    void send(const std::vector<std::byte>& bytes);
    void send_header(std::uint32_t length, std::uint16_t version = 1, std::uint16_t reserved = 0);
    // Reads one frame body (header checked loosely); nullopt if the peer closed or was silent.
    std::optional<std::vector<capnp::word>> read_body(std::chrono::milliseconds timeout);
    // True once the peer closes the connection (within the timeout).
    bool closed_by_peer(std::chrono::milliseconds timeout);
    void close();

    // Mesh handshake as node `id`; returns the welcome's sender ID, or an error. The hello sent
    // is copied to `sent_hello` when given (to replay it elsewhere).
    std::expected<std::string, std::string> handshake(const std::string& id,
                                                      const std::string& cluster,
                                                      const std::string& secret,
                                                      std::vector<std::byte>* sent_hello = nullptr);

private:
    bool run_until(const bool& done, std::chrono::milliseconds timeout);
    asio::io_context context_;
    asio::ip::tcp::socket socket_;
};

std::vector<std::byte> bytes_of(const matchmesh::mesh::Frame& frame);
// A framed message 100 structs deep: framed correctly, but past every nesting limit.
std::vector<std::byte> deep_message();
std::vector<std::byte> header_bytes(std::uint32_t length, std::uint16_t version,
                                    std::uint16_t reserved);

}  // namespace integration
