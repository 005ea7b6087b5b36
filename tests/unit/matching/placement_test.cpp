#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "matching/placement.hpp"
#include "matching/profile.hpp"

using namespace matchmesh;
using namespace matchmesh::matching;

namespace {

std::vector<mesh::MemberInfo> members(int count, const std::string& type = "HTTP") {
    std::vector<mesh::MemberInfo> all;
    for (int i = 0; i < count; ++i) {
        all.push_back({NodeId("node-" + std::to_string(i)), "", type, 1});
    }
    return all;
}

ReplicaRule rule(int rate, std::size_t replicas_max = 1000) {
    return ReplicaRule{rate, replicas_max};
}

}  // namespace

TEST_CASE("matching/placement: R is max(1, ceil(N * rate / 100)) below the cap") {
    CHECK(replica_count(1, rule(30)) == 1);
    CHECK(replica_count(3, rule(30)) == 1);
    CHECK(replica_count(4, rule(30)) == 2);
    CHECK(replica_count(10, rule(30)) == 3);
    CHECK(replica_count(10, rule(31)) == 4);
    CHECK(replica_count(7, rule(100)) == 7);
    CHECK(replica_count(20, rule(1)) == 1);
}

TEST_CASE("matching/placement: R never exceeds maxReplicas, however many nodes there are") {
    // The default cap: a key costs the same in a cluster of 3 nodes as in one of 1,000.
    CHECK(replica_count(3, ReplicaRule{50}) == 2);
    CHECK(replica_count(6, ReplicaRule{50}) == 3);
    CHECK(replica_count(192, ReplicaRule{50}) == 3);
    CHECK(replica_count(1000, ReplicaRule{100}) == 3);
    CHECK(replica_count(1000, rule(100, 1)) == 1);
    CHECK(replica_count(10, rule(100, 5)) == 5);
    CHECK(replica_count(4, rule(100, 5)) == 4);  // fewer nodes than the cap: all of them

    Placement placement("HTTP", ReplicaRule{100, 3});
    placement.update(members(50));
    std::vector<NodeId> out;
    placement.replicas(key_hash("k"), out);
    CHECK(placement.replica_count() == 3);
    CHECK(out.size() == 3);
}

TEST_CASE("matching/placement: only members of the target node type hold keys") {
    Placement placement("HTTP", rule(100));
    auto all = members(3);
    all.push_back({NodeId("udp-1"), "", "UDP", 1});
    placement.update(all);
    CHECK(placement.candidates().size() == 3);
    std::vector<NodeId> out;
    placement.replicas(key_hash("k"), out);
    CHECK(out.size() == 3);
    CHECK(std::find(out.begin(), out.end(), NodeId("udp-1")) == out.end());
}

TEST_CASE("matching/placement: every node computes the same replicas, whatever the member order") {
    Placement a("HTTP", rule(30));
    Placement b("HTTP", rule(30));
    auto all = members(10);
    a.update(all);
    std::reverse(all.begin(), all.end());
    b.update(all);
    std::vector<NodeId> from_a;
    std::vector<NodeId> from_b;
    for (int i = 0; i < 1000; ++i) {
        const auto hash = key_hash("key-" + std::to_string(i));
        a.replicas(hash, from_a);
        b.replicas(hash, from_b);
        REQUIRE(from_a == from_b);
        REQUIRE(from_a.size() == 3);
    }
}

TEST_CASE("matching/placement: adding one node to ten moves about 1/11 of the keys") {
    Placement ten("HTTP", rule(1));  // R = 1: each key has one owner
    Placement eleven("HTTP", rule(1));
    ten.update(members(10));
    eleven.update(members(11));
    std::vector<NodeId> before;
    std::vector<NodeId> after;
    int moved = 0;
    std::map<NodeId, int> load;
    constexpr int keys = 20000;
    for (int i = 0; i < keys; ++i) {
        const auto hash = key_hash("RankMatch\t\t" + std::to_string(i));
        ten.replicas(hash, before);
        eleven.replicas(hash, after);
        moved += before != after ? 1 : 0;
        if (before != after) {
            CHECK(after.front() == NodeId("node-10"));  // keys move only to the newcomer
        }
        ++load[after.front()];
    }
    const double fraction = static_cast<double>(moved) / keys;
    CHECK(fraction > 0.075);
    CHECK(fraction < 0.107);  // 1/11 = 0.0909
    for (const auto& [node, count] : load) {
        CHECK(count > keys / 11 * 0.85);  // evenly spread
        CHECK(count < keys / 11 * 1.15);
    }
}
