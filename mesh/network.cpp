#include "mesh/network.hpp"

#include <array>
#include <cstdint>
#include <cstring>

#include <capnp/serialize.h>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

std::string_view to_string(MeshErrc code) {
    switch (code) {
        case MeshErrc::timeout: return "timeout";
        case MeshErrc::unreachable: return "unreachable";
        case MeshErrc::overloaded: return "overloaded";
        case MeshErrc::no_handler: return "no handler";
        case MeshErrc::remote: return "remote failure";
        case MeshErrc::malformed: return "malformed";
        case MeshErrc::shutdown: return "shutdown";
    }
    return "mesh error";
}

void write_flat(capnp::MessageBuilder& message, std::span<std::byte> into) {
    const auto segments = message.getSegmentsForOutput();
    if (segments.size() == 1) {
        // Almost every message fits its first segment: the stream format's table is then one
        // word (segment count - 1, then the segment's size in words, both little-endian 32-bit),
        // and the segment follows it. Written directly, a message costs one copy and no stream.
        const std::size_t words = segments[0].size();
        MM_ASSERT(into.size() == (1 + words) * sizeof(capnp::word));
        const auto size = static_cast<std::uint32_t>(words);
        const std::array<std::uint8_t, sizeof(capnp::word)> table = {
            0, 0, 0, 0, static_cast<std::uint8_t>(size), static_cast<std::uint8_t>(size >> 8),
            static_cast<std::uint8_t>(size >> 16), static_cast<std::uint8_t>(size >> 24)};
        std::memcpy(into.data(), table.data(), table.size());
        std::memcpy(into.data() + table.size(), segments[0].begin(), words * sizeof(capnp::word));
        return;
    }
    kj::ArrayOutputStream out(kj::arrayPtr(reinterpret_cast<kj::byte*>(into.data()), into.size()));
    capnp::writeMessage(out, segments);
    MM_ASSERT(out.getArray().size() == into.size());
}

Payload Payload::encode(capnp::MessageBuilder& message) {
    Payload payload;
    payload.size_ = capnp::computeSerializedSizeInWords(message);
    auto words = std::make_shared_for_overwrite<capnp::word[]>(payload.size_);
    write_flat(message, std::as_writable_bytes(std::span(words.get(), payload.size_)));
    payload.words_ = std::move(words);
    return payload;
}

Payload Payload::copy_of(std::span<const capnp::word> words) {
    Payload payload;
    payload.size_ = words.size();
    auto copy = std::make_shared_for_overwrite<capnp::word[]>(words.size());
    std::memcpy(static_cast<void*>(copy.get()), words.data(), words.size_bytes());
    payload.words_ = std::move(copy);
    return payload;
}

std::span<const capnp::word> Payload::words() const {
    if (!words_) {
        return {};
    }
    return std::span(words_.get(), size_);
}

Responder& Responder::operator=(Responder&& other) noexcept {
    if (this != &other) {
        if (send_) {
            send_(matchmesh::fail(MeshErrc::remote, "request dropped without an answer"));
        }
        send_ = std::move(other.send_);
        other.send_ = nullptr;
    }
    return *this;
}

Responder::~Responder() {
    if (send_) {
        send_(matchmesh::fail(MeshErrc::remote, "request dropped without an answer"));
    }
}

void Responder::reply(Payload payload) {
    if (auto send = std::exchange(send_, nullptr)) {
        send(std::move(payload));
    }
}

void Responder::fail(MeshErrc code, std::string message) {
    if (auto send = std::exchange(send_, nullptr)) {
        send(std::unexpected(MeshError{code, std::move(message)}));
    }
}

}  // namespace matchmesh::mesh
