#pragma once
// Rooms: the room node's authority over the rooms held here (each its owner's ticket's room, on
// the owner's home): opening one, taking a join (seats, reservations, AllowMatchIf, the
// callbacks and announcements that follow), completion, a late joiner of a backfill, a party's
// leave or kick, closing and deleting, and every push to their members. This node alone decides
// each member's terminal push (220, 219, 222). See README.md for the join protocol.
//
// Owns: the rooms held here, by ID and each owner's current one (their members, reservations,
// properties and push counters are in each Room). Owned by TicketService; on the node's loop
// thread. Reaches the ticket live in a room through Tickets (its deadline's extension, its end,
// its holder, a crossed join), and the members' homes through Home (a push's delivery).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ticket/by_owner.hpp"
#include "ticket/context.hpp"
#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class Home;
class Tickets;

class Rooms {
public:
    Rooms(Context& context, Tickets& tickets, Home& home)
        : context_(context), tickets_(tickets), home_(home) {}
    Rooms(const Rooms&) = delete;
    Rooms& operator=(const Rooms&) = delete;

    [[nodiscard]] Room* find(const TicketId& id) { return rooms_.find(id); }
    [[nodiscard]] const Room* find(const TicketId& id) const { return rooms_.find(id); }
    [[nodiscard]] bool contains(const TicketId& id) const { return rooms_.contains(id); }
    [[nodiscard]] Room* of_owner(const UserId& owner, TicketType type) {
        return rooms_.of_owner(owner, type);
    }
    [[nodiscard]] const Room* of_owner(const UserId& owner, TicketType type) const {
        return rooms_.of_owner(owner, type);
    }
    [[nodiscard]] const std::unordered_map<TicketId, Room>& all() const { return rooms_.all(); }
    [[nodiscard]] std::size_t size() const { return rooms_.size(); }

    // The room of a new ticket, its party seated.
    Room& open(const OwnedTicket& ticket);
    // A join from a searcher (here or at another node), or by room ID: seated, or why not.
    // `holder` is the joiner's (join.holder is not read): the room keeps it if it seats the party.
    [[nodiscard]] JoinReplyMessage accept_join(const JoinMessage& join, Holder holder);
    // The room's ticket completed: 220 to every member, with OnTicketComplete's message.
    void complete(Room& room);
    // The room's ticket timed out or was canceled (`why`): 219 or 222 to every member, and it goes.
    void close(const TicketId& room_id, PushKind outcome, EndReason why);
    // The room goes (members of a completed one are told they are free). By value: callers may
    // name the room's own ID, which erasing it frees.
    void erase(TicketId room_id);
    // A party leaves (or is kicked, or its home is gone: `why`, its 222 says); whether it was there.
    // `disconnected`: a member whose session ended, whose home ended its participation itself and
    // is sent nothing more.
    bool remove_party(Room& room, const TicketId& party, EndReason why, bool announce_leave,
                      const UserId* disconnected = nullptr);
    // `user` leaves room `room_id` with its party (a leave from its home); whether it was there.
    bool leave(const TicketId& room_id, const UserId& user, EndReason why);
    // A member's broadcast from its home: pushed to every member; whether the sender is one.
    bool broadcast_from(const BroadcastMessage& broadcast);
    // Members whose home is `node` (gone from the cluster) leave the rooms held here.
    void drop_members_of(const NodeId& node);

    void push_to_members(Room& room, WireKind kind, std::uint8_t ver, std::uint16_t cmd,
                         const Bytes& message, EndReason why = EndReason::unspecified);
    void push_to_member(Room& room, const Member& member, WireKind kind, std::uint8_t ver,
                        std::uint16_t cmd, const Bytes& message,
                        EndReason why = EndReason::unspecified);
    // A member's terminal push: 219 for a timeout, else 222 saying `why`.
    void push_end_to(Room& room, const Member& member, PushKind outcome, EndReason why);

    // Holds a seat for `user` for the reservation TTL.
    [[nodiscard]] Result<void> reserve(Room& room, const UserId& user);
    // Reservations past their expiry still held (should be none: they are freed on time).
    [[nodiscard]] std::size_t stale_reservations() const;
    [[nodiscard]] static std::vector<UserId> member_ids(const Room& room);

private:
    // accept_join's checks and seating, once a crossed join has been settled.
    [[nodiscard]] JoinReplyMessage admit(Room& room, const JoinMessage& join, Holder holder,
                                         bool count_refusal = true);
    // The join's party seated in another room here, its own having been taken; none if no other
    // takes it (the holder then stays).
    [[nodiscard]] std::optional<JoinReplyMessage> seat_elsewhere(const JoinMessage& join,
                                                                 Holder& holder);
    // A refused join, counted by its reason.
    [[nodiscard]] JoinReplyMessage refuse(JoinRefusal refusal);
    // Why this room cannot seat the join's party now, if it cannot.
    [[nodiscard]] std::optional<JoinRefusal> seat_refusal(const Room& room,
                                                          const JoinMessage& join) const;
    void seat(Room& room, const JoinMessage& join, Holder holder);
    void complete_late_joiner(const TicketId& room_id, const JoinMessage& join);
    Bytes completion_message(const Room& room);
    void after_join(const TicketId& room_id, const JoinMessage& join);
    // The callbacks and announcement after a party other than the owner's left.
    void after_leave(Room& room, const User* left, bool live, bool announce_leave);
    [[nodiscard]] std::size_t seats_taken(const Room& room, Time now) const;
    void expire_reservations(const TicketId& room_id);
    // The room owner's holder: its running ticket's, or the room's copy once that finished.
    [[nodiscard]] Holder owner_holder(const Room& room) const;
    [[nodiscard]] static TicketView view_of(const Room& room, bool finished);
    void announce(Room& room, const std::optional<Announcement>& announcement);
    [[nodiscard]] static std::string next_push_id(Room& room);

    Context& context_;
    Tickets& tickets_;
    Home& home_;
    ByOwner<Room> rooms_;  // held here, by ID (the owner's ticket ID)
};

}  // namespace matchmesh::ticket
