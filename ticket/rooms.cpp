// Rooms, on the node holding them: joins, leaves, completion, and the pushes to their members.
#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "ticket/home.hpp"
#include "ticket/lifecycle.hpp"
#include "ticket/rooms.hpp"

namespace matchmesh::ticket {

Room& Rooms::open(const OwnedTicket& ticket) {
    Room room;
    room.id = ticket.room_id;
    room.live_ticket = ticket.id;
    room.type = ticket.type;
    room.owner = ticket.owner();
    room.max_members = ticket.params.max_members;
    for (const SharedUser& user : ticket.party) {
        room.members.push_back(Member{user, ticket.id, ticket.started});
    }
    const TicketId id = room.id;
    return rooms_.add(id, ticket.owner(), ticket.type, std::move(room));
}

Holder Rooms::owner_holder(const Room& room) const {
    auto live = tickets_.find(room.live_ticket);
    return live != nullptr && !live->backfill ? holder_of(live->params)
                                              : room.extras().ticket_properties.owner;
}

std::vector<UserId> Rooms::member_ids(const Room& room) {
    std::vector<UserId> ids;
    for (const Member& member : room.members) {
        ids.push_back(member.user->id);
    }
    return ids;
}

TicketView Rooms::view_of(const Room& room, bool finished) {
    return TicketView{room.live_ticket, room.type, room.id.str(), finished};
}

std::size_t Rooms::seats_taken(const Room& room, Time now) const {
    std::size_t reserved = 0;
    for (const auto& [user, expires] : room.extras().reservations) {
        reserved += expires > now ? 1 : 0;
    }
    return room.members.size() + reserved;
}

std::size_t Rooms::stale_reservations() const {
    std::size_t stale = 0;
    const Time now = context_.scheduler.now();
    for (const auto& [id, room] : rooms_.all()) {
        for (const auto& [user, expires] : room.extras().reservations) {
            // Expiry timers run on time; a little slack covers the loop's own delay.
            stale += expires + Duration(100) < now ? 1 : 0;
        }
    }
    return stale;
}

Result<void> Rooms::reserve(Room& room, const UserId& user) {
    const Time now = context_.scheduler.now();
    if (!room.extras().reservations.contains(user) && seats_taken(room, now) >= room.max_members) {
        return fail(Errc::join_refused, "no seat left to reserve");
    }
    room.edit_extras().reservations[user] = now + context_.options.reservation_ttl;
    const TicketId room_id = room.id;
    context_.scheduler.run_after(context_.options.reservation_ttl,
                                 [this, alive = context_.alive, room_id] {
                                     if (*alive) {
                                         expire_reservations(room_id);
                                     }
                                 });
    return {};
}

void Rooms::expire_reservations(const TicketId& room_id) {
    auto room = rooms_.find(room_id);
    if (room == nullptr) {
        return;
    }
    const Time now = context_.scheduler.now();
    std::erase_if(room->edit_extras().reservations,
                  [now](const auto& entry) { return entry.second <= now; });
}

std::string Rooms::next_push_id(Room& room) {
    return numbered(room.id.str(), ':', room.next_push++);
}

void Rooms::push_to_member(Room& room, const Member& member, WireKind kind, std::uint8_t ver,
                           std::uint16_t cmd, const Bytes& message, EndReason why) {
    home_.deliver(member.user->home,
                  PushEnvelope{next_push_id(room), member.user->id, room.type, member.ticket_id,
                               room.id, room.owner, kind, ver, cmd, message, why});
}

void Rooms::push_to_members(Room& room, WireKind kind, std::uint8_t ver, std::uint16_t cmd,
                            const Bytes& message, EndReason why) {
    for (const Member& member : room.members) {
        push_to_member(room, member, kind, ver, cmd, message, why);
    }
}

void Rooms::push_end_to(Room& room, const Member& member, PushKind outcome, EndReason why) {
    const bool timeout = outcome == PushKind::timeout;
    push_to_member(room, member, timeout ? WireKind::timeout : WireKind::cancel, push_ver,
                   timeout ? push_timeout : push_cancel, {}, end_reason_of(outcome, why));
}

void Rooms::announce(Room& room, const std::optional<Announcement>& announcement) {
    if (announcement) {
        push_to_members(room, WireKind::announce, announcement->ver, announcement->cmd,
                        announcement->message);
    }
}

JoinReplyMessage Rooms::refuse(JoinRefusal refusal) {
    ++context_.counters.joins_refused;
    ++context_.counters.join_refusals[static_cast<std::size_t>(refusal)];
    return refused_join(refusal);
}

JoinReplyMessage Rooms::accept_join(const JoinMessage& join, Holder holder) {
    auto found = rooms_.find(join.room_id);
    if (context_.recall.accepted_join(join.attempt)) {
        // A retry of a join already accepted: accepted again while the party is seated. A party
        // the room let go since (its home declared dead, a leave) is never told it is in.
        JoinReplyMessage again = context_.recall.accepted_again(join.attempt);
        if (!again.seated_in.empty()) {
            found = rooms_.find(again.seated_in);
        }
        const bool seated =
            found != nullptr &&
            std::any_of(found->members.begin(), found->members.end(),
                        [&](const Member& member) { return member.ticket_id == join.ticket_id; });
        return seated ? again
                      : refuse(found == nullptr ? JoinRefusal::room_not_found
                                                : JoinRefusal::not_waiting);
    }
    // A room taken since the joiner's search found it: another waiting here that its search
    // finds may take the party instead, rather than a round trip to refuse it.
    const std::optional<JoinRefusal> refusal =
        found == nullptr ? JoinRefusal::room_not_found : seat_refusal(*found, join);
    if (refusal && refused_join(*refusal).taken &&
        (found == nullptr || found->state != RoomState::searching)) {
        if (auto elsewhere = seat_elsewhere(join, holder)) {
            return *std::move(elsewhere);
        }
        found = rooms_.find(join.room_id);  // the other room's callbacks may have changed it
    }
    if (found == nullptr) {
        return refuse(JoinRefusal::room_not_found);
    }
    std::optional<Tickets::GivenUpJoin> given_up;
    if (found->state == RoomState::searching && join.from_search) {
        given_up = tickets_.yield_to_crossed_join(*found, join);
    }
    JoinReplyMessage reply = admit(*found, join, std::move(holder));
    if (given_up && !reply.accepted) {
        tickets_.take_back_join(join.room_id, std::move(*given_up));
    }
    return reply;
}

// Seats a party whose join found its room taken in another waiting room here that the joining
// ticket's search finds (Tickets::room_found_by), if one takes it. Only where the party's node
// learns of it before any push from that room: this node, or one that reads a join's pushes on
// its answer (which names the room).
std::optional<JoinReplyMessage> Rooms::seat_elsewhere(const JoinMessage& join, Holder& holder) {
    if (!join.from_search || join.search_profiles.empty()) {
        return std::nullopt;
    }
    // A join its ticket gave up for a crossed one (Tickets::yield_to_crossed_join) counts on
    // being refused: the asked room's ticket went to the joiner's room.
    if (context_.recall.joined_at(join.room_id, node_text_of(join.ticket_id.str()))) {
        return std::nullopt;
    }
    const bool joined_from_here = tickets_.joining_from_here(join.ticket_id, join.attempt);
    if (!join.pushes_in_reply && !joined_from_here) {
        return std::nullopt;
    }
    Room* room = tickets_.room_found_by(join, holder);
    if (room == nullptr) {
        return std::nullopt;
    }
    const TicketId room_id = room->id;
    if (joined_from_here) {  // its pushes arrive at once, and must find it joining that room
        tickets_.redirect_join(join.ticket_id, join.attempt, room_id);
    }
    // The holder is the party's to keep should this room refuse it too: a copy goes in. A
    // refusal here is not counted: the asked room's is.
    JoinReplyMessage reply = admit(*room, join, holder, false);
    if (!reply.accepted) {
        if (joined_from_here) {
            tickets_.redirect_join(join.ticket_id, join.attempt, join.room_id);
        }
        return std::nullopt;
    }
    reply.seated_in = room_id;
    context_.recall.seated_elsewhere(join.attempt, join.room_id, join.party.front()->id, room_id,
                                     context_.scheduler.now());
    ++context_.counters.joins_seated_elsewhere;
    return reply;
}

JoinReplyMessage Rooms::admit(Room& room, const JoinMessage& join, Holder holder,
                              bool count_refusal) {
    const auto refused = [&](JoinRefusal why) {
        return count_refusal ? refuse(why) : refused_join(why);
    };
    if (auto refusal = seat_refusal(room, join)) {
        return refused(*refusal);
    }
    Room* found = &room;
    const Callbacks* handlers = context_.callbacks(found->type);
    const TicketId room_id = found->id;
    if (handlers != nullptr && handlers->allow_match_if) {
        const Room& room = *found;
        TicketProperties properties{owner_holder(room), {}};
        Holder& lent =
            properties.candidates.emplace(join.party.front()->id, std::move(holder)).first->second;
        if (!handlers->allow_match_if(properties, context_.local_user(room.owner),
                                      join.party.front().get())) {
            return refused(JoinRefusal::not_allowed);
        }
        holder = std::move(lent);
        found = rooms_.find(room_id);  // the callback may have changed anything
        if (found == nullptr ||
            (found->state != RoomState::waiting && found->state != RoomState::backfill)) {
            return refused(JoinRefusal::closed);
        }
    }
    if (handlers != nullptr && handlers->allow_party_if) {
        if (!handlers->allow_party_if(found->members, join.party)) {
            return refused(JoinRefusal::not_allowed);
        }
        found = rooms_.find(room_id);  // the callback may have changed anything
        if (found == nullptr ||
            (found->state != RoomState::waiting && found->state != RoomState::backfill)) {
            return refused(JoinRefusal::closed);
        }
    }
    seat(*found, join, std::move(holder));
    if (found->state == RoomState::backfill) {
        complete_late_joiner(room_id, join);
    } else {
        after_join(room_id, join);
    }
    return accepted_join();
}

std::optional<JoinRefusal> Rooms::seat_refusal(const Room& room, const JoinMessage& join) const {
    if (room.state == RoomState::completed) {
        return JoinRefusal::completed;
    }
    if (room.state != RoomState::waiting && room.state != RoomState::backfill) {
        return JoinRefusal::not_waiting;
    }
    if (room.type != join.ticket_type) {
        return JoinRefusal::other_type;
    }
    const Time now = context_.scheduler.now();
    std::size_t taken = seats_taken(room, now);
    for (const SharedUser& user : join.party) {
        if (auto reserved = room.extras().reservations.find(user->id);
            reserved != room.extras().reservations.end() && reserved->second > now) {
            --taken;  // the party's own reservations are theirs to use
        }
        const bool member = std::any_of(room.members.begin(), room.members.end(),
                                        [&](const Member& m) { return m.user->id == user->id; });
        if (member) {
            return JoinRefusal::already_member;
        }
    }
    if (taken + join.party.size() > room.max_members) {
        return JoinRefusal::full;
    }
    return std::nullopt;
}

// The party takes its seats; members whose home did not send the join are told where they are,
// and a waiting room's ticket gets its extension on a join.
void Rooms::seat(Room& room, const JoinMessage& join, Holder holder) {
    for (const SharedUser& user : join.party) {
        room.edit_extras().reservations.erase(user->id);
        room.members.push_back(
            Member{user, join.ticket_id, context_.scheduler.now() - join.waited});
    }
    MM_ASSERT(room.members.size() <= room.max_members);  // seat_refusal counted the seats
    room.edit_extras().ticket_properties.candidates[join.party.front()->id] = std::move(holder);
    context_.recall.accepted_join(join.attempt, context_.scheduler.now());
    ++context_.counters.joins_accepted;
    // Members at the node that sent the join learn where they are from its answer.
    const std::string_view joined_from = node_text_of(join.ticket_id.str());
    for (const Member& member : room.members) {
        if (member.ticket_id == join.ticket_id &&
            (joined_from.empty() || member.user->home.str() != joined_from)) {
            push_to_member(room, member, WireKind::placed, 0, 0, {});
        }
    }
    if (room.state != RoomState::backfill) {
        tickets_.extend_on_join(room.live_ticket);
    }
}

// The room already completed: a late joiner completes at once, and a full room ends its backfill.
void Rooms::complete_late_joiner(const TicketId& room_id, const JoinMessage& join) {
    Room& room = rooms_.at(room_id);
    const TicketId live = room.live_ticket;
    const Bytes message = completion_message(room);
    auto again = rooms_.find(room_id);  // the callback may have changed anything
    if (again == nullptr) {
        return;
    }
    for (const Member& member : again->members) {
        if (member.ticket_id == join.ticket_id) {
            push_to_member(*again, member, WireKind::success, push_ver, push_success, message,
                           EndReason::completed);
        }
    }
    if (again->members.size() >= again->max_members) {
        tickets_.end(live, PushKind::timeout);
    }
}

// A waiting room took a party: the game's callbacks hear of it, and a full room (or one the game
// says is matched) completes.
void Rooms::after_join(const TicketId& room_id, const JoinMessage& join) {
    Room& room = rooms_.at(room_id);
    const Callbacks* handlers = context_.callbacks(room.type);
    const TicketId live = room.live_ticket;
    const UserId owner_id = room.owner;
    const User* joined = join.party.front().get();
    const std::vector<UserId> members = member_ids(room);
    bool complete = room.members.size() >= room.max_members;
    if (handlers != nullptr) {
        const TicketView view = view_of(room, false);
        if (handlers->member_joined) {
            handlers->member_joined(view, joined, context_.local_user(owner_id), members);
        }
        if (handlers->member_joined_announce) {
            auto announcement = handlers->member_joined_announce(
                view, joined, context_.local_user(owner_id), members);
            if (auto again = rooms_.find(room_id); again != nullptr) {
                announce(*again, announcement);
            }
        }
        if (handlers->on_ticket_match &&
            handlers->on_ticket_match(view, joined, context_.local_user(owner_id), room_id.str(),
                                      members)) {
            complete = true;
        }
    }
    if (auto again = rooms_.find(room_id);
        complete && again != nullptr && again->live_ticket == live) {
        tickets_.end(live, PushKind::success);
    }
}

// The 220's message: from the roster when the game asks for it, else from the ticket's holders.
Bytes Rooms::completion_message(const Room& room) {
    const Callbacks* handlers = context_.callbacks(room.type);
    if (handlers == nullptr) {
        return {};
    }
    if (handlers->on_match_complete) {
        const std::vector<Member> members = room.members;  // the callback may change the room
        return handlers->on_match_complete(room.id.str(), members, context_.local_user(room.owner));
    }
    if (handlers->on_ticket_complete) {
        return handlers->on_ticket_complete(room.extras().ticket_properties,
                                            context_.local_user(room.owner));
    }
    return {};
}

void Rooms::complete(Room& room) {
    room.state = RoomState::completed;
    room.edit_extras().reservations.clear();
    const TicketId room_id = room.id;
    const Bytes message = completion_message(room);
    if (auto again = rooms_.find(room_id); again != nullptr) {
        push_to_members(*again, WireKind::success, push_ver, push_success, message,
                        EndReason::completed);
    }
}

void Rooms::close(const TicketId& room_id, PushKind outcome, EndReason why) {
    auto found = rooms_.find(room_id);
    if (found == nullptr) {
        return;
    }
    for (const Member& member : found->members) {
        push_end_to(*found, member, outcome, why);
    }
    erase(room_id);
}

void Rooms::erase(TicketId room_id) {
    auto found = rooms_.find(room_id);
    if (found == nullptr) {
        return;
    }
    Room room = std::move(*found);
    rooms_.erase(room_id, room.owner, room.type);
    if (room.state == RoomState::completed || room.state == RoomState::backfill) {
        // Members of a completed room are free to start again.
        push_to_members(room, WireKind::room_closed, 0, 0, {});
    }
    for (const auto& callback : room.extras().on_deleted) {
        callback(room_id.str());
    }
}

bool Rooms::remove_party(Room& room, const TicketId& party, EndReason why, bool announce_leave,
                         const UserId* disconnected) {
    const bool present = std::any_of(room.members.begin(), room.members.end(),
                                     [&](const Member& m) { return m.ticket_id == party; });
    if (!present) {
        return false;
    }
    const bool live = room.state == RoomState::searching || room.state == RoomState::waiting;
    if (party == room.id && live) {  // the owner's party leaves its live ticket: canceled
        tickets_.end(room.live_ticket, PushKind::cancel, why);
        return true;
    }
    std::vector<Member> removed;
    std::vector<Member> kept;
    for (Member& member : room.members) {
        (member.ticket_id == party ? removed : kept).push_back(std::move(member));
    }
    room.members = std::move(kept);
    room.edit_extras().ticket_properties.candidates.erase(removed.front().user->id);
    for (const Member& member : removed) {
        if (disconnected != nullptr && member.user->id == *disconnected) {
            continue;
        }
        if (live) {
            push_end_to(room, member, PushKind::cancel, why);
        } else {
            push_to_member(room, member, WireKind::room_closed, 0, 0, {});
        }
    }
    if (party == room.id) {  // the owner left a completed room: it goes away
        erase(room.id);
        return true;
    }
    after_leave(room, removed.front().user.get(), live, announce_leave);
    return true;
}

void Rooms::after_leave(Room& room, const User* left, bool live, bool announce_leave) {
    const TicketId room_id = room.id;
    const Callbacks* handlers = context_.callbacks(room.type);
    const UserId owner = room.owner;
    const std::vector<UserId> members = member_ids(room);
    const TicketView view = view_of(room, !live);
    const auto on_left = room.extras().on_left;
    if (handlers != nullptr && handlers->member_leave) {
        handlers->member_leave(view, left, context_.local_user(owner), room_id.str(), members);
    }
    for (const auto& callback : on_left) {
        callback(room_id.str(), left);
    }
    if (announce_leave && handlers != nullptr && handlers->member_leave_announce) {
        auto announcement =
            handlers->member_leave_announce(view, left, context_.local_user(owner), members);
        if (auto again = rooms_.find(room_id); again != nullptr) {
            announce(*again, announcement);
        }
    }
}

bool Rooms::leave(const TicketId& room_id, const UserId& user, EndReason why) {
    auto room = rooms_.find(room_id);
    const auto is_user = [&](const Member& m) { return m.user->id == user; };
    if (room == nullptr || std::none_of(room->members.begin(), room->members.end(), is_user)) {
        // A party that asked for this room may have been seated in another (seat_elsewhere).
        const TicketId* instead = context_.recall.seated_instead_of(room_id, user);
        room = instead == nullptr ? nullptr : rooms_.find(*instead);
        if (room == nullptr) {
            return false;
        }
    }
    auto member = std::find_if(room->members.begin(), room->members.end(), is_user);
    return member != room->members.end() &&
           remove_party(*room, TicketId(member->ticket_id), why, true,
                        why == EndReason::disconnected ? &user : nullptr);
}

void Rooms::drop_members_of(const NodeId& node) {
    std::vector<std::pair<TicketId, TicketId>> parties;
    for (const auto& [room_id, room] : rooms_.all()) {
        for (const Member& member : room.members) {
            if (member.user->home == node) {
                parties.emplace_back(room_id, member.ticket_id);
            }
        }
    }
    for (const auto& [room_id, party] : parties) {
        if (auto room = rooms_.find(room_id); room != nullptr) {
            remove_party(*room, party, EndReason::node_gone, true);
        }
    }
}

bool Rooms::broadcast_from(const BroadcastMessage& broadcast) {
    auto room = rooms_.find(broadcast.room_id);
    const bool member = room != nullptr &&
                        std::any_of(room->members.begin(), room->members.end(),
                                    [&](const Member& m) { return m.user->id == broadcast.user; });
    if (member) {
        push_to_members(*room, WireKind::broadcast, broadcast.ver, broadcast.cmd,
                        broadcast.message);
    }
    return member;
}

}  // namespace matchmesh::ticket
