// The client protocol's ticket features over real node processes: matches across nodes with one
// push each, cancel, leave, kick, broadcast, properties, backfill, member lists, party consent,
// the error categories, tokens, the per-session limits, sessions replaced by a second hello, and
// garbage on the client port.
#include <doctest/doctest.h>

#include <csignal>
#include <random>
#include <thread>

#include <capnp/message.h>

#include "node/match_result.hpp"
#include "node/metrics.hpp"
#include "node/token.hpp"
#include "process_cluster.hpp"
#include "raw_connection.hpp"
#include "tests/integration/hostile.capnp.h"

using namespace integration;
using namespace matchmesh;
using namespace matchmesh::node;
using namespace std::chrono_literals;
using ticket::EndReason;
using ticket::PushKind;

namespace {

constexpr ticket::TicketType duel = 1;  // two players
constexpr ticket::TicketType trio = 3;  // three players; completes when full or marked complete
constexpr ticket::TicketType pairs = 4;  // two sides of two, balanced by rating
constexpr auto push_wait = 5s;          // a push crosses the cluster in well under this
constexpr auto quiet = 500ms;           // how long "nothing more arrives" is watched
constexpr const char* token_secret = "token-secret-for-the-tests-0123";
constexpr const char* admin_secret = "admin-secret-for-the-tests-0123";

// Ticket types on RankMatch (width 10), each under its own tag so that they never find each
// other's rooms. Searchers try three times, 100 ms apart, then wait.
std::string config_with(const std::string& limits) {
    return test_config("integration-secret-0123456789", R"(, "limits": {)" + limits + R"(},
 "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "values": {"rating": {"min": 0, "max": 5000}},
        "ticketDurationSeconds": 10, "searchIntervalMs": 100, "searchTries": 3},
  "3": {"name": "trio", "profiles": ["RankMatch"], "tags": ["trio"], "maxMembers": 3,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "ticketDurationSeconds": 15, "searchIntervalMs": 100, "searchTries": 3},
  "4": {"name": "2v2", "profiles": ["RankMatch"], "tags": ["2v2"],
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "teams": {"size": 2, "rating": "rating", "partyBonus": {"2": 30}, "maxTeamDifference": 100},
        "ticketDurationSeconds": 15, "searchIntervalMs": 100, "searchTries": 3}})");
}

constexpr const char* short_tickets = R"("ticketDurationMinSeconds": 1)";

// The same config with client tokens required (tokenSecret lives in the cluster section).
std::string with_token_secret(std::string config, bool admin = false) {
    const std::string section = R"("cluster": {)";
    const auto at = config.find(section);
    REQUIRE(at != std::string::npos);
    config.insert(at + section.size(), fmt::format(R"("tokenSecret": "{}", )", token_secret));
    if (admin) {
        config.insert(at + section.size(), fmt::format(R"("adminSecret": "{}", )", admin_secret));
    }
    return config;
}

std::uint64_t unix_now() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

// No node logged at error level (these tests expect none).
void check_no_errors_logged(const Cluster& cluster, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        const std::string log = cluster.node(i).log_text();
        CHECK_MESSAGE(log.find(" error [") == std::string::npos, cluster.node(i).id(),
                      " logged an error:\n", log);
    }
}

// The reasons of the terminal pushes heard until the node closes the connection (or `timeout`).
std::vector<EndReason> terminal_reasons_until_closed(BlockingClient& client,
                                                     std::chrono::milliseconds timeout) {
    std::vector<EndReason> reasons;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        auto push = client.next_push(std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now()));
        if (!push) {
            CHECK_MESSAGE(push.error().starts_with("connection lost"), push.error());
            break;
        }
        if (ticket::is_terminal(push->kind)) {
            reasons.push_back(push->reason);
        }
    }
    return reasons;
}

// Reads until the node closes the connection, or `timeout`; true if it closed.
bool closed_soon(BlockingClient& client, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        auto message = client.read_message(left);
        if (!message) {
            return message.error().starts_with("connection lost");
        }
        MESSAGE("received before the close: a ",
                std::string(message->index() == 0 ? "reply" : "push"));
    }
    return false;
}

struct ThreeNodes {
    Cluster cluster{config_with(short_tickets), 3};
    const std::string& a = cluster.client_address(0);
    const std::string& b = cluster.client_address(1);
    const std::string& c = cluster.client_address(2);

    // `owner` opens a trio room on its node and `member` (connected to `member_address`) joins it.
    void open_trio(BlockingClient& owner, BlockingClient& member, const std::string& member_address,
                   const std::string& owner_name, const std::string& member_name,
                   std::int64_t rating = 1000) const {
        REQUIRE(describe(start_ticket(owner, trio, rating)) == "ok");
        wait_for_rooms(member_address, "trio", rating);
        REQUIRE(describe(start_ticket(member, trio, rating)) == "ok");
        REQUIRE(eventually([&] { return room_members(owner, trio).size() == 2; }, push_wait));
        CHECK(room_members(owner, trio) == std::vector<std::string>{owner_name, member_name});
    }
};

struct OneNode {
    explicit OneNode(const std::string& limits) : cluster(config_with(limits), 1) {}
    Cluster cluster;
    const std::string& a = cluster.client_address(0);
};

}  // namespace

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: players on two nodes match, and each hears one "
                  "220 for the same room") {
    // A waiting room on node-a is found and joined from node-b; each player is told once.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    wait_for_rooms(b, "duel", 1000);
    REQUIRE(describe(start_ticket(bob, duel, 1005)) == "ok");

    const auto to_alice = expect_push(alice, PushKind::success, push_wait);
    const auto to_bob = expect_push(bob, PushKind::success, push_wait);
    CHECK(to_alice.cmd == ticket::push_success);
    CHECK(to_alice.reason == EndReason::completed);
    CHECK(to_bob.reason == EndReason::completed);
    CHECK(to_alice.ver == ticket::push_ver);
    CHECK(to_alice.ticket_type == duel);
    CHECK(to_bob.cmd == ticket::push_success);
    CHECK(to_alice.room_id == to_bob.room_id);
    CHECK(to_alice.room_id == to_alice.ticket_id.str());  // the owner's ticket names the room
    CHECK(to_bob.ticket_id != to_alice.ticket_id);
    CHECK(to_alice.room_id.ends_with("@node-a"));
    CHECK(room_members(alice, duel) == std::vector<std::string>{"alice", "bob"});
    CHECK(silent_for(alice, quiet));
    CHECK(silent_for(bob, quiet));
    check_no_errors_logged(cluster, 3);
}

// A client need not wait for hello's reply: the node reads a connection's requests in order.
TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a startTicket sent with its hello, in one write, "
                  "starts in that session; behind a refused hello it is refused") {
    auto hello_then_start = [](BlockingClient& client, const std::string& user) {
        mesh::Frame bytes = encode_request(ClientRequest{1, HelloCommand{UserId(user), "", {}}});
        const mesh::Frame start =
            encode_request(ClientRequest{2, StartTicketCommand{duel, {{"rating", 1200}}, {}, {}}});
        bytes.insert(bytes.end(), start.begin(), start.end());
        REQUIRE(client.send_bytes(bytes.data(), bytes.size()).has_value());
        auto hello = client.read_reply(push_wait);
        auto started = client.read_reply(push_wait);
        REQUIRE(hello.has_value());
        REQUIRE(started.has_value());
        CHECK(hello->id == 1);
        CHECK(started->id == 2);
        return std::pair{describe(hello), describe(started)};
    };
    auto carol = connect_to(a);
    CHECK(hello_then_start(carol, "carol") == std::pair{std::string("ok"), std::string("ok")});
    wait_for_rooms(b, "duel", 1200);
    auto dave = connect_to(b);
    CHECK(hello_then_start(dave, "dave") == std::pair{std::string("ok"), std::string("ok")});
    const auto to_carol = expect_push(carol, PushKind::success, push_wait);
    const auto to_dave = expect_push(dave, PushKind::success, push_wait);
    CHECK(to_carol.room_id == to_dave.room_id);

    auto nobody = connect_to(c);
    const auto [hello, started] = hello_then_start(nobody, "");
    CHECK(hello.starts_with("error invalid_argument: hello: the user ID is empty"));
    CHECK(started.starts_with("error unauthenticated: "));
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: each node's metrics count its tickets and the "
                  "frames it exchanged with the other nodes") {
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    wait_for_rooms(b, "duel", 1000);
    REQUIRE(describe(start_ticket(bob, duel, 1005)) == "ok");
    (void)expect_push(alice, PushKind::success, push_wait);
    (void)expect_push(bob, PushKind::success, push_wait);

    // Metrics follow the node's counters once a second.
    const std::string& admin_a = cluster.node(0).admin_address();
    const std::string& admin_b = cluster.node(1).admin_address();
    CHECK(eventually(
        [&] {
            return node::read_metric(
                       admin_a,
                       R"(matchmesh_tickets_ended_total{outcome="completed",ticket_type="1"})") ==
                   1;
        },
        push_wait));
    CHECK(eventually(
        [&] {
            return node::read_metric(admin_b,
                                     R"(matchmesh_tickets_started_total{ticket_type="1"})") == 1;
        },
        push_wait));
    for (const std::string& admin : {admin_a, admin_b}) {
        CHECK(node::read_metric(admin, R"(matchmesh_mesh_frames_total{direction="out"})") > 0);
        CHECK(node::read_metric(admin, R"(matchmesh_mesh_frames_total{direction="in"})") > 0);
    }
    CHECK(node::read_metric(admin_a, "matchmesh_no_such_metric") == -1);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: three players on three nodes fill a room and "
                  "each hears one 220") {
    // The room completes when full, and every member's home delivers the 220 exactly once.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    auto carol = session(c, "carol");
    open_trio(alice, bob, b, "alice", "bob");
    wait_for_rooms(c, "trio", 1000);
    REQUIRE(describe(start_ticket(carol, trio, 990)) == "ok");

    const auto room = expect_push(alice, PushKind::success, push_wait).room_id;
    CHECK(expect_push(bob, PushKind::success, push_wait).room_id == room);
    CHECK(expect_push(carol, PushKind::success, push_wait).room_id == room);
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice", "bob", "carol"});
    for (BlockingClient* client : {&alice, &bob, &carol}) {
        CHECK(silent_for(*client, quiet));
    }
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: cancel ends the ticket with one 222 for the owner "
                  "and for every member") {
    // Only the owner may cancel; its cancel reaches the member on another node.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    open_trio(alice, bob, b, "alice", "bob");

    CHECK(category(ticket_command(bob, TicketAction::cancel, trio)) == "not_active");
    REQUIRE(describe(ticket_command(alice, TicketAction::cancel, trio)) == "ok");
    const auto to_alice = expect_push(alice, PushKind::cancel, push_wait);
    const auto to_bob = expect_push(bob, PushKind::cancel, push_wait);
    CHECK(to_alice.cmd == ticket::push_cancel);
    CHECK(to_bob.cmd == ticket::push_cancel);
    CHECK(to_alice.reason == EndReason::canceled);
    CHECK(to_bob.reason == EndReason::canceled);
    CHECK(to_alice.room_id == to_alice.ticket_id.str());
    CHECK(to_bob.room_id == to_alice.room_id);
    CHECK(to_bob.ticket_id != to_alice.ticket_id);  // the member's own ticket
    CHECK(silent_for(alice, quiet));
    CHECK(silent_for(bob, quiet));

    CHECK(category(ticket_command(alice, TicketAction::cancel, trio)) == "ticket_not_found");
    CHECK(describe(start_ticket(alice, trio, 1000)) == "ok");  // free to start again
    CHECK(describe(start_ticket(bob, trio, 1000)) == "ok");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a member that leaves hears 222 and the room "
                  "keeps waiting, and the owner leaving ends it for all") {
    // Leave from another node goes to the room's node; the owner's leave cancels the ticket.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    open_trio(alice, bob, b, "alice", "bob");

    REQUIRE(describe(ticket_command(bob, TicketAction::leave, trio)) == "ok");
    const auto to_bob = expect_push(bob, PushKind::cancel, push_wait);
    CHECK(to_bob.room_id.ends_with("@node-a"));
    CHECK(to_bob.reason == EndReason::left);
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice"});
    CHECK(silent_for(alice, quiet));
    CHECK(category(ticket_command(bob, TicketAction::leave, trio)) == "room_not_found");

    // Bob may search again and finds the same room, still waiting.
    REQUIRE(describe(start_ticket(bob, trio, 1000)) == "ok");
    REQUIRE(eventually([&] { return room_members(alice, trio).size() == 2; }, push_wait));

    REQUIRE(describe(ticket_command(alice, TicketAction::leave, trio)) == "ok");
    CHECK(expect_push(alice, PushKind::cancel, push_wait).room_id == to_bob.room_id);
    CHECK(expect_push(bob, PushKind::cancel, push_wait).room_id == to_bob.room_id);
    CHECK(silent_for(alice, quiet));
    CHECK(silent_for(bob, quiet));
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: the owner kicks a member out and the member "
                  "hears 222") {
    // Kick is the owner's alone, names a matched member, and removes only that member.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    open_trio(alice, bob, b, "alice", "bob");

    CHECK(category(bob.call(KickCommand{trio, UserId("alice")})) == "not_owner");
    CHECK(category(alice.call(KickCommand{trio, UserId("nobody")})) == "target_not_found");
    CHECK(category(alice.call(KickCommand{trio, UserId("alice")})) == "target_not_found");
    REQUIRE(describe(alice.call(KickCommand{trio, UserId("bob")})) == "ok");
    const auto to_bob = expect_push(bob, PushKind::cancel, push_wait);
    CHECK(to_bob.cmd == ticket::push_cancel);
    CHECK(to_bob.reason == EndReason::kicked);
    CHECK(to_bob.room_id.ends_with("@node-a"));
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice"});
    CHECK(silent_for(alice, quiet));
    CHECK(silent_for(bob, quiet));
    CHECK(category(alice.call(KickCommand{trio, UserId("bob")})) == "target_not_found");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a member kicked out of a completed room gets no "
                  "second terminal push and may start again") {
    // After its 220 a member stays in the room (in_previous_room) until it leaves or is kicked;
    // the kick frees it without a 222, since a ticket ends with one terminal push only.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    open_trio(alice, bob, b, "alice", "bob");
    REQUIRE(describe(ticket_command(alice, TicketAction::mark_complete, trio)) == "ok");
    expect_push(alice, PushKind::success, push_wait);
    expect_push(bob, PushKind::success, push_wait);
    CHECK(category(start_ticket(bob, trio, 1000)) == "in_previous_room");

    REQUIRE(describe(alice.call(KickCommand{trio, UserId("bob")})) == "ok");
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice"});
    CHECK(silent_for(bob, quiet));
    CHECK(eventually([&] { return describe(start_ticket(bob, trio, 1000)) == "ok"; }, 2s));

    // The owner too stays in its completed room until it leaves.
    CHECK(category(start_ticket(alice, trio, 1000)) == "in_previous_room");
    REQUIRE(describe(ticket_command(alice, TicketAction::leave, trio)) == "ok");
    CHECK(silent_for(alice, quiet));
    CHECK(describe(start_ticket(alice, trio, 1000)) == "ok");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a broadcast reaches every member once with its "
                  "ver, cmd and payload") {
    // From a member on another node than the room and from the owner; outsiders are refused.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    auto carol = session(c, "carol");
    auto dave = session(c, "dave");
    open_trio(alice, bob, b, "alice", "bob");
    wait_for_rooms(c, "trio", 1000);
    REQUIRE(describe(start_ticket(carol, trio, 1000)) == "ok");
    std::vector<BlockingClient*> members{&alice, &bob, &carol};
    for (BlockingClient* member : members) {
        expect_push(*member, PushKind::success, push_wait);
    }

    REQUIRE(describe(bob.call(BroadcastCommand{trio, 7, 4242, bytes_of_text("good luck")})) ==
            "ok");
    for (BlockingClient* member : members) {
        const auto push = expect_push(*member, PushKind::broadcast, push_wait);
        CHECK(push.ver == 7);
        CHECK(push.cmd == 4242);
        CHECK(push.payload == bytes_of_text("good luck"));
        CHECK(push.room_id.ends_with("@node-a"));
    }
    REQUIRE(describe(alice.call(BroadcastCommand{trio, 2, 9, bytes_of_text("")})) == "ok");
    for (BlockingClient* member : members) {
        const auto push = expect_push(*member, PushKind::broadcast, push_wait);
        CHECK(push.ver == 2);
        CHECK(push.cmd == 9);
        CHECK(push.payload.empty());
    }
    for (BlockingClient* member : members) {
        CHECK(silent_for(*member, quiet));
    }
    CHECK(category(dave.call(BroadcastCommand{trio, 1, 1, {}})) == "room_not_found");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: the owner sets and reads ticket properties, and "
                  "members and outsiders cannot") {
    // Properties live with the room at its owner; a set over the value limits changes nothing.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    auto dave = session(b, "dave");
    open_trio(alice, bob, b, "alice", "bob");

    const matching::ValueMap set{
        {"map", std::string("forest")}, {"round", std::int64_t{3}}, {"ranked", true}};
    REQUIRE(describe(alice.call(SetPropertiesCommand{trio, set})) == "ok");
    auto got = alice.call(GetPropertiesCommand{trio, {"map", "round", "absent"}});
    REQUIRE(got.has_value());
    auto* values = std::get_if<matching::ValueMap>(&got->body);
    REQUIRE_MESSAGE(values != nullptr, describe(got));
    CHECK(*values ==
          matching::ValueMap{{"map", std::string("forest")}, {"round", std::int64_t{3}}});

    matching::ValueMap too_many;
    for (int i = 0; i < 31; ++i) {
        too_many.emplace(fmt::format("extra{}", i), std::int64_t{i});
    }
    CHECK(category(alice.call(SetPropertiesCommand{trio, too_many})) == "invalid_params");
    got = alice.call(GetPropertiesCommand{trio, {"map", "extra0"}});
    REQUIRE(got.has_value());
    CHECK(std::get<matching::ValueMap>(got->body) ==
          matching::ValueMap{{"map", std::string("forest")}});

    CHECK(category(bob.call(SetPropertiesCommand{trio, set})) == "not_owner");
    CHECK(category(bob.call(GetPropertiesCommand{trio, {"map"}})) == "ticket_not_found");
    CHECK(category(dave.call(SetPropertiesCommand{trio, set})) == "room_not_found");
    CHECK(category(dave.call(GetPropertiesCommand{trio, {"map"}})) == "ticket_not_found");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: backfill after a marked completion brings in one "
                  "more player, who alone hears 220") {
    // Backfill needs a completed room; stopping it works; a backfill that fills the room ends.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    auto carol = session(c, "carol");
    open_trio(alice, bob, b, "alice", "bob");

    CHECK(category(ticket_command(alice, TicketAction::start_backfill, trio)) ==
          "completed_room_required");
    CHECK(category(ticket_command(bob, TicketAction::mark_complete, trio)) == "not_owner");
    REQUIRE(describe(ticket_command(alice, TicketAction::mark_complete, trio)) == "ok");
    const std::string room = expect_push(alice, PushKind::success, push_wait).room_id;
    CHECK(expect_push(bob, PushKind::success, push_wait).room_id == room);

    REQUIRE(describe(ticket_command(alice, TicketAction::start_backfill, trio)) == "ok");
    CHECK(category(ticket_command(alice, TicketAction::start_backfill, trio)) == "ticket_exists");
    REQUIRE(describe(ticket_command(alice, TicketAction::stop_backfill, trio)) == "ok");
    CHECK(category(ticket_command(alice, TicketAction::stop_backfill, trio)) ==
          "backfill_not_found");

    REQUIRE(describe(ticket_command(alice, TicketAction::start_backfill, trio)) == "ok");
    wait_for_rooms(c, "trio", 1000);
    REQUIRE(describe(start_ticket(carol, trio, 1010)) == "ok");
    const auto to_carol = expect_push(carol, PushKind::success, push_wait);
    CHECK(to_carol.room_id == room);
    CHECK(to_carol.ticket_id.str() != room);
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice", "bob", "carol"});
    CHECK(silent_for(alice, quiet));  // they completed before: no second 220
    CHECK(silent_for(bob, quiet));
    CHECK(silent_for(carol, quiet));

    // The full room ended its backfill, and has no seat for another.
    CHECK(category(ticket_command(alice, TicketAction::stop_backfill, trio)) ==
          "backfill_not_found");
    CHECK(category(ticket_command(alice, TicketAction::start_backfill, trio)) == "ticket_exists");
    CHECK(category(ticket_command(bob, TicketAction::members, trio)) == "ticket_not_found");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a party takes in only players who accepted its "
                  "owner, on the owner's node or another") {
    // Naming connected players is not enough: each accepts the owner's party on its own session
    // first. A refused start leaves them untouched, and their consent names one owner.
    auto alice = session(a, "alice");
    auto bob = session(a, "bob");      // on the owner's node
    auto carol = session(c, "carol");  // on another node
    const auto start_party = [&] {
        return alice.call(
            StartTicketCommand{trio, {{"rating", 1000}}, {UserId("bob"), UserId("carol")}, {}});
    };
    auto refused = start_party();
    CHECK(category(refused) == "party_unavailable");
    CHECK(error_message(refused).find("has not accepted the party of 'alice'") !=
          std::string::npos);

    REQUIRE(describe(bob.call(AcceptPartyCommand{trio, UserId("alice")})) == "ok");
    REQUIRE(describe(carol.call(AcceptPartyCommand{trio, UserId("mallory")})) == "ok");
    refused = start_party();
    CHECK(category(refused) == "party_unavailable");
    CHECK(error_message(refused).find("'carol'") != std::string::npos);
    CHECK(silent_for(bob, quiet));
    CHECK(silent_for(carol, quiet));
    // Not conscripted: carol starts and cancels a ticket of her own.
    REQUIRE(describe(start_ticket(carol, trio, 2000)) == "ok");
    REQUIRE(describe(ticket_command(carol, TicketAction::cancel, trio)) == "ok");
    (void)expect_push(carol, PushKind::cancel, push_wait);

    // Consent taken back is gone; given to alice, her party of two starts, and bob comes in as
    // any searcher would.
    REQUIRE(describe(bob.call(AcceptPartyCommand{trio, UserId()})) == "ok");
    REQUIRE(describe(carol.call(AcceptPartyCommand{trio, UserId("alice")})) == "ok");
    refused = start_party();
    CHECK(category(refused) == "party_unavailable");
    CHECK(error_message(refused).find("'bob'") != std::string::npos);
    REQUIRE(describe(alice.call(
                StartTicketCommand{trio, {{"rating", 1000}}, {UserId("carol")}, {}})) == "ok");
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice", "carol"});
    REQUIRE(describe(start_ticket(bob, trio, 1000)) == "ok");
    const std::string room = expect_push(alice, PushKind::success, push_wait).room_id;
    CHECK(expect_push(bob, PushKind::success, push_wait).room_id == room);
    CHECK(expect_push(carol, PushKind::success, push_wait).room_id == room);
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a 2v2 with a party: every member's 220 carries the "
                  "roster and its side") {
    // A pair on node-a, two solo players on node-b and node-c: the pair (1000 and its +30) plays
    // the two solos (1020 and 1040) and each of the four hears the same match.
    auto owner = session(a, "pair-owner");
    auto mate = session(b, "pair-mate");
    auto solo1 = session(b, "solo1");
    auto solo2 = session(c, "solo2");
    REQUIRE(describe(mate.call(AcceptPartyCommand{pairs, UserId("pair-owner")})) == "ok");
    REQUIRE(describe(owner.call(StartTicketCommand{
                pairs, {{"rating", 1000}}, {UserId("pair-mate")}, {}})) == "ok");
    wait_for_rooms(b, "2v2", 1000);
    REQUIRE(describe(start_ticket(solo1, pairs, 1020)) == "ok");
    REQUIRE(eventually([&] { return room_members(owner, pairs).size() == 3; }, push_wait));
    REQUIRE(describe(start_ticket(solo2, pairs, 1040)) == "ok");
    std::string room;
    const std::vector<std::pair<std::string, BlockingClient*>> players = {
        {"pair-owner", &owner}, {"pair-mate", &mate}, {"solo1", &solo1}, {"solo2", &solo2}};
    for (const auto& [name, client] : players) {
        CAPTURE(name);
        const auto push = expect_push(*client, PushKind::success, push_wait);
        room = room.empty() ? push.room_id : room;
        CHECK(push.room_id == room);
        const auto result = decode_match_result(push.payload);
        REQUIRE(result.has_value());
        CHECK(result->room_id == room);
        REQUIRE(result->members.size() == 4);
        REQUIRE(result->sides.size() == 2);
        std::map<std::string, int> side;
        for (const MatchedPlayer& member : result->members) {
            side[member.user.str()] = member.side;
        }
        CHECK(side.at(name) >= 0);
        CHECK(side.at("pair-owner") == side.at("pair-mate"));
        CHECK(side.at("solo1") == side.at("solo2"));
        CHECK(side.at("solo1") != side.at("pair-owner"));
        CHECK(result->side_difference == doctest::Approx(0));
    }
    // The room's node (the pair owner's) exports the match's quality by ticket type.
    CHECK(eventually(
        [&] {
            return node::read_metric(cluster.node(0).admin_address(),
                                     R"(matchmesh_match_side_difference_count{ticket_type="4"})") ==
                   1;
        },
        push_wait));
    CHECK(node::read_metric(cluster.node(0).admin_address(),
                            R"(matchmesh_match_spread_sum{ticket_type="4"})") == 40);
    CHECK(node::read_metric(cluster.node(0).admin_address(),
                            R"(matchmesh_match_wait_seconds_count{ticket_type="4"})") == 4);
    check_no_errors_logged(cluster, 3);
}

TEST_CASE("integration/client-tickets: ticket commands are refused with their error categories") {
    // Each refusal names its category (client.capnp's list) and leaves the connection usable.
    OneNode one(short_tickets);
    auto anonymous = connect_to(one.a);
    CHECK(category(start_ticket(anonymous, duel, 1000)) == "unauthenticated");
    CHECK(category(ticket_command(anonymous, TicketAction::cancel, duel)) == "unauthenticated");
    CHECK(category(anonymous.call(KickCommand{duel, UserId("x")})) == "unauthenticated");
    auto members = anonymous.call(MembersCommand{});  // store commands need no hello here
    REQUIRE(members.has_value());
    CHECK(std::holds_alternative<std::vector<mesh::MemberInfo>>(members->body));

    auto alice = session(one.a, "alice");
    auto unknown = start_ticket(alice, 9, 1000);
    CHECK(category(unknown) == "unknown_ticket_type");
    CHECK(error_message(unknown).find("ticket type 9") != std::string::npos);
    auto no_rating = alice.call(StartTicketCommand{duel, {{"level", 3}}, {}, {}});
    CHECK(category(no_rating) == "invalid_params");
    CHECK(error_message(no_rating).find("'rating'") != std::string::npos);
    auto too_high = start_ticket(alice, duel, 5001);
    CHECK(category(too_high) == "invalid_params");
    CHECK(error_message(too_high) ==
          "startTicket: ticket type 1 (duel) takes the value 'rating' from 0 to 5000, not 5001");
    auto crowd = alice.call(
        StartTicketCommand{duel, {{"rating", 1000}}, {UserId("bob"), UserId("cat")}, {}});
    CHECK(category(crowd) == "invalid_params");
    CHECK(error_message(crowd).find("takes parties of 1 to 2 players, not 3") != std::string::npos);

    CHECK(category(ticket_command(alice, TicketAction::cancel, duel)) == "ticket_not_found");
    CHECK(category(ticket_command(alice, TicketAction::leave, duel)) == "room_not_found");
    CHECK(category(ticket_command(alice, TicketAction::members, duel)) == "ticket_not_found");
    CHECK(category(ticket_command(alice, TicketAction::stop_backfill, duel)) ==
          "backfill_not_found");
    CHECK(category(ticket_command(alice, TicketAction::mark_complete, duel)) == "ticket_not_found");
    CHECK(category(alice.call(BroadcastCommand{duel, 1, 1, {}})) == "room_not_found");
    CHECK(category(alice.call(KickCommand{duel, UserId("bob")})) == "room_not_found");

    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    CHECK(category(start_ticket(alice, duel, 1000)) == "already_has_ticket");
    CHECK(describe(start_ticket(alice, trio, 1000)) == "ok");  // one ticket per type

    // A connection speaks for one user: a second hello on it is refused, the first stays.
    auto again = alice.call(HelloCommand{UserId("mallory"), "", {}});
    CHECK(category(again) == "invalid_argument");
    CHECK(error_message(again).find("already speaks for alice") != std::string::npos);
    CHECK(room_members(alice, duel) == std::vector<std::string>{"alice"});
    REQUIRE(describe(ticket_command(alice, TicketAction::cancel, duel)) == "ok");
    expect_push(alice, PushKind::cancel, push_wait);
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE(
    "integration/client-tickets: past its capacity a node refuses new tickets as overloaded, "
    "with a retry-after, and takes them again once it has room") {
    // limits.liveTicketsMax 2: two waiting tickets fill the node. A third start is refused at
    // once, names the limit and hints when to come back; the two keep their promises, and when
    // one ends the node takes a ticket again.
    OneNode one(std::string(short_tickets) + R"(, "liveTicketsMax": 2)");
    auto alice = session(one.a, "alice");
    auto bob = session(one.a, "bob");
    auto cat = session(one.a, "cat");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    REQUIRE(describe(start_ticket(bob, trio, 5000)) == "ok");
    auto refused = start_ticket(cat, duel, 4000);
    REQUIRE(category(refused) == "overloaded");
    CHECK(error_message(refused) ==
          "startTicket: this node is past its capacity: live tickets at 2 of 2");
    const auto& error = std::get<ReplyError>(refused->body);
    CHECK(error.retry_after_ms >= 125);  // half the 250 ms minimum, at least
    CHECK(error.retry_after_ms <= 5000);
    CHECK(category(start_ticket(cat, duel, 4000)) == "overloaded");
    // Bad input is still named as such, whatever the load.
    CHECK(category(start_ticket(cat, 9, 1000)) == "unknown_ticket_type");
    const std::string& admin = one.cluster.node(0).admin_address();
    CHECK(eventually(
        [&] {
            return node::read_metric(
                       admin,
                       R"(matchmesh_tickets_refused_total{reason="overloaded",ticket_type="1"})") ==
                   2;
        },
        push_wait));
    CHECK(node::read_metric(
              admin, R"(matchmesh_tickets_refused_total{reason="unknown_type",ticket_type="9"})") ==
          1);
    CHECK(node::read_metric(admin, R"(matchmesh_tickets{phase="searching",ticket_type="3"})") +
              node::read_metric(admin, R"(matchmesh_tickets{phase="waiting",ticket_type="3"})") ==
          1);
    REQUIRE(describe(ticket_command(alice, TicketAction::cancel, duel)) == "ok");
    expect_push(alice, PushKind::cancel, push_wait);
    CHECK(describe(start_ticket(cat, duel, 4000)) == "ok");
    CHECK(room_members(bob, trio) == std::vector<std::string>{"bob"});  // untouched
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE(
    "integration/client-tickets: a node that was paused takes the players who queued behind the "
    "pause, refusing none as overloaded") {
    // Stopped for 400 ms, as when the host takes its CPU, the node runs its lag probe that late
    // once, then keeps time again: that is no overload, and the starts sent as it catches up are
    // taken.
    OneNode one(short_tickets);
    auto alice = session(one.a, "alice");
    auto bob = session(one.a, "bob");
    one.cluster.node(0).send_signal(SIGSTOP);
    std::this_thread::sleep_for(400ms);
    one.cluster.node(0).send_signal(SIGCONT);
    std::this_thread::sleep_for(40ms);
    CHECK(describe(start_ticket(alice, duel, 1000)) == "ok");
    CHECK(describe(start_ticket(bob, duel, 4000)) == "ok");
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE("integration/client-tickets: with a token secret, hello needs a valid, unexpired token") {
    // Forged, expired and missing tokens are refused with the reason; nothing works before hello.
    TestFolder folder;
    const auto config = folder.write("token.json", with_token_secret(config_with(short_tickets)));
    auto node = NodeProcess::start(folder, "node-a", config);
    auto client = connect_to(node.client_address());

    CHECK(category(start_ticket(client, duel, 1000)) == "unauthenticated");
    CHECK(category(ticket_command(client, TicketAction::cancel, duel)) == "unauthenticated");

    const std::uint64_t now = unix_now();
    struct Refused {
        const char* what;
        std::string user;
        std::string token;
        const char* reason;
    };
    const std::vector<Refused> refused{
        {"forged", "alice", make_token("another-secret-0123456789", "alice", now + 60),
         "signature does not match"},
        {"for another user", "alice", make_token(token_secret, "bob", now + 60),
         "signature does not match"},
        {"expired", "alice", make_token(token_secret, "alice", now - 30), "expired"},
        {"missing", "alice", "", "a token is required"},
        {"malformed", "alice", "not-a-token", "malformed"},
    };
    for (const Refused& bad : refused) {
        CAPTURE(bad.what);
        auto hello = client.call(HelloCommand{UserId(bad.user), bad.token, {}});
        CHECK(category(hello) == "invalid_token");
        CHECK(error_message(hello).find(bad.reason) != std::string::npos);
        CHECK(category(start_ticket(client, duel, 1000)) == "unauthenticated");  // still nobody
    }
    CHECK(logged(node, "refused hello from"));

    // The same connection, with a good token: its tickets work.
    REQUIRE(describe(client.call(HelloCommand{
                UserId("alice"), make_token(token_secret, "alice", now + 60), {}})) == "ok");
    CHECK(describe(start_ticket(client, duel, 1000)) == "ok");
    CHECK(room_members(client, duel) == std::vector<std::string>{"alice"});
}

TEST_CASE(
    "integration/client-tickets: with tokens, only an admin session may use the store, members "
    "and dump") {
    // A player's session once could add items shaped like waiting tickets (1,025 of them took a
    // 1v1 load to 0% fill), remove anyone's, and read every user and address through dump.
    TestFolder folder;
    const auto config =
        folder.write("admin.json", with_token_secret(config_with(short_tickets), true));
    auto node = NodeProcess::start(folder, "node-a", config);
    const std::uint64_t now = unix_now();
    auto player = connect_to(node.client_address());
    REQUIRE(describe(player.call(HelloCommand{
                UserId("mallory"), make_token(token_secret, "mallory", now + 60), {}})) == "ok");
    auto add = player.call(AddCommand{"RankMatch", "fake", "duel", {{"rank", 100}}, {}, 30s});
    CHECK(category(add) == "forbidden");
    CHECK(error_message(add).find("hello with a token signed with cluster.adminSecret") !=
          std::string::npos);
    CHECK(category(player.call(RemoveCommand{"RankMatch", {"x"}})) == "forbidden");
    CHECK(category(player.call(SearchCommand{{"RankMatch"}, "duel", {{"rank", 100}}, 10})) ==
          "forbidden");
    CHECK(category(player.call(DumpCommand{})) == "forbidden");
    CHECK(category(player.call(MembersCommand{})) == "forbidden");
    CHECK(describe(start_ticket(player, duel, 1000)) == "ok");  // its own tickets still work

    // An operator's token opens an admin session: the store, members and dump, but no tickets.
    auto admin = connect_to(node.client_address());
    CHECK(category(admin.call(
              HelloCommand{UserId("ops"), make_token(token_secret, "ops", now + 60), {}})) ==
          "ok");  // a player's token: a player
    auto operator_session = connect_to(node.client_address());
    REQUIRE(describe(operator_session.call(HelloCommand{
                UserId("ops"), make_token(admin_secret, "ops", now + 60), {}})) == "ok");
    auto members = operator_session.call(MembersCommand{});
    REQUIRE(members.has_value());
    CHECK(std::holds_alternative<std::vector<mesh::MemberInfo>>(members->body));
    auto dump = operator_session.call(DumpCommand{});
    REQUIRE(dump.has_value());
    CHECK(std::holds_alternative<std::string>(dump->body));
    CHECK(category(start_ticket(operator_session, duel, 1000)) == "unauthenticated");
    CHECK(room_members(player, duel) == std::vector<std::string>{"mallory"});  // not superseded

    // Without an admin secret, nobody may.
    TestFolder other;
    auto closed = NodeProcess::start(
        other, "node-b", other.write("closed.json", with_token_secret(config_with(short_tickets))));
    auto anyone = connect_to(closed.client_address());
    REQUIRE(describe(anyone.call(HelloCommand{
                UserId("ops"), make_token(admin_secret, "ops", now + 60), {}})) != "ok");
    auto refused = anyone.call(MembersCommand{});
    CHECK(category(refused) == "forbidden");
    CHECK(error_message(refused).find("no cluster.adminSecret") != std::string::npos);
}

TEST_CASE(
    "integration/client-tickets: commands over limits.commandsPerSecond are refused as "
    "rate_limited, and the session recovers") {
    // The budget is per session: a burst costs only its sender, and its ticket survives.
    OneNode one(R"("ticketDurationMinSeconds": 1, "commandsPerSecond": 5)");
    auto alice = session(one.a, "alice");
    auto bob = session(one.a, "bob");
    REQUIRE(describe(start_ticket(alice, trio, 1000)) == "ok");
    std::this_thread::sleep_for(1100ms);  // a full budget again

    int answered = 0;
    int limited = 0;
    for (int i = 0; i < 20; ++i) {
        auto reply = ticket_command(alice, TicketAction::members, trio);
        if (!reply) {
            FAIL("no reply to command ", i, ": ", reply.error());  // each gets its own reply
        }
        if (category(reply) == "rate_limited") {
            ++limited;
            CHECK(error_message(reply) == "more than 5 commands per second");
        } else if (std::holds_alternative<std::vector<UserId>>(reply->body)) {
            ++answered;
        }
    }
    CHECK(answered >= 5);
    CHECK(answered <= 8);  // 5 at once, plus what refills while the burst runs
    CHECK(answered + limited == 20);
    CHECK(metric_becomes(one.cluster.node(0), "matchmesh_client_commands_rate_limited_total",
                         limited));
    CHECK(room_members(bob, trio).empty());  // bob's own budget: answered (bob has no room)
    CHECK(category(ticket_command(bob, TicketAction::members, trio)) == "ticket_not_found");

    std::this_thread::sleep_for(1100ms);
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice"});
    REQUIRE(describe(ticket_command(alice, TicketAction::cancel, trio)) == "ok");
    expect_push(alice, PushKind::cancel, push_wait);
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE(
    "integration/client-tickets: a range search over limits.rangeValuesMax is refused, and "
    "the connection stays") {
    // The configured bound refuses a client's range search by its category; past it, the
    // protocol's own bound (256) refuses it while decoding. Neither closes the connection.
    OneNode one(R"("ticketDurationMinSeconds": 1, "rangeValuesMax": 21)");  // the types need 21
    auto alice = session(one.a, "alice");
    REQUIRE(describe(start_ticket(alice, trio, 1000)) == "ok");
    auto search = [&](std::size_t count) {
        std::vector<std::int64_t> values;
        for (std::size_t i = 0; i < count; ++i) {
            values.push_back(static_cast<std::int64_t>(i) * 10);
        }
        return alice.call(RangeSearchCommand{{"RankMatch"}, {"trio"}, {{"rank", values}}, 10});
    };
    auto within = search(21);
    REQUIRE(within.has_value());
    CHECK(std::holds_alternative<matching::SearchOutcome>(within->body));
    auto over = search(22);
    CHECK(category(over) == "too_many_range_values");
    CHECK(error_message(over).find("limits.rangeValuesMax") != std::string::npos);
    auto way_over = search(257);
    CHECK(category(way_over) == "malformed_request");
    CHECK(error_message(way_over) == "257 values, at most 256 allowed");
    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice"});  // the session lives
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE(
    "integration/client-tickets: a search over limits.searchCostMax is refused, and wide "
    "searches count as several commands") {
    // Cost: buckets it may visit × results it asks for. A wide search also takes one command
    // more per 64 buckets from the session's commandsPerSecond, so a flood of them is cut short.
    OneNode one(R"("searchCostMax": 1000, "commandsPerSecond": 20)");
    auto alice = session(one.a, "alice");
    auto search = [&](std::size_t count, std::uint32_t limit) {
        std::vector<std::int64_t> values;
        for (std::size_t i = 0; i < count; ++i) {
            values.push_back(static_cast<std::int64_t>(i) * 10);
        }
        return alice.call(RangeSearchCommand{{"RankMatch"}, {"trio"}, {{"rank", values}}, limit});
    };
    auto within = search(10, 100);
    REQUIRE(within.has_value());
    CHECK(std::holds_alternative<matching::SearchOutcome>(within->body));
    auto over = search(11, 100);
    CHECK(category(over) == "search_too_costly");
    CHECK(error_message(over) ==
          "the search may visit 11 buckets for up to 100 results each: 1100 over this cluster's "
          "1000 (limits.searchCostMax)");
    auto exact = alice.call(SearchCommand{{"RankMatch", "RankMatch"}, "trio", {{"rank", 0}}, 600});
    CHECK(category(exact) == "search_too_costly");

    std::this_thread::sleep_for(1100ms);  // the bucket is full again: 20 commands
    std::size_t answered = 0;
    std::size_t limited = 0;
    for (int i = 0; i < 20; ++i) {
        auto wide = search(64, 1);  // 64 buckets: counts as 2 commands
        answered += wide && std::holds_alternative<matching::SearchOutcome>(wide->body) ? 1 : 0;
        limited += category(wide) == "rate_limited" ? 1 : 0;
    }
    MESSAGE("wide searches answered ", answered, ", rate limited ", limited);
    CHECK(answered + limited == 20);
    CHECK(metric_becomes(one.cluster.node(0), "matchmesh_client_commands_rate_limited_total",
                         limited));
    CHECK(limited >= 5);
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE(
    "integration/client-tickets: a request over maxClientFrameBytes closes only its "
    "session, which leaves its room") {
    // A broadcast just under the frame limit is delivered; one over it ends the sender's
    // connection (and so its place in the room) and reaches nobody.
    OneNode one(R"("ticketDurationMinSeconds": 1, "maxClientFrameBytes": 8192)");
    auto alice = session(one.a, "alice");
    auto bob = session(one.a, "bob");
    REQUIRE(describe(start_ticket(alice, trio, 1000)) == "ok");
    wait_for_rooms(one.a, "trio", 1000);
    REQUIRE(describe(start_ticket(bob, trio, 1000)) == "ok");
    REQUIRE(eventually([&] { return room_members(alice, trio).size() == 2; }, push_wait));

    const ticket::Bytes fits(7000, 0x61);
    REQUIRE(describe(bob.call(BroadcastCommand{trio, 1, 5, fits})) == "ok");
    CHECK(expect_push(alice, PushKind::broadcast, push_wait).payload == fits);
    CHECK(expect_push(bob, PushKind::broadcast, push_wait).payload == fits);

    const ticket::Bytes too_big(9000, 0x62);
    const mesh::Frame frame =
        encode_request(ClientRequest{99, BroadcastCommand{trio, 1, 6, too_big}});
    REQUIRE(frame.size() > 8192);
    REQUIRE(bob.send_bytes(frame.data(), frame.size()).has_value());
    CHECK(closed_soon(bob, 3s));
    CHECK(logged(one.cluster.node(0), "oversized frame"));
    CHECK(eventually([&] { return room_members(alice, trio) == std::vector<std::string>{"alice"}; },
                     push_wait));
    CHECK(silent_for(alice, quiet));
    auto carol = session(one.a, "carol");  // the node still serves
    CHECK(describe(start_ticket(carol, duel, 1000)) == "ok");
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE(
    "integration/client-tickets: at maxClientConnections, sessions in progress keep their "
    "tickets and pushes") {
    // A refused connection costs the sessions already open nothing; a closed one frees its slot.
    OneNode one(R"("ticketDurationMinSeconds": 1, "maxClientConnections": 3)");
    auto alice = session(one.a, "alice");
    auto bob = session(one.a, "bob");
    REQUIRE(describe(start_ticket(alice, trio, 1000)) == "ok");
    // Searched through alice's own connection: no extra connection while the slots are counted.
    REQUIRE(eventually(
        [&] {
            auto found = alice.call(SearchCommand{{"RankMatch"}, "trio", {{"rank", 1000}}, 10});
            return found && std::holds_alternative<matching::SearchOutcome>(found->body) &&
                   !std::get<matching::SearchOutcome>(found->body).items.empty();
        },
        5s));
    REQUIRE(describe(start_ticket(bob, trio, 1000)) == "ok");
    REQUIRE(eventually([&] { return room_members(alice, trio).size() == 2; }, push_wait));
    std::optional<BlockingClient> carol;
    REQUIRE(eventually(
        [&] {
            auto client = BlockingClient::connect(one.a);
            if (!client) {
                return false;
            }
            auto hello = client->call(HelloCommand{UserId("carol"), "", {}});
            if (describe(hello) != "ok") {
                return false;
            }
            carol.emplace(std::move(*client));
            return true;
        },
        3s));

    auto extra = connect_to(one.a);  // TCP accepts; the node closes it at once
    CHECK(extra.closed_by_peer(3s));
    CHECK(logged(one.cluster.node(0), "refused a connection: 3 connections already open"));

    CHECK(room_members(alice, trio) == std::vector<std::string>{"alice", "bob"});
    REQUIRE(describe(ticket_command(alice, TicketAction::cancel, trio)) == "ok");
    expect_push(alice, PushKind::cancel, push_wait);
    expect_push(bob, PushKind::cancel, push_wait);

    carol.reset();
    CHECK(eventually(
        [&] {
            auto client = BlockingClient::connect(one.a);
            return client && describe(client->call(HelloCommand{UserId("dave"), "", {}})) == "ok";
        },
        3s));
    check_no_errors_logged(one.cluster, 1);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a second hello for a user on the same node closes "
                  "the first session and cancels its ticket") {
    // The old connection closes; its room ends for the member on another node; the new session
    // hears nothing of the old ticket and may start afresh.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    open_trio(alice, bob, b, "alice", "bob");

    auto alice_again = session(a, "alice");
    CHECK(closed_soon(alice, 3s));
    const auto to_bob = expect_push(bob, PushKind::cancel, push_wait);
    CHECK(to_bob.room_id.ends_with("@node-a"));
    CHECK(eventually([&] { return ticket_count(a, "in_progress") == 0; }, 3s));
    CHECK(silent_for(alice_again, quiet));
    CHECK(silent_for(bob, quiet));
    CHECK(category(ticket_command(alice_again, TicketAction::members, trio)) == "ticket_not_found");
    CHECK(describe(start_ticket(alice_again, trio, 1000)) == "ok");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: a hello for a user on another node closes the "
                  "first session and cancels its ticket") {
    // One session per user in the whole cluster: the newer one wins.
    auto alice = session(a, "alice");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    REQUIRE(eventually([&] { return ticket_count(a, "in_progress") == 1; }, 3s));

    auto alice_elsewhere = session(b, "alice");
    CHECK(closed_soon(alice, 3s));
    CHECK(eventually([&] { return ticket_count(a, "in_progress") == 0; }, 3s));
    CHECK(silent_for(alice_elsewhere, quiet));
    CHECK(describe(start_ticket(alice_elsewhere, duel, 1000)) == "ok");
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: garbage on the client port never disturbs another "
                  "session's ticket") {
    // Broken streams close only their own connection; a ticket in progress on the same node
    // still matches, and each player still hears one 220.
    const std::uint64_t seed = std::random_device{}();
    CAPTURE(seed);
    std::mt19937_64 random(seed);
    auto random_bytes = [&](std::size_t count) {
        std::vector<std::byte> bytes(count);
        for (auto& byte : bytes) {
            byte = static_cast<std::byte>(random());
        }
        return bytes;
    };
    auto spray = [&](const std::string& address) {
        std::vector<std::byte> truncated = header_bytes(64, 1, 0);
        truncated.resize(truncated.size() + 10);
        const std::vector<std::vector<std::byte>> closing{
            random_bytes(8) /* a random header */, header_bytes(0, 1, 0), header_bytes(16, 2, 0),
            header_bytes(1u << 30, 1, 0), header_bytes(13, 1, 0)};
        for (const auto& bytes : closing) {
            RawConnection connection(address);
            connection.send(bytes);
            connection.send(random_bytes(200));
            CHECK(connection.closed_by_peer(3s));
        }
        RawConnection cut(address);
        cut.send(truncated);
        cut.close();
        // Framed, but not a request: an error reply, and that connection stays.
        RawConnection confused(address);
        confused.send(deep_message());
        CHECK(confused.read_body(3s).has_value());
        // A frame of random words: an error reply or a close, never more.
        RawConnection noise(address);
        auto body = random_bytes(64);
        auto framed = header_bytes(static_cast<std::uint32_t>(body.size()), 1, 0);
        framed.insert(framed.end(), body.begin(), body.end());
        noise.send(framed);
    };

    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    spray(a);
    wait_for_rooms(b, "duel", 1000);
    REQUIRE(describe(start_ticket(bob, duel, 1000)) == "ok");
    spray(a);
    spray(b);
    const auto room = expect_push(alice, PushKind::success, push_wait).room_id;
    CHECK(expect_push(bob, PushKind::success, push_wait).room_id == room);
    CHECK(silent_for(alice, quiet));
    CHECK(silent_for(bob, quiet));
    CHECK(room_members(alice, duel) == std::vector<std::string>{"alice", "bob"});
    CHECK(logged(cluster.node(0), "client: closed connection"));
    check_no_errors_logged(cluster, 3);
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/client-tickets: SIGTERM drains a node: every ticket it takes part "
                  "in ends with one 222 that says draining") {
    // node-a holds alice's room with bob (node-b) in it and dave's lone search; erin (node-a)
    // is in frank's room on node-b. Each of the four hears one 222 reason draining (those on
    // node-a before their connection closes); frank's room goes on without erin.
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    open_trio(alice, bob, b, "alice", "bob");
    auto frank = session(b, "frank");
    auto erin = session(a, "erin");
    open_trio(frank, erin, a, "frank", "erin", 3000);  // far from alice's room
    auto dave = session(a, "dave");
    REQUIRE(describe(start_ticket(dave, duel, 2000)) == "ok");
    wait_for_rooms(a, "duel", 2000);

    cluster.node(0).send_signal(SIGTERM);
    const auto to_bob = expect_push(bob, PushKind::cancel, push_wait);
    CHECK(to_bob.reason == EndReason::draining);
    CHECK(to_bob.room_id.ends_with("@node-a"));
    for (BlockingClient* client : {&alice, &erin, &dave}) {
        CHECK(terminal_reasons_until_closed(*client, push_wait) ==
              std::vector<EndReason>{EndReason::draining});
    }
    CHECK(cluster.node(0).wait(push_wait) == std::optional<int>(0));
    CHECK(eventually([&] { return room_members(frank, trio).size() == 1; }, push_wait));
    CHECK(silent_for(bob, quiet));
    // Elsewhere, both start again.
    CHECK(describe(start_ticket(bob, trio, 1000)) == "ok");
    CHECK(describe(ticket_command(frank, TicketAction::cancel, trio)) == "ok");
    CHECK(expect_push(frank, PushKind::cancel, push_wait).reason == EndReason::canceled);
    check_no_errors_logged(cluster, 3);
}
