// Membership and request/response of MeshCore, run on the simulated network.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "mesh/frame.hpp"
#include "mesh/sim/sim_world.hpp"
#include "support/sim_cluster.hpp"

using namespace matchmesh;
using namespace matchmesh::mesh;
using namespace matchmesh::mesh::sim;
using namespace std::chrono_literals;

namespace {

MeshOptions fast_options() {
    return test_support::fast_mesh_options();
}

// A world of `count` nodes n0..n{count-1}, all seeded with n0, recording every membership event.
struct Cluster {
    struct Tap {};  // the services of a node here: none, only its events recorded

    std::vector<MembershipEvent> events;  // every event any node published, in order
    std::vector<NodeId> event_nodes;
    std::vector<Time> event_times;
    test_support::SimCluster<Tap> sim;
    SimWorld& world = sim.world;

    explicit Cluster(std::size_t count, std::uint64_t seed = 7, LinkModel links = {},
                     MeshOptions options = fast_options())
        : sim({.nodes = count,
               .seed = seed,
               .links = links,
               .mesh = std::move(options),
               .converge_within = Duration(0)},
              [this](SimNode& node) {
                  node.network().on_membership(
                      [this, id = node.id()](const MembershipEvent& event) {
                          events.push_back(event);
                          event_nodes.push_back(id);
                          event_times.push_back(world.now());
                      });
                  return std::make_unique<Tap>();
              }) {}

    static NodeId name(std::size_t i) { return test_support::SimCluster<Tap>::name(i); }

    std::vector<std::string> live_at(std::size_t i) {
        std::vector<std::string> ids;
        for (const MemberInfo& member : world.node(name(i)).network().live_members()) {
            ids.push_back(member.id.str());
        }
        return ids;
    }

    // What node `at` published about `about`.
    std::size_t count_events_at(const NodeId& at, MembershipEvent::Kind kind,
                                const NodeId& about) const {
        std::size_t count = 0;
        for (std::size_t i = 0; i < events.size(); ++i) {
            count += event_nodes[i] == at && events[i].kind == kind && events[i].member.id == about;
        }
        return count;
    }

    std::vector<std::uint64_t> incarnations() {
        std::vector<std::uint64_t> all;
        for (SimNode* node : world.nodes()) {
            all.push_back(node->core().self().incarnation);
        }
        return all;
    }

    // Frames delivered per second of the next 1 s of virtual time.
    std::uint64_t frames_per_second() {
        const auto before = world.frames_delivered();
        world.run_for(1s);
        return world.frames_delivered() - before;
    }

    // When the last node to publish `kind` about `about` did so (none: nobody did).
    std::optional<Time> last_event_time(MembershipEvent::Kind kind, const NodeId& about) const {
        std::optional<Time> last;
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (events[i].kind == kind && events[i].member.id == about) {
                last = std::max(last.value_or(event_times[i]), event_times[i]);
            }
        }
        return last;
    }

    // Every node's frames per second over the next `duration`, per node.
    struct Traffic {
        double frames = 0;  // per node and second
        double bytes = 0;
    };
    Traffic traffic_per_node_second(Duration duration) {
        const auto frames_before = world.frames_delivered();
        const auto bytes_before = world.bytes_delivered();
        world.run_for(duration);
        const double per_node_second = std::chrono::duration<double>(duration).count() *
                                       static_cast<double>(world.nodes().size());
        return Traffic{
            static_cast<double>(world.frames_delivered() - frames_before) / per_node_second,
            static_cast<double>(world.bytes_delivered() - bytes_before) / per_node_second};
    }

    std::size_t count_events(MembershipEvent::Kind kind, const NodeId& about) const {
        return static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [&](auto& e) {
            return e.kind == kind && e.member.id == about;
        }));
    }
};

}  // namespace

TEST_CASE("mesh/membership: nodes seeded with one node learn every member") {
    Cluster cluster(6);
    REQUIRE(cluster.world.run_until_converged(2s));
    CHECK(cluster.live_at(5) == std::vector<std::string>{"n0", "n1", "n2", "n3", "n4", "n5"});
    CHECK(cluster.live_at(2).size() == 6);
    // Each node saw every other join exactly once.
    CHECK(cluster.count_events(MembershipEvent::Kind::joined, NodeId("n3")) == 5);
}

TEST_CASE("mesh/membership: a crashed node is declared dead within the failure timeout") {
    Cluster cluster(5);
    REQUIRE(cluster.world.run_until_converged(2s));
    const Time crashed_at = cluster.world.now();
    cluster.world.crash(NodeId("n2"));
    cluster.world.run_for(600ms);  // not yet: silence must last longer than dead_after
    CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n2")) == 0);
    cluster.world.run_for(200ms);  // dead_after + one heartbeat tick
    CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n2")) == 4);
    CHECK(cluster.world.now() - crashed_at <= 800ms);
    CHECK(cluster.live_at(0) == std::vector<std::string>{"n0", "n1", "n3", "n4"});
}

// The failure-detection bound the README states: a crashed member is probed by some node within a
// few periods (each node probes one member a period), suspected at the end of that period, the
// suspicion reaches every node in about log2(N) periods of gossip, and each declares it dead when
// its suspicion times out.
Duration detection_bound(const MembershipOptions& options, std::size_t nodes) {
    const auto log2_nodes = static_cast<int>(std::bit_width(nodes));
    return options.dead_after + options.heartbeat_interval * (4 + log2_nodes);
}

TEST_CASE("mesh/membership: a crash among 96 nodes is detected by every node within the bound") {
    for (std::uint64_t seed : {1, 2, 3}) {
        CAPTURE(seed);
        Cluster cluster(96, seed, LinkModel{Duration(1), Duration(3), 0.0, true});
        REQUIRE(cluster.world.run_until_converged(10s));
        cluster.world.run_for(2s);
        const Time crashed_at = cluster.world.now();
        cluster.world.crash(NodeId("n42"));
        const Duration bound = detection_bound(fast_options().membership, 96);
        cluster.world.run_for(bound);
        CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n42")) == 95);
        const auto last = cluster.last_event_time(MembershipEvent::Kind::died, NodeId("n42"));
        REQUIRE(last.has_value());
        MESSAGE("detected by all in ", (*last - crashed_at).count(), " ms");
        CHECK(*last - crashed_at <= bound);
        // Nobody else was taken for dead on the way.
        CHECK(cluster.live_at(0).size() == 95);
    }
}

TEST_CASE("mesh/membership: no member is taken for dead under 5% frame loss") {
    for (std::uint64_t seed : {1, 2, 3, 4}) {
        CAPTURE(seed);
        Cluster cluster(24, seed, LinkModel{Duration(1), Duration(3), 0.0, true});
        REQUIRE(cluster.world.run_until_converged(5s));
        cluster.world.set_links(LinkModel{Duration(1), Duration(3), 0.05, true});
        cluster.world.run_for(120s);  // 1200 protocol periods
        std::size_t deaths = 0;
        for (const MembershipEvent& event : cluster.events) {
            deaths += event.kind == MembershipEvent::Kind::died;
        }
        CHECK(deaths == 0);
        CHECK(cluster.live_at(5).size() == 24);
    }
}

TEST_CASE(
    "mesh/membership: a node's membership frames and bytes a second do not grow with the "
    "cluster") {
    // Each period a node sends one ping and answers the pings it gets (one on average), and every
    // `sync_every_periods` periods it sends one member the digest of its member list (the lists
    // themselves only when the digests differ); helpers and gossip add nothing without loss. So
    // the frames a node sees per period, and their size, are constants of the protocol, whatever
    // the cluster's size.
    const MembershipOptions options = fast_options().membership;
    const double periods_per_second =
        1000.0 / static_cast<double>(options.heartbeat_interval.count());
    const double per_period_max = 2.0 + 2.0 / static_cast<double>(options.sync_every_periods);
    std::map<std::size_t, Cluster::Traffic> per_node;
    for (std::size_t nodes : {12, 96}) {
        Cluster cluster(nodes, 5, LinkModel{Duration(1), Duration(3), 0.0, true});
        REQUIRE(cluster.world.run_until_converged(10s));
        cluster.world.run_for(40s);  // the news of 96 joins has been spread (3 log2 N sends each)
        per_node[nodes] = cluster.traffic_per_node_second(10s);
        MESSAGE(nodes, " nodes: ", per_node[nodes].frames, " membership frames and ",
                per_node[nodes].bytes, " bytes per node per second");
        CHECK(per_node[nodes].frames <= per_period_max * periods_per_second * 1.05);
    }
    CHECK(per_node[96].frames <= per_node[12].frames * 1.1);
    // Only the members' names grow (a longer ID to write): no frame carries the member list.
    CHECK(per_node[96].bytes <= per_node[12].bytes * 1.1);
}

TEST_CASE("mesh/membership: a restarted node rejoins as a new incarnation") {
    Cluster cluster(4);
    REQUIRE(cluster.world.run_until_converged(2s));
    const auto old_incarnation = cluster.world.node(NodeId("n3")).core().self().incarnation;
    cluster.world.crash(NodeId("n3"));
    cluster.world.run_for(100ms);  // restarted before anyone noticed
    cluster.world.restart(NodeId("n3"));
    REQUIRE(cluster.world.run_until_converged(2s));
    const MemberInfo* seen = cluster.world.node(NodeId("n0")).network().find_live(NodeId("n3"));
    REQUIRE(seen != nullptr);
    CHECK(seen->incarnation > old_incarnation);
    // The old incarnation died everywhere, so whatever it owned is gone.
    CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n3")) == 3);
}

TEST_CASE("mesh/membership: a graceful leave is seen at once, not after the timeout") {
    Cluster cluster(4);
    REQUIRE(cluster.world.run_until_converged(2s));
    cluster.world.stop_gracefully(NodeId("n1"));
    cluster.world.run_for(50ms);
    CHECK(cluster.count_events(MembershipEvent::Kind::left, NodeId("n1")) == 3);
    CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n1")) == 0);
}

TEST_CASE("mesh/membership: a partition is declared on both sides and heals into one cluster") {
    Cluster cluster(5);
    REQUIRE(cluster.world.run_until_converged(2s));
    cluster.world.partition({NodeId("n0"), NodeId("n1")},
                            {NodeId("n2"), NodeId("n3"), NodeId("n4")});
    cluster.world.run_for(1200ms);  // twice the failure timeout
    CHECK(cluster.live_at(0) == std::vector<std::string>{"n0", "n1"});
    CHECK(cluster.live_at(3) == std::vector<std::string>{"n2", "n3", "n4"});
    const auto incarnations = cluster.incarnations();
    cluster.world.heal();
    // Each side was declared dead by the other: told so, each lifts its verdict and they meet
    // again, every node as the process it was.
    REQUIRE(cluster.world.run_until_converged(1200ms));  // within 2x the failure timeout
    CHECK(cluster.live_at(4).size() == 5);
    CHECK(cluster.incarnations() == incarnations);
    CHECK(cluster.count_events(MembershipEvent::Kind::reconciled, NodeId("n0")) == 3);
    CHECK(cluster.count_events(MembershipEvent::Kind::reconciled, NodeId("n2")) == 2);
}

TEST_CASE("mesh/membership: a paused node is declared dead, then meets the others again") {
    for (std::uint64_t seed : {3, 17, 29, 41}) {
        CAPTURE(seed);
        Cluster cluster(3, seed, LinkModel{Duration(1), Duration(3), 0.01, true});
        REQUIRE(cluster.world.run_until_converged(2s));
        cluster.world.run_for(1s);
        const auto idle = cluster.frames_per_second();
        const auto incarnations = cluster.incarnations();
        cluster.world.pause(NodeId("n2"), 1800ms);  // 3x the failure timeout, as under SIGSTOP
        cluster.world.run_for(1800ms);
        CHECK(cluster.live_at(0) == std::vector<std::string>{"n0", "n1"});
        CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n2")) == 2);
        // Converged within two failure timeouts of its waking up, no process replaced.
        REQUIRE(cluster.world.run_until_converged(1200ms));
        CHECK(cluster.incarnations() == incarnations);
        // Each pair that had declared the other dead ended what it shared on both sides.
        for (const char* peer : {"n0", "n1"}) {
            CHECK(cluster.count_events_at(NodeId("n2"), MembershipEvent::Kind::died, NodeId(peer)) +
                      cluster.count_events_at(NodeId("n2"), MembershipEvent::Kind::reconciled,
                                              NodeId(peer)) >=
                  1);
        }
        // Nothing keeps echoing once they agree: the heartbeats alone, as before the pause.
        cluster.world.run_for(1s);
        const auto after = cluster.frames_per_second();
        CHECK(after <= idle + idle / 10);
        CHECK(cluster.live_at(2).size() == 3);
    }
}

TEST_CASE("mesh/membership: a pause shorter than the failure timeout declares nobody dead") {
    Cluster cluster(3);
    REQUIRE(cluster.world.run_until_converged(2s));
    cluster.world.pause(NodeId("n1"), 300ms);  // half the failure timeout
    cluster.world.run_for(2s);
    CHECK(cluster.count_events(MembershipEvent::Kind::died, NodeId("n1")) == 0);
    CHECK(cluster.count_events(MembershipEvent::Kind::reconciled, NodeId("n1")) == 0);
    CHECK(cluster.live_at(1).size() == 3);
}

TEST_CASE("mesh/membership: repeated partitions of random sides always heal into one view") {
    for (std::uint64_t seed : {5, 6, 7}) {
        CAPTURE(seed);
        Cluster cluster(5, seed, LinkModel{Duration(1), Duration(4), 0.02, true});
        REQUIRE(cluster.world.run_until_converged(2s));
        std::mt19937_64 random(seed);
        for (int round = 0; round < 4; ++round) {
            std::set<NodeId> side_a;
            std::set<NodeId> side_b;
            for (std::size_t i = 0; i < 5; ++i) {
                (random() % 2 == 0 ? side_a : side_b).insert(Cluster::name(i));
            }
            cluster.world.partition(side_a, side_b);
            cluster.world.run_for(Duration(700 + static_cast<int>(random() % 1500)));
            if (random() % 2 == 0) {
                cluster.world.pause(Cluster::name(random() % 5), Duration(200 + random() % 1500));
            }
            cluster.world.heal();
            CHECK(cluster.world.run_until_converged(3000ms));
        }
    }
}

TEST_CASE("mesh/membership: 48 nodes split in halves heal into one view within the bound") {
    // Every node of each side buried every node of the other; after the heal each pair that
    // buried each other reconciles, found by the random probes of buried members and by gossip
    // that a buried member is alive. The README's bound: (3 + log2 N) periods once frames pass.
    for (std::uint64_t seed : {1, 2}) {
        CAPTURE(seed);
        Cluster cluster(48, seed, LinkModel{Duration(1), Duration(3), 0.0, true});
        REQUIRE(cluster.world.run_until_converged(10s));
        cluster.world.run_for(2s);
        std::set<NodeId> side_a;
        std::set<NodeId> side_b;
        for (std::size_t i = 0; i < 48; ++i) {
            (i % 2 == 0 ? side_a : side_b).insert(Cluster::name(i));
        }
        const auto incarnations = cluster.incarnations();
        cluster.world.partition(side_a, side_b);
        cluster.world.run_for(5s);
        CHECK(cluster.live_at(0).size() == 24);
        CHECK(cluster.live_at(1).size() == 24);
        cluster.world.heal();
        const MembershipOptions options = fast_options().membership;
        const Duration bound =
            options.heartbeat_interval * (3 + static_cast<int>(std::bit_width(48U)));
        const Time healed_at = cluster.world.now();
        REQUIRE(cluster.world.run_until_converged(bound));
        MESSAGE("one view ", (cluster.world.now() - healed_at).count(), " ms after the heal");
        CHECK(cluster.incarnations() == incarnations);
        // Each pair across the cut reconciled once, on each side.
        CHECK(cluster.count_events(MembershipEvent::Kind::reconciled, NodeId("n0")) == 24);
    }
}

TEST_CASE("mesh/membership: the same seed gives the same run") {
    LinkModel links{Duration(2), Duration(3), 0.01, true};
    auto run = [&](std::uint64_t seed) {
        Cluster cluster(7, seed, links);
        cluster.world.run_for(1s);
        cluster.world.crash(NodeId("n4"));
        cluster.world.run_for(2s);
        return cluster.world.event_log_hash();
    };
    CHECK(run(11) == run(11));
    CHECK(run(11) != run(12));
}

TEST_CASE("mesh/requests: answered, failed, timed out, and unreachable") {
    Cluster cluster(3);
    REQUIRE(cluster.world.run_until_converged(2s));
    constexpr ServiceId echo = 99;
    for (SimNode* node : cluster.world.nodes()) {
        node->network().on_request(echo, 1,
                                   [](const NodeId&, PayloadView payload, Responder reply) {
                                       reply.reply(Payload::copy_of(payload));
                                   });
        node->network().on_request(echo, 2, [](const NodeId&, PayloadView, Responder reply) {
            reply.fail(MeshErrc::remote, "refused on purpose");
        });
        node->network().on_request(echo, 3, [](const NodeId&, PayloadView, Responder) {
            // Dropped without an answer: the caller must still hear back.
        });
    }
    Network& n0 = cluster.world.node(NodeId("n0")).network();
    const std::vector<capnp::word> words(3, capnp::word{});
    const Payload payload = Payload::copy_of(words);
    std::vector<std::string> outcomes;
    auto record = [&outcomes](std::expected<PayloadView, MeshError> result) {
        outcomes.push_back(result ? "ok:" + std::to_string(result->size())
                                  : std::string(to_string(result.error().code)));
    };
    n0.request(NodeId("n1"), echo, 1, payload, 500ms, record);
    n0.request(NodeId("n0"), echo, 1, payload, 500ms, record);  // to itself
    n0.request(NodeId("n2"), echo, 2, payload, 500ms, record);
    n0.request(NodeId("n2"), echo, 3, payload, 500ms, record);
    n0.request(NodeId("n2"), echo, 4, payload, 500ms, record);  // nothing registered
    n0.request(NodeId("nobody"), echo, 1, payload, 500ms, record);
    cluster.world.run_for(100ms);
    std::sort(outcomes.begin(), outcomes.end());
    CHECK(outcomes == std::vector<std::string>{"no handler", "ok:3", "ok:3", "remote failure",
                                               "remote failure", "unreachable"});

    outcomes.clear();
    cluster.world.block(NodeId("n1"), NodeId("n0"));  // n1 hears but cannot answer
    n0.request(NodeId("n1"), echo, 1, payload, 200ms, record);
    cluster.world.run_for(199ms);
    CHECK(outcomes.empty());
    cluster.world.run_for(2ms);
    CHECK(outcomes == std::vector<std::string>{"timeout"});

    outcomes.clear();
    cluster.world.unblock(NodeId("n1"), NodeId("n0"));
    // n2 goes silent (to n1 too, or n1 would vouch for it) and dies before the timeout.
    cluster.world.block(NodeId("n2"), NodeId("n0"));
    cluster.world.block(NodeId("n2"), NodeId("n1"));
    n0.request(NodeId("n2"), echo, 1, payload, 5s, record);
    cluster.world.run_for(2s);
    CHECK(outcomes == std::vector<std::string>{"unreachable"});
    CHECK(cluster.world.node(NodeId("n0")).core().pending_requests() == 0);
}

TEST_CASE("mesh/requests: past the per-peer limit a request fails at once, others still go") {
    MeshOptions options = fast_options();
    options.requests_per_peer_max = 3;
    Cluster cluster(3, 7, {}, options);
    REQUIRE(cluster.world.run_until_converged(2s));
    constexpr ServiceId echo = 99;
    std::vector<Responder> held;  // never answered: the requests stay in flight until they time out
    for (SimNode* node : cluster.world.nodes()) {
        node->network().on_request(echo, 1, [&held](const NodeId&, PayloadView, Responder reply) {
            held.push_back(std::move(reply));
        });
    }
    Network& n0 = cluster.world.node(NodeId("n0")).network();
    const Payload payload = Payload::copy_of(std::vector<capnp::word>(1, capnp::word{}));
    std::map<std::string, int> outcomes;
    auto record = [&outcomes](std::expected<PayloadView, MeshError> result) {
        ++outcomes[result ? "ok" : std::string(to_string(result.error().code))];
    };
    for (int i = 0; i < 5; ++i) {
        n0.request(NodeId("n1"), echo, 1, payload, 300ms, record);
    }
    n0.request(NodeId("n2"), echo, 1, payload, 300ms, record);  // another peer: its own limit
    cluster.world.run_for(10ms);
    CHECK(outcomes == std::map<std::string, int>{{"overloaded", 2}});
    CHECK(cluster.world.node(NodeId("n0")).core().pending_requests() == 4);
    CHECK(cluster.world.node(NodeId("n0")).core().counters().requests_over_peer_limit == 2);
    cluster.world.run_for(300ms);  // the four time out, and n1 takes requests again
    CHECK(outcomes == std::map<std::string, int>{{"overloaded", 2}, {"timeout", 4}});
    n0.request(NodeId("n1"), echo, 1, payload, 300ms, record);
    cluster.world.run_for(10ms);
    CHECK(cluster.world.node(NodeId("n0")).core().pending_requests() == 1);
}

TEST_CASE("mesh/membership: a node without the cluster's secret or name never joins") {
    Cluster cluster(3);
    REQUIRE(cluster.world.run_until_converged(2s));
    SimNodeConfig wrong_secret{NodeId("intruder"), "HTTP", {Cluster::name(0)}};
    wrong_secret.secret = "guessed-secret-0123456789";
    cluster.world.add_node(wrong_secret);
    SimNodeConfig other_cluster{NodeId("stranger"), "HTTP", {Cluster::name(1)}};
    other_cluster.cluster = "another-cluster";
    cluster.world.add_node(other_cluster);
    cluster.world.run_for(5s);
    CHECK(cluster.world.handshakes_refused() == 2);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(cluster.live_at(i) == std::vector<std::string>{"n0", "n1", "n2"});
    }
    CHECK(cluster.world.node(NodeId("intruder")).network().live_members().size() == 1);
    CHECK(cluster.count_events(MembershipEvent::Kind::joined, NodeId("intruder")) == 0);
    CHECK(cluster.count_events(MembershipEvent::Kind::joined, NodeId("stranger")) == 0);
}
