#include "node/client_server.hpp"

#include <fmt/format.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/steady_timer.hpp>

#include "mesh/asio/listener.hpp"
#include "mesh/text.hpp"

namespace matchmesh::node {
namespace {

constexpr std::size_t client_read_buffer_bytes = 4 * 1024;

}  // namespace

std::string_view label_of(CloseReason reason) {
    switch (reason) {
        case CloseReason::disconnected: return "disconnected";
        case CloseReason::slow_reader: return "slow_reader";
        case CloseReason::hello_timeout: return "hello_timeout";
        case CloseReason::limit: return "limit";
        case CloseReason::bad_frame: return "bad_frame";
        case CloseReason::handshake_failed: return "handshake_failed";
        case CloseReason::error: return "error";
        case CloseReason::replaced: return "replaced";
        case CloseReason::stopping: return "stopping";
    }
    return "other";
}

ClientServer::ClientServer(asio::io_context& context, ClientServerOptions options,
                           ClientHandler& handler, std::shared_ptr<spdlog::logger> log)
    : context_(context),
      options_(std::move(options)),
      handler_(handler),
      log_(std::move(log)),
      acceptor_(context),
      hello_timer_(context) {
    limits_.frame_bytes_max = options_.frame_bytes_max;
    limits_.traversal_words_max = options_.traversal_words_max;
    limits_.nesting_max = options_.nesting_max;
}

ClientServer::~ClientServer() {
    *alive_ = false;
}

std::expected<asio::ip::tcp::endpoint, std::string> ClientServer::listen() {
    return mesh::open_listener(acceptor_, options_.listen);
}

void ClientServer::start() {
    asio::co_spawn(context_,
                   mesh::accept_each(
                       acceptor_, alive_,
                       [this](asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer) {
                           accept(std::move(socket), peer);
                       },
                       [this](const std::error_code& error) {
                           log_->warn("client: accept failed: {}", error.message());
                       }),
                   asio::detached);
}

void ClientServer::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    std::error_code ignored;
    acceptor_.close(ignored);
    hello_timer_.cancel();
    awaiting_hello_.clear();
    auto all = connections_;
    for (auto& [key, connection] : all) {
        close(connection.stream, CloseReason::stopping, "node stopping");
    }
}

void ClientServer::close(const StreamPtr& stream, CloseReason why, std::string_view detail) {
    if (stream->closed()) {
        return;
    }
    ++counters_.closed[static_cast<std::size_t>(why)];
    auto found = connections_.find(stream.get());
    const std::string remote =
        found != connections_.end() ? found->second.session->remote : stream->remote();
    stream->close();
    std::shared_ptr<Session> session;
    if (found != connections_.end()) {
        session = found->second.session;
        connections_.erase(found);
        streams_.erase(session.get());
    }
    if (session) {
        handler_.session_closed(session);
    }
    const bool misbehaved = why == CloseReason::slow_reader || why == CloseReason::hello_timeout ||
                            why == CloseReason::bad_frame;
    if (misbehaved) {
        throttle_.warn(*log_, "misbehaved", "client: closed connection from {}: {}", remote,
                       mesh::printable(detail));
    } else {
        log_->debug("client: closed connection from {}: {}", remote, detail);
    }
}

// The timer runs while connections await their hello. It wakes an eighth of the timeout after
// the oldest one's deadline, so that one wake closes the silent connections of that stretch:
// a connection is closed between one and 1.125 times the timeout after it was accepted.
void ClientServer::arm_hello_timer() {
    if (hello_timer_armed_ || awaiting_hello_.empty() || stopped_) {
        return;
    }
    hello_timer_armed_ = true;
    hello_timer_.expires_at(awaiting_hello_.front().at + options_.hello_timeout / 8);
    hello_timer_.async_wait([this, alive = alive_](std::error_code error) {
        if (!*alive) {
            return;
        }
        hello_timer_armed_ = false;
        if (!error) {
            close_silent();
            arm_hello_timer();
        }
    });
}

// Entries stay queued after their connection said hello or closed, until their deadline. So that
// the queue follows the open connections rather than the rate of connections times the timeout,
// it drops those entries once they are most of it (each pass at least halves it: amortized O(1)).
void ClientServer::forget_greeted() {
    if (awaiting_hello_.size() <= 2 * connections_.size() + 1024) {
        return;
    }
    std::erase_if(awaiting_hello_,
                  [this](const HelloDue& due) { return still_silent(due) == nullptr; });
}

const ClientServer::Connection* ClientServer::still_silent(const HelloDue& due) const {
    auto found = connections_.find(due.stream);
    const bool silent = found != connections_.end() &&
                        found->second.session->id == due.session_id &&
                        !found->second.session->user && !found->second.session->admin;
    return silent ? &found->second : nullptr;
}

void ClientServer::close_silent() {
    const auto now = std::chrono::steady_clock::now();
    while (!awaiting_hello_.empty() && awaiting_hello_.front().at <= now) {
        const HelloDue due = awaiting_hello_.front();
        awaiting_hello_.pop_front();
        const Connection* silent = still_silent(due);
        if (silent == nullptr) {
            continue;  // closed already, or it said hello
        }
        const StreamPtr stream = silent->stream;
        close(stream, CloseReason::hello_timeout,
              fmt::format("no hello within {} ms", options_.hello_timeout.count()));
    }
}

void ClientServer::send(const StreamPtr& stream, mesh::Frame frame) {
    if (stream->closed()) {
        return;
    }
    if (!stream->push(std::move(frame), options_.outbox_frames_max, options_.outbox_bytes_max)) {
        close(stream, CloseReason::slow_reader, "it does not read what it is sent (outbox full)");
    }
}

void ClientServer::push(const std::shared_ptr<Session>& session,
                        const ticket::PushMessage& message) {
    if (auto found = streams_.find(session.get()); found != streams_.end()) {
        send(found->second, encode_push(message));
    }
}

void ClientServer::close_session(const std::shared_ptr<Session>& session, std::string_view reason) {
    if (auto found = streams_.find(session.get()); found != streams_.end()) {
        close(StreamPtr(found->second), CloseReason::replaced, reason);
    }
}

bool ClientServer::take_budget(Session& session) {
    const auto now = std::chrono::steady_clock::now();
    const double rate = options_.commands_per_second;
    const std::chrono::duration<double> elapsed = now - session.refilled;
    session.budget = std::min(rate, session.budget + elapsed.count() * rate);
    session.refilled = now;
    if (session.budget < 1.0) {
        return false;
    }
    session.budget -= 1.0;
    return true;
}

namespace {

// A last word before a close: an error reply (request ID 0) written straight to the socket, which
// holds a few dozen bytes without blocking; if it cannot, the close says it alone.
void say_before_closing(asio::ip::tcp::socket& socket, ClientErrc code, std::string message,
                        std::chrono::milliseconds retry_after = {}) {
    const mesh::Frame frame = encode_reply(ClientReply{
        0, error_of(code, std::move(message), static_cast<std::uint32_t>(retry_after.count()))});
    std::error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(frame), ignored);
}

}  // namespace

void ClientServer::accept(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer) {
    if (stopped_) {
        return;
    }
    if (connections_.size() >= options_.connections_max) {
        ++counters_.closed[static_cast<std::size_t>(CloseReason::limit)];
        throttle_.warn(*log_, "limit", "client: refused a connection: {} connections already open",
                       connections_.size());
        const auto retry_after = handler_.turned_away();
        if (!options_.tls) {  // with TLS, nothing can be said before the handshake
            say_before_closing(socket, ClientErrc::too_many_connections,
                               fmt::format("this node holds its maximum of {} client connections "
                                           "(limits.maxClientConnections); try another",
                                           options_.connections_max),
                               retry_after);
        }
        std::error_code ignored;
        socket.close(ignored);
        return;
    }
    ++counters_.connections_accepted;
    // Clients send small frames at a modest rate: a small read buffer keeps idle sessions cheap.
    auto stream = std::make_shared<mesh::FramedStream>(context_, client_read_buffer_bytes);
    stream->socket = std::move(socket);
#ifndef __linux__  // on Linux it comes from the listener (open_listener)
    std::error_code ignored;
    stream->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
#endif
    auto session = std::make_shared<Session>();
    session->id = next_session_++;
    session->remote = mesh::to_string(peer);
    session->budget = options_.commands_per_second;
    session->refilled = std::chrono::steady_clock::now();
    connections_.emplace(stream.get(), Connection{stream, session});
    streams_.emplace(session.get(), stream);
    // Until hello, a connection speaks for nobody: one that stays silent is closed, so that idle
    // sockets cannot hold the connection limit.
    awaiting_hello_.push_back(HelloDue{std::chrono::steady_clock::now() + options_.hello_timeout,
                                       stream.get(), session->id});
    forget_greeted();
    arm_hello_timer();
    asio::co_spawn(context_, mesh::FramedStream::write_loop(stream, alive_), asio::detached);
    asio::co_spawn(context_, serve(this, stream, session, alive_), asio::detached);
}

// Whatever a request's handling throws ends that connection only: it is closed, counted and
// logged, and the node goes on serving everyone else.
asio::awaitable<void> ClientServer::serve(ClientServer* self, StreamPtr stream,
                                          std::shared_ptr<Session> session,
                                          std::shared_ptr<bool> alive) {
    if (self->options_.tls) {  // within the hello deadline, which closes a stalled handshake
        const std::error_code error =
            co_await stream->start_tls(*self->options_.tls, asio::ssl::stream_base::server);
        if (!*alive || stream->closed()) {
            co_return;
        }
        if (error) {
            self->throttle_.warn(*self->log_, "tls", "client: TLS handshake with {} failed: {}",
                                 session->remote, error.message());
            self->close(stream, CloseReason::handshake_failed, "TLS: " + error.message());
            co_return;
        }
    }
    stream->open_outbox();
    std::string failure;
    try {
        co_await serve_requests(self, stream, session, alive);
        co_return;
    } catch (const std::exception& error) {
        failure = error.what();
    }
    if (*alive) {
        self->throttle_.warn(*self->log_, "failed", "client: closed connection from {}: {}",
                             session->remote, mesh::printable(failure));
        self->close(stream, CloseReason::error, failure);
    }
}

asio::awaitable<void> ClientServer::serve_requests(ClientServer* self, StreamPtr stream,
                                                   std::shared_ptr<Session> session,
                                                   std::shared_ptr<bool> alive) {
    std::vector<capnp::word> body;
    const capnp::ReaderOptions reader_options = self->limits_.reader_options();
    while (true) {
        auto read = co_await stream->read_frame(self->limits_, body);
        if (!*alive || stream->closed()) {
            co_return;
        }
        if (!read) {
            const auto frame_error = read.error().frame_error;
            if (frame_error) {
                ++self->counters_.frames_rejected[static_cast<std::size_t>(*frame_error)];
            }
            if (frame_error == mesh::FrameErrc::oversized && !stream->tls()) {
                say_before_closing(stream->socket, ClientErrc::frame_too_large,
                                   read.error().reason + " (limits.maxClientFrameBytes)");
            }
            self->close(stream, frame_error ? CloseReason::bad_frame : CloseReason::disconnected,
                        read.error().reason);
            co_return;
        }
        ++self->counters_.requests;
        auto request = decode_request(body, reader_options);
        if (!request) {
            ++self->counters_.malformed_requests;
            self->send(stream, encode_reply(ClientReply{request.error().id,
                                                        error_of(ClientErrc::malformed_request,
                                                                 request.error().message)}));
            continue;
        }
        if (!self->take_budget(*session)) {
            ++self->counters_.rate_limited;
            self->send(stream, encode_reply(ClientReply{
                                   request->id,
                                   error_of(ClientErrc::rate_limited,
                                            fmt::format("more than {} commands per second",
                                                        self->options_.commands_per_second))}));
            continue;
        }
        std::weak_ptr<mesh::FramedStream> weak = stream;
        self->handler_.handle(session, std::move(*request), [self, alive, weak](ClientReply reply) {
            auto target = weak.lock();
            if (*alive && target) {
                self->send(target, encode_reply(reply));
            }
        });
    }
}

}  // namespace matchmesh::node
