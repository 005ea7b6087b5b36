#include "raw_connection.hpp"

#include <doctest/doctest.h>

#include <asio/connect.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "mesh/asio/tcp_transport.hpp"
#include "mesh/auth.hpp"
#include "mesh/control.hpp"
#include "mesh/envelope.capnp.h"
#include "tests/integration/hostile.capnp.h"

namespace integration {

using namespace matchmesh;
using namespace matchmesh::mesh;

std::vector<std::byte> header_bytes(std::uint32_t length, std::uint16_t version,
                                    std::uint16_t reserved) {
    std::vector<std::byte> header(frame_header_bytes);
    for (int i = 0; i < 4; ++i) {
        header[i] = static_cast<std::byte>(length >> (8 * i));
    }
    header[4] = static_cast<std::byte>(version);
    header[5] = static_cast<std::byte>(version >> 8);
    header[6] = static_cast<std::byte>(reserved);
    header[7] = static_cast<std::byte>(reserved >> 8);
    return header;
}

std::vector<std::byte> bytes_of(const Frame& frame) {
    return {frame.begin(), frame.end()};
}

RawConnection::RawConnection(const std::string& address) : socket_(context_) {
    auto parts = split_host_port(address);
    REQUIRE(parts.has_value());
    asio::ip::tcp::resolver resolver(context_);
    asio::connect(socket_, resolver.resolve(parts->host, std::to_string(parts->port)));
}

bool RawConnection::run_until(const bool& done, std::chrono::milliseconds timeout) {
    context_.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        context_.run_one_for(deadline - std::chrono::steady_clock::now());
    }
    if (!done) {
        std::error_code ignored;
        socket_.cancel(ignored);
        context_.restart();
        while (!done) {
            context_.run_one();
        }
        return false;
    }
    return true;
}

void RawConnection::send(const std::vector<std::byte>& bytes) {
    std::error_code error;
    asio::write(socket_, asio::buffer(bytes), error);  // the peer may already have closed
}

void RawConnection::send_header(std::uint32_t length, std::uint16_t version,
                                std::uint16_t reserved) {
    send(header_bytes(length, version, reserved));
}

std::optional<std::vector<capnp::word>> RawConnection::read_body(
    std::chrono::milliseconds timeout) {
    std::array<std::byte, frame_header_bytes> header{};
    std::error_code error;
    bool done = false;
    asio::async_read(socket_, asio::buffer(header), [&](const std::error_code& e, std::size_t) {
        error = e;
        done = true;
    });
    if (!run_until(done, timeout) || error) {
        return std::nullopt;
    }
    FrameLimits limits;
    limits.frame_bytes_max = 64 * 1024 * 1024;
    auto length = parse_header(header, limits);
    if (!length) {
        return std::nullopt;
    }
    std::vector<capnp::word> body(*length / sizeof(capnp::word));
    done = false;
    asio::async_read(socket_, asio::buffer(body.data(), *length),
                     [&](const std::error_code& e, std::size_t) {
                         error = e;
                         done = true;
                     });
    if (!run_until(done, timeout) || error) {
        return std::nullopt;
    }
    return body;
}

bool RawConnection::closed_by_peer(std::chrono::milliseconds timeout) {
    std::array<std::byte, 4096> sink{};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        std::error_code error;
        bool done = false;
        socket_.async_read_some(asio::buffer(sink), [&](const std::error_code& e, std::size_t) {
            error = e;
            done = true;
        });
        if (!run_until(done, std::chrono::duration_cast<std::chrono::milliseconds>(
                                 deadline - std::chrono::steady_clock::now()))) {
            return false;
        }
        if (error) {
            return error == asio::error::eof || error == asio::error::connection_reset;
        }
    }
    return false;
}

void RawConnection::close() {
    std::error_code ignored;
    socket_.close(ignored);
}

std::expected<std::string, std::string> RawConnection::handshake(
    const std::string& id, const std::string& cluster, const std::string& secret,
    std::vector<std::byte>* sent_hello) {
    const FrameLimits limits;
    auto first = read_body(std::chrono::seconds(5));
    if (!first) {
        return std::unexpected("no challenge");
    }
    auto envelope = decode_body(*first, limits);
    if (!envelope || envelope->method != wire::METHOD_CHALLENGE) {
        return std::unexpected("not a challenge");
    }
    auto challenge = decode_challenge(envelope->payload, limits.reader_options());
    if (!challenge) {
        return std::unexpected("garbled challenge");
    }
    const MemberInfo self{NodeId(id), "127.0.0.1:1", "HTTP", 1};
    const Nonce nonce = random_nonce();
    const Proof proof = handshake_proof(secret, role_hello, cluster, challenge->nonce, nonce, id);
    const auto hello = bytes_of(
        control_frame(wire::METHOD_HELLO, encode(HelloMessage{cluster, self, nonce, proof})));
    if (sent_hello != nullptr) {
        *sent_hello = hello;
    }
    send(hello);
    auto second = read_body(std::chrono::seconds(5));
    if (!second) {
        return std::unexpected("no welcome");
    }
    auto welcome_envelope = decode_body(*second, limits);
    auto welcome = welcome_envelope
                       ? decode_welcome(welcome_envelope->payload, limits.reader_options())
                       : std::unexpected(ControlError{MeshErrc::malformed, "bad"});
    if (!welcome) {
        return std::unexpected("garbled welcome");
    }
    return welcome->member.id.str();
}

std::vector<std::byte> deep_message() {
    capnp::MallocMessageBuilder message;
    auto nest = message.initRoot<test::Nest>();
    for (int depth = 0; depth < 100; ++depth) {
        nest = nest.initNext();
    }
    return bytes_of(mesh::encode_message_frame(message));
}

}  // namespace integration
