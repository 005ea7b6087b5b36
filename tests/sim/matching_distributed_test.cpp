// The distributed store on the simulated network: agreement with a single-node store, replica
// failures, partitions, purging a dead node's items.
#include <doctest/doctest.h>

#include "support/seed.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <span>

#include "matching/store.hpp"
#include "matching_cluster.hpp"

using namespace matching_sim;

namespace {

struct Expected {
    std::string profile;
    std::string unique_id;
    friend bool operator==(const Expected&, const Expected&) = default;
};

std::vector<Expected> expected_of(const SearchResults& results) {
    std::vector<Expected> out;
    for (const auto& found : results) {
        out.push_back({std::string(found.profile_id), std::string(found.unique_id)});
    }
    return out;
}

std::vector<Expected> actual_of(const SearchOutcome& outcome) {
    std::vector<Expected> out;
    for (const auto& found : outcome.items) {
        out.push_back({std::string(found.profile_id), std::string(found.unique_id)});
    }
    return out;
}

// One range search from a random node, against the reference store; whether it found anything.
bool search_agrees(MatchingCluster& cluster, Store& reference,
                   const std::function<std::int64_t(std::int64_t, std::int64_t)>& pick,
                   const std::string& profile, const Properties& props, const std::string& tag) {
    std::vector<std::string> profile_ids{profile};
    if (profile != "LevelLeague" && pick(0, 1) == 1) {
        profile_ids.push_back(profile == "Rank10" ? "Rank100" : "Rank10");
    }
    RangeProperties range;
    for (const auto& [name, value] : props) {
        range[name] = {value, value + pick(-15, 15), value + pick(-15, 15)};
    }
    const auto limit = static_cast<std::size_t>(pick(1, 25));
    const auto node_count = static_cast<std::int64_t>(cluster.sim.running().size());
    const std::size_t from = static_cast<std::size_t>(pick(0, node_count - 1));
    const std::vector<std::string> search_tags{tag};
    SearchResults expected;
    REQUIRE(reference
                .search_with_range_with_tags(profile_ids, search_tags, range, limit,
                                             cluster.world.now(), expected)
                .has_value());
    auto outcome = cluster.await([&](SearchCallback done) {
        return cluster.at(from).search_with_range_with_tags(profile_ids, search_tags, range, limit,
                                                            std::move(done));
    });
    CHECK(outcome.keys_unanswered == 0);
    REQUIRE(actual_of(outcome) == expected_of(expected));
    return !outcome.items.empty();
}

}  // namespace

TEST_CASE("matching/distributed: searches from any node agree with one local store") {
    const std::uint64_t seed = test_support::choose_seed("distributed differential");
    INFO("seed ", seed);
    std::mt19937_64 random(seed);
    const std::function<std::int64_t(std::int64_t, std::int64_t)> pick =
        [&random](std::int64_t low, std::int64_t high) {
            return std::uniform_int_distribution<std::int64_t>(low, high)(random);
        };
    const std::size_t node_count = static_cast<std::size_t>(pick(5, 20));
    const int rate = std::array{10, 25, 50, 100}[static_cast<std::size_t>(pick(0, 3))];
    INFO("nodes ", node_count, " distributionRate ", rate);
    // Zero latency keeps expiry identical to the reference; frames still go through the codec.
    MatchingCluster cluster(node_count, rate, seed,
                            LinkModel{Duration(0), Duration(0), 0.0, false});
    Store reference("reference");
    for (const auto& [id, widths] : cluster.profiles) {
        REQUIRE(reference.define(id, widths).has_value());
    }
    const std::vector<std::string> tags{"", "eu"};
    std::size_t nonempty = 0;
    for (int step = 0; step < 3000; ++step) {
        CAPTURE(step);
        const auto roll = pick(0, 99);
        const std::string profile = std::next(cluster.profiles.begin(), pick(0, 2))->first;
        const std::int64_t item = pick(0, 79);
        // Each item belongs to one node, as a ticket's items do.
        const std::size_t owner = static_cast<std::size_t>(item) % node_count;
        const std::string tag = tags[static_cast<std::size_t>(pick(0, 1))];
        Properties props = profile == "LevelLeague"
                               ? Properties{{"level", pick(-3, 3)}, {"league", pick(-10, 10)}}
                               : Properties{{"rank", pick(-50, 50)}};
        if (roll < 40) {
            const std::string id = "i" + std::to_string(item);
            const auto ttl = std::chrono::seconds(pick(1, 10));
            REQUIRE(
                reference.add(profile, id, tag, props, {}, ttl, cluster.world.now()).has_value());
            REQUIRE(cluster.at(owner).add(profile, id, tag, props, {}, ttl).has_value());
            cluster.world.run_for(Duration(0));
        } else if (roll < 75) {
            nonempty += search_agrees(cluster, reference, pick, profile, props, tag) ? 1 : 0;
        } else if (roll < 85) {
            const std::vector<std::string> ids{"i" + std::to_string(item)};
            REQUIRE(reference.remove(profile, ids, cluster.world.now()).has_value());
            // Usually the owner removes; sometimes another node, which must broadcast.
            const std::size_t remover = pick(0, 3) == 0 ? (owner + 1) % node_count : owner;
            REQUIRE(cluster.at(remover).remove(profile, ids).has_value());
            cluster.world.run_for(Duration(0));
        } else {
            cluster.world.run_for(Duration(pick(1, 1500)));
        }
    }
    std::printf("distributed differential: %zu nodes, rate %d, %zu searches with results\n",
                node_count, rate, nonempty);
    CHECK(nonempty > 200);
    CHECK(cluster.warnings.empty());
}

TEST_CASE("matching/distributed: a search asks as few nodes as its keys' replicas allow") {
    // Proves the replica choice: with R = N - 1 one other node holds every key this node does
    // not, and with R = N - 2 two do, so a search over 40 keys sends at most one (or two)
    // requests, yet still finds every item.
    for (const auto& [nodes, remote_max] : {std::pair{3, 1}, std::pair{5, 2}}) {
        CAPTURE(nodes);
        MatchingCluster cluster(static_cast<std::size_t>(nodes), 50, 7,
                                LinkModel{Duration(1), Duration(0), 0.0, false});
        REQUIRE(cluster.at(0).placement().replica_count() ==
                static_cast<std::size_t>(nodes - remote_max));
        std::vector<std::int64_t> ranks;
        for (std::int64_t rank = 0; rank < 400; rank += 10) {
            ranks.push_back(rank);
            REQUIRE(cluster.at(1)
                        .add("Rank10", "i" + std::to_string(rank), "", {{"rank", rank}}, {},
                             std::chrono::seconds(30))
                        .has_value());
        }
        cluster.world.run_for(Duration(10));
        const std::uint64_t before =
            cluster.world.node(MatchingCluster::name(0)).core().counters().requests_sent;
        auto search_frames = [&] {
            const auto& by_method = cluster.world.frames_delivered_by_method();
            const auto found = by_method.find({wire::SERVICE, wire::METHOD_SEARCH});
            return found == by_method.end() ? std::uint64_t{0} : found->second;
        };
        const std::uint64_t search_frames_before = search_frames();
        const std::vector<std::string> profiles{"Rank10"};
        const SearchOutcome outcome = cluster.await([&](SearchCallback done) {
            return cluster.at(0).search_with_range(profiles, "", {{"rank", ranks}}, 100,
                                                   std::move(done));
        });
        const std::uint64_t sent =
            cluster.world.node(MatchingCluster::name(0)).core().counters().requests_sent - before;
        CHECK(sent >= 1);
        CHECK(sent <= static_cast<std::uint64_t>(remote_max));
        CHECK(outcome.items.size() == ranks.size());
        CHECK(outcome.keys_unanswered == 0);
        CHECK(search_frames() - search_frames_before == 2 * sent);  // each request, its reply
    }
}

TEST_CASE(
    "matching/distributed: neighbouring buckets share their nodes, and searchers share a group's "
    "replicas") {
    // Rank10 with groups of 8 buckets: ranks 0..79 are one placement group, 80..159 the next.
    MatchingCluster cluster(24, 50, 13, LinkModel{Duration(1), Duration(0), 0.0, false});
    REQUIRE(cluster.at(0).placement().replica_count() == 3);
    std::vector<std::int64_t> ranks;
    for (std::int64_t rank = 0; rank < 160; rank += 10) {
        ranks.push_back(rank);
        REQUIRE(cluster.at(1)
                    .add("Rank10", "i" + std::to_string(rank), "", {{"rank", rank}}, {}, 30s)
                    .has_value());
    }
    cluster.world.run_for(10ms);
    const std::vector<NodeId> group = cluster.replicas_of(0, 0);
    for (std::int64_t rank = 10; rank < 80; rank += 10) {
        CHECK(cluster.replicas_of(0, rank) == group);
    }
    const auto requests_sent = [&](std::size_t node) {
        return cluster.world.node(MatchingCluster::name(node)).core().counters().requests_sent;
    };
    const std::vector<std::string> profiles{"Rank10"};
    const auto search = [&](std::size_t from, std::span<const std::int64_t> over) {
        const std::uint64_t before = requests_sent(from);
        const SearchOutcome outcome = cluster.await([&](SearchCallback done) {
            return cluster.at(from).search_with_range(
                profiles, "", {{"rank", std::vector(over.begin(), over.end())}}, 100,
                std::move(done));
        });
        CHECK(outcome.items.size() == over.size());
        CHECK(outcome.keys_unanswered == 0);
        return requests_sent(from) - before;
    };
    // From every node that holds neither group: 16 buckets, at most two nodes asked; 8, one.
    std::map<NodeId, std::uint64_t> served_before;
    for (const NodeId& node : group) {
        served_before[node] = cluster.at(node).counters().searches_served;
    }
    std::size_t searchers = 0;
    for (std::size_t from = 0; from < 24; ++from) {
        const NodeId self = MatchingCluster::name(from);
        const auto holds = [&](std::int64_t rank) {
            const auto replicas = cluster.replicas_of(from, rank);
            return std::find(replicas.begin(), replicas.end(), self) != replicas.end();
        };
        if (holds(0) || holds(80)) {
            continue;
        }
        CAPTURE(from);
        ++searchers;
        const std::uint64_t two_groups = search(from, ranks);  // one if they share a node
        CHECK(two_groups >= 1);
        CHECK(two_groups <= 2);
        CHECK(search(from, std::span(ranks).first(8)) == 1);
    }
    // The group's searches are spread over its three replicas, not all sent to the first.
    REQUIRE(searchers >= 12);
    std::uint64_t served = 0;
    for (const NodeId& node : group) {
        const std::uint64_t count =
            cluster.at(node).counters().searches_served - served_before[node];
        CAPTURE(node);
        CHECK(count >= 2);
        served += count;
    }
    CHECK(served >= searchers);
}

TEST_CASE("matching/distributed: a large cluster keeps each item on maxReplicas nodes, all found") {
    // Proves the cap: at distributionRate 50, 24 nodes would put each key on 12; the default cap
    // keeps it on 3, and a search from any node still finds every item.
    MatchingCluster cluster(24, 50, 11, LinkModel{Duration(1), Duration(0), 0.0, false});
    REQUIRE(cluster.at(0).placement().replica_count() == 3);
    for (int rank = 0; rank < 400; rank += 10) {
        REQUIRE(cluster.at(5)
                    .add("Rank10", "c" + std::to_string(rank), "", {{"rank", rank}}, {}, 60s)
                    .has_value());
    }
    cluster.world.run_for(10ms);
    CHECK(cluster.stored_from(MatchingCluster::name(5)) == 40 * 3);
    for (std::size_t from = 0; from < 24; from += 7) {
        CAPTURE(from);
        CHECK(cluster.search_rank(from, 0).items.size() == 1);
        CHECK(cluster.search_rank(from, 390).items.size() == 1);
    }
    CHECK(cluster.warnings.empty());
}

TEST_CASE("matching/distributed: items survive R-1 dead replicas and vanish with all R") {
    MatchingCluster cluster(6, 50, 3, LinkModel{Duration(1), Duration(0), 0.0, false});  // R = 3
    CHECK(cluster.at(0).placement().replica_count() == 3);
    for (int rank = 0; rank < 100; rank += 10) {
        REQUIRE(cluster.at(0)
                    .add("Rank10", "r" + std::to_string(rank), "", {{"rank", rank}}, {}, 60s)
                    .has_value());
    }
    cluster.world.run_for(10ms);
    // Kill two of the three replicas of the key of rank 40 (not the searching node).
    std::vector<NodeId> doomed;
    for (const NodeId& node : cluster.replicas_of(0, 40)) {
        if (node != MatchingCluster::name(5) && doomed.size() < 2) {
            doomed.push_back(node);
        }
    }
    for (const NodeId& node : doomed) {
        cluster.world.crash(node);
    }
    // Before the failure detector notices: timeouts, then the next replica answers.
    auto before = cluster.search_rank(5, 40);
    CHECK(ids_of(before) == std::vector<std::string>{"r40"});
    CHECK(before.keys_unanswered == 0);
    cluster.world.run_for(1s);  // both declared dead; placement now ignores them
    auto after = cluster.search_rank(5, 40);
    CHECK(after.keys_unanswered == 0);

    // All R replicas of another key dead at once: the search still returns, without it.
    std::optional<int> lost_rank;
    std::vector<NodeId> lost_replicas;
    for (int rank = 0; rank < 100 && !lost_rank; rank += 10) {
        lost_replicas = cluster.replicas_of(5, rank);
        if (std::find(lost_replicas.begin(), lost_replicas.end(), MatchingCluster::name(5)) ==
            lost_replicas.end()) {
            lost_rank = rank;
        }
    }
    REQUIRE(lost_rank.has_value());
    for (const NodeId& node : lost_replicas) {
        cluster.world.crash(node);
    }
    const Time started = cluster.world.now();
    auto missing = cluster.search_rank(5, *lost_rank);
    CHECK(missing.items.empty());
    CHECK(missing.keys_unanswered == 1);
    CHECK(cluster.world.now() - started <= Duration(200) * lost_replicas.size() + 10ms);
}

TEST_CASE("matching/distributed: a dead node's items disappear from every node") {
    MatchingCluster cluster(5, 100, 5, LinkModel{Duration(1), Duration(0), 0.0, false}, 5);
    for (int i = 0; i < 20; ++i) {
        REQUIRE(cluster.at(2)
                    .add("Rank10", "x" + std::to_string(i), "", {{"rank", i * 7}}, {}, 60s)
                    .has_value());
        REQUIRE(cluster.at(3)
                    .add("Rank10", "y" + std::to_string(i), "", {{"rank", i * 7}}, {}, 60s)
                    .has_value());
    }
    cluster.world.run_for(10ms);
    CHECK(cluster.stored_from(MatchingCluster::name(2)) == 20 * 5);  // rate 100: on every node
    cluster.world.crash(MatchingCluster::name(2));
    cluster.world.run_for(900ms);  // failure timeout plus a heartbeat
    CHECK(cluster.stored_from(MatchingCluster::name(2)) == 0);
    CHECK(cluster.stored_from(MatchingCluster::name(3)) == 20 * 4);  // the 4 survivors keep theirs
    CHECK(ids_of(cluster.search_rank(0, 0)) == std::vector<std::string>{"y0", "y1"});
}

TEST_CASE("matching/distributed: a graceful leave purges at once") {
    MatchingCluster cluster(4, 100, 6, LinkModel{Duration(1), Duration(0), 0.0, false}, 4);
    REQUIRE(cluster.at(1).add("Rank10", "a", "", {{"rank", 5}}, {}, 60s).has_value());
    cluster.world.run_for(10ms);
    CHECK(cluster.stored_from(MatchingCluster::name(1)) == 4);
    cluster.world.stop_gracefully(MatchingCluster::name(1));
    cluster.world.run_for(20ms);
    CHECK(cluster.stored_from(MatchingCluster::name(1)) == 0);
}

TEST_CASE("matching/distributed: a partition keeps each side searchable and heals") {
    MatchingCluster cluster(6, 50, 8, LinkModel{Duration(2), Duration(1), 0.0, false});
    auto add_all = [&] {
        for (std::size_t i = 0; i < 6; ++i) {
            REQUIRE(cluster.at(i)
                        .add("Rank10", "p" + std::to_string(i), "", {{"rank", 5}}, {}, 60s)
                        .has_value());
        }
    };
    add_all();
    cluster.world.run_for(20ms);
    CHECK(cluster.search_rank(0, 5).items.size() == 6);
    const std::set<NodeId> left{MatchingCluster::name(0), MatchingCluster::name(1),
                                MatchingCluster::name(2)};
    const std::set<NodeId> right{MatchingCluster::name(3), MatchingCluster::name(4),
                                 MatchingCluster::name(5)};
    cluster.world.partition(left, right);
    cluster.world.run_for(1500ms);
    // Each side declared the other dead and purged its items: only its own side's items remain.
    for (std::size_t i : {0u, 4u}) {
        auto outcome = cluster.search_rank(i, 5);
        CHECK(outcome.items.size() <= 3);
        for (const Found& item : outcome.items) {
            const std::size_t origin = static_cast<std::size_t>(item.unique_id[1] - '0');
            CHECK((origin < 3) == (i < 3));
        }
    }
    cluster.world.heal();
    REQUIRE(cluster.world.run_until_converged(2s));
    add_all();  // the owners refresh their items, as tickets do
    cluster.world.run_for(20ms);
    for (std::size_t i = 0; i < 6; ++i) {
        CHECK(cluster.search_rank(i, 5).items.size() == 6);
    }
}

TEST_CASE("matching/distributed: peers' malformed messages are dropped, never stored") {
    MatchingCluster cluster(3, 100, 9, LinkModel{Duration(1), Duration(0), 0.0, false});
    Network& n0 = cluster.world.node(MatchingCluster::name(0)).network();
    // An item for a profile nobody defined, and one whose key belongs to another profile.
    std::vector<AddedItem> bad{{"Nope", "Nope\t\t1", "u1", {}, 10s},
                               {"Rank10", "Rank100\t\t1", "u2", {}, 10s}};
    n0.send(MatchingCluster::name(1), wire::SERVICE, wire::METHOD_ADD,
            encode_add(std::span(&bad[0], 1)));
    n0.send(MatchingCluster::name(1), wire::SERVICE, wire::METHOD_ADD,
            encode_add(std::span(&bad[1], 1)));
    // Garbage words where a search request should be.
    std::optional<std::string> failure;
    const std::vector<capnp::word> garbage(4, capnp::word{});
    n0.request(MatchingCluster::name(1), wire::SERVICE, wire::METHOD_SEARCH,
               Payload::copy_of(garbage), 1s, [&](std::expected<PayloadView, MeshError> reply) {
                   failure = reply ? "answered" : std::string(to_string(reply.error().code));
               });
    cluster.world.run_for(20ms);
    CHECK(cluster.at(1).local_items().size() == 0);
    CHECK(cluster.at(1).counters().peer_items_rejected == 2);
    CHECK(failure == std::optional<std::string>("malformed"));
    CHECK(cluster.warnings.size() == 3);
}

TEST_CASE("matching/distributed: searches in flight together each get their own answer, once") {
    MatchingCluster cluster(6, 50, 5, LinkModel{Duration(1), Duration(0), 0.0, false});  // R = 3
    for (int rank = 0; rank < 200; rank += 10) {
        REQUIRE(cluster.at(rank / 10 % 6)
                    .add("Rank10", "r" + std::to_string(rank), "", {{"rank", rank}}, {}, 60s)
                    .has_value());
    }
    cluster.world.run_for(10ms);
    // A replica of some keys dies unnoticed: those searches time out there and ask the next
    // replica while the others finish, so searches end out of order and reuse each other's slots
    // (more of them at once than the jobs that keep their lists when idle).
    cluster.world.crash(MatchingCluster::name(3));
    std::vector<int> answers(200, 0);
    std::vector<std::vector<std::string>> found(answers.size());
    for (std::size_t round = 0; round < 2; ++round) {
        for (std::size_t i = 0; i < answers.size() / 2; ++i) {
            const std::size_t n = round * answers.size() / 2 + i;
            const auto rank = static_cast<std::int64_t>(n % 20 * 10);
            const std::vector<std::string> ids{"Rank10"};
            REQUIRE(cluster.at(n % 2 == 0 ? 0 : 5)
                        .search(ids, "", {{"rank", rank}}, 10,
                                [&, n](SearchOutcome outcome) {
                                    ++answers[n];
                                    found[n] = ids_of(outcome);
                                })
                        .has_value());
        }
        cluster.world.run_for(Duration(round == 0 ? 0 : 2000));
    }
    for (std::size_t n = 0; n < answers.size(); ++n) {
        CAPTURE(n);
        CHECK(answers[n] == 1);
        CHECK(found[n] == std::vector<std::string>{"r" + std::to_string(n % 20 * 10)});
    }
}

TEST_CASE("matching/distributed: a node that stops with searches pending calls none of them back") {
    MatchingCluster cluster(4, 50, 7, LinkModel{Duration(5), Duration(0), 0.0, false});
    REQUIRE(cluster.at(1).add("Rank10", "r40", "", {{"rank", 40}}, {}, 60s).has_value());
    cluster.world.run_for(20ms);
    int answers = 0;
    const std::vector<std::string> ids{"Rank10"};
    for (std::int64_t rank = 0; rank < 100; rank += 10) {
        // Some keys are held here (answered on the next turn), some elsewhere (a request).
        REQUIRE(cluster.at(0)
                    .search(ids, "", {{"rank", rank}}, 10, [&](SearchOutcome) { ++answers; })
                    .has_value());
    }
    cluster.world.crash(MatchingCluster::name(0));
    cluster.world.run_for(2s);
    CHECK(answers == 0);
}
