// encode_frame: the envelope is built inside the frame's own buffer. Every kind of frame decodes
// to what was encoded, and its bytes are exactly what Cap'n Proto's own stream writer makes of
// the same envelope, so the wire format is unchanged.
#include <doctest/doctest.h>

#include <cstring>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include "mesh/envelope.capnp.h"
#include "mesh/frame.hpp"

using namespace matchmesh;

namespace {

// `words` words of payload, each holding its own position.
std::vector<capnp::word> payload_of(std::size_t words) {
    std::vector<capnp::word> payload(words);
    for (std::size_t i = 0; i < words; ++i) {
        const std::uint64_t value = i * 0x9e3779b97f4a7c15ULL + 1;
        std::memcpy(static_cast<void*>(&payload[i]), &value, sizeof(value));
    }
    return payload;
}

// The same envelope, written the general way: a heap-segment builder (one segment large enough,
// the fields set in the same order) and writeMessage.
mesh::Frame reference_frame(const mesh::FrameFields& fields,
                            const std::vector<capnp::word>& payload) {
    capnp::MallocMessageBuilder message(static_cast<unsigned>(payload.size() + 64));
    auto envelope = message.initRoot<mesh::wire::Envelope>();
    envelope.setService(fields.service);
    envelope.setMethod(fields.method);
    envelope.setCorrelation(fields.correlation);
    if (!payload.empty()) {
        envelope.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()),
                                         payload.size() * sizeof(capnp::word)));
    }
    switch (fields.kind) {
        case mesh::EnvelopeKind::one_way:
            envelope.setKind(mesh::wire::Envelope::Kind::ONE_WAY);
            break;
        case mesh::EnvelopeKind::request:
            envelope.setKind(mesh::wire::Envelope::Kind::REQUEST);
            break;
        case mesh::EnvelopeKind::response:
            envelope.setKind(mesh::wire::Envelope::Kind::RESPONSE);
            break;
        case mesh::EnvelopeKind::failure:
            envelope.setKind(mesh::wire::Envelope::Kind::FAILURE);
            envelope.setErrorCode(fields.error_code);
            envelope.setErrorMessage(std::string(fields.error_message));
            break;
    }
    return mesh::encode_message_frame(message);
}

void check_round_trip(const mesh::FrameFields& fields, std::size_t payload_words) {
    CAPTURE(payload_words);
    const std::vector<capnp::word> payload = payload_of(payload_words);
    const mesh::Frame frame = mesh::encode_frame(fields, payload);
    CHECK(frame == reference_frame(fields, payload));

    const auto decoded = mesh::decode_frame(frame, mesh::FrameLimits{});
    REQUIRE(decoded.has_value());
    CHECK(decoded->service == fields.service);
    CHECK(decoded->method == fields.method);
    CHECK(decoded->correlation == fields.correlation);
    CHECK(decoded->kind == fields.kind);
    CHECK(decoded->error_code == fields.error_code);
    CHECK(decoded->error_message == fields.error_message);
    REQUIRE(decoded->payload.size() == payload_words);
    if (payload_words > 0) {  // an empty payload has no address to compare
        CHECK(std::memcmp(decoded->payload.data(), payload.data(),
                          payload_words * sizeof(capnp::word)) == 0);
    }
}

}  // namespace

TEST_CASE("mesh/frame: frames round-trip, byte for byte as Cap'n Proto writes them") {
    SUBCASE("one-way, no payload") {
        check_round_trip({3, 4, 0, mesh::EnvelopeKind::one_way, 0, {}}, 0);
    }
    SUBCASE("requests and responses of every size, past the largest frames nodes send") {
        for (const std::size_t words : {1UL, 2UL, 7UL, 64UL, 4096UL, 20000UL}) {
            check_round_trip({1, 3, 77, mesh::EnvelopeKind::request, 0, {}}, words);
            check_round_trip({1, 3, 77, mesh::EnvelopeKind::response, 0, {}}, words);
        }
    }
    SUBCASE("failures with messages of every length") {
        for (const std::size_t length : {0UL, 1UL, 7UL, 8UL, 9UL, 300UL}) {
            const std::string message(length, 'x');
            check_round_trip({2, 1, 5, mesh::EnvelopeKind::failure, 9, message}, 0);
            check_round_trip({2, 1, 5, mesh::EnvelopeKind::failure, 9, message}, 3);
        }
    }
}
