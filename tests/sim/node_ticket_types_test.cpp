// The stock node's ticket types, as a config file gives them, in virtual time on three simulated
// nodes running the node's core: allowMatch decides 1v1 matches, ticketDurationSeconds ends an
// unmatched ticket with 219 at that very time, completeWhen completes a free-for-all after its
// wait, and a full room completes at once. Policy, timed exactly: no processes, no wall clock.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "node/client_protocol.hpp"
#include "node/match_result.hpp"
#include "support/core_cluster.hpp"

using namespace matchmesh;
using namespace matchmesh::node;
using ticket::PushKind;

namespace {

constexpr ticket::TicketType duel = 1;      // allowMatch: ratings at most 100 apart; 3 s
constexpr ticket::TicketType ffa = 2;       // 4 seats; complete with 2 or more after 3 s; 6 s
constexpr ticket::TicketType ffa_wait = 3;  // 4 seats; completeWhen far away (30 s): only full
constexpr ticket::TicketType two_v_two = 4;  // sides of 2; a pair plays +50; sides within 100
constexpr ticket::TicketType regional = 5;   // 1v1 between players of one region only
constexpr ticket::TicketType relaxed = 6;    // 1v1 within 100, then within 300 after 1 s
constexpr ticket::TicketType few = 7;        // 4 seats; 3 after 1 s, then 2 after 2 s
constexpr ticket::TicketType patient_2v2 = 8;  // as 2v2, sides within 200 after 1 s
constexpr ticket::TicketType oldest = 9;       // 1v1 within 200, the longest waiting first
constexpr ticket::TicketType closest = 10;     // 1v1 within 200, the nearest first

// Searches reach +-300 around the player's rating, so that players 110 apart find each other's
// rooms and only allowMatch keeps them apart.
constexpr const char* types_config = R"({
 "cluster": {"secret": "ticket-types-secret-0123456789"},
 "matching": {"profiles": {"RankMatch": {"rank": 10}}},
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
        "ticketDurationSeconds": 40, "searchIntervalMs": 100, "searchTries": 3},
  "4": {"name": "2v2", "profiles": ["RankMatch"], "tags": ["2v2"],
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "teams": {"size": 2, "rating": "rating", "partyBonus": {"2": 50}, "maxTeamDifference": 100},
        "ticketDurationSeconds": 4, "searchIntervalMs": 100, "searchTries": 3},
  "5": {"name": "regional", "profiles": ["RankMatch"], "maxMembers": 2, "sameValue": ["region"],
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "ticketDurationSeconds": 2, "searchIntervalMs": 100, "searchTries": 3},
  "6": {"name": "relaxed", "profiles": ["RankMatch"], "tags": ["relaxed"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "allowMatch": {"value": "rating", "maxDifference": 100},
        "relax": [{"afterSeconds": 1, "maxDifference": 300, "searchSpread": 300}],
        "ticketDurationSeconds": 4, "searchIntervalMs": 100, "searchTries": 3},
  "7": {"name": "few", "profiles": ["RankMatch"], "tags": ["few"], "maxMembers": 4,
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "completeWhen": {"minMembers": 3, "afterSeconds": 1},
        "relax": [{"afterSeconds": 2, "minMembers": 2}],
        "ticketDurationSeconds": 5, "searchIntervalMs": 100, "searchTries": 3},
  "8": {"name": "patient-2v2", "profiles": ["RankMatch"], "tags": ["patient-2v2"],
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "teams": {"size": 2, "rating": "rating", "partyBonus": {"2": 50}, "maxTeamDifference": 100},
        "relax": [{"afterSeconds": 1, "maxTeamDifference": 200}],
        "ticketDurationSeconds": 4, "searchIntervalMs": 100, "searchTries": 3},
  "9": {"name": "oldest", "profiles": ["RankMatch"], "tags": ["oldest"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "allowMatch": {"value": "rating", "maxDifference": 200}, "prefer": "oldest",
        "ticketDurationSeconds": 4, "searchIntervalMs": 100, "searchTries": 3},
  "10": {"name": "closest", "profiles": ["RankMatch"], "tags": ["closest"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 300}},
        "allowMatch": {"value": "rating", "maxDifference": 200}, "prefer": "closest",
        "ticketDurationSeconds": 4, "searchIntervalMs": 100, "searchTries": 3}}})";

struct Heard {
    ticket::PushMessage message;
    Time at;
};

class Pushes final : public ticket::PushSink {
public:
    void push(const UserId& user, const ticket::PushMessage& message) override {
        heard[user.str()].push_back(Heard{message, world == nullptr ? Time{} : world->now()});
    }
    // The user's terminal pushes.
    std::vector<Heard> ends(const std::string& user) const {
        std::vector<Heard> terminal;
        if (auto found = heard.find(user); found != heard.end()) {
            for (const Heard& push : found->second) {
                if (ticket::is_terminal(push.message.kind)) {
                    terminal.push_back(push);
                }
            }
        }
        return terminal;
    }
    std::map<std::string, std::vector<Heard>> heard;
    const mesh::sim::SimWorld* world = nullptr;
};

class Fixture {
public:
    Fixture() : config_(load()), cluster_(config_, pushes, options()) {
        pushes.world = &cluster_.world();
    }

    // A player on `node` who said hello.
    std::shared_ptr<Session> player(std::size_t node, const std::string& name) {
        auto session = cluster_.connect(node);
        auto reply = cluster_.call(session, HelloCommand{UserId(name), "", {}});
        REQUIRE(reply);
        REQUIRE(std::holds_alternative<std::monostate>(reply->body));
        return session;
    }

    void start(const std::shared_ptr<Session>& session, ticket::TicketType type, int rating,
               std::vector<UserId> party = {}, std::optional<int> region = std::nullopt) {
        StartTicketCommand command;
        command.ticket_type = type;
        command.values["rating"] = std::int64_t{rating};
        if (region) {
            command.values["region"] = std::int64_t{*region};
        }
        command.party = std::move(party);
        auto reply = cluster_.call(session, command);
        REQUIRE(reply);
        REQUIRE(std::holds_alternative<std::monostate>(reply->body));
    }

    std::vector<std::string> members(const std::shared_ptr<Session>& session,
                                     ticket::TicketType type) {
        auto reply = cluster_.call(session, TicketCommand{TicketAction::members, type});
        REQUIRE(reply);
        std::vector<std::string> names;
        if (auto* ids = std::get_if<std::vector<UserId>>(&reply->body)) {
            for (const UserId& id : *ids) {
                names.push_back(id.str());
            }
        }
        return names;
    }

    // The refusal of a start with these values; fails the test if the start is accepted.
    ReplyError refused_start(const std::shared_ptr<Session>& session, ticket::TicketType type,
                             matching::Properties values) {
        StartTicketCommand command;
        command.ticket_type = type;
        command.values = std::move(values);
        auto reply = cluster_.call(session, command);
        REQUIRE(reply);
        auto* refused = std::get_if<ReplyError>(&reply->body);
        REQUIRE(refused != nullptr);
        return *refused;
    }

    auto call(const std::shared_ptr<Session>& session, Command command) {
        return cluster_.call(session, std::move(command));
    }

    // A pair (pair-owner with pair-mate, at `pair`) starts a team ticket, then two solo players
    // (at `solo1` and `solo2`), 300 ms apart, each on another node.
    void start_pair_and_solos(ticket::TicketType type, int pair, int solo1, int solo2) {
        auto owner = player(0, "pair-owner");
        auto mate = player(1, "pair-mate");
        auto first = player(2, "solo1");
        auto second = player(1, "solo2");
        REQUIRE(call(mate, AcceptPartyCommand{type, UserId("pair-owner")}));
        start(owner, type, pair, {UserId("pair-mate")});  // the mate plays at the owner's rating
        run(Duration(300));
        start(first, type, solo1);
        run(Duration(300));
        start(second, type, solo2);
    }

    void run(Duration duration) { cluster_.world().run_for(duration); }
    [[nodiscard]] Time now() { return cluster_.world().now(); }

    Pushes pushes;

private:
    static config::Config load() {
        auto loaded = config::load_string(types_config, "ticket types");
        REQUIRE_MESSAGE(loaded, loaded.error().message);
        return *loaded;
    }
    static test_support::CoreCluster::Options options() {
        test_support::CoreCluster::Options options;
        options.nodes = 3;
        return options;
    }

    config::Config config_;
    test_support::CoreCluster cluster_;
};

Duration since(Time start, Time end) {
    return std::chrono::duration_cast<Duration>(end - start);
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "node/ticket-types: 1v1 players within allowMatch.maxDifference match") {
    auto alice = player(0, "alice");
    auto bob = player(1, "bob");
    start(alice, duel, 1000);
    run(Duration(300));  // alice waits in her room
    const Time started = now();
    start(bob, duel, 1090);
    run(Duration(1000));
    REQUIRE(pushes.ends("alice").size() == 1);
    REQUIRE(pushes.ends("bob").size() == 1);
    CHECK(pushes.ends("alice")[0].message.kind == PushKind::success);
    CHECK(pushes.ends("bob")[0].message.room_id == pushes.ends("alice")[0].message.room_id);
    CHECK(since(started, pushes.ends("bob")[0].at) < Duration(100));  // the first search found it
    CHECK(members(alice, duel) == std::vector<std::string>{"alice", "bob"});
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: 1v1 players further apart than maxDifference each hear 219 "
                  "at ticketDurationSeconds") {
    auto alice = player(0, "alice");
    auto bob = player(1, "bob");
    const Time alice_started = now();
    start(alice, duel, 1000);
    run(Duration(300));
    const Time bob_started = now();
    start(bob, duel, 1110);
    run(Duration(4000));
    for (const auto& [name, began] : {std::pair{"alice", alice_started}, {"bob", bob_started}}) {
        CAPTURE(name);
        const auto ends = pushes.ends(name);
        REQUIRE(ends.size() == 1);
        CHECK(ends[0].message.kind == PushKind::timeout);
        CHECK(ends[0].message.cmd == ticket::push_timeout);
        CHECK(ends[0].message.room_id == ends[0].message.ticket_id.str());  // its own room
        const Duration took = since(began, ends[0].at);
        CHECK(took >= Duration(3000));
        CHECK(took <= Duration(3020));
    }
    CHECK(pushes.ends("alice")[0].message.room_id != pushes.ends("bob")[0].message.room_id);
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a free-for-all below maxMembers completes at "
                  "completeWhen.afterSeconds with the room's members") {
    auto p1 = player(0, "p1");
    auto p2 = player(1, "p2");
    auto p3 = player(2, "p3");
    const Time started = now();
    start(p1, ffa, 1000);
    run(Duration(300));
    start(p2, ffa, 1050);
    run(Duration(300));
    start(p3, ffa, 950);
    run(Duration(300));
    REQUIRE(members(p1, ffa).size() == 3);
    CHECK(pushes.ends("p1").empty());  // nothing before the wait ends
    run(Duration(3000));
    const auto ends = pushes.ends("p1");
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].message.kind == PushKind::success);
    const Duration took = since(started, ends[0].at);
    CHECK(took >= Duration(3000));
    CHECK(took <= Duration(3020));
    for (const char* other : {"p2", "p3"}) {
        REQUIRE(pushes.ends(other).size() == 1);
        CHECK(pushes.ends(other)[0].message.room_id == ends[0].message.room_id);
    }
    CHECK(members(p1, ffa) == std::vector<std::string>{"p1", "p2", "p3"});
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a free-for-all completes as soon as maxMembers players are "
                  "in") {
    std::vector<std::shared_ptr<Session>> players;
    for (std::size_t i = 0; i < 4; ++i) {
        players.push_back(player(i % 3, "p" + std::to_string(i + 1)));
    }
    start(players[0], ffa_wait, 1000);
    for (std::size_t i = 1; i < 4; ++i) {
        run(Duration(300));
        CHECK(pushes.ends("p1").empty());  // not complete while seats are free
        start(players[i], ffa_wait, 1000);
    }
    const Time last_joined = now();
    run(Duration(500));
    const auto ends = pushes.ends("p1");
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].message.kind == PushKind::success);
    CHECK(since(last_joined, ends[0].at) < Duration(100));
    for (const char* other : {"p2", "p3", "p4"}) {
        REQUIRE(pushes.ends(other).size() == 1);
        CHECK(pushes.ends(other)[0].message.room_id == ends[0].message.room_id);
    }
    CHECK(members(players[0], ffa_wait) == std::vector<std::string>{"p1", "p2", "p3", "p4"});
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a free-for-all alone, below completeWhen.minMembers, times "
                  "out with 219") {
    auto p1 = player(0, "p1");
    const Time started = now();
    start(p1, ffa, 1000);
    run(Duration(7000));
    const auto ends = pushes.ends("p1");
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].message.kind == PushKind::timeout);
    const Duration took = since(started, ends[0].at);
    CHECK(took >= Duration(6000));
    CHECK(took <= Duration(6020));
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a canceled ticket's completeWhen wait does not complete the "
                  "user's next ticket early") {
    auto p1 = player(0, "p1");
    auto p2 = player(1, "p2");
    start(p1, ffa, 1000);
    run(Duration(1000));
    REQUIRE(call(p1, TicketCommand{TicketAction::cancel, ffa}));
    run(Duration(500));
    REQUIRE(pushes.ends("p1").size() == 1);
    const Time restarted = now();
    start(p1, ffa, 1000);
    run(Duration(300));
    start(p2, ffa, 1020);
    run(Duration(1500));  // the first ticket's wait would have ended 3 s after it began
    CHECK(pushes.ends("p1").size() == 1);
    run(Duration(1500));
    const auto ends = pushes.ends("p1");
    REQUIRE(ends.size() == 2);
    CHECK(ends[1].message.kind == PushKind::success);
    CHECK(since(restarted, ends[1].at) >= Duration(3000));
    CHECK(since(restarted, ends[1].at) <= Duration(3020));
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a 2v2 with a party keeps the party on one side, and every "
                  "member's 220 carries the roster, the sides and the quality") {
    start_pair_and_solos(two_v_two, 1000, 1040, 1060);  // the pair plays at 1050
    run(Duration(1000));
    std::string room;
    for (const char* name : {"pair-owner", "pair-mate", "solo1", "solo2"}) {
        CAPTURE(name);
        const auto ends = pushes.ends(name);
        REQUIRE(ends.size() == 1);
        REQUIRE(ends[0].message.kind == PushKind::success);
        room = room.empty() ? ends[0].message.room_id : room;
        CHECK(ends[0].message.room_id == room);
        auto result = decode_match_result(ends[0].message.payload);
        REQUIRE(result.has_value());
        CHECK(result->room_id == room);
        CHECK(result->ticket_type == two_v_two);
        REQUIRE(result->members.size() == 4);
        REQUIRE(result->sides.size() == 2);
        std::map<std::string, int> side;
        for (const MatchedPlayer& member : result->members) {
            side[member.user.str()] = member.side;
        }
        CHECK(side.at("pair-owner") == side.at("pair-mate"));
        CHECK(side.at("solo1") == side.at("solo2"));
        CHECK(side.at("solo1") != side.at("pair-owner"));
        CHECK(result->members[0].values.at("rating") == 1000);
        std::map<std::string, std::int64_t> wait;  // from each ticket's start to the match
        for (const MatchedPlayer& member : result->members) {
            wait[member.user.str()] = member.wait_ms;
        }
        CHECK(wait.at("pair-owner") >= 600);
        CHECK(wait.at("pair-owner") <= 700);
        CHECK(wait.at("pair-mate") == wait.at("pair-owner"));
        CHECK(wait.at("solo1") >= 300);
        CHECK(wait.at("solo1") <= 400);
        CHECK(wait.at("solo2") <= 100);
        CHECK(result->members[0].party == result->members[1].party);  // one ticket, one party
        CHECK(result->sides[0].rating == doctest::Approx(1050));
        CHECK(result->sides[1].rating == doctest::Approx(1050));
        CHECK(result->side_difference == doctest::Approx(0));
        CHECK(result->spread == 60);
    }
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a 2v2 whose sides would differ by more than "
                  "maxTeamDifference does not complete") {
    start_pair_and_solos(two_v_two, 1000, 1200, 1200);  // 1050 against 1200: 150 apart
    run(Duration(5000));
    for (const char* name : {"pair-owner", "pair-mate", "solo1", "solo2"}) {
        CAPTURE(name);
        const auto ends = pushes.ends(name);
        REQUIRE(ends.size() == 1);
        CHECK(ends[0].message.kind == PushKind::timeout);
    }
}

TEST_CASE_FIXTURE(Fixture, "node/ticket-types: a team type needs its rating value at start") {
    auto p1 = player(0, "p1");
    const ReplyError refused = refused_start(p1, two_v_two, {{"level", 3}});
    CHECK(refused.category == "invalid_params");
    CHECK(refused.message.find("'rating'") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: sameValue matches only players who share the value") {
    auto eu1 = player(0, "eu1");
    auto us1 = player(1, "us1");
    auto eu2 = player(2, "eu2");
    start(eu1, regional, 1000, {}, 1);
    run(Duration(300));
    start(us1, regional, 1000, {}, 2);  // same rating, another region: never meets eu1
    run(Duration(300));
    CHECK(pushes.ends("eu1").empty());
    CHECK(pushes.ends("us1").empty());
    start(eu2, regional, 1010, {}, 1);
    run(Duration(3000));
    REQUIRE(pushes.ends("eu1").size() == 1);
    REQUIRE(pushes.ends("eu2").size() == 1);
    CHECK(pushes.ends("eu1")[0].message.kind == PushKind::success);
    CHECK(pushes.ends("eu2")[0].message.room_id == pushes.ends("eu1")[0].message.room_id);
    REQUIRE(pushes.ends("us1").size() == 1);
    CHECK(pushes.ends("us1")[0].message.kind == PushKind::timeout);
    // The value is required to start.
    auto late = player(0, "late");
    CHECK(refused_start(late, regional, {{"rating", 1000}}).message.find("'region'") !=
          std::string::npos);
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a relax step widens the search and the room's admission "
                  "once the ticket has waited, and the match records the step") {
    auto low = player(0, "low");
    auto high = player(1, "high");
    const Time started = now();
    start(low, relaxed, 1000);
    run(Duration(200));
    start(high, relaxed, 1250);  // 250 apart: beyond the first limits, within the relaxed ones
    run(Duration(800));
    CHECK(pushes.ends("low").empty());
    CHECK(pushes.ends("high").empty());
    run(Duration(1500));
    for (const char* name : {"low", "high"}) {
        CAPTURE(name);
        const auto ends = pushes.ends(name);
        REQUIRE(ends.size() == 1);
        REQUIRE(ends[0].message.kind == PushKind::success);
        CHECK(since(started, ends[0].at) >= Duration(1000));
        auto result = decode_match_result(ends[0].message.payload);
        REQUIRE(result.has_value());
        CHECK(result->relax_step == 0);
        CHECK(result->spread == 250);
    }
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a relax step lowers completeWhen.minMembers once the ticket "
                  "has waited") {
    auto p1 = player(0, "p1");
    auto p2 = player(1, "p2");
    const Time started = now();
    start(p1, few, 1000);
    run(Duration(300));
    start(p2, few, 1010);
    run(Duration(1500));  // past afterSeconds, but two of the three asked for
    CHECK(pushes.ends("p1").empty());
    run(Duration(1000));
    const auto ends = pushes.ends("p1");
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].message.kind == PushKind::success);
    CHECK(since(started, ends[0].at) >= Duration(2000));
    CHECK(since(started, ends[0].at) <= Duration(2020));
    REQUIRE(pushes.ends("p2").size() == 1);
    auto result = decode_match_result(ends[0].message.payload);
    REQUIRE(result.has_value());
    CHECK(result->relax_step == 0);
    CHECK(result->members.size() == 2);
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: a relax step widens maxTeamDifference once the room has "
                  "waited") {
    const Time started = now();
    start_pair_and_solos(patient_2v2, 1000, 1200, 1200);  // 150 apart: refused for a second
    run(Duration(300));
    CHECK(pushes.ends("pair-owner").empty());
    run(Duration(2500));
    for (const char* name : {"pair-owner", "pair-mate", "solo1", "solo2"}) {
        CAPTURE(name);
        const auto ends = pushes.ends(name);
        REQUIRE(ends.size() == 1);
        REQUIRE(ends[0].message.kind == PushKind::success);
        CHECK(since(started, ends[0].at) >= Duration(1000));
        auto result = decode_match_result(ends[0].message.payload);
        REQUIRE(result.has_value());
        CHECK(result->relax_step == 0);
        CHECK(result->side_difference == doctest::Approx(150));
        REQUIRE(result->sides.size() == 2);
    }
}

TEST_CASE_FIXTURE(Fixture,
                  "node/ticket-types: prefer picks the longest waiting room or the nearest one") {
    // `early` (1000) waits first; `near` (1250) cannot play it (250 apart) and waits too; then a
    // player at 1200 can play either: the oldest room is early's, the nearest near's.
    for (const auto& [type, expected] : {std::pair{oldest, "early"}, {closest, "near"}}) {
        CAPTURE(expected);
        const std::string suffix = std::to_string(type);
        auto early = player(0, "early" + suffix);
        auto near = player(1, "near" + suffix);
        auto late = player(2, "late" + suffix);
        start(early, type, 1000);
        run(Duration(500));
        start(near, type, 1250);
        run(Duration(500));
        CHECK(pushes.ends("early" + suffix).empty());
        CHECK(pushes.ends("near" + suffix).empty());
        start(late, type, 1200);
        run(Duration(500));
        const auto ends = pushes.ends("late" + suffix);
        REQUIRE(ends.size() == 1);
        CHECK(ends[0].message.kind == PushKind::success);
        const auto partner = pushes.ends(expected + suffix);
        REQUIRE(partner.size() == 1);
        CHECK(partner[0].message.room_id == ends[0].message.room_id);
        run(Duration(4000));  // the other times out
    }
}
