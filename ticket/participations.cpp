#include "ticket/participations.hpp"

#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {

Participation* Participations::find(const UserId& user, TicketType type) {
    auto found = by_user_.find(KeyRef{user, type});
    return found == by_user_.end() ? nullptr : &found->second;
}

const Participation* Participations::find(const UserId& user, TicketType type) const {
    auto found = by_user_.find(KeyRef{user, type});
    return found == by_user_.end() ? nullptr : &found->second;
}

Participation* Participations::of_ticket(const UserId& user, TicketType type, const TicketId& id) {
    Participation* participation = find(user, type);
    return participation != nullptr && participation->ticket_id == id ? participation : nullptr;
}

void Participations::set(const UserId& user, TicketType type, Participation participation) {
    auto [entry, inserted] = by_user_.try_emplace({user, type}, participation);
    MM_ASSERT(inserted || entry->second.ticket_id == participation.ticket_id);
    entry->second = std::move(participation);
}

void Participations::erase(const UserId& user, TicketType type) {
    if (auto found = by_user_.find(KeyRef{user, type}); found != by_user_.end()) {
        by_user_.erase(found);
    }
}

bool Participations::erase_if_ticket(const UserId& user, TicketType type, const TicketId& id) {
    auto found = by_user_.find(KeyRef{user, type});
    if (found == by_user_.end() || found->second.ticket_id != id) {
        return false;
    }
    by_user_.erase(found);
    return true;
}

std::vector<TicketType> Participations::types_of(const UserId& user) const {
    std::vector<TicketType> types;
    for (auto it = by_user_.lower_bound(KeyRef{user, TicketType{0}});
         it != by_user_.end() && it->first.first == user; ++it) {
        types.push_back(it->first.second);
    }
    return types;
}

std::vector<Participations::Key> Participations::in_rooms_on(const NodeId& node) const {
    std::vector<Key> keys;
    for (const auto& [key, participation] : by_user_) {
        if (participation.room_node == node) {
            keys.push_back(key);
        }
    }
    return keys;
}

}  // namespace matchmesh::ticket
