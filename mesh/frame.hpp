#pragma once
// Frames: how an Envelope travels between nodes (format in envelope.capnp). Encoding and decoding
// are shared by the TCP transport and the simulation, so simulated frames are bytes too.

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <capnp/message.h>

#include "mesh/base/error.hpp"
#include "mesh/network.hpp"

namespace matchmesh::mesh {

inline constexpr std::size_t frame_header_bytes = 8;
inline constexpr std::uint16_t frame_version = 1;

struct FrameLimits {
    std::size_t frame_bytes_max = 1024 * 1024;
    std::uint64_t traversal_words_max = 256 * 1024;  // Cap'n Proto traversal limit per message
    int nesting_max = 16;                            // Cap'n Proto nesting limit

    [[nodiscard]] capnp::ReaderOptions reader_options() const {
        capnp::ReaderOptions options;
        options.traversalLimitInWords = traversal_words_max;
        options.nestingLimit = nesting_max;
        return options;
    }
};

enum class FrameErrc {
    empty,        // body length 0
    oversized,    // body longer than the limit
    misaligned,   // body length not a multiple of 8
    bad_version,  // unknown frame version or reserved bits set
    malformed,    // the body is not a valid Envelope message
};

inline constexpr std::size_t frame_errc_count = static_cast<std::size_t>(FrameErrc::malformed) + 1;

[[nodiscard]] std::string_view to_string(FrameErrc code);
// A short snake_case name for metrics' labels ("too_large"): a fixed set, never a message.
[[nodiscard]] std::string_view label_of(FrameErrc code);

using FrameError = Error<FrameErrc>;

enum class EnvelopeKind : std::uint8_t { one_way, request, response, failure };

// A decoded envelope. `payload` and `error_message` point into the frame body it was decoded from.
struct Envelope {
    ServiceId service = 0;
    MethodId method = 0;
    std::uint64_t correlation = 0;
    EnvelopeKind kind = EnvelopeKind::one_way;
    PayloadView payload;
    std::uint16_t error_code = 0;
    std::string_view error_message;
};

// Header and body, ready to write. The body starts 8 bytes in, so it stays word-aligned.
using Frame = std::vector<std::byte>;

struct FrameFields {
    ServiceId service = 0;
    MethodId method = 0;
    std::uint64_t correlation = 0;
    EnvelopeKind kind = EnvelopeKind::one_way;
    std::uint16_t error_code = 0;
    std::string_view error_message;
};

[[nodiscard]] Frame encode_frame(const FrameFields& fields, std::span<const capnp::word> payload);

// The header of a frame whose body is `body_bytes` long (a whole number of words, at most 4 GiB).
[[nodiscard]] std::array<std::byte, frame_header_bytes> frame_header(std::size_t body_bytes);

// A frame whose body is `message` itself (the client protocol's framing).
[[nodiscard]] Frame encode_message_frame(capnp::MessageBuilder& message);

// Checks a header and returns the body length it announces.
[[nodiscard]] std::expected<std::size_t, FrameError> parse_header(
    std::span<const std::byte, frame_header_bytes> header, const FrameLimits& limits);

// Decodes a body (word-aligned, as read after its header).
[[nodiscard]] std::expected<Envelope, FrameError> decode_body(std::span<const capnp::word> body,
                                                              const FrameLimits& limits);

// Decodes a whole frame as produced by encode_frame (used where frames stay in memory).
[[nodiscard]] std::expected<Envelope, FrameError> decode_frame(const Frame& frame,
                                                               const FrameLimits& limits);

// Words in the first segment a builder borrows from its thread: a message up to this size is one
// segment, which its reader reaches without the lookups (and lock) that further segments cost.
inline constexpr unsigned scratch_segment_words = 8192;
// The first segment of a builder made while the thread's is lent to another.
inline constexpr unsigned own_segment_words = 64;

namespace detail {
// Lends the thread's scratch segment (zeroed) to one builder at a time, or, while it is lent,
// gives a zeroed segment of the borrower's own. The builder zeroes what it used when it ends, so
// the scratch is ready for the next one.
class SegmentLease {
protected:
    SegmentLease();
    ~SegmentLease();
    SegmentLease(const SegmentLease&) = delete;
    SegmentLease& operator=(const SegmentLease&) = delete;
    [[nodiscard]] kj::ArrayPtr<capnp::word> segment() { return segment_; }

private:
    kj::ArrayPtr<capnp::word> segment_;
    kj::Array<capnp::word> own_;  // only while the thread's scratch is lent
};
}  // namespace detail

// A message builder whose first segment is the thread's scratch (or, while another builder holds
// that, a small one of its own): a message that fits costs no allocation until it is encoded.
class LocalMessageBuilder : private detail::SegmentLease, public capnp::MallocMessageBuilder {
public:
    LocalMessageBuilder() : capnp::MallocMessageBuilder(segment()) {}
};

// Builds a one-message payload with the given root type filled by `fill`: one allocation, the
// payload's, for a message that fits the first segment.
template <typename Root, typename Fill>
[[nodiscard]] Payload make_payload(Fill&& fill) {
    LocalMessageBuilder message;
    fill(message.initRoot<Root>());
    return Payload::encode(message);
}

}  // namespace matchmesh::mesh
