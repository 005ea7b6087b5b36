#include "ticket/recall.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {
namespace {

constexpr std::size_t seen_pushes_max = 65536;

}  // namespace

void Recall::joined(const TicketId& id, MatchedTicket ticket, Time now) {
    ticket.forget_at = now + memory_;
    joined_[id] = std::move(ticket);
}

std::vector<std::pair<TicketId, MatchedTicket>> Recall::take_joined_at(const NodeId& node) {
    std::vector<std::pair<TicketId, MatchedTicket>> taken;
    for (auto it = joined_.begin(); it != joined_.end();) {
        if (it->second.room_node == node) {
            taken.emplace_back(it->first, std::move(it->second));
            it = joined_.erase(it);
        } else {
            ++it;
        }
    }
    // In the order of their IDs, whatever the table's: a node's death is handled the same way
    // each time.
    std::ranges::sort(taken, {},
                      [](const auto& entry) -> const std::string& { return entry.first.str(); });
    return taken;
}

void Recall::accepted_join(const std::string& attempt, Time now) {
    accepted_joins_[attempt] = now + memory_;
}

bool Recall::first_sight(const std::string& push_id, Time now) {
    if (!seen_pushes_.insert(push_id).second) {
        return false;
    }
    seen_order_.emplace_back(now, push_id);
    if (seen_order_.size() > seen_pushes_max) {
        seen_pushes_.erase(seen_order_.front().second);
        seen_order_.pop_front();
    }
    MM_ASSERT(seen_order_.size() == seen_pushes_.size());
    return true;
}

void Recall::forget_expired(Time now) {
    std::erase_if(joined_, [now](const auto& entry) { return entry.second.forget_at <= now; });
    std::erase_if(accepted_joins_, [now](const auto& entry) { return entry.second <= now; });
    // A retry of a push comes within the courier's patience; the memory is ample.
    while (!seen_order_.empty() && now - seen_order_.front().first > memory_) {
        seen_pushes_.erase(seen_order_.front().second);
        seen_order_.pop_front();
    }
}

}  // namespace matchmesh::ticket
