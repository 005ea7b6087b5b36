#pragma once
// LocalUsers: the users whose sessions are on this node (their home), each as a snapshot that the
// tickets and rooms it joins share until its data changes, and each one's consent to play in
// another user's party, per ticket type, which ends with its session. Owns only these; on the
// ticket service's thread.

#include <cstddef>
#include <map>
#include <unordered_map>
#include <utility>

#include "ticket/state.hpp"

namespace matchmesh::ticket {

class LocalUsers {
public:
    [[nodiscard]] const User* find(const UserId& id) const {
        auto found = users_.find(id);
        return found == users_.end() ? nullptr : found->second.get();
    }
    [[nodiscard]] SharedUser shared(const UserId& id) const {
        auto found = users_.find(id);
        return found == users_.end() ? nullptr : found->second;
    }
    [[nodiscard]] bool contains(const UserId& id) const { return users_.contains(id); }
    [[nodiscard]] std::size_t size() const { return users_.size(); }
    template <typename Visit>
    void for_each(Visit&& visit) const {
        for (const auto& [id, user] : users_) {
            visit(*user);
        }
    }

    // A new session (the user is not here yet).
    void add(User user);
    // Replaces values in the user's data: a new snapshot, so rooms it joined keep the data it had.
    bool update_data(const UserId& id, const matching::ValueMap& values);
    // The session ended: the user and its consents go.
    void remove(const UserId& id);

    // `member` agrees to play in `owner`'s party for tickets of `type`; an empty owner: in none.
    void consent(TicketType type, const UserId& member, UserId owner);
    [[nodiscard]] bool consents(const UserId& member, TicketType type, const UserId& owner) const;

private:
    std::unordered_map<UserId, SharedUser> users_;
    std::map<std::pair<UserId, TicketType>, UserId> consents_;  // member and type: the owner
};

}  // namespace matchmesh::ticket
