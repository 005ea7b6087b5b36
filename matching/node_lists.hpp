#pragma once
// NodeLists: lists of node IDs kept once each, with a count of their users. The items a node adds
// go to a few lists of replicas (one per placement group in use), so the record of an added item
// names its list by number: 4 bytes, where a list of its own would take a vector and a heap block.
//
// Owned by the node's matching service; lives on its loop thread.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "mesh/base/strong_id.hpp"

namespace matchmesh::matching {

class NodeLists {
public:
    // The number of the list holding `nodes` (in this order), one more user of it.
    [[nodiscard]] std::uint32_t acquire(std::span<const NodeId> nodes);
    // One user fewer; a list nobody uses is forgotten and its number used again.
    void release(std::uint32_t list);
    [[nodiscard]] std::span<const NodeId> nodes(std::uint32_t list) const;
    // Lists in use.
    [[nodiscard]] std::size_t size() const { return by_nodes_.size(); }

private:
    struct List {
        std::vector<NodeId> nodes;
        std::size_t users = 0;
    };
    struct NodesLess {
        bool operator()(std::span<const NodeId> left, std::span<const NodeId> right) const {
            return std::lexicographical_compare(left.begin(), left.end(), right.begin(),
                                                right.end());
        }
    };

    std::vector<List> lists_;
    std::vector<std::uint32_t> free_;
    // Each list in use by its nodes, viewed where lists_ keeps them (moving a List as lists_
    // grows keeps its vector's block).
    std::map<std::span<const NodeId>, std::uint32_t, NodesLess> by_nodes_;
};

}  // namespace matchmesh::matching
