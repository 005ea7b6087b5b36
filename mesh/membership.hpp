#pragma once
// Membership: who is in the cluster, as one node sees it. Pure: inputs are what peers said and
// what time it is; outputs are the live list and events.
//
// Owned by MeshCore on the node's loop. A member is live once heard from directly; a member
// learned only from another's list is pending (contacted, not yet live) and forgotten if never
// heard. A live member silent for `dead_after` is declared dead. Death is final for an
// incarnation: a tombstone remembers it, and a dead incarnation that speaks again is told so
// (Rejected) and must rejoin with a higher one. A higher incarnation of a live member means it
// restarted: the old one dies and the new one joins. Members declared dead (not those that left)
// keep receiving heartbeats while their tombstone lasts, so that two sides of a healed partition
// find each other again.

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
    // This node was declared dead somewhere: continue as a new incarnation. Returns false (and
    // changes nothing) if `dead_incarnation` is not the current one.
    bool reset(std::uint64_t dead_incarnation, std::uint64_t new_incarnation);
    // Declares silent members dead and forgets stale pending ones.
    void tick(Time now);

    [[nodiscard]] const MemberInfo& self() const { return self_; }
    [[nodiscard]] std::span<const MemberInfo> live() const { return live_; }
    [[nodiscard]] const MemberInfo* find_live(const NodeId& id) const;
    [[nodiscard]] bool is_live(const MemberInfo& member) const;
    [[nodiscard]] bool is_dead(const MemberInfo& member) const;
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
    struct Tombstone {
        MemberInfo member;  // the buried incarnation
        Time at;
        bool probe;  // keep contacting it: declared dead, maybe only unreachable
    };

    void bury(const MemberInfo& member, MembershipEvent::Kind kind, Time now);
    void make_live(Peer& peer, const MemberInfo& info, Time now);
    void learn(const MemberInfo& member, Time now);
    void rebuild_live();

    MemberInfo self_;
    MembershipOptions options_;
    std::map<NodeId, Peer> peers_;
    std::map<NodeId, Tombstone> tombstones_;
    std::vector<MemberInfo> live_;  // sorted by ID, including self
    std::vector<MembershipEvent> events_;
};

}  // namespace matchmesh::mesh
