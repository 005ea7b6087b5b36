#include "mesh/asio/listener.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/version.hpp>

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

namespace {

// How many connections one turn of the loop accepts before it lets other work run.
constexpr int accept_batch = 64;
// How long accepting pauses after a failure such as running out of descriptors: the waiting
// connection stays queued, and trying again at once would only fail (and log) again.
constexpr auto accept_pause = std::chrono::milliseconds(500);

// Asio assumes two things of a descriptor it is handed (as accept's result is): that it may be
// blocking (so its first operation sets non-blocking mode, one ioctl) and that a duplicate of it
// may exist (so closing it first takes it out of epoll, one epoll_ctl; closing the only
// descriptor of a socket does that already). A socket from accept4 with SOCK_NONBLOCK and
// SOCK_CLOEXEC is non-blocking, and it is as much this process's own as a socket Asio opens
// itself, which Asio closes without that call. Asio keeps both facts in its socket's state,
// which this derived class reaches through a member pointer, the one way C++ allows without a
// cast.
static_assert(ASIO_VERSION == 102201, "recheck asio's socket state flags (socket_ops.hpp)");
struct AcceptedSocket : asio::ip::tcp::socket {
    static void mark_non_blocking_and_sole(asio::ip::tcp::socket& socket) {
        namespace ops = asio::detail::socket_ops;
        auto& state = (socket.*(&AcceptedSocket::impl_)).get_implementation().state_;
        state = static_cast<ops::state_type>((state | ops::internal_non_blocking) &
                                             ~ops::possible_dup);
    }
};

}  // namespace

asio::awaitable<void> accept_each(asio::ip::tcp::acceptor& acceptor, std::shared_ptr<bool> alive,
                                  OnAccept on_accept,
                                  std::function<void(const std::error_code&)> on_error) {
    const auto stopped = [&] { return !*alive || !acceptor.is_open(); };
    std::error_code error;
    acceptor.non_blocking(true, error);  // accept4 below returns EAGAIN instead of blocking
    asio::steady_timer pause(acceptor.get_executor());
    bool waiting_connections = false;  // accept4 has not said EAGAIN since the last event
    while (true) {
        if (!waiting_connections) {
            // The reactor reports a new connection once (edge-triggered), so this wait comes
            // only after accept4 said there are no more.
            auto [waited] =
                co_await acceptor.async_wait(asio::socket_base::wait_read, use_nothrow);
            if (stopped() || waited == asio::error::operation_aborted) {
                co_return;
            }
            if (waited) {
                on_error(waited);
                pause.expires_after(accept_pause);
                co_await pause.async_wait(use_nothrow);
                if (stopped()) {
                    co_return;
                }
                continue;
            }
        } else {
            co_await asio::post(acceptor.get_executor(), asio::use_awaitable);
            if (stopped()) {
                co_return;
            }
        }
        bool drained = false;  // accept4 said EAGAIN: the next connection comes with an event
        for (int taken = 0; taken < accept_batch && !drained; ++taken) {
            sockaddr_storage address{};
            socklen_t length = sizeof address;
            const int descriptor = ::accept4(acceptor.native_handle(),
                                             reinterpret_cast<sockaddr*>(&address), &length,
                                             SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (descriptor < 0) {
                if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) {
                    continue;  // that connection is gone; the next may be there
                }
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    drained = true;
                    continue;
                }
                on_error(std::error_code(errno, std::system_category()));
                pause.expires_after(accept_pause);
                co_await pause.async_wait(use_nothrow);
                if (stopped()) {
                    co_return;
                }
                break;  // the connection that failed is still queued
            }
            asio::ip::tcp::endpoint peer;
            std::memcpy(peer.data(), &address, std::min<std::size_t>(length, peer.capacity()));
            peer.resize(std::min<std::size_t>(length, peer.capacity()));
            asio::ip::tcp::socket socket(acceptor.get_executor());
            socket.assign(peer.protocol(), descriptor, error);
            if (error) {
                ::close(descriptor);
                on_error(error);
                continue;
            }
            AcceptedSocket::mark_non_blocking_and_sole(socket);
            on_accept(std::move(socket), peer);
            if (stopped()) {
                co_return;
            }
        }
        waiting_connections = !drained;
    }
}

}  // namespace matchmesh::mesh
