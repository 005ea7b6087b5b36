// The home side: a connected user's participations, the pushes delivered to it (each once), its
// leaves, party claims, and what a node's death means for the users connected here.
#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "ticket/home.hpp"
#include "ticket/lifecycle.hpp"
#include "ticket/rooms.hpp"
#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {
namespace {

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

TicketError not_accepted(const UserId& member, const UserId& owner) {
    return TicketError{Errc::party_unavailable,
                       fmt::format("party member '{}' has not accepted the party of '{}'",
                                   member.str(), owner.str())};
}

TicketError busy(const UserId& member) {
    return TicketError{
        Errc::party_unavailable,
        fmt::format("party member '{}' is busy with this ticket type", member.str())};
}

TicketError not_connected(const UserId& member) {
    return TicketError{Errc::party_unavailable,
                       fmt::format("party member '{}' is not connected", member.str())};
}

}  // namespace

void Home::deliver(const NodeId& home, PushEnvelope push) {
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
    sink_.push(push.user, PushMessage{push.ticket_type, user_kind(push.kind), push.ver, push.cmd,
                                      push.message, push.ticket_id, push.room_id.str()});
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
                participation.room_node =
                    node_of(push.room_id.str()).value_or(participation.room_node);
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
        participation.room_node = node_of(push.room_id.str()).value_or(participation.room_node);
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

void Home::cancel_participation(const UserId& user, TicketType type, const char* why) {
    const Participation* found = participations_.find(user, type);
    if (found == nullptr) {
        return;
    }
    const Participation participation = *found;
    participations_.erase(user, type);
    if (!participation.completed) {
        // Decided here, not by the room: the push says why.
        const std::string reason(why);
        deliver_locally(PushEnvelope{fmt::format("{}:local", participation.ticket_id.str()), user,
                                     type, participation.ticket_id, participation.room_id, UserId(),
                                     WireKind::cancel, push_ver, push_cancel,
                                     Bytes(reason.begin(), reason.end())});
    }
}

void Home::join_room(TicketType type, const TicketId& room, const NodeId& node, SharedUser user,
                     const TicketId& id, std::function<void(Result<void>)> done) {
    const UserId user_id = user->id;
    participations_.set(user_id, type, Participation{id, room, node, false});
    const JoinMessage join{
        fmt::format("{}/direct", id.str()), room, type, id, {std::move(user)}, {}, false};
    auto conclude = [this, user_id, type, id, done = std::move(done)](Result<void> outcome) {
        if (!outcome) {
            participations_.erase_if_ticket(user_id, type, id);
        }
        done(std::move(outcome));
    };
    if (node == context_.self()) {
        auto reply = rooms_.accept_join(join);
        conclude(reply.accepted ? Result<void>{} : fail(Errc::join_refused, reply.reason));
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
                conclude({});
            } else {
                conclude(fail(Errc::join_refused, decoded ? decoded->reason : decoded.error()));
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

void Home::leave_room_of(const UserId& user, TicketType type,
                         std::function<void(Result<void>)> done) {
    const Participation* found = participations_.find(user, type);
    if (found == nullptr) {
        done(fail(Errc::room_not_found, "the user is in no room of this ticket type"));
        return;
    }
    const Participation participation = *found;
    if (participation.room_node == context_.self()) {
        auto room = rooms_.find(participation.room_id);
        if (room == nullptr) {
            done(fail(Errc::room_not_found, "the room no longer exists"));
            return;
        }
        auto member = std::find_if(room->members.begin(), room->members.end(),
                                   [&](const Member& m) { return m.user->id == user; });
        if (member == room->members.end()) {
            done(fail(Errc::room_not_found, "the user is not a member of its room"));
            return;
        }
        rooms_.remove_party(*room, TicketId(member->ticket_id), PushKind::cancel, true);
        done({});
        return;
    }
    context_.courier.request(
        participation.room_node, wire::SERVICE, wire::METHOD_LEAVE,
        encode(LeaveMessage{participation.room_id, user, type}),
        [this, alive = context_.alive, user, type,
         done = std::move(done)](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
            if (!*alive) {
                return;
            }
            if (!reply) {
                // The room's node is gone: so is the room.
                cancel_participation(user, type, cancel_reason_room_gone);
                done({});
                return;
            }
            auto left = decode_leave_reply(*reply, context_.network.reader_options());
            done(left && *left ? Result<void>{}
                               : fail(Errc::room_not_found, "the room no longer has this user"));
        });
}

// A party start gathering its members, wherever they are connected: the members claimed so far,
// the answers still awaited, and the first reason the party cannot start.
struct Home::PartyClaim {
    TicketId id;
    TicketType type = 0;
    UserId owner;
    std::vector<UserId> party;
    std::vector<User> claimed;
    std::size_t waiting = 0;
    std::optional<TicketError> error;
    std::function<void(Result<std::vector<User>>)> done;
};

void Home::claim_party(const TicketId& id, TicketType type, const User& owner,
                       std::vector<UserId> party,
                       std::function<void(Result<std::vector<User>>)> done) {
    auto claim = std::make_shared<PartyClaim>(
        PartyClaim{id, type, owner.id, std::move(party), {}, 0, std::nullopt, std::move(done)});
    std::vector<NodeId> others;
    for (const mesh::MemberInfo& member : context_.network.live_members()) {
        if (member.id != context_.self()) {
            others.push_back(member.id);
        }
    }
    for (const UserId& user_id : claim->party) {
        if (user_id == owner.id) {
            continue;
        }
        if (context_.local_user(user_id) != nullptr) {
            claim_local_member(*claim, user_id);
        } else if (others.empty()) {
            claim->error = not_connected(user_id);
        } else {
            claim_remote_member(claim, user_id, others);
        }
    }
    finish_claims(claim);
}

void Home::claim_local_member(PartyClaim& claim, const UserId& user_id) {
    if (!accepted(user_id, claim.type, claim.owner)) {
        claim.error = not_accepted(user_id, claim.owner);
    } else if (participations_.contains(user_id, claim.type)) {
        claim.error = busy(user_id);
    } else {
        participations_.set(user_id, claim.type,
                            Participation{claim.id, claim.id, context_.self(), false});
        claim.claimed.push_back(*context_.local_user(user_id));
    }
}

// Not connected here: every other node is asked; the one the user is connected to claims it.
void Home::claim_remote_member(const std::shared_ptr<PartyClaim>& claim, const UserId& user_id,
                               const std::vector<NodeId>& others) {
    auto answers = std::make_shared<std::size_t>(others.size());
    auto found = std::make_shared<bool>(false);
    ++claim->waiting;
    for (const NodeId& node : others) {
        context_.network.request(
            node, wire::SERVICE, wire::METHOD_CLAIM,
            encode(ClaimMessage{claim->id, claim->type, user_id, claim->owner}),
            context_.options.join_timeout,
            [this, alive = context_.alive, claim, answers, found,
             user_id](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
                if (!*alive) {
                    return;
                }
                auto answer = reply ? decode_claim_reply(*reply, context_.network.reader_options())
                                    : std::unexpected(reply.error().message);
                if (answer && answer->claimed) {
                    *found = true;
                    claim->claimed.push_back(answer->user);
                } else if (answer && answer->refusal == ClaimRefusal::busy) {
                    claim->error = busy(user_id);
                } else if (answer && answer->refusal == ClaimRefusal::not_accepted) {
                    claim->error = not_accepted(user_id, claim->owner);
                }
                if (--*answers == 0) {
                    if (!*found && !claim->error) {
                        claim->error = not_connected(user_id);
                    }
                    --claim->waiting;
                    finish_claims(claim);
                }
            });
    }
}

// Once every answer is in: the party starts with the members claimed, or every claim is undone.
void Home::finish_claims(const std::shared_ptr<PartyClaim>& claim) {
    if (claim->waiting > 0) {
        return;
    }
    // A member claimed here may have lost its claim while others answered (it disconnected,
    // which ends its participation): it has been told, so the ticket must not start with it.
    for (const User& user : claim->claimed) {
        if (!claim->error && user.home == context_.self() &&
            participations_.of_ticket(user.id, claim->type, claim->id) == nullptr) {
            claim->error = TicketError{
                Errc::party_unavailable,
                fmt::format("party member '{}' lost its claim while the party was gathered",
                            user.id.str())};
        }
    }
    if (claim->error) {
        release_claims(claim->id, claim->type, claim->party);
        claim->done(std::unexpected(*claim->error));
    } else {
        claim->done(claim->claimed);
    }
}

void Home::release_claims(const TicketId& id, TicketType type, const std::vector<UserId>& party) {
    for (const UserId& user : party) {
        participations_.erase_if_ticket(user, type, id);
        for (const mesh::MemberInfo& member : context_.network.live_members()) {
            if (member.id != context_.self()) {
                context_.courier.request(member.id, wire::SERVICE, wire::METHOD_RELEASE,
                                         encode(ClaimMessage{id, type, user, {}}), [](auto) {});
            }
        }
    }
}

bool Home::accepted(const UserId& member, TicketType type, const UserId& owner) const {
    if (!context_.options.party_consent) {
        return true;
    }
    return context_.users.consents(member, type, owner);
}

ClaimReplyMessage Home::answer_claim(const NodeId& from, const ClaimMessage& claim) {
    const User* user = context_.local_user(claim.user);
    if (user == nullptr) {
        return ClaimReplyMessage{false, {}, ClaimRefusal::not_connected};
    }
    if (!accepted(claim.user, claim.ticket_type, claim.owner)) {
        return ClaimReplyMessage{false, {}, ClaimRefusal::not_accepted};
    }
    const Participation* existing = participations_.find(claim.user, claim.ticket_type);
    if (existing != nullptr && existing->ticket_id != claim.ticket_id) {
        return ClaimReplyMessage{false, {}, ClaimRefusal::busy};
    }
    // From now on the user is in that party's ticket: whatever ends it, the user hears of it.
    participations_.set(claim.user, claim.ticket_type,
                        Participation{claim.ticket_id, claim.ticket_id, from, false});
    return ClaimReplyMessage{true, *user, ClaimRefusal::none};
}

void Home::release(const ClaimMessage& claim) {
    participations_.erase_if_ticket(claim.user, claim.ticket_type, claim.ticket_id);
}

void Home::end_participations_on(const NodeId& node) {
    // Users connected here, in rooms held there: those rooms are gone.
    for (const auto& [user, type] : participations_.in_rooms_on(node)) {
        cancel_participation(user, type, cancel_reason_room_gone);
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
                                                 {}});
            }
        }
    }
}

}  // namespace matchmesh::ticket
