#pragma once
// FramedStream: a TCP socket carrying frames (frame.hpp's header and body), with a bounded outbox
// that a writer coroutine drains many frames per write, optionally inside TLS. Shared by the mesh
// transport and the client port.
//
// Owned through a shared_ptr by whoever serves the connection; lives on one io_context thread.

#include <cstddef>
#include <deque>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>

#include "mesh/frame.hpp"

namespace matchmesh::mesh {

class FramedStream {
public:
    // Frames are read through a buffer of `read_buffer_bytes`, so that one read system call can
    // bring many frames; a frame larger than it is read straight into its body.
    static constexpr std::size_t default_read_buffer_bytes = 64 * 1024;
    explicit FramedStream(asio::io_context& context,
                          std::size_t read_buffer_bytes = default_read_buffer_bytes);

    asio::ip::tcp::socket socket;

    // Runs the TLS handshake on the connected socket; from then on every frame goes through TLS.
    // Returns the error that stopped it (a certificate the CA did not sign, garbage, a close).
    [[nodiscard]] asio::awaitable<std::error_code> start_tls(
        asio::ssl::context& context, asio::ssl::stream_base::handshake_type side);
    [[nodiscard]] bool tls() const { return tls_ != nullptr; }

    // Queues a frame; false (and nothing queued) when the outbox is at either bound.
    [[nodiscard]] bool push(Frame frame, std::size_t frames_max, std::size_t bytes_max);
    // Lets the writer run (call once the connection may send what is queued).
    void open_outbox();
    // Closes the socket and wakes the writer so that it ends.
    void close();

    [[nodiscard]] bool closed() const { return closed_; }
    [[nodiscard]] bool outbox_empty() const { return outbox_.empty(); }
    [[nodiscard]] std::size_t outbox_frames() const { return outbox_.size(); }
    [[nodiscard]] std::string remote() const;

    // Why reading a frame stopped.
    struct ReadFailure {
        enum class Kind { disconnected, bad_frame } kind;
        std::string reason;
        std::optional<FrameErrc> frame_error;
    };
    // Reads the next frame into `body` (word-aligned; its length is the frame's body length).
    // Frames already buffered are returned without waiting for the socket.
    [[nodiscard]] asio::awaitable<std::expected<void, ReadFailure>> read_frame(
        const FrameLimits& limits, std::vector<capnp::word>& body);
    // Writes one frame now, outside the outbox (handshakes, before the writer runs).
    [[nodiscard]] asio::awaitable<bool> write_now(Frame frame);
    // Writes queued frames until the stream closes; returns the error that stopped it, if any.
    // `alive` is checked after each wait, so the owner may be gone when it returns.
    static asio::awaitable<std::error_code> write_loop(std::shared_ptr<FramedStream> stream,
                                                       std::shared_ptr<bool> alive);

private:
    // Reads what the socket has (at most the free part of the buffer); false when disconnected.
    [[nodiscard]] asio::awaitable<std::error_code> fill();
    // One read or a whole write, through TLS once it started.
    [[nodiscard]] asio::awaitable<std::pair<std::error_code, std::size_t>> read_some(
        asio::mutable_buffer buffer);
    template <typename Buffers>
    [[nodiscard]] asio::awaitable<std::error_code> write_all(const Buffers& buffers);

    std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;

    // Bytes read and not yet framed, in [in_begin_, in_end_); left uninitialized until read into
    // (a client's connection costs no zeroing of its buffer).
    std::size_t in_size_;
    std::unique_ptr<std::byte[]> in_;
    std::size_t in_begin_ = 0;
    std::size_t in_end_ = 0;

    asio::steady_timer wake_;  // the writer sleeps on it until there is something to send
    std::deque<Frame> outbox_;
    std::size_t outbox_bytes_ = 0;
    bool writable_ = false;
    bool closed_ = false;
};

}  // namespace matchmesh::mesh
