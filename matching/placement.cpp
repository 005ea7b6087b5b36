#include "matching/placement.hpp"

#include <algorithm>

#include <xxhash.h>

#include "mesh/base/assert.hpp"

namespace matchmesh::matching {

std::uint64_t member_hash(const NodeId& id) {
    return XXH3_64bits(id.str().data(), id.str().size());
}

std::uint64_t rendezvous_weight(std::uint64_t key_hash, std::uint64_t member_hash) {
    return XXH3_64bits_withSeed(&key_hash, sizeof(key_hash), member_hash);
}

std::size_t replica_count(std::size_t candidates, ReplicaRule rule) {
    MM_ASSERT(rule.distribution_rate >= 1 && rule.distribution_rate <= 100);
    MM_ASSERT(rule.replicas_max >= 1);
    const std::size_t scaled = candidates * static_cast<std::size_t>(rule.distribution_rate);
    return std::clamp<std::size_t>((scaled + 99) / 100, 1, rule.replicas_max);
}

Placement::Placement(std::string target_node_type, ReplicaRule rule)
    : target_node_type_(std::move(target_node_type)), rule_(rule) {
    MM_ASSERT(rule_.distribution_rate >= 1 && rule_.distribution_rate <= 100);
    MM_ASSERT(rule_.replicas_max >= 1);
}

void Placement::update(std::span<const mesh::MemberInfo> live_members) {
    known_.clear();
    candidates_.clear();
    id_hashes_.clear();
    for (const mesh::MemberInfo& member : live_members) {
        if (member.node_type == target_node_type_) {
            candidates_.push_back(member.id);
        }
    }
    std::sort(candidates_.begin(), candidates_.end());
    for (const NodeId& id : candidates_) {
        id_hashes_.push_back(member_hash(id));
    }
}

std::size_t Placement::replica_count() const {
    return candidates_.empty() ? 0 : matching::replica_count(candidates_.size(), rule_);
}

void Placement::replicas(std::uint64_t key_hash, std::vector<NodeId>& out) const {
    out.clear();
    if (candidates_.empty()) {
        return;
    }
    if (auto known = known_.find(key_hash); known != known_.end()) {
        out = known->second;
        return;
    }
    // Ties (which a 64-bit hash all but never has) go to the lower ID.
    weights_.clear();
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
        weights_.emplace_back(rendezvous_weight(key_hash, id_hashes_[i]), i);
    }
    const auto heavier = [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    };
    const std::size_t count = replica_count();
    std::partial_sort(weights_.begin(), weights_.begin() + static_cast<std::ptrdiff_t>(count),
                      weights_.end(), heavier);
    for (std::size_t i = 0; i < count; ++i) {
        out.push_back(candidates_[weights_[i].second]);
    }
    if (known_.size() >= known_max) {
        known_.clear();
    }
    known_.emplace(key_hash, out);
}

}  // namespace matchmesh::matching
