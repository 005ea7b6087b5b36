#pragma once
// TcpTransport: MeshCore's transport between processes. One TCP connection per direction and
// peer: this node's requests and one-way messages travel on the connection it dialed, and it
// answers a peer's requests on the connection that peer dialed.
//
// Every connection opens with the handshake of envelope.capnp (HMAC-SHA256 over fresh nonces with
// the cluster secret); until it completes nothing else is accepted, and a handshake that fails or
// takes too long closes the connection with its reason logged. Each connection has one reader
// and one writer coroutine; the writer drains a bounded outbox, many frames per write. A frame
// that breaks the frame rules closes its connection; the node keeps serving everyone else.
//
// Owned by the node; lives on the node's io_context thread. stop() closes everything; the
// io_context must then run until the coroutines finish before the transport is destroyed.

#include <array>
#include <cstdint>
#include <deque>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <spdlog/logger.h>
#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "mesh/asio/framed_stream.hpp"
#include "mesh/asio/listener.hpp"
#include "mesh/asio/log_throttle.hpp"
#include "mesh/asio/tls.hpp"
#include "mesh/control.hpp"
#include "mesh/frame.hpp"
#include "mesh/handshake.hpp"
#include "mesh/mesh_core.hpp"

namespace matchmesh::mesh {

struct TcpOptions {
    std::string listen = "127.0.0.1:7100";  // host:port to bind
    std::string cluster = "matchmesh";
    std::string secret;
    FrameLimits limits;
    std::size_t queue_frames_max = 65536;            // per connection
    std::size_t queue_bytes_max = 64 * 1024 * 1024;  // per connection
    Duration handshake_timeout{3000};
    Duration reconnect_backoff{250};  // between dials of one member
    Duration seed_retry{2000};        // re-dial seeds while this node is alone
    std::size_t connections_max = 1024;
    std::size_t handshakes_max = 64;  // connections not yet authenticated
    // Of those, from one address: a flood from one source cannot hold every handshake slot and
    // keep a restarted member out (a node dials each peer once, so a few are plenty).
    std::size_t handshakes_per_address_max = 16;
    // With a context, every connection runs TLS (both sides show a certificate the CA signed)
    // before the cluster's own handshake.
    TlsContext tls;
};

struct TcpCounters {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_refused = 0;  // over a connection limit
    std::uint64_t handshakes_failed = 0;
    std::uint64_t frames_in = 0;   // read from peers, handshakes included
    std::uint64_t frames_out = 0;  // queued for peers (the handshake's own frames aside)
    std::uint64_t queue_full = 0;  // frames not queued: the connection's outbox was full
    // Frames that closed their connection, by what was wrong with them (indexed by FrameErrc).
    std::array<std::uint64_t, frame_errc_count> frames_rejected{};
};

class TcpTransport final : public Transport {
public:
    TcpTransport(asio::io_context& context, TcpOptions options,
                 std::shared_ptr<spdlog::logger> log);
    ~TcpTransport() override;
    TcpTransport(const TcpTransport&) = delete;
    TcpTransport& operator=(const TcpTransport&) = delete;

    // Binds the listening socket; the error names the address and the reason (e.g. in use).
    [[nodiscard]] std::expected<asio::ip::tcp::endpoint, std::string> listen();
    // Starts accepting and dials the seeds (host:port; a host may resolve to several addresses).
    void start(MeshCore& core, std::vector<std::string> seeds);
    void stop();
    // Whether every outbox is empty (to finish a graceful leave).
    [[nodiscard]] bool drained() const;

    SendResult send(const MemberInfo& to, Frame frame) override;
    SendResult reply(ConnectionId via, Frame frame) override;
    void forget(const NodeId& id) override;

    [[nodiscard]] const TcpCounters& counters() const { return counters_; }
    [[nodiscard]] std::size_t connection_count() const { return connections_.size(); }

private:
    struct Connection;
    using ConnectionPtr = std::shared_ptr<Connection>;

    ConnectionPtr make_connection(bool outgoing);
    // `expected`: the member we mean to reach, or empty for a seed (anyone in the cluster).
    void dial(const std::string& address, const NodeId& expected);
    void dial_seeds();
    SendResult enqueue(const ConnectionPtr& connection, Frame frame);
    void close(const ConnectionPtr& connection, std::string_view reason, bool protocol_error);
    void reject_frame(const ConnectionPtr& connection, const FrameError& error);
    void became_ready(const ConnectionPtr& connection);
    void handshake_ended(const Connection& connection);
    [[nodiscard]] HandshakeOptions handshake_options() const;
    void fail_handshake(const ConnectionPtr& connection, const HandshakeStep& step,
                        std::string_view refused);

    void accept(asio::ip::tcp::socket socket);

    // Coroutines; each gets its arguments by value.
    static asio::awaitable<void> serve_incoming(TcpTransport* self, ConnectionPtr connection,
                                                std::shared_ptr<bool> alive);
    static asio::awaitable<void> serve_outgoing(TcpTransport* self, ConnectionPtr connection,
                                                std::string address, std::shared_ptr<bool> alive);
    // Resolves, connects and runs TLS; false when the connection was closed.
    static asio::awaitable<bool> dial(TcpTransport* self, ConnectionPtr connection,
                                      std::string address, std::shared_ptr<bool> alive);
    static asio::awaitable<void> read_loop(TcpTransport* self, ConnectionPtr connection,
                                           std::shared_ptr<bool> alive);
    static asio::awaitable<void> write_loop(TcpTransport* self, ConnectionPtr connection,
                                            std::shared_ptr<bool> alive);
    // Runs TLS first when the transport has a context; false when the connection was closed
    // (a failed handshake is counted and closes it).
    static asio::awaitable<bool> start_tls(TcpTransport* self, ConnectionPtr connection,
                                           asio::ssl::stream_base::handshake_type side,
                                           std::shared_ptr<bool> alive);
    // Reads one frame into `body`; an empty optional means the connection was closed.
    static asio::awaitable<std::optional<Envelope>> read_frame(TcpTransport* self,
                                                               ConnectionPtr connection,
                                                               std::vector<capnp::word>& body);

    asio::io_context& context_;
    TcpOptions options_;
    std::shared_ptr<spdlog::logger> log_;
    LogThrottle throttle_;
    MeshCore* core_ = nullptr;
    asio::ip::tcp::acceptor acceptor_;
    asio::steady_timer seed_timer_;
    std::vector<std::string> seeds_;
    Duration seed_delay_{50};
    std::unordered_map<ConnectionId, ConnectionPtr> connections_;  // every open connection
    std::unordered_map<NodeId, ConnectionPtr> outgoing_;           // the one this node dialed
    std::unordered_map<NodeId, Time> last_dial_;
    ConnectionId next_id_ = 1;
    std::size_t handshaking_ = 0;
    std::unordered_map<std::string, std::size_t> handshaking_from_;  // incoming, by address
    bool stopped_ = false;
    TcpCounters counters_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::mesh
