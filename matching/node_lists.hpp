#pragma once
// NodeLists: lists of node IDs kept once each, with a count of their users. The items a node adds
// go to a few lists of replicas (one per placement group in use), so the record of an added item
// names its list by number: 4 bytes, where a list of its own would take a vector and a heap block.
//
// Owned by the node's matching service; lives on its loop thread.

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
    [[nodiscard]] std::span<const NodeId> nodes(std::uint32_t list) const {
        return lists_[list].nodes;
    }
    // Lists in use.
    [[nodiscard]] std::size_t size() const { return by_nodes_.size(); }

private:
    struct List {
        std::vector<NodeId> nodes;
        std::size_t users = 0;
    };
    struct NodesLess {
        using is_transparent = void;
        bool operator()(std::span<const NodeId> left, std::span<const NodeId> right) const {
            return std::lexicographical_compare(left.begin(), left.end(), right.begin(),
                                                right.end());
        }
    };

    std::vector<List> lists_;
    std::vector<std::uint32_t> free_;
    std::map<std::vector<NodeId>, std::uint32_t, NodesLess> by_nodes_;
};

}  // namespace matchmesh::matching
