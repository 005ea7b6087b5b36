#pragma once
// Participations: a home node's record of its users' part in matchmaking, at most one per user
// and ticket type: the ticket the user plays in, the room it is in (its own ticket's while that
// searches) and the room's node, and whether it heard its success (220). The home delivers a
// user's pushes by it: a push for another ticket is no longer the user's. Owns only this; on the
// ticket service's thread.

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "ticket/state.hpp"

namespace matchmesh::ticket {

class Participations {
public:
    using Key = std::pair<UserId, TicketType>;

    [[nodiscard]] Participation* find(const UserId& user, TicketType type);
    [[nodiscard]] const Participation* find(const UserId& user, TicketType type) const;
    // The user's participation of this type, if it is in ticket `id`.
    [[nodiscard]] Participation* of_ticket(const UserId& user, TicketType type, const TicketId& id);
    [[nodiscard]] bool contains(const UserId& user, TicketType type) const {
        return by_user_.contains({user, type});
    }
    [[nodiscard]] std::size_t size() const { return by_user_.size(); }

    // The user takes part in ticket `participation.ticket_id` (again: a claimed member whose
    // ticket now exists). Never over a participation in another ticket.
    void set(const UserId& user, TicketType type, Participation participation);
    void erase(const UserId& user, TicketType type) { by_user_.erase({user, type}); }
    // Ends the user's participation of this type if it is in ticket `id`; whether it did.
    bool erase_if_ticket(const UserId& user, TicketType type, const TicketId& id);

    [[nodiscard]] const std::map<Key, Participation>& all() const { return by_user_; }
    // The ticket types the user takes part in.
    [[nodiscard]] std::vector<TicketType> types_of(const UserId& user) const;
    // The participations in rooms held on `node`.
    [[nodiscard]] std::vector<Key> in_rooms_on(const NodeId& node) const;

private:
    std::map<Key, Participation> by_user_;  // a user's are adjacent
};

}  // namespace matchmesh::ticket
