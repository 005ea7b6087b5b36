// Rooms, on the node holding them: joins, leaves, completion, and the pushes to their members.
#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "ticket/service.hpp"

namespace matchmesh::ticket {

Room& TicketService::open_room(const OwnedTicket& ticket) {
    Room room;
    room.id = ticket.room_id;
    room.live_ticket = ticket.id;
    room.type = ticket.type;
    room.owner = ticket.owner();
    room.max_members = ticket.params.max_members;
    for (const SharedUser& user : ticket.party) {
        room.members.push_back(Member{user, ticket.id});
    }
    const TicketId id = room.id;
    return rooms_.add(id, ticket.owner(), ticket.type, std::move(room));
}

Room* TicketService::room_of_owner(TicketType type, const UserId& owner) {
    return rooms_.of_owner(owner, type);
}

const Room* TicketService::room_of_owner(TicketType type, const UserId& owner) const {
    return rooms_.of_owner(owner, type);
}

std::vector<UserId> TicketService::member_ids(const Room& room) const {
    std::vector<UserId> ids;
    for (const Member& member : room.members) {
        ids.push_back(member.user->id);
    }
    return ids;
}

TicketView TicketService::view_of(const Room& room, bool finished) const {
    return TicketView{room.live_ticket, room.type, room.id.str(), finished};
}

std::size_t TicketService::seats_taken(const Room& room, Time now) const {
    std::size_t reserved = 0;
    for (const auto& [user, expires] : room.extras().reservations) {
        reserved += expires > now ? 1 : 0;
    }
    return room.members.size() + reserved;
}

std::size_t TicketService::stale_reservations() const {
    std::size_t stale = 0;
    const Time now = scheduler_.now();
    for (const auto& [id, room] : rooms_.all()) {
        for (const auto& [user, expires] : room.extras().reservations) {
            // Expiry timers run on time; a little slack covers the loop's own delay.
            stale += expires + Duration(100) < now ? 1 : 0;
        }
    }
    return stale;
}

void TicketService::expire_reservations(const TicketId& room_id) {
    auto room = rooms_.find(room_id);
    if (room == nullptr) {
        return;
    }
    const Time now = scheduler_.now();
    std::erase_if(room->edit_extras().reservations,
                  [now](const auto& entry) { return entry.second <= now; });
}

std::string TicketService::next_push_id(Room& room) {
    return fmt::format("{}:{}", room.id.str(), room.next_push++);
}

void TicketService::push_to_member(Room& room, const Member& member, WireKind kind,
                                   std::uint8_t ver, std::uint16_t cmd, const Bytes& message) {
    deliver(member.user->home,
            PushEnvelope{next_push_id(room), member.user->id, room.type, member.ticket_id, room.id,
                         room.owner, kind, ver, cmd, message});
}

void TicketService::push_to_members(Room& room, WireKind kind, std::uint8_t ver, std::uint16_t cmd,
                                    const Bytes& message) {
    for (const Member& member : room.members) {
        push_to_member(room, member, kind, ver, cmd, message);
    }
}

void TicketService::announce(Room& room, const std::optional<Announcement>& announcement) {
    if (announcement) {
        push_to_members(room, WireKind::announce, announcement->ver, announcement->cmd,
                        announcement->message);
    }
}

JoinReplyMessage TicketService::accept_join(const JoinMessage& join) {
    auto refuse = [this](JoinRefusal refusal) {
        ++counters_.joins_refused;
        return JoinReplyMessage{false, std::move(refusal.reason), refusal.taken};
    };
    if (recall_.accepted_join(join.attempt)) {
        return JoinReplyMessage{true, {}};  // a retry of a join already accepted
    }
    auto found = rooms_.find(join.room_id);
    if (found == nullptr) {
        return refuse({"room not found"});
    }
    if (found->state == RoomState::searching && join.from_search) {
        yield_to_crossed_join(*found, join);
    }
    if (auto refusal = seat_refusal(*found, join)) {
        return refuse(std::move(*refusal));
    }
    const Callbacks* handlers = callbacks(found->type);
    const TicketId room_id = found->id;
    if (handlers != nullptr && handlers->allow_match_if) {
        const Room& room = *found;
        TicketProperties properties{owner_holder(room), {{join.party.front()->id, join.holder}}};
        if (!handlers->allow_match_if(properties, local_user(room.owner),
                                      join.party.front().get())) {
            return refuse({"the owner's rules do not allow this match", false});
        }
        found = rooms_.find(room_id);  // the callback may have changed anything
        if (found == nullptr ||
            (found->state != RoomState::waiting && found->state != RoomState::backfill)) {
            return refuse({"the room closed"});
        }
    }
    seat(*found, join);
    if (found->state == RoomState::backfill) {
        complete_late_joiner(room_id, join);
    } else {
        after_join(room_id, join);
    }
    return JoinReplyMessage{true, {}};
}

std::optional<TicketService::JoinRefusal> TicketService::seat_refusal(const Room& room,
                                                                      const JoinMessage& join) {
    if (room.state != RoomState::waiting && room.state != RoomState::backfill) {
        return JoinRefusal{"the room is not waiting for members"};
    }
    if (room.type != join.ticket_type) {
        return JoinRefusal{"another ticket type", false};
    }
    const Time now = scheduler_.now();
    std::size_t taken = seats_taken(room, now);
    for (const SharedUser& user : join.party) {
        if (auto reserved = room.extras().reservations.find(user->id);
            reserved != room.extras().reservations.end() && reserved->second > now) {
            --taken;  // the party's own reservations are theirs to use
        }
        const bool member = std::any_of(room.members.begin(), room.members.end(),
                                        [&](const Member& m) { return m.user->id == user->id; });
        if (member) {
            return JoinRefusal{"already a member", false};
        }
    }
    if (taken + join.party.size() > room.max_members) {
        return JoinRefusal{"the room is full"};
    }
    return std::nullopt;
}

// The party takes its seats; members whose home did not send the join are told where they are,
// and a waiting room's ticket gets its extension on a join.
void TicketService::seat(Room& room, const JoinMessage& join) {
    for (const SharedUser& user : join.party) {
        room.edit_extras().reservations.erase(user->id);
        room.members.push_back(Member{user, join.ticket_id});
    }
    MM_ASSERT(room.members.size() <= room.max_members);  // seat_refusal counted the seats
    room.edit_extras().ticket_properties.candidates[join.party.front()->id] = join.holder;
    recall_.accepted_join(join.attempt, scheduler_.now());
    ++counters_.joins_accepted;
    // Members at the node that sent the join learn where they are from its answer.
    const std::optional<NodeId> joined_from = node_of(join.ticket_id.str());
    for (const Member& member : room.members) {
        if (member.ticket_id == join.ticket_id && member.user->home != joined_from) {
            push_to_member(room, member, WireKind::placed, 0, 0, {});
        }
    }
    if (auto ticket = tickets_.find(room.live_ticket);
        ticket != nullptr && room.state != RoomState::backfill) {
        const auto extension = ticket->params.timeout_extension_on_match_join;
        if (extension.count() > 0) {
            ticket->deadline += extension;
            arm(*ticket);
        }
    }
}

// The room already completed: a late joiner completes at once, and a full room ends its backfill.
void TicketService::complete_late_joiner(const TicketId& room_id, const JoinMessage& join) {
    Room& room = rooms_.at(room_id);
    const Callbacks* handlers = callbacks(room.type);
    const TicketId live = room.live_ticket;
    Bytes message;
    if (handlers != nullptr && handlers->on_ticket_complete) {
        message =
            handlers->on_ticket_complete(room.extras().ticket_properties, local_user(room.owner));
    }
    auto again = rooms_.find(room_id);  // the callback may have changed anything
    if (again == nullptr) {
        return;
    }
    for (const Member& member : again->members) {
        if (member.ticket_id == join.ticket_id) {
            push_to_member(*again, member, WireKind::success, push_ver, push_success, message);
        }
    }
    if (again->members.size() >= again->max_members) {
        end_ticket(live, PushKind::timeout);
    }
}

// A waiting room took a party: the game's callbacks hear of it, and a full room (or one the game
// says is matched) completes.
void TicketService::after_join(const TicketId& room_id, const JoinMessage& join) {
    Room& room = rooms_.at(room_id);
    const Callbacks* handlers = callbacks(room.type);
    const TicketId live = room.live_ticket;
    const UserId owner_id = room.owner;
    const User* joined = join.party.front().get();
    const std::vector<UserId> members = member_ids(room);
    bool complete = room.members.size() >= room.max_members;
    if (handlers != nullptr) {
        const TicketView view = view_of(room, false);
        if (handlers->member_joined) {
            handlers->member_joined(view, joined, local_user(owner_id), members);
        }
        if (handlers->member_joined_announce) {
            auto announcement =
                handlers->member_joined_announce(view, joined, local_user(owner_id), members);
            if (auto again = rooms_.find(room_id); again != nullptr) {
                announce(*again, announcement);
            }
        }
        if (handlers->on_ticket_match &&
            handlers->on_ticket_match(view, joined, local_user(owner_id), room_id.str(), members)) {
            complete = true;
        }
    }
    if (auto again = rooms_.find(room_id);
        complete && again != nullptr && again->live_ticket == live) {
        end_ticket(live, PushKind::success);
    }
}

// Two waiting tickets whose wait searches found each other send each other a join at once, each
// with its own room closed until its answer: both would be refused and both go on waiting. The
// ticket with the lower ID gives its join up and takes the other in. Its own join is sure to be
// refused: the other room stays closed until that other ticket hears back, and by then it has
// joined this room and is gone.
void TicketService::yield_to_crossed_join(Room& room, const JoinMessage& join) {
    auto ticket = tickets_.find(room.live_ticket);
    if (ticket == nullptr || !ticket->looking || !ticket->joining ||
        ticket->joining->room_id != join.ticket_id || !(room.id.str() < join.ticket_id.str())) {
        return;
    }
    MM_ASSERT(room.state == RoomState::searching);
    ticket->joining.reset();
    ticket->looking = false;
    room.state = RoomState::waiting;
}

void TicketService::complete_room(Room& room) {
    room.state = RoomState::completed;
    room.edit_extras().reservations.clear();
    Bytes message;
    const Callbacks* handlers = callbacks(room.type);
    const TicketId room_id = room.id;
    if (handlers != nullptr && handlers->on_ticket_complete) {
        message =
            handlers->on_ticket_complete(room.extras().ticket_properties, local_user(room.owner));
    }
    if (auto again = rooms_.find(room_id); again != nullptr) {
        push_to_members(*again, WireKind::success, push_ver, push_success, message);
    }
}

void TicketService::close_room(const TicketId& room_id, PushKind outcome) {
    auto found = rooms_.find(room_id);
    if (found == nullptr) {
        return;
    }
    const bool timeout = outcome == PushKind::timeout;
    push_to_members(*found, timeout ? WireKind::timeout : WireKind::cancel, push_ver,
                    timeout ? push_timeout : push_cancel, {});
    delete_room(room_id);
}

void TicketService::delete_room(TicketId room_id) {
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

bool TicketService::remove_party(Room& room, const TicketId& party, PushKind push,
                                 bool announce_leave) {
    const bool present = std::any_of(room.members.begin(), room.members.end(),
                                     [&](const Member& m) { return m.ticket_id == party; });
    if (!present) {
        return false;
    }
    const bool live = room.state == RoomState::searching || room.state == RoomState::waiting;
    if (party == room.id && live) {  // the owner's party leaves its live ticket: canceled
        end_ticket(room.live_ticket, PushKind::cancel);
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
        if (live) {
            const bool timeout = push == PushKind::timeout;
            push_to_member(room, member, timeout ? WireKind::timeout : WireKind::cancel, push_ver,
                           timeout ? push_timeout : push_cancel, {});
        } else {
            push_to_member(room, member, WireKind::room_closed, 0, 0, {});
        }
    }
    const TicketId room_id = room.id;
    if (party == room.id) {  // the owner left a completed room: it goes away
        delete_room(room_id);
        return true;
    }
    const Callbacks* handlers = callbacks(room.type);
    const User* left = removed.front().user.get();
    const UserId owner = room.owner;
    const std::vector<UserId> members = member_ids(room);
    const TicketView view = view_of(room, !live);
    const auto on_left = room.extras().on_left;
    if (handlers != nullptr && handlers->member_leave) {
        handlers->member_leave(view, left, local_user(owner), room_id.str(), members);
    }
    for (const auto& callback : on_left) {
        callback(room_id.str(), left);
    }
    if (announce_leave && handlers != nullptr && handlers->member_leave_announce) {
        auto announcement = handlers->member_leave_announce(view, left, local_user(owner), members);
        if (auto again = rooms_.find(room_id); again != nullptr) {
            announce(*again, announcement);
        }
    }
    return true;
}

}  // namespace matchmesh::ticket
