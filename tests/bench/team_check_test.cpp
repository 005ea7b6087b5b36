// The load bench's check of a team match: a roster that keeps the 3v3 rules passes with the
// sides' difference computed from the roster, and each way of breaking a rule is named; a record's
// team match survives the JSON lines player processes hand their records over in, and the summary
// counts each room once.
#include <doctest/doctest.h>

#include <algorithm>

#include "bench/outcomes.hpp"
#include "bench/team_check.hpp"

using namespace matchmesh;
using namespace matchmesh::bench;

namespace {

config::TeamsRule three_versus_three_teams() {
    config::TeamsRule teams;
    teams.count = 2;
    teams.size = 3;
    teams.rating = "rating";
    teams.party_bonus = {{2, 20}, {3, 40}};
    teams.max_team_difference = 100;
    teams.premade_parity = true;
    return teams;
}

node::MatchedPlayer player(const std::string& user, const std::string& party, int side,
                           std::optional<std::int64_t> rating) {
    node::MatchedPlayer matched{UserId(user), TicketId(party), side, {}};
    if (rating) {
        matched.values["rating"] = *rating;
    }
    return matched;
}

// Pair a (1500, its second player without a rating) and solo c (1480) against pair b (1520) and
// solo d (1490): 1520 x2 + 1480 against 1540 x2 + 1490, 50/3 apart, spread 40.
node::MatchResult honest_match() {
    node::MatchResult result;
    result.room_id = "room-1";
    result.ticket_type = 3;
    result.members = {player("a1", "A", 0, 1500), player("a2", "A", 0, std::nullopt),
                      player("b1", "B", 1, 1520), player("b2", "B", 1, std::nullopt),
                      player("c", "C", 0, 1480),  player("d", "D", 1, 1490)};
    result.sides = {{4520.0 / 3, 3}, {4570.0 / 3, 3}};
    result.spread = 40;
    result.side_difference = 50.0 / 3;
    return result;
}

bool names(const TeamMatchCheck& check, const std::string& violation) {
    return std::find(check.violations.begin(), check.violations.end(), violation) !=
           check.violations.end();
}

}  // namespace

TEST_CASE("bench/team_check: a roster within the rules passes, measured from the roster") {
    const TeamMatchCheck check = check_team_match(honest_match(), three_versus_three_teams());
    CHECK(check.violations.empty());
    CHECK(check.side_difference == doctest::Approx(50.0 / 3));
    CHECK(check.spread == 40);
}

TEST_CASE("bench/team_check: each broken rule is named") {
    const config::TeamsRule rules = three_versus_three_teams();
    SUBCASE("a party split across sides") {
        node::MatchResult result = honest_match();
        result.members[1].side = 1;  // a2 swaps with d: three a side still
        result.members[5].side = 0;
        CHECK(names(check_team_match(result, rules), "party_split"));
    }
    SUBCASE("a side without its three players") {
        node::MatchResult result = honest_match();
        result.members[5].side = 0;
        CHECK(names(check_team_match(result, rules), "side_size"));
    }
    SUBCASE("a player short") {
        node::MatchResult result = honest_match();
        result.members.pop_back();
        const TeamMatchCheck check = check_team_match(result, rules);
        CHECK(names(check, "players"));
        CHECK(names(check, "side_size"));
    }
    SUBCASE("sides further apart than the maximum difference") {
        node::MatchResult result = honest_match();
        result.members[2].values["rating"] = 1700;  // pair b plays at 1720
        result.side_difference = (2 * 1720.0 + 1490 - 4520) / 3;
        result.spread = 220;
        const TeamMatchCheck check = check_team_match(result, rules);
        CHECK(check.violations == std::vector<std::string>{"team_difference"});
        CHECK(check.side_difference == doctest::Approx(410.0 / 3));
    }
    SUBCASE("a pair facing no pair") {
        node::MatchResult result = honest_match();
        result.members = {player("a1", "A", 0, 1500), player("a2", "A", 0, std::nullopt),
                          player("c", "C", 0, 1500),  player("d", "D", 1, 1500),
                          player("e", "E", 1, 1500),  player("f", "F", 1, 1500)};
        CHECK(names(check_team_match(result, rules), "premade_parity"));
    }
    SUBCASE("a spread above the maximum") {
        config::TeamsRule narrow = rules;
        narrow.max_spread = 30;
        CHECK(names(check_team_match(honest_match(), narrow), "spread"));
    }
    SUBCASE("reported quality that is not the roster's") {
        node::MatchResult result = honest_match();
        result.side_difference = 0;
        CHECK(check_team_match(result, rules).violations ==
              std::vector<std::string>{"reported_quality"});
    }
}

TEST_CASE("bench/outcomes: a team match survives the records' JSON and counts once per room") {
    std::vector<TicketRecord> records(3);
    for (std::size_t i = 0; i < records.size(); ++i) {
        records[i].arrived = true;
        records[i].accepted = true;
        records[i].type = 3;
        records[i].outcome = Outcome::matched;
        records[i].room = i < 2 ? "room-1" : "room-2";
        records[i].side_difference = i < 2 ? 10.0 : 150.0;
        records[i].spread = 40;
    }
    records[2].violations = {"team_difference"};
    for (TicketRecord& record : records) {
        record = record_of(nlohmann::json::parse(record_json(record).dump()));
    }
    CHECK(records[0].side_difference == 10.0);
    CHECK(records[2].violations == std::vector<std::string>{"team_difference"});
    TicketRecord plain;
    CHECK_FALSE(record_of(record_json(plain)).side_difference.has_value());
    const nlohmann::json teams = summarize(records, 1.0)["by_type"]["3"]["teams"];
    CHECK(teams["matches"] == 2);
    CHECK(teams["violations"] == 1);
    CHECK(teams["violation_kinds"]["team_difference"] == 1);
    CHECK(teams["side_difference"]["max"] == 150.0);
}

TEST_CASE("bench/outcomes: a wait to connect in the player process is kept and reported") {
    std::vector<TicketRecord> records(2);
    for (TicketRecord& record : records) {
        record.arrived = true;
        record.outcome = Outcome::refused;
    }
    CHECK_FALSE(summarize(records, 1.0).contains("connect_wait_ms"));  // nobody waited
    records[1].connect_wait_ms = 250;
    records[1] = record_of(nlohmann::json::parse(record_json(records[1]).dump()));
    CHECK(summarize(records, 1.0)["connect_wait_ms"]["max"] == 250.0);
}
