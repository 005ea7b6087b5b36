#include "matching/node_lists.hpp"

#include "mesh/base/assert.hpp"

namespace matchmesh::matching {

std::uint32_t NodeLists::acquire(std::span<const NodeId> nodes) {
    auto found = by_nodes_.find(nodes);
    if (found == by_nodes_.end()) {
        std::uint32_t list = 0;
        if (free_.empty()) {
            list = static_cast<std::uint32_t>(lists_.size());
            lists_.emplace_back();
        } else {
            list = free_.back();
            free_.pop_back();
        }
        lists_[list].nodes.assign(nodes.begin(), nodes.end());
        found = by_nodes_.emplace(lists_[list].nodes, list).first;
    }
    ++lists_[found->second].users;
    return found->second;
}

void NodeLists::release(std::uint32_t list) {
    MM_ASSERT(list < lists_.size());
    List& held = lists_[list];
    MM_ASSERT(held.users > 0);
    if (--held.users == 0) {
        by_nodes_.erase(std::span<const NodeId>(held.nodes));
        held.nodes.clear();
        free_.push_back(list);
    }
}

std::span<const NodeId> NodeLists::nodes(std::uint32_t list) const {
    MM_ASSERT(list < lists_.size() && lists_[list].users > 0);
    return lists_[list].nodes;
}

}  // namespace matchmesh::matching
