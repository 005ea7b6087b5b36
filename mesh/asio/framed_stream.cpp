#include "mesh/asio/framed_stream.hpp"

#include <cstring>

#include <fmt/format.h>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "mesh/asio/listener.hpp"

namespace matchmesh::mesh {
namespace {

constexpr std::size_t write_batch_frames = 256;
constexpr std::size_t write_batch_bytes = 4 * 1024 * 1024;
constexpr std::size_t body_growth_bytes = 4 * 1024;

}  // namespace

FramedStream::FramedStream(asio::io_context& context, std::size_t read_buffer_bytes)
    : socket(context),
      in_size_(std::max<std::size_t>(read_buffer_bytes, frame_header_bytes)),
      in_(std::make_unique_for_overwrite<std::byte[]>(in_size_)),
      wake_(context) {
    wake_.expires_at(asio::steady_timer::time_point::max());
}

bool FramedStream::push(Frame frame, std::size_t frames_max, std::size_t bytes_max) {
    if (outbox_.size() >= frames_max || outbox_bytes_ + frame.size() > bytes_max) {
        return false;
    }
    outbox_bytes_ += frame.size();
    outbox_.push_back(std::move(frame));
    if (writable_) {
        wake_.cancel();
    }
    return true;
}

void FramedStream::open_outbox() {
    writable_ = true;
    wake_.cancel();
}

void FramedStream::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    std::error_code ignored;
    socket.close(ignored);
    wake_.cancel();
}

std::string FramedStream::remote() const {
    std::error_code error;
    const auto endpoint = socket.remote_endpoint(error);
    return error ? std::string("?") : to_string(endpoint);
}

asio::awaitable<std::error_code> FramedStream::start_tls(
    asio::ssl::context& context, asio::ssl::stream_base::handshake_type side) {
    tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket, context);
    auto [error] = co_await tls_->async_handshake(side, use_nothrow);
    co_return error;
}

asio::awaitable<std::pair<std::error_code, std::size_t>> FramedStream::read_some(
    asio::mutable_buffer buffer) {
    if (tls_) {
        auto [error, read] = co_await tls_->async_read_some(buffer, use_nothrow);
        co_return std::pair(error, read);
    }
    auto [error, read] = co_await socket.async_read_some(buffer, use_nothrow);
    co_return std::pair(error, read);
}

template <typename Buffers>
asio::awaitable<std::error_code> FramedStream::write_all(const Buffers& buffers) {
    if (tls_) {
        auto [error, written] = co_await asio::async_write(*tls_, buffers, use_nothrow);
        co_return error;
    }
    auto [error, written] = co_await asio::async_write(socket, buffers, use_nothrow);
    co_return error;
}

asio::awaitable<std::error_code> FramedStream::fill() {
    if (in_begin_ > 0) {  // keep the unread part at the front
        std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
    }
    const asio::mutable_buffer free(in_.get() + in_end_, in_size_ - in_end_);
    auto [error, read] = co_await read_some(free);
    in_end_ += read;
    co_return error;
}

asio::awaitable<std::expected<void, FramedStream::ReadFailure>> FramedStream::read_frame(
    const FrameLimits& limits, std::vector<capnp::word>& body) {
    while (in_end_ - in_begin_ < frame_header_bytes) {
        if (const std::error_code error = co_await fill()) {
            co_return std::unexpected(
                ReadFailure{ReadFailure::Kind::disconnected, error.message(), {}});
        }
    }
    auto length = parse_header(
        std::span<const std::byte, frame_header_bytes>(in_.get() + in_begin_, frame_header_bytes),
        limits);
    if (!length) {
        co_return std::unexpected(ReadFailure{
            ReadFailure::Kind::bad_frame,
            fmt::format("{}: {}", to_string(length.error().code), length.error().message),
            length.error().code});
    }
    in_begin_ += frame_header_bytes;
    // The body's memory grows with the bytes that arrive (doubling, from 4 KiB past what is
    // buffered), not with what the header promises: a party that promises large frames and
    // sends them slowly holds little memory.
    const auto words_for = [&](std::size_t bytes) {
        return (std::min(bytes, *length) + sizeof(capnp::word) - 1) / sizeof(capnp::word);
    };
    const std::size_t buffered = std::min(in_end_ - in_begin_, *length);
    body.resize(words_for(buffered + body_growth_bytes));
    std::memcpy(body.data(), in_.get() + in_begin_, buffered);
    in_begin_ += buffered;
    std::size_t received = buffered;
    while (received < *length) {  // the rest of a large frame goes straight into the body
        if (received == body.size() * sizeof(capnp::word)) {
            body.resize(words_for(std::max(2 * received, received + body_growth_bytes)));
        }
        auto* target = reinterpret_cast<std::byte*>(body.data()) + received;
        const std::size_t room = body.size() * sizeof(capnp::word) - received;
        const asio::mutable_buffer rest(target, room);
        auto [error, read] = co_await read_some(rest);
        if (error) {
            co_return std::unexpected(ReadFailure{
                ReadFailure::Kind::bad_frame, fmt::format("truncated frame: {}", error.message()),
                FrameErrc::malformed});
        }
        received += read;
    }
    co_return std::expected<void, ReadFailure>{};
}

asio::awaitable<bool> FramedStream::write_now(Frame frame) {
    const asio::const_buffer bytes = asio::buffer(frame);
    const std::error_code error = co_await write_all(bytes);
    co_return !error;
}

asio::awaitable<std::error_code> FramedStream::write_loop(std::shared_ptr<FramedStream> stream,
                                                          std::shared_ptr<bool> alive) {
    std::vector<asio::const_buffer> buffers;
    while (!stream->closed_) {
        if (stream->outbox_.empty() || !stream->writable_) {
            co_await stream->wake_.async_wait(use_nothrow);
            if (!*alive) {
                co_return std::error_code{};
            }
            continue;
        }
        buffers.clear();
        std::size_t bytes = 0;
        for (const Frame& frame : stream->outbox_) {
            if (buffers.size() == write_batch_frames || bytes >= write_batch_bytes) {
                break;
            }
            buffers.push_back(asio::buffer(frame));
            bytes += frame.size();
        }
        const std::error_code error = co_await stream->write_all(buffers);
        if (!*alive || stream->closed_) {
            co_return std::error_code{};
        }
        if (error) {
            co_return error;
        }
        for (std::size_t i = 0; i < buffers.size(); ++i) {
            stream->outbox_bytes_ -= stream->outbox_.front().size();
            stream->outbox_.pop_front();
        }
    }
    co_return std::error_code{};
}

}  // namespace matchmesh::mesh
