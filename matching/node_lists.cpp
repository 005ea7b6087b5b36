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
    List& held = lists_[list];
    MM_ASSERT(held.users > 0);
    if (--held.users == 0) {
        by_nodes_.erase(by_nodes_.find(std::span<const NodeId>(held.nodes)));
        held.nodes.clear();
        free_.push_back(list);
    }
}

}  // namespace matchmesh::matching
