// Ticket types from the config behave as configured on a real three-node cluster: allowMatch's
// maxDifference decides 1v1 matches, ticketDurationSeconds ends unmatched tickets with 219, and
// completeWhen / maxMembers decide when a free-for-all room completes.
#include <doctest/doctest.h>

#include "process_cluster.hpp"

using namespace integration;
using namespace matchmesh;
using namespace matchmesh::node;
using namespace std::chrono_literals;
using ticket::PushKind;

namespace {

constexpr ticket::TicketType duel = 1;      // allowMatch: ratings at most 100 apart; 3 s
constexpr ticket::TicketType ffa = 2;       // 4 seats; complete with 2 or more after 3 s; 6 s
constexpr ticket::TicketType ffa_wait = 3;  // 4 seats; completeWhen far away (30 s): only full
constexpr auto duel_duration = 3s;
constexpr auto ffa_after = 3s;
constexpr auto ffa_duration = 6s;
constexpr auto push_wait = 5s;

// Searches reach +-300 (30 buckets of 10) around the player's rating, so that players 110 apart
// find each other's rooms and only allowMatch keeps them apart.
const std::string config = test_config("integration-secret-0123456789", R"(,
 "limits": {"ticketDurationMinSeconds": 1},
 "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "allowMatch": {"value": "rating", "maxDifference": 100},
        "ticketDurationSeconds": 3, "searchIntervalMs": 100, "searchTries": 3},
  "2": {"name": "ffa", "profiles": ["RankMatch"], "tags": ["ffa"], "maxMembers": 4,
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "completeWhen": {"minMembers": 2, "afterSeconds": 3},
        "ticketDurationSeconds": 6, "searchIntervalMs": 100, "searchTries": 3},
  "3": {"name": "ffa-wait", "profiles": ["RankMatch"], "tags": ["ffa-wait"], "maxMembers": 4,
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "completeWhen": {"minMembers": 2, "afterSeconds": 30},
        "ticketDurationSeconds": 40, "searchIntervalMs": 100, "searchTries": 3}})");

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds since(Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

// What a searcher with this rating looks through: its search values, nearest buckets first.
std::size_t rooms_in_reach(const std::string& address, const std::string& tag,
                           std::int64_t rating) {
    std::vector<std::int64_t> values{rating};
    for (std::int64_t offset = 10; offset <= 300; offset += 10) {
        values.push_back(rating - offset);
        values.push_back(rating + offset);
    }
    auto client = BlockingClient::connect(address);
    if (!client) {
        return 0;
    }
    auto reply = client->call(RangeSearchCommand{{"RankMatch"}, {tag}, {{"rank", values}}, 100});
    auto* outcome = reply ? std::get_if<matching::SearchOutcome>(&reply->body) : nullptr;
    return outcome == nullptr ? 0 : outcome->items.size();
}

struct ThreeNodes {
    Cluster cluster{config, 3};
    const std::string& a = cluster.client_address(0);
    const std::string& b = cluster.client_address(1);
    const std::string& c = cluster.client_address(2);
};

}  // namespace

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/ticket-types: 1v1 players within allowMatch.maxDifference match") {
    // Ratings 90 apart: the join is allowed, and both hear 220 for one room.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    wait_for_rooms(b, "duel", 1000);
    const auto started = Clock::now();
    REQUIRE(describe(start_ticket(bob, duel, 1090)) == "ok");
    const auto room = expect_push(alice, PushKind::success, push_wait).room_id;
    CHECK(expect_push(bob, PushKind::success, push_wait).room_id == room);
    CHECK(since(started) < 2s);  // found on the first searches, not at some deadline
    CHECK(room_members(alice, duel) == std::vector<std::string>{"alice", "bob"});
    CHECK(silent_for(alice, 300ms));
    CHECK(silent_for(bob, 300ms));
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/ticket-types: 1v1 players further apart than maxDifference do not "
                  "match and each hears 219 at ticketDurationSeconds") {
    // Ratings 110 apart: the searcher finds the room (checked) but the join is refused; both
    // tickets run to their 3 s and time out, each with one 219 and no 220.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    const auto alice_started = Clock::now();
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    wait_for_rooms(b, "duel", 1000);
    REQUIRE(rooms_in_reach(b, "duel", 1110) == 1);  // bob's searches see alice's room
    const auto bob_started = Clock::now();
    REQUIRE(describe(start_ticket(bob, duel, 1110)) == "ok");

    const auto to_alice = expect_push(alice, PushKind::timeout, push_wait);
    const auto alice_took = since(alice_started);
    CHECK(to_alice.cmd == ticket::push_timeout);
    CHECK(to_alice.room_id == to_alice.ticket_id.str());  // its own room, nobody else's
    const auto to_bob = expect_push(bob, PushKind::timeout, push_wait);
    const auto bob_took = since(bob_started);
    CHECK(to_bob.room_id == to_bob.ticket_id.str());
    CHECK(to_bob.room_id != to_alice.room_id);
    CHECK(alice_took >= duel_duration - 200ms);
    CHECK(alice_took <= duel_duration + 1500ms);
    CHECK(bob_took >= duel_duration - 200ms);
    CHECK(bob_took <= duel_duration + 1500ms);
    CHECK(silent_for(alice, 300ms));
    CHECK(silent_for(bob, 300ms));
    CHECK(category(ticket_command(alice, TicketAction::members, duel)) == "ticket_not_found");
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/ticket-types: a free-for-all below maxMembers completes after "
                  "completeWhen.afterSeconds with the room's members") {
    // Three of four seats taken within a second: nothing until the 3 s wait, then 220 to all.
    auto p1 = session(a, "p1");
    auto p2 = session(b, "p2");
    auto p3 = session(c, "p3");
    const auto started = Clock::now();
    REQUIRE(describe(start_ticket(p1, ffa, 1000)) == "ok");
    wait_for_rooms(b, "ffa", 1000);
    REQUIRE(describe(start_ticket(p2, ffa, 1050)) == "ok");
    REQUIRE(eventually([&] { return room_members(p1, ffa).size() == 2; }, push_wait));
    wait_for_rooms(c, "ffa", 1000);
    REQUIRE(describe(start_ticket(p3, ffa, 950)) == "ok");
    REQUIRE(eventually([&] { return room_members(p1, ffa).size() == 3; }, push_wait));
    REQUIRE(since(started) < ffa_after);  // all in before the wait ends, else this proves nothing

    const auto room = expect_push(p1, PushKind::success, push_wait).room_id;
    const auto took = since(started);
    CHECK(took >= ffa_after - 100ms);
    CHECK(took < ffa_duration);
    CHECK(expect_push(p2, PushKind::success, push_wait).room_id == room);
    CHECK(expect_push(p3, PushKind::success, push_wait).room_id == room);
    CHECK(room_members(p1, ffa) == std::vector<std::string>{"p1", "p2", "p3"});
    for (BlockingClient* player : {&p1, &p2, &p3}) {
        CHECK(silent_for(*player, 300ms));
    }
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/ticket-types: a free-for-all completes as soon as maxMembers "
                  "players are in") {
    // completeWhen is 30 s away: only a full room explains a 220 within seconds.
    auto p1 = session(a, "p1");
    auto p2 = session(b, "p2");
    auto p3 = session(c, "p3");
    auto p4 = session(a, "p4");
    const auto started = Clock::now();
    REQUIRE(describe(start_ticket(p1, ffa_wait, 1000)) == "ok");
    std::size_t in_room = 1;
    for (auto [player, address] : {std::pair{&p2, b}, std::pair{&p3, c}, std::pair{&p4, a}}) {
        wait_for_rooms(address, "ffa-wait", 1000);
        if (in_room < 3) {
            CHECK(silent_for(p1, 50ms));  // not complete while seats are free
        }
        REQUIRE(describe(start_ticket(*player, ffa_wait, 1000)) == "ok");
        ++in_room;
        if (in_room < 4) {
            REQUIRE(eventually([&] { return room_members(p1, ffa_wait).size() == in_room; },
                               push_wait));
        }
    }
    const auto room = expect_push(p1, PushKind::success, push_wait).room_id;
    CHECK(since(started) < 10s);
    for (BlockingClient* player : {&p2, &p3, &p4}) {
        CHECK(expect_push(*player, PushKind::success, push_wait).room_id == room);
    }
    CHECK(room_members(p1, ffa_wait) == std::vector<std::string>{"p1", "p2", "p3", "p4"});
    for (BlockingClient* player : {&p1, &p2, &p3, &p4}) {
        CHECK(silent_for(*player, 300ms));
    }
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/ticket-types: a free-for-all alone, below completeWhen.minMembers, "
                  "times out with 219") {
    // The wait passes with one member: no completion, and the ticket ends at its duration.
    auto p1 = session(a, "p1");
    const auto started = Clock::now();
    REQUIRE(describe(start_ticket(p1, ffa, 1000)) == "ok");
    const auto push = expect_push(p1, PushKind::timeout, ffa_duration + 3s);
    const auto took = since(started);
    CHECK(push.cmd == ticket::push_timeout);
    CHECK(took >= ffa_duration - 200ms);
    CHECK(took <= ffa_duration + 1500ms);
    CHECK(silent_for(p1, 300ms));
}
