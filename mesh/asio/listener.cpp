#include "mesh/asio/listener.hpp"

#include <fmt/format.h>
#include <asio/use_awaitable.hpp>

namespace matchmesh::mesh {

std::expected<asio::ip::tcp::endpoint, std::string> open_listener(asio::ip::tcp::acceptor& acceptor,
                                                                  const std::string& address) {
    auto failed = [&address](std::string_view reason) {
        return std::unexpected(fmt::format("cannot listen on {}: {}", address, reason));
    };
    auto parts = split_host_port(address);
    if (!parts) {
        return failed(parts.error());
    }
    std::error_code error;
    asio::ip::tcp::resolver resolver(acceptor.get_executor());
    auto endpoints = resolver.resolve(parts->host, std::to_string(parts->port),
                                      asio::ip::tcp::resolver::passive, error);
    if (error || endpoints.empty()) {
        return failed(error ? error.message() : "no address");
    }
    const auto endpoint = endpoints.begin()->endpoint();
    acceptor.open(endpoint.protocol(), error);
    if (!error) {
        acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), error);
    }
    if (!error) {
        // Frames go out as soon as they are written. Linux's accepted sockets inherit the option
        // from the listener: one system call less per connection.
        acceptor.set_option(asio::ip::tcp::no_delay(true), error);
    }
    if (!error) {
        acceptor.bind(endpoint, error);
    }
    if (!error) {
        acceptor.listen(asio::socket_base::max_listen_connections, error);
    }
    if (error) {
        return failed(error.message());
    }
    return acceptor.local_endpoint();
}

std::string to_string(const asio::ip::tcp::endpoint& endpoint) {
    return join_host_port(endpoint.address().to_string(), endpoint.port());
}

asio::awaitable<void> accept_each(asio::ip::tcp::acceptor& acceptor, std::shared_ptr<bool> alive,
                                  OnAccept on_accept,
                                  std::function<void(const std::error_code&)> on_error) {
    asio::ip::tcp::endpoint peer;
    while (true) {
        auto [error, socket] = co_await acceptor.async_accept(peer, use_nothrow);
        if (!*alive || error == asio::error::operation_aborted || !acceptor.is_open()) {
            co_return;
        }
        if (error) {
            on_error(error);
            continue;
        }
        on_accept(std::move(socket), peer);
    }
}

}  // namespace matchmesh::mesh
