// A client reads why its ticket ended from the push: the reason the node set, and unspecified
// for a value it does not know (a newer node's), never a failure to read the push.
#include <doctest/doctest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include "node/client.capnp.h"
#include "node/client_protocol.hpp"

using namespace matchmesh;
using namespace matchmesh::node;

namespace {

// The client's reading of a 222 whose reason field holds `value`.
ticket::EndReason read_cancel_with(unsigned value) {
    capnp::MallocMessageBuilder message;
    auto push = message.initRoot<wire::ServerMessage>().initPush();
    push.setKind(wire::Push::Kind::CANCEL);
    push.setCmd(ticket::push_cancel);
    push.setReason(static_cast<wire::EndReason>(value));
    const auto words = capnp::messageToFlatArray(message);
    auto decoded = decode_server_message(std::span<const capnp::word>(words.begin(), words.size()),
                                         capnp::ReaderOptions());
    REQUIRE(decoded.has_value());
    REQUIRE(std::holds_alternative<ticket::PushMessage>(*decoded));
    return std::get<ticket::PushMessage>(*decoded).reason;
}

}  // namespace

TEST_CASE("node/push-reason: the client reads each reason, and an unknown one as unspecified") {
    for (unsigned value = 0; value <= static_cast<unsigned>(ticket::end_reason_last); ++value) {
        CHECK(read_cancel_with(value) == static_cast<ticket::EndReason>(value));
    }
    CHECK(read_cancel_with(static_cast<unsigned>(ticket::end_reason_last) + 1) ==
          ticket::EndReason::unspecified);
}
