#pragma once
// ByOwner<T>: records of one kind held on this node — the tickets owned here, or the rooms held
// here — by their ID, and for each owner and ticket type the one that is current (at most one).
// A record can stop being its owner's current one before it goes (a ticket that ended, a room
// that outlives its ticket): the owner may then start another. Owns only these; on the ticket
// service's thread.

#include <cstddef>
#include <unordered_map>
#include <utility>

#include "mesh/base/assert.hpp"
#include "ticket/state.hpp"

namespace matchmesh::ticket {

template <typename T>
class ByOwner {
public:
    [[nodiscard]] T* find(const TicketId& id) {
        auto found = by_id_.find(id);
        return found == by_id_.end() ? nullptr : &found->second;
    }
    [[nodiscard]] const T* find(const TicketId& id) const {
        auto found = by_id_.find(id);
        return found == by_id_.end() ? nullptr : &found->second;
    }
    // A record that must be there.
    [[nodiscard]] T& at(const TicketId& id) {
        T* record = find(id);
        MM_ASSERT(record != nullptr);
        return *record;
    }
    [[nodiscard]] bool contains(const TicketId& id) const { return by_id_.contains(id); }
    [[nodiscard]] std::size_t size() const { return by_id_.size(); }
    [[nodiscard]] const std::unordered_map<TicketId, T>& all() const { return by_id_; }

    // The owner's current record of this ticket type.
    [[nodiscard]] T* of_owner(const UserId& owner, TicketType type) {
        auto found = current_.find({owner, type});
        return found == current_.end() ? nullptr : find(found->second);
    }
    [[nodiscard]] const T* of_owner(const UserId& owner, TicketType type) const {
        auto found = current_.find({owner, type});
        return found == current_.end() ? nullptr : find(found->second);
    }

    // Adds a record, its owner's current one of this type.
    T& add(const TicketId& id, const UserId& owner, TicketType type, T record) {
        auto [entry, inserted] = by_id_.emplace(id, std::move(record));
        MM_ASSERT(inserted);  // IDs are never reused
        current_[{owner, type}] = id;
        return entry->second;
    }
    // The record stays, but no longer as its owner's current one (if it still was).
    void retire(const TicketId& id, const UserId& owner, TicketType type) {
        if (auto found = current_.find({owner, type});
            found != current_.end() && found->second == id) {
            current_.erase(found);
        }
    }
    void erase(const TicketId& id, const UserId& owner, TicketType type) {
        retire(id, owner, type);
        by_id_.erase(id);
    }

private:
    struct OwnerType {
        UserId owner;
        TicketType type = 0;
        friend bool operator==(const OwnerType&, const OwnerType&) = default;
    };
    struct OwnerTypeHash {
        std::size_t operator()(const OwnerType& key) const noexcept {
            return std::hash<UserId>{}(key.owner) * 31 + key.type;
        }
    };

    std::unordered_map<TicketId, T> by_id_;  // looked up several times per match
    std::unordered_map<OwnerType, TicketId, OwnerTypeHash> current_;  // never walked in order
};

}  // namespace matchmesh::ticket
