#pragma once
// Opening a listening TCP socket on "host:port", with an error that names the address and why.

#include <expected>
#include <functional>
#include <memory>
#include <string>

#include <asio/awaitable.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/use_awaitable.hpp>

#include "mesh/host_port.hpp"

namespace matchmesh::mesh {

// The completion token of this module's coroutines: an operation's error comes back as the first
// element of a tuple, never as an exception.
inline constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);

// Opens, binds and listens, with TCP_NODELAY set on the listener (on Linux the sockets it accepts
// have it too); returns the bound endpoint (port 0 picks a free one).
[[nodiscard]] std::expected<asio::ip::tcp::endpoint, std::string> open_listener(
    asio::ip::tcp::acceptor& acceptor, const std::string& address);

// "address:port" (join_host_port), as logs show a peer.
[[nodiscard]] std::string to_string(const asio::ip::tcp::endpoint& endpoint);

// Accepts connections until the acceptor is closed (or `alive` turns false), handing each socket
// and its peer's address (as accept gave it: no further call asks for it) to `on_accept`;
// `on_error` hears of failed accepts that do not end the loop.
using OnAccept = std::function<void(asio::ip::tcp::socket, const asio::ip::tcp::endpoint&)>;
asio::awaitable<void> accept_each(asio::ip::tcp::acceptor& acceptor, std::shared_ptr<bool> alive,
                                  OnAccept on_accept,
                                  std::function<void(const std::error_code&)> on_error);

}  // namespace matchmesh::mesh
