#include "node/blocking_client.hpp"

#include <array>

#include <fmt/format.h>
#include <asio/connect.hpp>
#include <asio/read.hpp>
#include <asio/ssl/host_name_verification.hpp>
#include <asio/write.hpp>

#include "mesh/asio/tcp_transport.hpp"
#include "mesh/asio/tls.hpp"

namespace matchmesh::node {
namespace {

// Runs the context until `done` or the timeout; false on timeout.
bool run_until(asio::io_context& context, const bool& done, std::chrono::milliseconds timeout) {
    context.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        context.run_one_for(deadline - std::chrono::steady_clock::now());
    }
    return done;
}

}  // namespace

BlockingClient::BlockingClient()
    : context_(std::make_unique<asio::io_context>()),
      socket_(std::make_unique<asio::ip::tcp::socket>(*context_)) {}

std::expected<BlockingClient, std::string> BlockingClient::connect(
    const std::string& address, std::chrono::milliseconds timeout, const std::string& tls_ca_file) {
    auto parts = mesh::split_host_port(address);
    if (!parts) {
        return std::unexpected(parts.error());
    }
    BlockingClient client;
    asio::ip::tcp::resolver resolver(*client.context_);
    std::error_code error;
    auto endpoints = resolver.resolve(parts->host, std::to_string(parts->port), error);
    if (error) {
        return std::unexpected(fmt::format("cannot resolve {}: {}", address, error.message()));
    }
    bool done = false;
    asio::async_connect(*client.socket_, endpoints,
                        [&](const std::error_code& result, const auto&) {
                            error = result;
                            done = true;
                        });
    if (!run_until(*client.context_, done, timeout)) {
        client.socket_->close();
        run_until(*client.context_, done, std::chrono::milliseconds(1000));
        return std::unexpected(fmt::format("cannot connect to {}: timed out", address));
    }
    if (error) {
        return std::unexpected(fmt::format("cannot connect to {}: {}", address, error.message()));
    }
    client.socket_->set_option(asio::ip::tcp::no_delay(true), error);
    if (!tls_ca_file.empty()) {
        auto context = mesh::make_tls_context({"", "", tls_ca_file}, mesh::TlsRole::client);
        if (!context) {
            return std::unexpected(context.error());
        }
        client.tls_context_ = std::move(*context);
        client.tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(
            *client.socket_, *client.tls_context_);
        client.tls_->set_verify_callback(asio::ssl::host_name_verification(parts->host));
        SSL_set_tlsext_host_name(client.tls_->native_handle(), parts->host.c_str());
        done = false;
        client.tls_->async_handshake(asio::ssl::stream_base::client,
                                     [&](const std::error_code& result) {
                                         error = result;
                                         done = true;
                                     });
        if (!run_until(*client.context_, done, timeout)) {
            client.socket_->close();
            run_until(*client.context_, done, std::chrono::milliseconds(1000));
            return std::unexpected(fmt::format("TLS with {}: timed out", address));
        }
        if (error) {
            return std::unexpected(fmt::format("TLS with {}: {}", address, error.message()));
        }
    }
    return client;
}

std::expected<void, std::string> BlockingClient::send_bytes(const void* data, std::size_t size) {
    std::error_code error;
    on_stream([&](auto& stream) { asio::write(stream, asio::buffer(data, size), error); });
    if (error) {
        return std::unexpected(fmt::format("send failed: {}", error.message()));
    }
    return {};
}

std::expected<ClientReply, std::string> BlockingClient::read_reply(
    std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        auto message = read_message(std::max(left, std::chrono::milliseconds(0)));
        if (!message) {
            return std::unexpected(message.error());
        }
        if (auto* reply = std::get_if<ClientReply>(&*message)) {
            return std::move(*reply);
        }
        constexpr std::size_t kept_max = 100000;
        if (pushes_.size() >= kept_max) {
            return std::unexpected("too many pushes while waiting for a reply");
        }
        pushes_.push_back(std::get<ticket::PushMessage>(std::move(*message)));
    }
}

std::expected<ticket::PushMessage, std::string> BlockingClient::next_push(
    std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pushes_.empty()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        auto message = read_message(std::max(left, std::chrono::milliseconds(0)));
        if (!message) {
            return std::unexpected(message.error());
        }
        if (std::holds_alternative<ClientReply>(*message)) {
            return std::unexpected("a reply arrived while waiting for a push");
        }
        pushes_.push_back(std::get<ticket::PushMessage>(std::move(*message)));
    }
    ticket::PushMessage push = std::move(pushes_.front());
    pushes_.pop_front();
    return push;
}

std::expected<ServerMessage, std::string> BlockingClient::read_message(
    std::chrono::milliseconds timeout) {
    std::array<std::byte, mesh::frame_header_bytes> header{};
    std::vector<capnp::word> body;
    std::error_code error;
    bool done = false;
    on_stream([&](auto& stream) {
        asio::async_read(stream, asio::buffer(header),
                         [&](const std::error_code& result, std::size_t) {
                             error = result;
                             done = true;
                         });
    });
    if (!run_until(*context_, done, timeout)) {
        socket_->cancel();
        run_until(*context_, done, std::chrono::milliseconds(1000));  // let the handler finish
        return std::unexpected("nothing received in time");
    }
    if (error) {
        return std::unexpected(fmt::format("connection lost: {}", error.message()));
    }
    mesh::FrameLimits limits;
    limits.frame_bytes_max = 64 * 1024 * 1024;
    limits.traversal_words_max = 64 * 1024 * 1024;
    auto length = mesh::parse_header(header, limits);
    if (!length) {
        return std::unexpected(length.error().message);
    }
    body.resize(*length / sizeof(capnp::word));
    done = false;
    on_stream([&](auto& stream) {
        asio::async_read(stream, asio::buffer(body.data(), *length),
                         [&](const std::error_code& result, std::size_t) {
                             error = result;
                             done = true;
                         });
    });
    if (!run_until(*context_, done, timeout)) {
        socket_->cancel();
        run_until(*context_, done, std::chrono::milliseconds(1000));
        return std::unexpected("the reply stopped in the middle");
    }
    if (error) {
        return std::unexpected("connection lost in the middle of a reply");
    }
    return decode_server_message(body, limits.reader_options());
}

std::expected<ClientReply, std::string> BlockingClient::call(Command command,
                                                             std::chrono::milliseconds timeout) {
    const std::uint64_t id = next_id_++;
    const mesh::Frame frame = encode_request(ClientRequest{id, std::move(command)});
    if (auto sent = send_bytes(frame.data(), frame.size()); !sent) {
        return std::unexpected(sent.error());
    }
    auto reply = read_reply(timeout);
    if (reply && reply->id != id) {
        return std::unexpected(
            fmt::format("reply to request {} while waiting for {}", reply->id, id));
    }
    return reply;
}

bool BlockingClient::closed_by_peer(std::chrono::milliseconds timeout) {
    // Whatever the node says first (an error before it closes) is read past.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::array<std::byte, 256> bytes{};
    std::error_code error;
    while (!error) {
        bool done = false;
        on_stream([&](auto& stream) {
            stream.async_read_some(asio::buffer(bytes),
                                   [&](const std::error_code& result, std::size_t) {
                                       error = result;
                                       done = true;
                                   });
        });
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (!run_until(*context_, done, std::max(left, std::chrono::milliseconds(0)))) {
            socket_->cancel();
            run_until(*context_, done, std::chrono::milliseconds(1000));
            return false;
        }
    }
    return error == asio::error::eof || error == asio::error::connection_reset ||
           error == asio::ssl::error::stream_truncated;
}

}  // namespace matchmesh::node
