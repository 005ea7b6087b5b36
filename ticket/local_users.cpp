#include "ticket/local_users.hpp"

#include <limits>

#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {

void LocalUsers::add(User user) {
    MM_ASSERT(!users_.contains(user.id));  // a reconnect removes the old session first
    const UserId id = user.id;
    users_.emplace(id, std::make_shared<const User>(std::move(user)));
}

bool LocalUsers::update_data(const UserId& id, const matching::ValueMap& values) {
    auto found = users_.find(id);
    if (found == users_.end()) {
        return false;
    }
    auto updated = std::make_shared<User>(*found->second);
    for (const auto& [key, value] : values) {
        updated->data[key] = value;
    }
    found->second = std::move(updated);
    return true;
}

void LocalUsers::remove(const UserId& id) {
    users_.erase(id);
    // A member's consents are adjacent, by their key.
    consents_.erase(consents_.lower_bound({id, TicketType{0}}),
                    consents_.upper_bound({id, std::numeric_limits<TicketType>::max()}));
}

void LocalUsers::consent(TicketType type, const UserId& member, UserId owner) {
    if (!users_.contains(member)) {
        return;
    }
    if (owner.str().empty()) {
        consents_.erase({member, type});
    } else {
        consents_[{member, type}] = std::move(owner);
    }
}

bool LocalUsers::consents(const UserId& member, TicketType type, const UserId& owner) const {
    auto found = consents_.find({member, type});
    return found != consents_.end() && found->second == owner;
}

}  // namespace matchmesh::ticket
