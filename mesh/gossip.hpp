#pragma once
// GossipQueue: the membership news this node still spreads. Each update rides on a bounded number
// of probe frames (about λ·log2 N, enough for news to reach every member with high probability)
// and is then dropped, so dissemination costs no frames of its own. One entry per member: newer
// news about a member replaces older.
//
// Owned by Membership on the node's loop.

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "mesh/control.hpp"

namespace matchmesh::mesh {

class GossipQueue {
public:
    explicit GossipQueue(std::size_t entries_max);

    // Spreads `update` on the next `sends` frames that have room for it.
    void push(MemberUpdate update, std::size_t sends);
    // Up to `count` updates for one frame to `to`: news about `to` itself first (a suspected
    // member hears it at once and can refute), then the least sent.
    [[nodiscard]] std::vector<MemberUpdate> take(const NodeId& to, std::size_t count);
    [[nodiscard]] std::size_t size() const { return entries_.size(); }

private:
    // Ranked as take() hands them out: the most sends left first, then the newest.
    using Rank = std::pair<std::size_t, std::uint64_t>;  // sends left, order pushed
    struct Entry {
        MemberUpdate update;
        Rank rank;
    };

    void sent(std::map<NodeId, Entry>::iterator entry);
    void erase(std::map<NodeId, Entry>::iterator entry);

    std::size_t entries_max_;
    std::map<NodeId, Entry> entries_;
    std::map<Rank, NodeId, std::greater<>> ranking_;  // every entry, by rank: a frame costs
                                                      // O(count log N), not a pass over all news
    std::uint64_t next_order_ = 0;
};

}  // namespace matchmesh::mesh
