#pragma once
// Placement: which nodes hold a bucket key. Rendezvous (highest-random-weight) hashing over the
// live members of the target node type: every node computes the same ordered replica list from
// the same membership, and a member joining or leaving moves only the keys it gains or loses.

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "mesh/network.hpp"

namespace matchmesh::matching {

// How many nodes hold each key: a share of the candidates (`distribution_rate` percent), at least
// one and at most `replicas_max`. Since a search finds every live item whatever the replica count,
// replicas only buy tolerance of failures: the cap keeps a key's cost, and so each add's, from
// growing with the cluster.
struct ReplicaRule {
    int distribution_rate = 30;    // 1..100
    std::size_t replicas_max = 3;  // at least 1
};

// Rendezvous weights: a key goes to the members it weighs most on. weight(key, member) = XXH3 of
// the key's hash seeded with the hash of the member's ID. Placement ranks nodes for bucket keys by
// it, and the session directory ranks them for user IDs alike.
[[nodiscard]] std::uint64_t member_hash(const NodeId& id);
[[nodiscard]] std::uint64_t rendezvous_weight(std::uint64_t key_hash, std::uint64_t member_hash);

// R = clamp(ceil(candidates * rate / 100), 1, replicas_max).
[[nodiscard]] std::size_t replica_count(std::size_t candidates, ReplicaRule rule);

class Placement {
public:
    Placement(std::string target_node_type, ReplicaRule rule);

    // Recomputes the candidates from a membership (call after each membership change).
    void update(std::span<const mesh::MemberInfo> live_members);

    // The key's replicas, best first; at most replica_count() of them. Ranking the candidates
    // costs a hash each and a list, so each key's answer is kept until the membership changes.
    void replicas(std::uint64_t key_hash, std::vector<NodeId>& out) const;

    [[nodiscard]] std::size_t replica_count() const;
    [[nodiscard]] std::span<const NodeId> candidates() const { return candidates_; }
    [[nodiscard]] const std::string& target_node_type() const { return target_node_type_; }

private:
    std::string target_node_type_;
    ReplicaRule rule_;
    std::vector<NodeId> candidates_;        // sorted by ID
    std::vector<std::uint64_t> id_hashes_;  // member_hash of each candidate
    static constexpr std::size_t known_max = 1 << 16;  // keys kept; past it, the list starts over
    mutable std::unordered_map<std::uint64_t, std::vector<NodeId>> known_;
    mutable std::vector<std::pair<std::uint64_t, std::size_t>> weights_;  // scratch
};

}  // namespace matchmesh::matching
