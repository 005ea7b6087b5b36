// The death of a room's node (kill -9): its members on the surviving nodes are told by their own
// nodes (222) once the failure is detected, may start again at once, and no search finds the dead
// node's items.
#include <doctest/doctest.h>

#include <csignal>

#include "process_cluster.hpp"

using namespace integration;
using namespace std::chrono_literals;
using matchmesh::ticket::PushKind;

namespace {

constexpr matchmesh::ticket::TicketType squad = 4;

// A four-seat room that opens after one empty search; the test config detects a death in 800 ms.
std::string squad_config() {
    return test_config("integration-secret-0123456789", R"(,
 "ticketTypes": {"4": {"name": "squad", "profiles": ["RankMatch"], "maxMembers": 4,
                       "properties": {"rank": {"value": "rating"}},
                       "searchIntervalMs": 50, "searchTries": 1, "ticketDurationSeconds": 30}})");
}

}  // namespace

TEST_CASE(
    "integration/ticket-failover: when the room's node is killed, members elsewhere get 222 "
    "within the detection bound and can start again") {
    Cluster cluster(squad_config(), 3);
    auto ann = session(cluster.client_address(0), "ann");  // the room's owner, on the node to kill
    auto bob = session(cluster.client_address(1), "bob");
    auto cat = session(cluster.client_address(2), "cat");
    REQUIRE(describe(start_ticket(ann, squad, 1500)) == "ok");
    wait_for_rooms(cluster.client_address(1), "", 1500);
    REQUIRE(describe(start_ticket(bob, squad, 1500)) == "ok");
    REQUIRE(describe(start_ticket(cat, squad, 1500)) == "ok");
    REQUIRE(eventually([&] { return room_members(ann, squad).size() == 3; }, 5s));

    const auto killed = std::chrono::steady_clock::now();
    cluster.node(0).send_signal(SIGKILL);
    for (auto* member : {&bob, &cat}) {
        const auto push = expect_push(*member, PushKind::cancel, 5s);
        CHECK(push.cmd == 222);
        CHECK(push.reason == matchmesh::ticket::EndReason::node_gone);
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - killed);
        MESSAGE("222 arrived ", took.count(), " ms after the kill (detection bound 800 ms)");
        CHECK(took <= 800ms + 1s);
    }
    // The dead node's room item is gone from every survivor's view.
    CHECK(eventually([&] { return rooms_visible(cluster.client_address(1), "", 1500) == 0; }, 3s));
    CHECK(rooms_visible(cluster.client_address(2), "", 1500) == 0);
    // Free to start again at once; the two survivors now match each other.
    REQUIRE(describe(start_ticket(bob, squad, 1500)) == "ok");
    CHECK(eventually([&] { return rooms_visible(cluster.client_address(2), "", 1500) == 1; }, 5s));
    REQUIRE(describe(start_ticket(cat, squad, 1500)) == "ok");
    CHECK(eventually([&] { return room_members(bob, squad).size() == 2; }, 5s));
}
