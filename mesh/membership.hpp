#pragma once
// Membership: who is in the cluster, as one node sees it. Pure: inputs are what peers said and
// what time it is; outputs are the live list and events.
//
// Owned by MeshCore on the node's loop. A member is live once heard from directly; a member
// learned only from another's list is pending (contacted, not yet live) and forgotten if never
// heard. A live member silent for `dead_after` is declared dead: a tombstone remembers it, and
// every module ends what it shared with that member (its items, its rooms' members, the
// participations in its rooms). A higher incarnation of a live member means it restarted: the old
// one dies and the new one joins.
//
// Death is a verdict between two nodes, not a property of a node. A node declared dead may only be
// slow, paused or cut off; members declared dead (not those that left) keep receiving heartbeats
// while their tombstone lasts. When a tombstoned member speaks again it is told so (Rejected).
// The node told so *reconciles*: if it still saw the other as live it declares it dead in turn
// (ending what the two shared on its side too), lifts its own tombstone of it if it had one, and
// sends Rejected back so that the other lifts its tombstone as well. Neither changes incarnation,
// so what either shared with third nodes is untouched: a paused node keeps the tickets that
// involve nobody who buried it, and the majority side of a healed partition loses nothing. The two
// then meet again as new members, within a few heartbeats of the first frame that gets through.

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "mesh/network.hpp"

namespace matchmesh::mesh {

struct MembershipOptions {
    Duration heartbeat_interval{500};
    Duration dead_after{3000};
    Duration forget_unheard_after{10000};
    Duration tombstone_keep{600000};
    std::size_t tombstones_max = 4096;
    std::size_t members_max = 1024;
};

class Membership {
public:
    Membership(MemberInfo self, MembershipOptions options);

    enum class Verdict {
        accepted,
        rejected,  // the sender is a dead incarnation: answer with Rejected
        ignored,   // stale, or our own ID used by another node
    };

    Verdict on_heartbeat(const MemberInfo& sender, std::span<const MemberInfo> view, Time now);
    // Any frame from a live member shows it is alive.
    void on_contact(const MemberInfo& sender, Time now);
    void on_leave(const NodeId& id, std::uint64_t incarnation, Time now);
    // A member we connected to (its handshake told us who it is): contact it until it answers.
    void add_pending(const MemberInfo& member, Time now);
    // `peer` declared this node dead. Returns whether this node reconciled with it now (then it
    // must send Rejected back): false for an old incarnation of the peer, or when the two
    // reconciled within the last `dead_after` (a Rejected already in flight says nothing new).
    [[nodiscard]] bool on_rejected(const MemberInfo& peer, Time now);
    // Declares silent members dead and forgets stale pending ones.
    void tick(Time now);

    [[nodiscard]] const MemberInfo& self() const { return self_; }
    [[nodiscard]] std::span<const MemberInfo> live() const { return live_; }
    [[nodiscard]] const MemberInfo* find_live(const NodeId& id) const;
    [[nodiscard]] bool is_live(const MemberInfo& member) const;
    [[nodiscard]] bool is_dead(const MemberInfo& member) const;
    // Whether to tell `member` it is dead here now: it is, and it was not told so in the last
    // heartbeat interval (a paused node that wakes up with many frames queued hears it once).
    [[nodiscard]] bool tell_dead(const MemberInfo& member, Time now);
    // Everyone to send heartbeats to: live and pending members, and the dead being probed.
    [[nodiscard]] std::vector<MemberInfo> contacts() const;
    [[nodiscard]] std::vector<MembershipEvent> take_events();

private:
    struct Peer {
        MemberInfo info;
        bool live = false;
        Time last_heard{};
        Time learned_at{};
    };
    struct Reconciled {
        std::uint64_t incarnation;
        Time at;
    };
    struct Tombstone {
        MemberInfo member;  // the buried incarnation
        Time at;
        bool probe;   // keep contacting it: declared dead, maybe only unreachable
        Time told{};  // when it was last told it is dead here
    };

    void bury(const MemberInfo& member, MembershipEvent::Kind kind, Time now);
    void make_live(Peer& peer, const MemberInfo& info, Time now);
    void learn(const MemberInfo& member, Time now);
    void rebuild_live();

    MemberInfo self_;
    MembershipOptions options_;
    std::map<NodeId, Peer> peers_;
    std::map<NodeId, Tombstone> tombstones_;
    std::map<NodeId, Reconciled> reconciled_;  // recent reconciliations, kept for `dead_after`
    std::vector<MemberInfo> live_;             // sorted by ID, including self
    std::vector<MembershipEvent> events_;
};

}  // namespace matchmesh::mesh
