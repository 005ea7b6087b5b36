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
        return by_user_.contains(KeyRef{user, type});
    }
    [[nodiscard]] std::size_t size() const { return by_user_.size(); }

    // The user takes part in ticket `participation.ticket_id` (again: a claimed member whose
    // ticket now exists). Never over a participation in another ticket.
    void set(const UserId& user, TicketType type, Participation participation);
    void erase(const UserId& user, TicketType type);
    // Ends the user's participation of this type if it is in ticket `id`; whether it did.
    bool erase_if_ticket(const UserId& user, TicketType type, const TicketId& id);

    [[nodiscard]] const auto& all() const { return by_user_; }
    // The ticket types the user takes part in.
    [[nodiscard]] std::vector<TicketType> types_of(const UserId& user) const;
    // The participations in rooms held on `node`.
    [[nodiscard]] std::vector<Key> in_rooms_on(const NodeId& node) const;

private:
    // A key looked up without copying it.
    struct KeyRef {
        const UserId& user;
        TicketType type;
    };
    // Users ordered by their IDs' hashes first, so that most comparisons compare two integers
    // instead of two strings; a user's participations stay adjacent, in type order.
    struct KeyOrder {
        using is_transparent = void;
        static const UserId& user_of(const Key& key) { return key.first; }
        static const UserId& user_of(const KeyRef& key) { return key.user; }
        static TicketType type_of(const Key& key) { return key.second; }
        static TicketType type_of(const KeyRef& key) { return key.type; }
        template <typename A, typename B>
        bool operator()(const A& a, const B& b) const {
            const UserId& left = user_of(a);
            const UserId& right = user_of(b);
            if (left.hash() != right.hash()) {
                return left.hash() < right.hash();
            }
            if (left != right) {
                return left.str() < right.str();
            }
            return type_of(a) < type_of(b);
        }
    };

    std::map<Key, Participation, KeyOrder> by_user_;  // a user's are adjacent
};

}  // namespace matchmesh::ticket
