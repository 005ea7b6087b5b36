// The home side: a connected user's participations, the pushes delivered to it (each once), its
// joins by room ID, broadcasts and leaves, and what a node's death means for the users here.
#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "ticket/home.hpp"
#include "ticket/lifecycle.hpp"
#include "ticket/rooms.hpp"
#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {
namespace {

// The room's node, named in its ID; kept as it was when the ID names none or the same node (a
// new NodeId is a heap block).
void set_room_node(Participation& participation, const TicketId& room_id) {
    const std::string_view node = node_text_of(room_id.str());
    if (!node.empty() && node != participation.room_node.str()) {
        participation.room_node = NodeId(node);
    }
}

PushKind user_kind(WireKind kind) {
    switch (kind) {
        case WireKind::success: return PushKind::success;
        case WireKind::timeout: return PushKind::timeout;
        case WireKind::cancel: return PushKind::cancel;
        case WireKind::broadcast: return PushKind::broadcast;
        case WireKind::failure: return PushKind::failure;
        default: return PushKind::announce;
    }
}

// The words of a 222 decided at the user's home, which clients read before it had a reason.
const char* cancel_words(EndReason why) {
    switch (why) {
        case EndReason::node_gone: return cancel_reason_room_gone;
        case EndReason::draining: return cancel_reason_draining;
        default: return cancel_reason_disconnected;
    }
}

}  // namespace

void Home::deliver(const NodeId& home, PushEnvelope push) {
    if (holding_for_ != nullptr && home == *holding_for_) {
        held_.push_back(std::move(push));
        return;
    }
    if (home == context_.self()) {
        // On a later turn: the sender may be in the middle of changing a room.
        context_.scheduler.run_after(Duration(0),
                                     [this, alive = context_.alive, push = std::move(push)] {
                                         if (*alive) {
                                             receive_push(push);
                                         }
                                     });
        return;
    }
    context_.courier.request(home, wire::SERVICE, wire::METHOD_PUSH, encode(push), [](auto) {});
}

void Home::deliver_locally(const PushEnvelope& push) {
    ++context_.counters.pushes_delivered;
    sink_.push(push.user,
               PushMessage{push.ticket_type, user_kind(push.kind), push.ver, push.cmd, push.message,
                           push.ticket_id, push.room_id.str(), push.reason});
}

void Home::receive_push(const PushEnvelope& push) {
    Participation* found = participations_.of_ticket(push.user, push.ticket_type, push.ticket_id);
    if (found == nullptr) {
        ++context_.counters.pushes_dropped;  // a ticket the user no longer has here
        return;
    }
    // A push from another room for a ticket of ours still waiting for its join's answer means
    // that join succeeded (the answer may have been lost; the push says as much).
    if (auto ticket = tickets_.find(push.ticket_id);
        ticket != nullptr && ticket->joining && ticket->joining->room_id == push.room_id) {
        tickets_.conclude_join(*ticket);
        found = participations_.of_ticket(push.user, push.ticket_type, push.ticket_id);
        if (found == nullptr) {
            return;
        }
    }
    Participation& participation = *found;
    if (push.room_id != participation.room_id && tickets_.contains(push.ticket_id)) {
        // The ticket still lives here, in its own room: this comes from a room whose join it
        // gave up on and then left (the room may have taken the party after all), not its end.
        ++context_.counters.pushes_dropped;
        return;
    }
    switch (push.kind) {
        case WireKind::placed:
            if (!participation.completed) {
                participation.room_id = push.room_id;
                set_room_node(participation, push.room_id);
            }
            return;
        case WireKind::success:
        case WireKind::timeout:
        case WireKind::cancel: receive_end(push, participation); return;
        case WireKind::room_closed:
            // Only the room it completed in: a room it was taken into while its node was cut off
            // (the join's answer lost, the ticket gone on to another room) closes without it.
            if (participation.completed && participation.room_id == push.room_id) {
                participations_.erase(push.user, push.ticket_type);
            } else {
                ++context_.counters.pushes_dropped;
            }
            return;
        case WireKind::broadcast:
        case WireKind::announce:
        case WireKind::failure:
            if (context_.recall.first_sight(push.push_id, context_.scheduler.now())) {
                deliver_locally(push);
            }
            return;
    }
}

// A ticket's end, heard at its member's home: delivered once; a success keeps the participation
// (the room may still close, broadcast or take late joiners), the others end it and tell the game.
void Home::receive_end(const PushEnvelope& push, Participation& participation) {
    if (participation.completed) {
        ++context_.counters.pushes_dropped;  // already ended; this is a repeat
        return;
    }
    deliver_locally(push);
    MM_ASSERT(participation.ticket_id == push.ticket_id);  // one terminal push per participation
    if (push.kind == WireKind::success) {
        participation.completed = true;
        participation.room_id = push.room_id;
        set_room_node(participation, push.room_id);
        return;
    }
    participations_.erase(push.user, push.ticket_type);  // `participation` goes with it
    const Callbacks* handlers = context_.callbacks(push.ticket_type);
    if (handlers != nullptr && push.user != push.room_owner) {
        const User* user = context_.local_user(push.user);
        if (push.kind == WireKind::timeout && handlers->on_matched_ticket_timeout) {
            handlers->on_matched_ticket_timeout(push.room_owner, user);
        } else if (push.kind == WireKind::cancel && handlers->on_matched_ticket_canceled) {
            handlers->on_matched_ticket_canceled(push.room_owner, user);
        }
    }
}

void Home::cancel_participation(const UserId& user, TicketType type, EndReason why) {
    const Participation* found = participations_.find(user, type);
    if (found == nullptr) {
        return;
    }
    const Participation participation = *found;
    participations_.erase(user, type);
    if (!participation.completed) {
        // Decided here, not by the room: the push says why (and in words, as it always did).
        const std::string words(cancel_words(why));
        deliver_locally(PushEnvelope{fmt::format("{}:local", participation.ticket_id.str()), user,
                                     type, participation.ticket_id, participation.room_id, UserId(),
                                     WireKind::cancel, push_ver, push_cancel,
                                     Bytes(words.begin(), words.end()), why});
    }
}

void Home::join_room(TicketType type, const TicketId& room, const NodeId& node, SharedUser user,
                     const TicketId& id, std::function<void(Result<void>)> done) {
    const UserId user_id = user->id;
    participations_.set(user_id, type, Participation{id, room, node, false});
    const JoinMessage join{
        fmt::format("{}/direct", id.str()), room, type, id, {std::move(user)}, {}, false};
    // `refusal`: why the room refused, or null once the party is in. (Handing a Result<void>
    // through here trips GCC 12's -Wmaybe-uninitialized in the sanitized build.)
    auto conclude = [this, user_id, type, id, done = std::move(done)](const std::string* refusal) {
        if (refusal == nullptr) {
            done({});
            return;
        }
        participations_.erase_if_ticket(user_id, type, id);
        done(fail(Errc::join_refused, *refusal));
    };
    if (node == context_.self()) {
        auto reply = rooms_.accept_join(join, {});  // a join by room ID carries no holder
        conclude(reply.accepted ? nullptr : &reply.reason);
        return;
    }
    context_.courier.request(
        node, wire::SERVICE, wire::METHOD_JOIN, encode(join),
        [this, alive = context_.alive, conclude = std::move(conclude)](
            std::expected<mesh::PayloadView, mesh::MeshError> reply) mutable {
            if (!*alive) {
                return;
            }
            auto decoded = reply ? decode_join_reply(*reply, context_.network.reader_options())
                                 : std::unexpected(reply.error().message);
            if (decoded && decoded->accepted) {
                conclude(nullptr);
                receive_pushes(decoded->pushes);  // the room's news for users here
            } else {
                conclude(decoded ? &decoded->reason : &decoded.error());
            }
        });
}

Result<void> Home::broadcast(TicketType type, const UserId& user, std::uint8_t ver,
                             std::uint16_t cmd, Bytes message) {
    const Participation* participation = participations_.find(user, type);
    if (participation == nullptr) {
        return fail(Errc::room_not_found, "the user is in no room of this ticket type");
    }
    const Participation& where = *participation;
    if (where.room_node != context_.self()) {
        context_.courier.request(
            where.room_node, wire::SERVICE, wire::METHOD_BROADCAST,
            encode(BroadcastMessage{where.room_id, user, type, ver, cmd, std::move(message)}),
            [](auto) {});
        return {};
    }
    auto room = rooms_.find(where.room_id);
    if (room == nullptr) {
        return fail(Errc::room_not_found, "the room no longer exists");
    }
    rooms_.push_to_members(*room, WireKind::broadcast, ver, cmd, message);
    return {};
}

void Home::leave_room_of(const UserId& user, TicketType type, EndReason why,
                         std::function<void(Result<void>)> done) {
    const Participation* found = participations_.find(user, type);
    if (found == nullptr) {
        done(fail(Errc::room_not_found, "the user is in no room of this ticket type"));
        return;
    }
    const Participation participation = *found;
    if (participation.room_node == context_.self()) {
        if (!rooms_.contains(participation.room_id)) {
            done(fail(Errc::room_not_found, "the room no longer exists"));
            return;
        }
        done(rooms_.leave(participation.room_id, user, why)
                 ? Result<void>{}
                 : fail(Errc::room_not_found, "the user is not a member of its room"));
        return;
    }
    context_.courier.request(
        participation.room_node, wire::SERVICE, wire::METHOD_LEAVE,
        encode(LeaveMessage{participation.room_id, user, type, why}),
        [this, alive = context_.alive, user, type,
         done = std::move(done)](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
            if (!*alive) {
                return;
            }
            if (!reply) {
                // The room's node is gone: so is the room.
                cancel_participation(user, type, EndReason::node_gone);
                done({});
                return;
            }
            auto left = decode_leave_reply(*reply, context_.network.reader_options());
            done(left && *left ? Result<void>{}
                               : fail(Errc::room_not_found, "the room no longer has this user"));
        });
}

void Home::end_participations_on(const NodeId& node) {
    // Users connected here, in rooms held there: those rooms are gone.
    for (const auto& [user, type] : participations_.in_rooms_on(node)) {
        cancel_participation(user, type, EndReason::node_gone);
    }
}

void Home::tell_parties_joined_at(const NodeId& node) {
    for (const auto& [id, joined] : context_.recall.take_joined_at(node)) {
        for (const SharedUser& user : joined.party) {
            if (user->home != context_.self()) {
                deliver(user->home, PushEnvelope{fmt::format("{}:gone", id.str()),
                                                 user->id,
                                                 joined.type,
                                                 id,
                                                 id,
                                                 UserId(),
                                                 WireKind::cancel,
                                                 push_ver,
                                                 push_cancel,
                                                 {},
                                                 EndReason::node_gone});
            }
        }
    }
}

}  // namespace matchmesh::ticket
