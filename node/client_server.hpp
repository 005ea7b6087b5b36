#pragma once
// ClientServer: the node's client port. Accepts connections up to a limit, reads framed
// requests (client.capnp) with tight decoding limits, hands each to the handler, and queues its
// reply on a bounded outbox. A frame that breaks the framing rules closes that connection (the
// stream cannot be trusted past it); a readable frame that is not a valid request gets an error
// reply, and the connection stays usable. Nothing one client sends disturbs another.
//
// Owned by the node; lives on the node's io_context thread. stop() closes every connection.

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <spdlog/logger.h>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "mesh/asio/framed_stream.hpp"
#include "mesh/asio/log_throttle.hpp"
#include "mesh/asio/tls.hpp"
#include "node/client_protocol.hpp"
#include "node/session.hpp"

namespace matchmesh::node {

struct ClientServerOptions {
    std::string listen = "127.0.0.1:7200";
    std::size_t frame_bytes_max = 64 * 1024;
    std::size_t connections_max = 10000;
    std::size_t outbox_frames_max = 1024;
    std::size_t outbox_bytes_max = 16 * 1024 * 1024;
    std::uint64_t traversal_words_max = 64 * 1024;
    int nesting_max = 8;
    int commands_per_second = 100;                   // per session, with bursts of as many
    std::chrono::milliseconds hello_timeout{10000};  // a connection silent this long is closed
    // With a context, clients speak TLS (the node shows its certificate; clients show none).
    // Oversized frames and the connection limit then close without a last word.
    mesh::TlsContext tls;
};

// Why the client port closed a connection: a fixed set, each with a short label for the metrics.
enum class CloseReason : std::uint8_t {
    disconnected,      // the client closed it, or its socket failed
    slow_reader,       // its outbox filled: it does not read what it is sent
    hello_timeout,     // no hello within the hello timeout
    limit,             // turned away on arrival: the connection limit was reached
    bad_frame,         // a frame broke the framing rules
    handshake_failed,  // the TLS handshake failed
    error,             // handling one of its requests threw
    replaced,          // a newer session of its user began
    stopping,          // the node stops
};
inline constexpr std::size_t close_reasons_count =
    static_cast<std::size_t>(CloseReason::stopping) + 1;
[[nodiscard]] std::string_view label_of(CloseReason reason);

struct ClientCounters {
    std::uint64_t connections_accepted = 0;
    std::uint64_t requests = 0;
    std::uint64_t malformed_requests = 0;  // readable frames that are no valid request (answered)
    std::uint64_t rate_limited = 0;        // requests refused for the session's command rate
    // Frames that closed their connection, by what was wrong with them (indexed by FrameErrc).
    std::array<std::uint64_t, mesh::frame_errc_count> frames_rejected{};
    std::array<std::uint64_t, close_reasons_count> closed{};  // indexed by CloseReason

    [[nodiscard]] std::uint64_t closed_for(CloseReason reason) const {
        return closed[static_cast<std::size_t>(reason)];
    }
};

class ClientServer {
public:
    ClientServer(asio::io_context& context, ClientServerOptions options, ClientHandler& handler,
                 std::shared_ptr<spdlog::logger> log);
    ~ClientServer();
    ClientServer(const ClientServer&) = delete;
    ClientServer& operator=(const ClientServer&) = delete;

    [[nodiscard]] std::expected<asio::ip::tcp::endpoint, std::string> listen();
    void start();
    void stop();

    [[nodiscard]] const ClientCounters& counters() const { return counters_; }
    [[nodiscard]] std::size_t connection_count() const { return connections_.size(); }

    // Queues a push to a session; closes it if its outbox is full (it does not read).
    void push(const std::shared_ptr<Session>& session, const ticket::PushMessage& message);
    // Closes a session's connection (e.g. replaced by a newer session of its user).
    void close_session(const std::shared_ptr<Session>& session, std::string_view reason);

private:
    using StreamPtr = std::shared_ptr<mesh::FramedStream>;
    struct Connection {
        StreamPtr stream;
        std::shared_ptr<Session> session;
    };
    struct HelloDue {
        std::chrono::steady_clock::time_point at;
        mesh::FramedStream* stream;  // a key into connections_, valid if the session ID matches
        std::uint64_t session_id;
    };

    void send(const StreamPtr& stream, mesh::Frame frame);
    // Closes a connection, counted under `why`; `detail` is for the log.
    void close(const StreamPtr& stream, CloseReason why, std::string_view detail);
    void arm_hello_timer();
    void close_silent();
    void forget_greeted();
    // The connection of `due` if it is still open and has not said hello, else null.
    [[nodiscard]] const Connection* still_silent(const HelloDue& due) const;
    [[nodiscard]] bool take_budget(Session& session);
    void accept(asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint& peer);
    static asio::awaitable<void> serve(ClientServer* self, StreamPtr stream,
                                       std::shared_ptr<Session> session,
                                       std::shared_ptr<bool> alive);
    static asio::awaitable<void> serve_requests(ClientServer* self, StreamPtr stream,
                                                std::shared_ptr<Session> session,
                                                std::shared_ptr<bool> alive);

    asio::io_context& context_;
    ClientServerOptions options_;
    ClientHandler& handler_;
    std::shared_ptr<spdlog::logger> log_;
    asio::ip::tcp::acceptor acceptor_;
    mesh::FrameLimits limits_;
    std::unordered_map<mesh::FramedStream*, Connection> connections_;
    std::unordered_map<Session*, StreamPtr> streams_;
    std::uint64_t next_session_ = 1;
    // Connections that have not said hello yet, oldest first. One timeout for all puts their
    // deadlines in accept order, so one timer closes the silent ones: a node taking thousands of
    // connections a second sets no timer per connection.
    std::deque<HelloDue> awaiting_hello_;
    asio::steady_timer hello_timer_;
    bool hello_timer_armed_ = false;
    bool stopped_ = false;
    ClientCounters counters_;
    mesh::LogThrottle throttle_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::node
