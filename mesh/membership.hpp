#pragma once
// Membership: who is in the cluster, as one node sees it. Pure: inputs are what peers said and
// what time it is; outputs are the live list, events, the members to probe and the news to
// gossip. Randomness (the probe order, helpers, sync partners) comes from a source seeded with
// the node's ID and incarnation, so the simulation's runs repeat.
//
// Owned by MeshCore on the node's loop. A member is live once heard from directly; a member
// learned only from gossip or another's list is pending (contacted, not yet live) and forgotten
// if never heard. A higher incarnation of a live member means it restarted: the old one dies and
// the new one joins.
//
// Failure detection probes one member per protocol period (`heartbeat_interval`), so a node's
// membership traffic does not grow with the cluster. A member that answers neither a ping nor
// the pings of helpers asked to reach it is *suspect*; the suspicion is gossiped, and a suspect
// that does not refute it within `dead_after` is declared dead: a tombstone remembers it, and
// every module ends what it shared with that member. A suspect refutes by raising its *alive
// counter* (not its incarnation: a new incarnation is a new process whose items all end) and
// gossiping that it is alive. A member that others still reach is vouched for by their pings, so
// a link cut between two nodes only is no verdict: their requests to each other fail by timeout,
// as to a slow member. A death verdict heard by gossip counts at once only where the member is
// suspect already; elsewhere it starts a suspicion, so a stale verdict that crosses a healed
// partition cannot bury a member that its own side still hears.
//
// Death is a verdict between two nodes, not a property of a node. A node declared dead may only be
// slow, paused or cut off; members declared dead (not those that left) keep being probed at a low
// constant rate while their tombstone lasts. A node that buries a member tells it so at once, and
// again whenever it hears from it or hears it called alive (Rejected, at most once per period).
// The node told so *reconciles*: if it still saw the other as live it declares it dead in turn
// (ending what the two shared on its side too), lifts its own tombstone of it if it had one, and
// sends Rejected back so that the other lifts its tombstone as well; it also raises its alive
// counter and gossips that it is alive, so that everyone else who buried it hears of it and tells
// it too. Neither changes incarnation, so what either shared with third nodes that did not bury
// it is untouched. The two then meet again as new members.

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "mesh/control.hpp"
#include "mesh/gossip.hpp"
#include "mesh/network.hpp"

namespace matchmesh::mesh {

struct MembershipOptions {
    Duration heartbeat_interval{500};  // the protocol period: one probe each
    Duration dead_after{3000};         // the suspicion timeout
    Duration forget_unheard_after{10000};
    Duration tombstone_keep{600000};
    std::size_t tombstones_max = 4096;
    std::size_t members_max = 1024;
    std::size_t helpers_count = 3;          // members asked to ping a member that did not answer
    std::size_t updates_per_frame_max = 8;  // gossip carried by one probe frame
    std::size_t gossip_repeat_factor = 3;   // each update is sent this many times log2(N + 1)
    std::size_t sync_every_periods = 10;    // a full member list exchanged with one member
};

class Membership {
public:
    Membership(MemberInfo self, MembershipOptions options);

    enum class Verdict {
        accepted,
        rejected,  // the sender is a dead incarnation: answer with Rejected
        ignored,   // stale, or our own ID used by another node
    };

    // A member's full list (a sync): direct contact from `sender`, and members to meet.
    Verdict on_sync(const MemberInfo& sender, std::span<const MemberInfo> view, Time now);
    // A probe frame (ping, ack, ping request) straight from `sender`.
    Verdict on_probe(const MemberInfo& sender, std::uint64_t alive_counter, Time now);
    // News gossiped by a live member.
    void on_gossip(std::span<const MemberUpdate> updates, Time now);
    // Any frame from a live member shows it is alive.
    void on_contact(const MemberInfo& sender, Time now);
    void on_leave(const NodeId& id, std::uint64_t incarnation, Time now);
    // A member we connected to (its handshake told us who it is): contact it until it answers.
    void add_pending(const MemberInfo& member, Time now);
    // `peer` declared this node dead. Returns whether this node reconciled with it now (then it
    // must send Rejected back): false for an old incarnation of the peer, or when the two
    // reconciled within the last `dead_after` (a Rejected already in flight says nothing new).
    [[nodiscard]] bool on_rejected(const MemberInfo& peer, Time now);
    // `member` answered neither this node's ping nor its helpers' within a protocol period.
    void suspect(const MemberInfo& member, Time now);
    // Declares suspects dead once their suspicion times out and forgets stale pending members.
    // Costs one step per suspect or pending member, none per settled one.
    void tick(Time now);

    [[nodiscard]] const MemberInfo& self() const { return self_; }
    [[nodiscard]] std::uint64_t alive_counter() const { return alive_counter_; }
    [[nodiscard]] std::span<const MemberInfo> live() const { return live_; }
    // A hash of the live list (IDs and incarnations, this node's own included): two members
    // whose digests agree have the same list, so a periodic sync can send the digest alone.
    [[nodiscard]] std::uint64_t live_digest() const { return live_digest_; }
    // Membership news this node still spreads (none once the cluster has been quiet a while).
    [[nodiscard]] std::size_t news_to_spread() const { return gossip_.size(); }
    [[nodiscard]] const MemberInfo* find_live(const NodeId& id) const;
    [[nodiscard]] bool is_live(const MemberInfo& member) const;
    [[nodiscard]] bool is_dead(const MemberInfo& member) const;
    [[nodiscard]] bool is_suspect(const NodeId& id) const;
    // Whether to tell `member` it is dead here now: it is, and it was not told so in the last
    // protocol period (a paused node that wakes up with many frames queued hears it once).
    [[nodiscard]] bool tell_dead(const MemberInfo& member, Time now);
    // Buried members heard called alive, or buried just now: each to be told (tell_dead decides).
    [[nodiscard]] std::vector<MemberInfo> take_to_tell();

    // The next live member to probe: round robin over the live members, shuffled each round.
    [[nodiscard]] std::optional<MemberInfo> next_probe_target();
    // Up to `helpers_count` live members other than `target`, chosen at random.
    [[nodiscard]] std::vector<MemberInfo> helpers_for(const MemberInfo& target);
    // A buried member to probe, at random (one a period: a healed partition is found).
    [[nodiscard]] std::optional<MemberInfo> next_tombstone_probe();
    // A live member to exchange full lists with this period, if it is time for one.
    [[nodiscard]] std::optional<MemberInfo> sync_partner();
    // Members heard of but not yet from: each pinged every period until it answers.
    [[nodiscard]] std::vector<MemberInfo> pending() const;
    // The gossip to carry on one probe frame to `to`.
    [[nodiscard]] std::vector<MemberUpdate> gossip_for(const NodeId& to);
    // Everyone to tell that this node leaves: live and pending members, and the dead being probed.
    [[nodiscard]] std::vector<MemberInfo> contacts() const;
    [[nodiscard]] std::vector<MembershipEvent> take_events();

private:
    struct Peer {
        MemberInfo info;
        bool live = false;
        std::uint64_t alive_counter = 0;
        std::optional<Time> suspected_since;
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
    using Status = MemberUpdate::Status;

    Verdict contact(const MemberInfo& sender, Time now);
    void bury(const MemberInfo& member, MembershipEvent::Kind kind, Time now);
    void declare_dead(Peer& peer, Time now);
    void make_live(Peer& peer, const MemberInfo& info, Time now);
    void learn(const MemberInfo& member, Time now);
    void add_peer(const MemberInfo& member, Time now);
    void start_suspicion(Peer& peer, Time now);
    void apply(const MemberUpdate& update, Time now);
    void apply_to_self(const MemberUpdate& update);
    void apply_to_peer(Peer& peer, const MemberUpdate& update, Time now);
    void restarted(Peer& peer, const MemberUpdate& update, Time now);
    void tell_if_buried_here(const MemberInfo& member);
    void spread(const MemberInfo& member, Status status, std::uint64_t alive_counter);
    void rebuild_live();

    MemberInfo self_;
    MembershipOptions options_;
    std::uint64_t alive_counter_ = 0;
    std::map<NodeId, Peer> peers_;
    std::map<NodeId, Tombstone> tombstones_;
    std::map<NodeId, Reconciled> reconciled_;  // recent reconciliations, kept for `dead_after`
    std::vector<MemberInfo> live_;             // sorted by ID, including self
    // Each live member's place in live_: every frame sent or received looks its peer up, and a
    // hash costs the same in a cluster of any size.
    std::unordered_map<NodeId, std::uint32_t> live_index_;
    std::uint64_t live_digest_ = 0;
    // The peers tick() looks at: suspects and pending members, with settled ones left over until
    // the next tick clears them. A period costs nothing per settled member.
    std::set<NodeId> unsettled_;
    std::vector<MembershipEvent> events_;
    std::vector<MemberInfo> to_tell_;
    GossipQueue gossip_;
    std::mt19937_64 random_;
    std::vector<NodeId> probe_order_;  // this round's shuffled live members
    std::size_t probe_next_ = 0;
    std::size_t periods_ = 0;  // since start, for the sync cadence
};

}  // namespace matchmesh::mesh
