#pragma once
// For each ticket type, the tickets that began waiting on this node lately, oldest first: where a
// join whose room was taken looks for another room here (Rooms::seat_elsewhere). Entries are
// hints: the caller checks each ticket and says which are gone, and past `per_type_max` of a type
// the oldest is forgotten. Owned by Tickets; on the node's loop thread.

#include <algorithm>
#include <cstddef>
#include <deque>
#include <optional>
#include <unordered_map>

#include "mesh/base/strong_id.hpp"
#include "ticket/types.hpp"

namespace matchmesh::ticket {

class WaitingLately {
public:
    static constexpr std::size_t per_type_max = 64;

    void add(TicketType type, const TicketId& id) {
        std::deque<TicketId>& waiting = by_type_[type];
        if (waiting.size() >= per_type_max) {
            waiting.pop_front();
        }
        waiting.push_back(id);
    }

    enum class Seen { gone, passed, taken };
    // The first ticket of `type`, oldest first, that `see` takes; those it finds gone are dropped.
    template <typename See>
    [[nodiscard]] std::optional<TicketId> first(TicketType type, See see) {
        auto found = by_type_.find(type);
        if (found == by_type_.end()) {
            return std::nullopt;
        }
        std::deque<TicketId>& waiting = found->second;
        std::optional<TicketId> taken;
        std::erase_if(waiting, [&](const TicketId& id) {
            if (taken) {
                return false;
            }
            const Seen seen = see(id);
            if (seen == Seen::taken) {
                taken = id;
            }
            return seen == Seen::gone;
        });
        return taken;
    }

private:
    std::unordered_map<TicketType, std::deque<TicketId>> by_type_;
};

}  // namespace matchmesh::ticket
