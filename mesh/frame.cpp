#include "mesh/frame.hpp"

#include <algorithm>
#include <cstring>

#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>
#include <kj/io.h>

#include "mesh/base/assert.hpp"
#include "mesh/envelope.capnp.h"

namespace matchmesh::mesh {
namespace {

void put_u32(std::byte* out, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) {
        out[i] = static_cast<std::byte>(value >> (8 * i));
    }
}

void put_u16(std::byte* out, std::uint16_t value) {
    out[0] = static_cast<std::byte>(value);
    out[1] = static_cast<std::byte>(value >> 8);
}

std::uint32_t get_u32(const std::byte* in) {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
        value |= static_cast<std::uint32_t>(in[i]) << (8 * i);
    }
    return value;
}

std::uint16_t get_u16(const std::byte* in) {
    return static_cast<std::uint16_t>(static_cast<std::uint16_t>(in[0]) |
                                      (static_cast<std::uint16_t>(in[1]) << 8));
}

wire::Envelope::Kind to_wire(EnvelopeKind kind) {
    switch (kind) {
        case EnvelopeKind::one_way: return wire::Envelope::Kind::ONE_WAY;
        case EnvelopeKind::request: return wire::Envelope::Kind::REQUEST;
        case EnvelopeKind::response: return wire::Envelope::Kind::RESPONSE;
        case EnvelopeKind::failure: return wire::Envelope::Kind::FAILURE;
    }
    MM_ASSERT(false);
}

std::expected<EnvelopeKind, FrameError> from_wire(wire::Envelope::Kind kind) {
    switch (kind) {
        case wire::Envelope::Kind::ONE_WAY: return EnvelopeKind::one_way;
        case wire::Envelope::Kind::REQUEST: return EnvelopeKind::request;
        case wire::Envelope::Kind::RESPONSE: return EnvelopeKind::response;
        case wire::Envelope::Kind::FAILURE: return EnvelopeKind::failure;
    }
    return fail(FrameErrc::malformed, "unknown envelope kind");
}

}  // namespace

std::string_view to_string(FrameErrc code) {
    switch (code) {
        case FrameErrc::empty: return "empty frame";
        case FrameErrc::oversized: return "oversized frame";
        case FrameErrc::misaligned: return "misaligned frame";
        case FrameErrc::bad_version: return "bad frame version";
        case FrameErrc::malformed: return "malformed frame";
    }
    return "frame error";
}

std::string_view label_of(FrameErrc code) {
    switch (code) {
        case FrameErrc::empty: return "empty";
        case FrameErrc::oversized: return "too_large";
        case FrameErrc::misaligned: return "misaligned";
        case FrameErrc::bad_version: return "bad_version";
        case FrameErrc::malformed: return "malformed";
    }
    return "other";
}

namespace detail {

namespace {
struct Scratch {
    std::vector<std::uint64_t> words = std::vector<std::uint64_t>(scratch_segment_words);
    bool lent = false;
};
thread_local Scratch scratch;
}  // namespace

SegmentLease::SegmentLease() {
    if (!scratch.lent) {
        scratch.lent = true;
        segment_ = kj::arrayPtr(reinterpret_cast<capnp::word*>(scratch.words.data()),
                                scratch.words.size());
    } else {
        own_ = kj::heapArray<capnp::word>(own_segment_words);
        std::memset(own_.begin(), 0, own_.size() * sizeof(capnp::word));
        segment_ = own_;
    }
}

SegmentLease::~SegmentLease() {
    if (own_ == nullptr) {
        scratch.lent = false;
    }
}

}  // namespace detail

Frame encode_frame(const FrameFields& fields, std::span<const capnp::word> payload) {
    // The envelope is built in place, in the frame's own zeroed buffer: past the frame header
    // and the one-segment table that Cap'n Proto's stream format puts before its segment. A
    // frame costs one allocation and one copy of the payload. The segment is sized for the
    // envelope's root pointer and struct (5 words, 3 more to spare), the payload and the error
    // message; what is left over is cut off once the envelope is built.
    constexpr std::size_t table_bytes = 8;  // segment count - 1, then the segment's words
    const bool failure = fields.kind == EnvelopeKind::failure;
    const std::size_t text_words =
        failure ? (fields.error_message.size() + 1 + sizeof(capnp::word) - 1) / sizeof(capnp::word)
                : 0;
    const std::size_t segment_words = 8 + payload.size() + text_words;
    constexpr std::size_t segment_offset = frame_header_bytes + table_bytes;
    static_assert(segment_offset % sizeof(capnp::word) == 0);
    Frame frame(segment_offset + segment_words * sizeof(capnp::word));
    capnp::FlatMessageBuilder message(
        kj::arrayPtr(reinterpret_cast<capnp::word*>(frame.data() + segment_offset), segment_words));
    auto envelope = message.initRoot<wire::Envelope>();
    envelope.setService(fields.service);
    envelope.setMethod(fields.method);
    envelope.setCorrelation(fields.correlation);
    envelope.setKind(to_wire(fields.kind));
    if (!payload.empty()) {
        envelope.setPayload(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size_bytes()));
    }
    if (failure) {
        envelope.setErrorCode(fields.error_code);
        envelope.setErrorMessage(std::string(fields.error_message));
    }
    const auto segments = message.getSegmentsForOutput();
    MM_ASSERT(segments.size() == 1 && segments[0].size() <= segment_words);
    const std::size_t used_words = segments[0].size();
    const std::size_t body_bytes = table_bytes + used_words * sizeof(capnp::word);
    frame.resize(frame_header_bytes + body_bytes);
    const auto header = frame_header(body_bytes);
    std::copy(header.begin(), header.end(), frame.begin());
    put_u32(frame.data() + frame_header_bytes, 0);  // one segment
    put_u32(frame.data() + frame_header_bytes + 4, static_cast<std::uint32_t>(used_words));
    return frame;
}

std::array<std::byte, frame_header_bytes> frame_header(std::size_t body_bytes) {
    MM_ASSERT(body_bytes <= UINT32_MAX && body_bytes % sizeof(capnp::word) == 0);
    std::array<std::byte, frame_header_bytes> header{};
    put_u32(header.data(), static_cast<std::uint32_t>(body_bytes));
    put_u16(header.data() + 4, frame_version);
    return header;
}

Frame encode_message_frame(capnp::MessageBuilder& message) {
    const std::size_t body_bytes =
        capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word);
    Frame frame(frame_header_bytes + body_bytes);
    const auto header = frame_header(body_bytes);
    std::copy(header.begin(), header.end(), frame.begin());
    write_flat(message, std::span(frame).subspan(frame_header_bytes));
    return frame;
}

std::expected<std::size_t, FrameError> parse_header(
    std::span<const std::byte, frame_header_bytes> header, const FrameLimits& limits) {
    const std::size_t length = get_u32(header.data());
    const std::uint16_t version = get_u16(header.data() + 4);
    const std::uint16_t reserved = get_u16(header.data() + 6);
    if (version != frame_version || reserved != 0) {
        return fail(FrameErrc::bad_version,
                    fmt::format("frame version {} (reserved {}), expected {}", version, reserved,
                                frame_version));
    }
    if (length == 0) {
        return fail(FrameErrc::empty, "frame body is empty");
    }
    if (length > limits.frame_bytes_max) {
        return fail(FrameErrc::oversized, fmt::format("frame body of {} bytes exceeds {}", length,
                                                      limits.frame_bytes_max));
    }
    if (length % sizeof(capnp::word) != 0) {
        return fail(FrameErrc::misaligned,
                    fmt::format("frame body of {} bytes is not whole words", length));
    }
    return length;
}

std::expected<Envelope, FrameError> decode_body(std::span<const capnp::word> body,
                                                const FrameLimits& limits) {
    MM_ASSERT(reinterpret_cast<std::uintptr_t>(body.data()) % alignof(capnp::word) == 0);
    try {
        capnp::FlatArrayMessageReader reader(kj::arrayPtr(body.data(), body.size()),
                                             limits.reader_options());
        auto root = reader.getRoot<wire::Envelope>();
        auto kind = from_wire(root.getKind());
        if (!kind) {
            return std::unexpected(kind.error());
        }
        Envelope envelope;
        envelope.service = root.getService();
        envelope.method = root.getMethod();
        envelope.correlation = root.getCorrelation();
        envelope.kind = *kind;
        auto payload = root.getPayload();
        if (payload.size() % sizeof(capnp::word) != 0) {
            return fail(FrameErrc::malformed, "payload is not whole words");
        }
        envelope.payload = PayloadView(reinterpret_cast<const capnp::word*>(payload.begin()),
                                       payload.size() / sizeof(capnp::word));
        if (envelope.kind == EnvelopeKind::failure) {  // only a failure says what went wrong
            envelope.error_code = root.getErrorCode();
            const auto message = root.getErrorMessage();
            envelope.error_message = std::string_view(message.begin(), message.size());
        }
        return envelope;
    } catch (const kj::Exception& error) {
        return fail(FrameErrc::malformed,
                    fmt::format("undecodable envelope: {}", error.getDescription().cStr()));
    }
}

std::expected<Envelope, FrameError> decode_frame(const Frame& frame, const FrameLimits& limits) {
    if (frame.size() < frame_header_bytes) {
        return fail(FrameErrc::malformed, "frame shorter than its header");
    }
    auto length = parse_header(
        std::span<const std::byte, frame_header_bytes>(frame.data(), frame_header_bytes), limits);
    if (!length) {
        return std::unexpected(length.error());
    }
    if (*length != frame.size() - frame_header_bytes) {
        return fail(FrameErrc::malformed, "frame length does not match its header");
    }
    return decode_body(
        std::span(reinterpret_cast<const capnp::word*>(frame.data() + frame_header_bytes),
                  *length / sizeof(capnp::word)),
        limits);
}

}  // namespace matchmesh::mesh
