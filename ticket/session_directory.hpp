#pragma once
// SessionDirectory: the part of the cluster's session directory this node keeps. A user has one
// live session in the whole cluster; when it starts another on some node, the older one must end.
// Rather than telling every node of every new session (a frame per node per player), each user's
// sessions are registered with one node, its *directory*, placed by rendezvous hashing over the
// live members (DirectoryPlacement): the same on every node with the same view, and a member
// joining or leaving moves only the users it gains or loses. Registering costs one frame, ending
// one, and superseding an older session one more, however large the cluster.
//
// The directory is soft state; the truth is each home's own sessions. When the membership
// changes, every home registers again the sessions whose directory moved, and each directory
// forgets the users it no longer holds. So a directory node's death loses nothing for long, and
// after a partition heals, the two sides' sessions of one user meet at one directory and the
// older one ends. During a partition, each side has directories of its own, and a user may have
// a session on each side until it heals.
//
// Pure: no network, no clock. Owned by the ticket service on the node's loop thread.

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "mesh/network.hpp"

namespace matchmesh::ticket {

// Where each user's directory entry is kept in one view of the cluster. A user ID hashes into one
// of `slots`, and each slot is placed by rendezvous hashing over the live members (the member it
// weighs most on). A slot's member is found once per view, when a user of that slot is first
// placed, so placing a session costs a hash and a table lookup whatever the cluster's size, and a
// member joining or leaving moves only the slots it gains or loses. Equal weights (which a 64-bit
// hash all but never gives) go to the lower node ID, so every node with the same view picks alike.
class DirectoryPlacement {
public:
    static constexpr std::uint32_t slots = 1U << 13;

    DirectoryPlacement() = default;
    explicit DirectoryPlacement(std::span<const mesh::MemberInfo> live);

    // The member that keeps `user`'s entry; null in an empty view. Valid while this object lives.
    [[nodiscard]] const NodeId* owner(const UserId& user) const;
    // Whether two placements put `user` on the same member.
    [[nodiscard]] bool same_owner(const DirectoryPlacement& other, const UserId& user) const;

private:
    std::vector<NodeId> members_;       // sorted by ID
    std::vector<std::uint64_t> seeds_;  // member_hash of each member
    // Per slot, 1 + the index of its member in members_, or 0 until first asked (16 KiB: a
    // view of more members than fit is ranked at each lookup).
    mutable std::vector<std::uint16_t> owners_;
};

// Which of two sessions of a user is the newer: the later start, and on a tie the higher home ID
// (every node decides alike).
[[nodiscard]] bool newer_session(std::uint64_t epoch, const NodeId& home, std::uint64_t other_epoch,
                                 const NodeId& other_home);

struct SessionEntry {
    NodeId home;
    std::uint64_t epoch = 0;
};

// An older session to end: its home is told the newer one.
struct Supersede {
    NodeId older_home;
    UserId user;
    SessionEntry newer;
};

class SessionDirectory {
public:
    explicit SessionDirectory(std::size_t entries_max);

    // A home registers a session. If the user has a session registered from another home, the
    // older of the two must end: the answer names its home (which may be the registering one).
    [[nodiscard]] std::optional<Supersede> register_session(const UserId& user,
                                                            SessionEntry session);
    // A home's session ended; forgotten unless a newer one has been registered since.
    void end_session(const UserId& user, const SessionEntry& session);
    // A home left or died: its sessions went with it.
    void forget_home(const NodeId& home);
    // After a membership change: places users by `placement` from now on, and keeps only those
    // whose directory this node still is.
    void follow(DirectoryPlacement placement, const NodeId& self);
    [[nodiscard]] const DirectoryPlacement& placement() const { return placement_; }

    [[nodiscard]] const SessionEntry* find(const UserId& user) const;
    [[nodiscard]] std::size_t size() const { return entries_.size(); }
    // Registrations refused because the directory held its maximum of entries.
    [[nodiscard]] std::uint64_t refused() const { return refused_; }

private:
    std::size_t entries_max_;
    std::unordered_map<UserId, SessionEntry> entries_;
    DirectoryPlacement placement_;
    std::uint64_t refused_ = 0;
};

}  // namespace matchmesh::ticket
