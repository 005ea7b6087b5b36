#include "mesh/asio/tcp_transport.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>

#include "mesh/asio/asio_scheduler.hpp"
#include "mesh/asio/listener.hpp"
#include "mesh/auth.hpp"
#include "mesh/base/assert.hpp"
#include "mesh/envelope.capnp.h"
#include "mesh/text.hpp"

namespace matchmesh::mesh {
namespace {

std::string address_text(const asio::ip::tcp::socket& socket) {
    std::error_code error;
    const auto endpoint = socket.remote_endpoint(error);
    return error ? std::string("?") : endpoint.address().to_string();
}

std::string endpoint_text(const asio::ip::tcp::socket& socket) {
    std::error_code error;
    const auto endpoint = socket.remote_endpoint(error);
    return error ? std::string("?") : to_string(endpoint);
}

}  // namespace

struct TcpTransport::Connection {
    Connection(asio::io_context& context, ConnectionId connection_id, bool is_outgoing)
        : stream(std::make_shared<FramedStream>(context)),
          deadline(context),
          id(connection_id),
          outgoing(is_outgoing) {}

    std::shared_ptr<FramedStream> stream;
    asio::steady_timer deadline;  // closes the socket if the handshake takes too long
    ConnectionId id;
    bool outgoing;
    bool ready = false;
    bool closed = false;
    bool timed_out = false;
    MemberInfo peer;
    NodeId expected_peer;  // empty when dialing a seed
    std::string remote;
    std::string source;  // an incoming connection's address, without the port
};

TcpTransport::TcpTransport(asio::io_context& context, TcpOptions options,
                           std::shared_ptr<spdlog::logger> log)
    : context_(context),
      options_(std::move(options)),
      log_(std::move(log)),
      acceptor_(context),
      seed_timer_(context) {
    MM_ASSERT(log_ != nullptr);
}

TcpTransport::~TcpTransport() {
    *alive_ = false;
}

std::expected<asio::ip::tcp::endpoint, std::string> TcpTransport::listen() {
    return open_listener(acceptor_, options_.listen);
}

void TcpTransport::start(MeshCore& core, std::vector<std::string> seeds) {
    core_ = &core;
    seeds_ = std::move(seeds);
    asio::co_spawn(context_,
                   accept_each(
                       acceptor_, alive_,
                       [this](asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint&) {
                           accept(std::move(socket));
                       },
                       [this](const std::error_code& error) {
                           log_->warn("mesh: accept failed: {}", error.message());
                       }),
                   asio::detached);
    dial_seeds();
}

void TcpTransport::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    std::error_code ignored;
    acceptor_.close(ignored);
    seed_timer_.cancel();
    auto all = connections_;
    for (auto& [id, connection] : all) {
        close(connection, "node stopping", false);
    }
    outgoing_.clear();
}

bool TcpTransport::drained() const {
    for (const auto& [id, connection] : connections_) {
        if (connection->ready && !connection->stream->outbox_empty()) {
            return false;
        }
    }
    return true;
}

TcpTransport::ConnectionPtr TcpTransport::make_connection(bool outgoing) {
    auto connection = std::make_shared<Connection>(context_, next_id_++, outgoing);
    connections_.emplace(connection->id, connection);
    ++handshaking_;
    connection->deadline.expires_after(options_.handshake_timeout);
    connection->deadline.async_wait(
        [weak = std::weak_ptr(connection)](const std::error_code& error) {
            auto held = weak.lock();
            if (!error && held && !held->ready) {
                held->timed_out = true;
                std::error_code ignored;
                held->stream->socket.close(ignored);  // the pending read fails
            }
        });
    return connection;
}

void TcpTransport::dial(const std::string& address, const NodeId& expected) {
    if (stopped_) {
        return;
    }
    auto connection = make_connection(true);
    connection->expected_peer = expected;
    connection->remote = address;
    if (!expected.empty()) {
        outgoing_[expected] = connection;
    }
    asio::co_spawn(context_, serve_outgoing(this, connection, address, alive_), asio::detached);
}

void TcpTransport::dial_seeds() {
    if (stopped_) {
        return;
    }
    if (core_ != nullptr && core_->live_members().size() <= 1) {
        for (const std::string& seed : seeds_) {
            auto parts = split_host_port(seed);
            if (!parts) {
                log_->warn("mesh: ignoring seed {}: {}", seed, parts.error());
                continue;
            }
            // A seed name may resolve to several nodes (a headless service): dial each.
            std::error_code error;
            asio::ip::tcp::resolver resolver(context_);
            auto endpoints = resolver.resolve(parts->host, std::to_string(parts->port), error);
            if (error) {
                log_->info("mesh: seed {} does not resolve: {}", seed, error.message());
                continue;
            }
            for (const auto& entry : endpoints) {
                dial(to_string(entry.endpoint()), NodeId());
            }
        }
    }
    // Retry soon at first (seeds may be starting too), then back off to seed_retry.
    seed_delay_ = std::min(seed_delay_ * 2, options_.seed_retry);
    seed_timer_.expires_after(seed_delay_);
    seed_timer_.async_wait([this, alive = alive_](const std::error_code& error) {
        if (!error && *alive) {
            dial_seeds();
        }
    });
}

Transport::SendResult TcpTransport::send(const MemberInfo& to, Frame frame) {
    if (stopped_) {
        return SendResult::unreachable;
    }
    auto found = outgoing_.find(to.id);
    if (found == outgoing_.end() || found->second->closed) {
        const Time now = steady_now();
        auto& last = last_dial_[to.id];
        if (last != Time{} && now - last < options_.reconnect_backoff) {
            return SendResult::unreachable;
        }
        last = now;
        dial(to.address, to.id);
        found = outgoing_.find(to.id);
    }
    return enqueue(found->second, std::move(frame));
}

Transport::SendResult TcpTransport::reply(ConnectionId via, Frame frame) {
    auto found = connections_.find(via);
    if (found == connections_.end() || found->second->closed) {
        return SendResult::unreachable;
    }
    return enqueue(found->second, std::move(frame));
}

Transport::SendResult TcpTransport::enqueue(const ConnectionPtr& connection, Frame frame) {
    if (!connection->stream->push(std::move(frame), options_.queue_frames_max,
                                  options_.queue_bytes_max)) {
        ++counters_.queue_full;
        return SendResult::overloaded;
    }
    ++counters_.frames_out;
    return SendResult::queued;
}

void TcpTransport::forget(const NodeId& id) {
    std::vector<ConnectionPtr> doomed;
    for (const auto& [connection_id, connection] : connections_) {
        if ((connection->ready && connection->peer.id == id) || connection->expected_peer == id) {
            doomed.push_back(connection);
        }
    }
    for (const auto& connection : doomed) {
        close(connection, "member left the cluster", false);
    }
    outgoing_.erase(id);
    last_dial_.erase(id);  // a member met again is dialed at once
}

void TcpTransport::close(const ConnectionPtr& connection, std::string_view reason,
                         bool protocol_error) {
    if (connection->closed) {
        return;
    }
    connection->closed = true;
    connection->stream->close();
    connection->deadline.cancel();
    if (!connection->ready) {
        handshake_ended(*connection);
    }
    connections_.erase(connection->id);
    for (const NodeId* id :
         {connection->ready ? &connection->peer.id : nullptr,
          connection->expected_peer.empty() ? nullptr : &connection->expected_peer}) {
        if (id != nullptr) {
            auto found = outgoing_.find(*id);
            if (found != outgoing_.end() && found->second == connection) {
                outgoing_.erase(found);
            }
        }
    }
    const std::string who = connection->ready ? connection->peer.id.str() : "unauthenticated";
    if (protocol_error) {
        throttle_.warn(*log_, connection->ready ? "peer" : "handshake",
                       "mesh: closed {} connection with {} ({}): {}",
                       connection->outgoing ? "outgoing" : "incoming", connection->remote,
                       printable(who), printable(reason));
    } else {
        log_->debug("mesh: closed {} connection with {} ({}): {}",
                    connection->outgoing ? "outgoing" : "incoming", connection->remote, who,
                    reason);
    }
}

void TcpTransport::reject_frame(const ConnectionPtr& connection, const FrameError& error) {
    ++counters_.frames_rejected[static_cast<std::size_t>(error.code)];
    close(connection, fmt::format("{}: {}", to_string(error.code), error.message), true);
}

void TcpTransport::handshake_ended(const Connection& connection) {
    --handshaking_;
    if (auto found = handshaking_from_.find(connection.source);
        !connection.source.empty() && found != handshaking_from_.end() && --found->second == 0) {
        handshaking_from_.erase(found);
    }
}

void TcpTransport::became_ready(const ConnectionPtr& connection) {
    connection->ready = true;
    handshake_ended(*connection);
    connection->deadline.cancel();
    std::error_code ignored;
    connection->stream->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    connection->stream->open_outbox();
    asio::co_spawn(context_, write_loop(this, connection, alive_), asio::detached);
}

void TcpTransport::accept(asio::ip::tcp::socket socket) {
    if (stopped_) {
        return;
    }
    if (connections_.size() >= options_.connections_max ||
        handshaking_ >= options_.handshakes_max) {
        ++counters_.connections_refused;
        throttle_.warn(*log_, "limit",
                       "mesh: refused a connection from {}: connection limit reached",
                       endpoint_text(socket));
        std::error_code ignored;
        socket.close(ignored);
        return;
    }
    const std::string source = address_text(socket);
    if (auto pending = handshaking_from_.find(source);
        pending != handshaking_from_.end() &&
        pending->second >= options_.handshakes_per_address_max) {
        ++counters_.connections_refused;
        throttle_.warn(*log_, "limit",
                       "mesh: refused a connection from {}: {} handshakes from that address are "
                       "already pending",
                       endpoint_text(socket), pending->second);
        std::error_code ignored;
        socket.close(ignored);
        return;
    }
    ++counters_.connections_accepted;
    auto connection = make_connection(false);
    connection->source = source;
    ++handshaking_from_[source];
    connection->remote = endpoint_text(socket);
    connection->stream->socket = std::move(socket);
    asio::co_spawn(context_, serve_incoming(this, connection, alive_), asio::detached);
}

asio::awaitable<std::optional<Envelope>> TcpTransport::read_frame(TcpTransport* self,
                                                                  ConnectionPtr connection,
                                                                  std::vector<capnp::word>& body) {
    auto read = co_await connection->stream->read_frame(self->options_.limits, body);
    if (!*self->alive_ || connection->closed) {
        co_return std::nullopt;
    }
    if (!read) {
        if (!connection->ready) {
            ++self->counters_.handshakes_failed;
        }
        if (read.error().frame_error) {
            self->reject_frame(connection,
                               FrameError{*read.error().frame_error, read.error().reason});
        } else {
            const bool timed_out = connection->timed_out;
            self->close(connection, timed_out ? "handshake timed out" : read.error().reason,
                        timed_out);
        }
        co_return std::nullopt;
    }
    auto envelope = decode_body(body, self->options_.limits);
    if (!envelope) {
        self->reject_frame(connection, envelope.error());
        co_return std::nullopt;
    }
    ++self->counters_.frames_in;
    co_return std::move(*envelope);
}

asio::awaitable<bool> TcpTransport::start_tls(TcpTransport* self, ConnectionPtr connection,
                                              asio::ssl::stream_base::handshake_type side,
                                              std::shared_ptr<bool> alive) {
    if (!self->options_.tls) {
        co_return true;
    }
    const std::error_code error = co_await connection->stream->start_tls(*self->options_.tls, side);
    if (!*alive || connection->closed) {
        co_return false;
    }
    if (error) {
        ++self->counters_.handshakes_failed;
        self->close(connection, fmt::format("handshake failed: TLS: {}", error.message()), true);
        co_return false;
    }
    co_return true;
}

HandshakeOptions TcpTransport::handshake_options() const {
    return HandshakeOptions{options_.cluster, options_.secret, core_->self(),
                            options_.limits.reader_options()};
}

// Closes the connection as a handshake step says: counted and logged as a failure when the peer
// failed a check; quietly when it is this node itself.
void TcpTransport::fail_handshake(const ConnectionPtr& connection, const HandshakeStep& step,
                                  std::string_view refused) {
    if (step.verdict == HandshakeStep::Verdict::itself) {
        close(connection, step.reason, false);
        return;
    }
    ++counters_.handshakes_failed;
    close(connection, fmt::format("{}: {}", refused, step.reason), true);
}

asio::awaitable<void> TcpTransport::serve_incoming(TcpTransport* self, ConnectionPtr connection,
                                                   std::shared_ptr<bool> alive) {
    if (!co_await start_tls(self, connection, asio::ssl::stream_base::server, alive)) {
        co_return;
    }
    const AcceptingHandshake handshake(self->handshake_options(), random_nonce());
    // GCC 12 mishandles temporaries with destructors inside co_await expressions: every value
    // an awaited call needs is built in a statement of its own.
    Frame challenge = handshake.challenge();
    co_await connection->stream->write_now(std::move(challenge));
    std::vector<capnp::word> body;
    auto first = co_await read_frame(self, connection, body);
    if (!*alive || !first) {
        co_return;
    }
    HandshakeStep step = handshake.receive(*first);
    if (step.verdict != HandshakeStep::Verdict::ready) {
        self->fail_handshake(connection, step, "handshake refused");
        co_return;
    }
    Frame welcome = std::move(*step.reply);
    const bool welcomed = co_await connection->stream->write_now(std::move(welcome));
    if (!welcomed) {
        self->close(connection, "peer went away during the handshake", false);
        co_return;
    }
    if (!*alive || connection->closed) {
        co_return;
    }
    connection->peer = step.peer;
    self->became_ready(connection);
    co_await read_loop(self, connection, alive);
}

asio::awaitable<bool> TcpTransport::dial(TcpTransport* self, ConnectionPtr connection,
                                         std::string address, std::shared_ptr<bool> alive) {
    auto parts = split_host_port(address);
    if (!parts) {
        self->close(connection, parts.error(), true);
        co_return false;
    }
    asio::ip::tcp::resolver resolver(self->context_);
    const std::string port = std::to_string(parts->port);
    auto [resolve_error, endpoints] =
        co_await resolver.async_resolve(parts->host, port, use_nothrow);
    if (!*alive || connection->closed) {
        co_return false;
    }
    if (resolve_error) {
        self->close(connection, fmt::format("cannot resolve: {}", resolve_error.message()), false);
        co_return false;
    }
    auto [connect_error, endpoint] =
        co_await asio::async_connect(connection->stream->socket, endpoints, use_nothrow);
    if (!*alive || connection->closed) {
        co_return false;
    }
    if (connect_error) {
        self->close(connection, fmt::format("cannot connect: {}", connect_error.message()), false);
        co_return false;
    }
    co_return co_await start_tls(self, connection, asio::ssl::stream_base::client, alive);
}

asio::awaitable<void> TcpTransport::serve_outgoing(TcpTransport* self, ConnectionPtr connection,
                                                   std::string address,
                                                   std::shared_ptr<bool> alive) {
    if (!co_await dial(self, connection, std::move(address), alive)) {
        co_return;
    }
    DialingHandshake handshake(self->handshake_options(), random_nonce());
    std::vector<capnp::word> body;
    HandshakeStep step;
    while (step.verdict == HandshakeStep::Verdict::more) {
        auto frame = co_await read_frame(self, connection, body);
        if (!*alive || !frame) {
            co_return;
        }
        step = handshake.receive(*frame);
        if (step.reply) {
            Frame hello = std::move(*step.reply);
            co_await connection->stream->write_now(std::move(hello));
        }
    }
    if (step.verdict != HandshakeStep::Verdict::ready) {
        self->fail_handshake(connection, step, "handshake failed");
        co_return;
    }
    if (!connection->expected_peer.empty() && connection->expected_peer != step.peer.id) {
        self->close(connection,
                    fmt::format("expected {} but {} answered", connection->expected_peer.str(),
                                step.peer.id.str()),
                    true);
        co_return;
    }
    connection->peer = step.peer;
    auto& slot = self->outgoing_[connection->peer.id];
    if (slot && slot != connection && slot->ready) {
        self->close(connection, "already connected", false);
        co_return;
    }
    slot = connection;
    self->became_ready(connection);
    self->core_->connected(connection->peer);
    co_await read_loop(self, connection, alive);
}

asio::awaitable<void> TcpTransport::read_loop(TcpTransport* self, ConnectionPtr connection,
                                              std::shared_ptr<bool> alive) {
    std::vector<capnp::word> body;
    while (true) {
        auto envelope = co_await read_frame(self, connection, body);
        if (!*alive || !envelope) {
            co_return;
        }
        if (!self->stopped_) {
            self->core_->deliver(connection->peer, connection->id, *envelope);
        }
        if (connection->closed) {
            co_return;
        }
    }
}

asio::awaitable<void> TcpTransport::write_loop(TcpTransport* self, ConnectionPtr connection,
                                               std::shared_ptr<bool> alive) {
    std::shared_ptr<FramedStream> stream = connection->stream;
    const std::error_code error = co_await FramedStream::write_loop(std::move(stream), alive);
    if (*alive && error) {
        self->close(connection, fmt::format("write failed: {}", error.message()), false);
    }
}

}  // namespace matchmesh::mesh
