#include "ticket/session_directory.hpp"

#include <algorithm>
#include <limits>

#include <xxhash.h>

#include "matching/placement.hpp"
#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {
namespace {

// A member's weight for a slot: the slot's hash and the member's mixed by a 64-bit finalizer,
// inlined, as placing a slot weighs every member.
std::uint64_t slot_weight(std::uint64_t slot_hash, std::uint64_t member_seed) {
    constexpr std::uint64_t multiplier = 0xd6e8feb86659fd93ULL;
    std::uint64_t x = slot_hash ^ member_seed;
    x ^= x >> 32;
    x *= multiplier;
    x ^= x >> 32;
    x *= multiplier;
    x ^= x >> 32;
    return x;
}

}  // namespace

DirectoryPlacement::DirectoryPlacement(std::span<const mesh::MemberInfo> live) {
    members_.reserve(live.size());
    for (const mesh::MemberInfo& member : live) {
        members_.push_back(member.id);
    }
    std::sort(members_.begin(), members_.end());
    seeds_.reserve(members_.size());
    for (const NodeId& id : members_) {
        seeds_.push_back(matching::member_hash(id));
    }
}

const NodeId* DirectoryPlacement::owner(const UserId& user) const {
    if (members_.empty()) {
        return nullptr;
    }
    const std::uint64_t slot = XXH3_64bits(user.str().data(), user.str().size()) % slots;
    // Members are in ID order and only a heavier weight replaces the best so far, so equal
    // weights go to the lower ID.
    auto rank = [&] {
        const std::uint64_t slot_hash = XXH3_64bits(&slot, sizeof(slot));
        std::size_t best = 0;
        std::uint64_t best_weight = slot_weight(slot_hash, seeds_[0]);
        for (std::size_t member = 1; member < members_.size(); ++member) {
            const std::uint64_t weight = slot_weight(slot_hash, seeds_[member]);
            if (weight > best_weight) {
                best = member;
                best_weight = weight;
            }
        }
        return best;
    };
    if (members_.size() >= std::numeric_limits<std::uint16_t>::max()) {
        return &members_[rank()];
    }
    if (owners_.empty()) {
        owners_.assign(slots, 0);
    }
    std::uint16_t& owner = owners_[slot];
    if (owner == 0) {
        owner = static_cast<std::uint16_t>(rank() + 1);
    }
    return &members_[owner - 1];
}

bool DirectoryPlacement::same_owner(const DirectoryPlacement& other, const UserId& user) const {
    const NodeId* mine = owner(user);
    const NodeId* theirs = other.owner(user);
    return mine == nullptr || theirs == nullptr ? mine == theirs : *mine == *theirs;
}

bool newer_session(std::uint64_t epoch, const NodeId& home, std::uint64_t other_epoch,
                   const NodeId& other_home) {
    return epoch > other_epoch || (epoch == other_epoch && home > other_home);
}

SessionDirectory::SessionDirectory(std::size_t entries_max) : entries_max_(entries_max) {
    MM_ASSERT(entries_max_ > 0);
}

std::optional<Supersede> SessionDirectory::register_session(const UserId& user,
                                                            SessionEntry session) {
    auto found = entries_.find(user);
    if (found == entries_.end()) {
        if (entries_.size() >= entries_max_) {
            ++refused_;
            return std::nullopt;
        }
        entries_.emplace(user, std::move(session));
        return std::nullopt;
    }
    SessionEntry& known = found->second;
    if (known.home == session.home) {
        // The same home again (a reconnect there, or a registration repeated after a membership
        // change): the home itself ends its older session.
        if (session.epoch > known.epoch) {
            known = std::move(session);
        }
        return std::nullopt;
    }
    if (newer_session(session.epoch, session.home, known.epoch, known.home)) {
        Supersede older{known.home, user, session};
        known = std::move(session);
        MM_ASSERT(known.home != older.older_home);
        return older;
    }
    return Supersede{session.home, user, known};
}

void SessionDirectory::end_session(const UserId& user, const SessionEntry& session) {
    auto found = entries_.find(user);
    if (found != entries_.end() && found->second.home == session.home &&
        found->second.epoch <= session.epoch) {
        entries_.erase(found);
    }
}

void SessionDirectory::forget_home(const NodeId& home) {
    std::erase_if(entries_, [&home](const auto& entry) { return entry.second.home == home; });
}

void SessionDirectory::follow(DirectoryPlacement placement, const NodeId& self) {
    placement_ = std::move(placement);
    std::erase_if(entries_, [&](const auto& entry) {
        const NodeId* directory = placement_.owner(entry.first);
        return directory == nullptr || *directory != self;
    });
}

const SessionEntry* SessionDirectory::find(const UserId& user) const {
    auto found = entries_.find(user);
    return found == entries_.end() ? nullptr : &found->second;
}

}  // namespace matchmesh::ticket
