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
    if (auto old = entries_.find(update.member.id); old != entries_.end()) {
        erase(old);  // newer news about a member replaces older
    }
    const Rank rank{sends, next_order_++};
    const NodeId id = update.member.id;
    entries_.emplace(id, Entry{std::move(update), rank});
    ranking_.emplace(rank, id);
    if (entries_.size() > entries_max_) {
        // Full: the news that was spread the most already (the last ranked) is given up.
        erase(entries_.find(std::prev(ranking_.end())->second));
    }
    MM_ASSERT(entries_.size() <= entries_max_ && ranking_.size() == entries_.size());
}

std::vector<MemberUpdate> GossipQueue::take(const NodeId& to, std::size_t count) {
    std::vector<MemberUpdate> chosen;
    if (count == 0 || entries_.empty()) {
        return chosen;
    }
    std::vector<NodeId> picked;
    if (entries_.contains(to)) {
        picked.push_back(to);
    }
    for (auto it = ranking_.begin(); it != ranking_.end() && picked.size() < count; ++it) {
        if (it->second != to) {
            picked.push_back(it->second);
        }
    }
    for (const NodeId& id : picked) {
        auto entry = entries_.find(id);
        chosen.push_back(entry->second.update);
        sent(entry);
    }
    MM_ASSERT(chosen.size() <= count);
    return chosen;
}

void GossipQueue::sent(std::map<NodeId, Entry>::iterator entry) {
    auto& [sends_left, order] = entry->second.rank;
    ranking_.erase(entry->second.rank);
    if (--sends_left == 0) {
        entries_.erase(entry);
        return;
    }
    ranking_.emplace(entry->second.rank, entry->first);
}

void GossipQueue::erase(std::map<NodeId, Entry>::iterator entry) {
    ranking_.erase(entry->second.rank);
    entries_.erase(entry);
}

}  // namespace matchmesh::mesh
