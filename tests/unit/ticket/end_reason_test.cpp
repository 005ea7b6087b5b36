// Why a ticket ended, on the mesh: a push and a leave carry the reason, and what an older or a
// newer node sends (no reason, or one this build does not know) reads as something safe.
#include <doctest/doctest.h>

#include <capnp/message.h>

#include "ticket/ticket.capnp.h"
#include "ticket/types.hpp"
#include "ticket/wire.hpp"

using namespace matchmesh;
using namespace matchmesh::ticket;

namespace {

const capnp::ReaderOptions options;

PushEnvelope cancel_push(EndReason why) {
    return PushEnvelope{"p1", UserId("u1"), 1, TicketId("2.1@node-2"), TicketId("1.1@node-1"),
                        UserId("u2"), WireKind::cancel, push_ver, push_cancel, {}, why};
}

}  // namespace

TEST_CASE("ticket/end-reason: a push keeps its reason across the mesh, every reason") {
    // Each value survives its round trip: the wire enum and ours stay in step.
    for (unsigned value = 0; value <= static_cast<unsigned>(end_reason_last); ++value) {
        const auto why = static_cast<EndReason>(value);
        const mesh::Payload payload = encode(cancel_push(why));
        const auto decoded = decode_push(payload.words(), options);
        REQUIRE(decoded.has_value());
        CHECK(decoded->reason == why);
        CHECK(to_string(why) != "unknown");
    }
}

TEST_CASE("ticket/end-reason: a reason this build does not know reads as unspecified") {
    // A newer node may add reasons; the push still decodes, and says nothing it cannot.
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<wire::Push>();
    root.setKind(wire::Push::Kind::CANCEL);
    root.setReason(static_cast<wire::EndReason>(static_cast<unsigned>(end_reason_last) + 1));
    const mesh::Payload payload = mesh::Payload::encode(message);
    const auto decoded = decode_push(payload.words(), options);
    REQUIRE(decoded.has_value());
    CHECK(decoded->reason == EndReason::unspecified);
    CHECK(end_reason_from_wire(200) == EndReason::unspecified);
}

TEST_CASE("ticket/end-reason: a leave says why, and one without a reason is a member leaving") {
    // An older node's leave has no reason: the room tells the party it left.
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<wire::Leave>();
    root.setRoomId("1.1@node-1");
    root.setUserId("u1");
    const auto old = decode_leave(mesh::Payload::encode(message).words(), options);
    REQUIRE(old.has_value());
    CHECK(old->reason == EndReason::left);
    const auto drained = decode_leave(
        encode(LeaveMessage{TicketId("1.1@node-1"), UserId("u1"), 1, EndReason::draining}).words(),
        options);
    REQUIRE(drained.has_value());
    CHECK(drained->reason == EndReason::draining);
}

TEST_CASE("ticket/end-reason: a 220 says completed and a 219 timed out, whatever the caller said") {
    CHECK(end_reason_of(PushKind::success, EndReason::unspecified) == EndReason::completed);
    CHECK(end_reason_of(PushKind::timeout, EndReason::draining) == EndReason::timed_out);
    CHECK(end_reason_of(PushKind::cancel, EndReason::kicked) == EndReason::kicked);
    CHECK(end_reason_of(PushKind::broadcast, EndReason::kicked) == EndReason::unspecified);
}
