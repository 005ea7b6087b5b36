#include "mesh/gossip.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

GossipQueue::GossipQueue(std::size_t entries_max) : entries_max_(entries_max) {
    MM_ASSERT(entries_max_ > 0);
}

void GossipQueue::push(MemberUpdate update, std::size_t sends) {
    MM_ASSERT(!update.member.id.empty());
    if (sends == 0) {
        return;
    }
    const NodeId id = update.member.id;
    entries_.insert_or_assign(id, Entry{std::move(update), sends, next_order_++});
    if (entries_.size() > entries_max_) {
        // Full: the news that was spread the most already is the one to give up.
        auto most_sent = std::min_element(entries_.begin(), entries_.end(), [](auto& a, auto& b) {
            return a.second.sends_left < b.second.sends_left;
        });
        entries_.erase(most_sent);
    }
    MM_ASSERT(entries_.size() <= entries_max_);
}

void GossipQueue::sent(std::map<NodeId, Entry>::iterator entry) {
    if (--entry->second.sends_left == 0) {
        entries_.erase(entry);
    }
}

std::vector<MemberUpdate> GossipQueue::take(const NodeId& to, std::size_t count) {
    std::vector<MemberUpdate> chosen;
    if (count == 0 || entries_.empty()) {
        return chosen;
    }
    if (auto about_to = entries_.find(to); about_to != entries_.end()) {
        chosen.push_back(about_to->second.update);
        sent(about_to);
    }
    std::vector<std::map<NodeId, Entry>::iterator> candidates;
    candidates.reserve(entries_.size());
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->first != to) {
            candidates.push_back(it);
        }
    }
    const std::size_t more = std::min(count - chosen.size(), candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(more),
                      candidates.end(), [](auto a, auto b) {
                          if (a->second.sends_left != b->second.sends_left) {
                              return a->second.sends_left > b->second.sends_left;
                          }
                          return a->second.order > b->second.order;
                      });
    for (std::size_t i = 0; i < more; ++i) {
        chosen.push_back(candidates[i]->second.update);
        sent(candidates[i]);
    }
    MM_ASSERT(chosen.size() <= count);
    return chosen;
}

}  // namespace matchmesh::mesh
