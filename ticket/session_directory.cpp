#include "ticket/session_directory.hpp"

#include <xxhash.h>

#include "matching/placement.hpp"
#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {

std::optional<NodeId> directory_of(const UserId& user, std::span<const mesh::MemberInfo> live) {
    // Ranked as placement ranks bucket keys (rendezvous weights); ties (which a 64-bit hash all
    // but never has) go to the lower ID, so every node picks alike.
    const std::uint64_t user_hash = XXH3_64bits(user.str().data(), user.str().size());
    const mesh::MemberInfo* best = nullptr;
    std::uint64_t best_weight = 0;
    for (const mesh::MemberInfo& member : live) {
        const std::uint64_t weight =
            matching::rendezvous_weight(user_hash, matching::member_hash(member.id));
        if (best == nullptr || weight > best_weight ||
            (weight == best_weight && member.id < best->id)) {
            best = &member;
            best_weight = weight;
        }
    }
    if (best == nullptr) {
        return std::nullopt;
    }
    return best->id;
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

void SessionDirectory::keep_only_own(const NodeId& self, std::span<const mesh::MemberInfo> live) {
    std::erase_if(entries_, [&](const auto& entry) {
        const std::optional<NodeId> directory = directory_of(entry.first, live);
        return !directory || *directory != self;
    });
}

const SessionEntry* SessionDirectory::find(const UserId& user) const {
    auto found = entries_.find(user);
    return found == entries_.end() ? nullptr : &found->second;
}

}  // namespace matchmesh::ticket
