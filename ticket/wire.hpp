#pragma once
// Encoding and strict decoding of ticket.capnp. Decoders take peer bytes: every field is bounded,
// nothing throws, and a message breaking a bound is refused whole.

#include <span>
#include <string>
#include <vector>

#include "mesh/network.hpp"
#include "ticket/types.hpp"

namespace matchmesh::ticket {

inline constexpr std::size_t party_max = 16;
inline constexpr std::size_t id_bytes_max = 256;

enum class WireKind { success, timeout, cancel, broadcast, announce, room_closed, placed, failure };

struct PushEnvelope {
    std::string push_id;
    UserId user;
    TicketType ticket_type = 0;
    TicketId ticket_id;
    TicketId room_id;
    UserId room_owner;
    WireKind kind = WireKind::success;
    std::uint8_t ver = 0;
    std::uint16_t cmd = 0;
    Bytes message;
    EndReason reason = EndReason::unspecified;
};

struct JoinMessage {
    std::string attempt;
    TicketId room_id;
    TicketType ticket_type = 0;
    TicketId ticket_id;
    std::vector<SharedUser> party;
    Holder holder;
    bool from_search = true;
    Duration waited{0};  // since the joining ticket started (the room reports members' waits)
    bool pushes_in_reply = true;  // the sender reads the reply's pushes (older nodes did not)
    // The joining ticket's search (with holder.search_properties): should the room be taken,
    // another waiting room on the same node that this search finds may take the party instead.
    // No profiles: this room only.
    std::vector<std::string> search_profiles{};
    std::vector<std::string> search_tags{};
};

struct JoinReplyMessage {
    bool accepted = false;
    std::string reason;
    bool taken = false;  // refused because the room is gone, closed or full, not by its rules
    // Refused because the room is gone or complete: no later join succeeds (unless a backfill
    // reopens a complete room), so the sender's other searchers may pass it by for a while.
    bool gone = false;
    // Accepted: the pushes the join made for users connected to the node that sent it (when it
    // asked for them so), in order, each as if it had come on its own.
    std::vector<PushEnvelope> pushes;
    // Accepted into this other room on the same node, the asked one having been taken; empty:
    // the asked room.
    TicketId seated_in{};
};
inline constexpr std::size_t join_reply_pushes_max = 1024;

[[nodiscard]] std::string_view to_string(JoinRefusal refusal);
// The refusal as sent: its words for logs and errors, and whether the seats are gone (the room
// is gone, closed or full), which a searcher counts against its candidates, rather than this
// party refused by the room's rules.
[[nodiscard]] JoinReplyMessage refused_join(JoinRefusal refusal);
[[nodiscard]] inline JoinReplyMessage accepted_join() {
    return JoinReplyMessage{true, {}, false, false, {}, {}};
}

struct LeaveMessage {
    TicketId room_id;
    UserId user;
    TicketType ticket_type = 0;
    EndReason reason = EndReason::left;  // what the party's 222 says
};

struct BroadcastMessage {
    TicketId room_id;
    UserId user;
    TicketType ticket_type = 0;
    std::uint8_t ver = 0;
    std::uint16_t cmd = 0;
    Bytes message;
};

struct ClaimMessage {
    TicketId ticket_id;
    TicketType ticket_type = 0;
    UserId user;
    UserId owner;  // empty in a release
};

// Why a member's home did not let a party claim it.
enum class ClaimRefusal : std::uint8_t { none, not_connected, busy, not_accepted };

[[nodiscard]] std::string_view to_string(ClaimRefusal refusal);

struct ClaimReplyMessage {
    bool claimed = false;
    User user;
    ClaimRefusal refusal = ClaimRefusal::none;  // when not claimed
};

inline constexpr std::size_t sessions_max = 1024;  // users announced in one message

struct SessionStart {
    UserId user;
    std::uint64_t epoch = 0;
};

struct SessionsMessage {
    NodeId home;
    std::vector<SessionStart> users;
};

// A user's session, as its directory node knows it: where it is (empty when not known).
struct LocateMessage {
    UserId user;
};

struct LocatedMessage {
    NodeId home;
};

struct AckMessage {
    bool ok = true;
    std::string reason;
};

[[nodiscard]] mesh::Payload encode(const JoinMessage& message);
// A holder's parts where they are kept (a Holder, or a ticket's own settings), so that a
// ticket's join is encoded without copying them into a Holder first.
struct HolderView {
    const matching::Properties& add_properties;
    const matching::RangeProperties& search_properties;
    const Bytes& application_data;
};
// The join with `holder` in place of message.holder.
[[nodiscard]] mesh::Payload encode(const JoinMessage& message, const HolderView& holder);
// The reply with `pushes` in place of message.pushes (kept elsewhere).
[[nodiscard]] mesh::Payload encode(const JoinReplyMessage& message,
                                   std::span<const PushEnvelope> pushes);
[[nodiscard]] mesh::Payload encode(const JoinReplyMessage& message);
[[nodiscard]] mesh::Payload encode(const PushEnvelope& message);
[[nodiscard]] mesh::Payload encode(const LeaveMessage& message);
[[nodiscard]] mesh::Payload encode_leave_reply(bool left);
[[nodiscard]] mesh::Payload encode(const BroadcastMessage& message);
[[nodiscard]] mesh::Payload encode(const ClaimMessage& message);  // also a release
[[nodiscard]] mesh::Payload encode(const ClaimReplyMessage& message);
[[nodiscard]] mesh::Payload encode(const AckMessage& message);
[[nodiscard]] mesh::Payload encode(const SessionsMessage& message);
[[nodiscard]] mesh::Payload encode(const LocateMessage& message);
[[nodiscard]] mesh::Payload encode(const LocatedMessage& message);

template <typename T>
using Decoded = std::expected<T, std::string>;

[[nodiscard]] Decoded<JoinMessage> decode_join(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<JoinReplyMessage> decode_join_reply(mesh::PayloadView,
                                                          const capnp::ReaderOptions&);
[[nodiscard]] Decoded<PushEnvelope> decode_push(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<LeaveMessage> decode_leave(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<bool> decode_leave_reply(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<BroadcastMessage> decode_broadcast(mesh::PayloadView,
                                                         const capnp::ReaderOptions&);
[[nodiscard]] Decoded<ClaimMessage> decode_claim(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<ClaimReplyMessage> decode_claim_reply(mesh::PayloadView,
                                                            const capnp::ReaderOptions&);
[[nodiscard]] Decoded<AckMessage> decode_ack(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<SessionsMessage> decode_sessions(mesh::PayloadView,
                                                       const capnp::ReaderOptions&);
[[nodiscard]] Decoded<LocateMessage> decode_locate(mesh::PayloadView, const capnp::ReaderOptions&);
[[nodiscard]] Decoded<LocatedMessage> decode_located(mesh::PayloadView,
                                                     const capnp::ReaderOptions&);

}  // namespace matchmesh::ticket
