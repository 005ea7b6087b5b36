// The ticketTypes section and the client-facing settings: what loads, and every rejection naming
// its JSON path.
#include <doctest/doctest.h>

#include <string>

#include "config/config.hpp"

using matchmesh::config::load_string;

namespace {

const std::string profiles =
    R"("matching": {"profiles": {"Duel": {"rank": 100}, "Arena": {"rank": 200, "region": 1}}})";

std::string with_types(const std::string& types) {
    return "{" + profiles + R"(, "ticketTypes": )" + types + "}";
}

void expect_rejected(const std::string& text, const std::string& path, const std::string& reason) {
    CAPTURE(text);
    auto loaded = load_string(text, "test.json");
    REQUIRE_FALSE(loaded.has_value());
    const std::string& message = loaded.error().message;
    CAPTURE(message);
    CHECK(message.starts_with("test.json: " + path + ": "));
    CHECK(message.find(reason) != std::string::npos);
}

}  // namespace

TEST_CASE("config: ticket types load with their rules and policies") {
    auto loaded = load_string(with_types(R"({
        "1": {"name": "duel", "profiles": ["Duel"], "maxMembers": 2, "tags": ["eu"],
              "properties": {"rank": {"value": "rating", "searchSpread": 200}},
              "allowMatch": {"value": "rating", "maxDifference": 300},
              "ticketDurationSeconds": 30, "searchIntervalMs": 250, "searchTries": 3,
              "emptySearches": 1, "waitSearches": 0, "waitSearchAfterMs": 700, "howMany": 10, "timeoutExtensionSeconds": 5,
              "announceMembers": true,
              "randomize": {"searchIntervalMs": 50, "searchTries": 1, "ticketDurationSeconds": 2}},
        "200": {"profiles": ["Arena"], "maxMembers": 8,
                "properties": {"rank": {"value": "rating"}, "region": {"value": "region"}},
                "completeWhen": {"minMembers": 4, "afterSeconds": 10}}})"),
                              "test.json");
    REQUIRE(loaded.has_value());
    REQUIRE(loaded->ticket_types.size() == 2);
    const auto& duel = loaded->ticket_types.at(1);
    CHECK(duel.type == 1);
    CHECK(duel.name == "duel");
    CHECK(duel.profiles == std::vector<std::string>{"Duel"});
    CHECK(duel.tags == std::vector<std::string>{"eu"});
    CHECK(duel.properties.at("rank").value == "rating");
    CHECK(duel.properties.at("rank").search_spread == 200);
    CHECK(duel.allow_match == matchmesh::config::AllowMatchRule{"rating", 300});
    CHECK(duel.ticket_duration_seconds == 30);
    CHECK(duel.search_interval_ms == 250);
    CHECK(duel.search_tries == 3);
    CHECK(duel.empty_searches == 1);
    CHECK(duel.wait_searches == 0);
    CHECK(duel.wait_search_after_ms == 700);
    CHECK(duel.how_many == 10);
    CHECK(duel.announce_members);
    CHECK_FALSE(loaded->ticket_types.at(200).announce_members);
    CHECK(duel.timeout_extension_seconds == 5);
    CHECK(duel.randomize_search_interval_ms == 50);
    CHECK(duel.randomize_search_tries == 1);
    CHECK(duel.randomize_ticket_duration_seconds == 2);
    const auto& arena = loaded->ticket_types.at(200);
    CHECK(arena.name == "200");  // the key, when no name is given
    CHECK(arena.max_members == 8);
    CHECK(arena.complete_when == matchmesh::config::CompleteWhenRule{4, 10});
    CHECK_FALSE(arena.allow_match.has_value());
}

TEST_CASE("config: malformed ticket types are rejected with their path") {
    const std::string duel = R"("profiles": ["Duel"], "properties": {"rank": {"value": "rating"}})";
    expect_rejected(with_types("[]"), "ticketTypes", "");
    expect_rejected(with_types(R"({"256": {)" + duel + "}}"), "ticketTypes.256", "0..255");
    expect_rejected(with_types(R"({"duel": {)" + duel + "}}"), "ticketTypes.duel", "0..255");
    expect_rejected(with_types(R"({"01": {)" + duel + "}}"), "ticketTypes.01", "0..255");
    expect_rejected(with_types(R"({"1": {"maxMembers": 2}})"), "ticketTypes.1.profiles",
                    "is required");
    expect_rejected(with_types(R"({"1": {"profiles": []}})"), "ticketTypes.1.profiles",
                    "at least one profile");
    expect_rejected(with_types(R"({"1": {"profiles": ["Nope"]}})"), "ticketTypes.1.profiles",
                    "not defined in matching.profiles");
    expect_rejected(
        with_types(R"({"1": {"profiles": ["Duel"], "properties": {"level": {"value": "x"}}}})"),
        "ticketTypes.1.properties.level", "has no property 'level'");
    expect_rejected(
        with_types(R"({"1": {"profiles": ["Arena"], "properties": {"rank": {"value": "r"}}}})"),
        "ticketTypes.1.properties", "must fill every property");
    expect_rejected(
        with_types(R"({"1": {"profiles": ["Duel"], "properties": {"rank": {"searchSpread": 1}}}})"),
        "ticketTypes.1.properties.rank.value", "is required");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "maxMembers": 1}})"),
                    "ticketTypes.1.maxMembers", "");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "searchIntervalMs": 5}})"),
                    "ticketTypes.1.searchIntervalMs", "");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "allowMatch": {"value": "rating"}}})"),
                    "ticketTypes.1.allowMatch", "needs value and maxDifference");
    expect_rejected(with_types(R"({"1": {)" + duel +
                               R"(, "completeWhen": {"minMembers": 3, "afterSeconds": 1}}})"),
                    "ticketTypes.1.completeWhen.minMembers", "must not exceed maxMembers (2)");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "randomize": {"searchTries": -1}}})"),
                    "ticketTypes.1.randomize.searchTries", "");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "colour": "red"}})"),
                    "ticketTypes.1.colour", "unknown key");
}

TEST_CASE("config: value rules and party sizes load, and bad ones name their path") {
    const std::string duel = R"("profiles": ["Duel"], "properties": {"rank": {"value": "rating"}})";
    auto loaded = load_string(with_types(R"({"1": {)" + duel + R"(, "maxMembers": 4,
        "values": {"rating": {"min": 0, "max": 5000}, "region": {"required": false}},
        "partySize": {"min": 2, "max": 3}}})"),
                              "test.json");
    REQUIRE(loaded.has_value());
    const auto& type = loaded->ticket_types.at(1);
    CHECK(type.values.at("rating") == matchmesh::config::ValueRule{true, 0, 5000});
    CHECK_FALSE(type.values.at("region").required);
    CHECK(type.party_min == 2);
    CHECK(type.party_max == 3);
    expect_rejected(
        with_types(R"({"1": {)" + duel + R"(, "values": {"rating": {"min": 5, "max": 4}}}})"),
        "ticketTypes.1.values.rating.max", "must not be below min (5)");
    expect_rejected(
        with_types(R"({"1": {)" + duel + R"(, "values": {"rating": {"required": 1}}}})"),
        "ticketTypes.1.values.rating.required", "must be true or false");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "values": {"rating": {"mn": 1}}}})"),
                    "ticketTypes.1.values.rating.mn", "unknown key");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "partySize": {"max": 3}}})"),
                    "ticketTypes.1.partySize.max", "must not exceed maxMembers (2)");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "partySize": {"min": 2, "max": 1}}})"),
                    "ticketTypes.1.partySize.min", "must not exceed the largest party (1)");
}

TEST_CASE("config: team types load their sides and limits, and bad ones name their path") {
    const std::string arena = R"("profiles": ["Duel"], "properties": {"rank": {"value": "rating"}})";
    auto loaded = load_string(with_types(R"({"3": {)" + arena + R"(,
        "teams": {"count": 2, "size": 3, "rating": "teamRating", "partyBonus": {"2": 20, "3": 45},
                  "maxSpread": 800, "maxTeamDifference": 100, "premadeParity": true}}})"),
                              "test.json");
    REQUIRE(loaded.has_value());
    const auto& type = loaded->ticket_types.at(3);
    REQUIRE(type.teams.has_value());
    CHECK(type.teams->count == 2);
    CHECK(type.teams->size == 3);
    CHECK(type.teams->rating == "teamRating");
    CHECK(type.teams->party_bonus == std::map<int, std::int64_t>{{2, 20}, {3, 45}});
    CHECK(type.teams->max_spread == 800);
    CHECK(type.teams->max_team_difference == 100);
    CHECK(type.teams->premade_parity);
    CHECK(type.max_members == 6);  // the sides' seats
    CHECK(type.party_max == 3);    // a party fits on one side
    const auto teams = [&](const std::string& rule, const std::string& more = "") {
        return with_types(R"({"3": {)" + arena + more + R"(, "teams": )" + rule + "}}");
    };
    expect_rejected(teams(R"({"count": 2})"), "ticketTypes.3.teams", "needs size and rating");
    expect_rejected(teams(R"({"size": 0, "rating": "r"})"), "ticketTypes.3.teams.size",
                    "");
    expect_rejected(teams(R"({"count": 1, "size": 2, "rating": "r"})"),
                    "ticketTypes.3.teams.count", "");
    expect_rejected(teams(R"({"count": 16, "size": 100, "rating": "r"})"), "ticketTypes.3.teams",
                    "more than the 255 a room seats");
    expect_rejected(teams(R"({"size": 2, "rating": "r"})", R"(, "maxMembers": 6)"),
                    "ticketTypes.3.teams.size", "seat 4, but maxMembers is 6");
    expect_rejected(teams(R"({"size": 2, "rating": "r", "partyBonus": {"3": 10}})"),
                    "ticketTypes.3.teams.partyBonus.3", "a party size from 2 to 2");
    expect_rejected(teams(R"({"size": 2, "rating": "r", "partyBonus": {"two": 10}})"),
                    "ticketTypes.3.teams.partyBonus.two", "a party size");
    expect_rejected(with_types(R"({"1": {"profiles": ["Duel"], "announceMembers": 1}})"),
                    "ticketTypes.1.announceMembers", "must be true or false");
    expect_rejected(teams(R"({"size": 2, "rating": "r", "premadeParity": "yes"})"),
                    "ticketTypes.3.teams.premadeParity", "must be true or false");
    expect_rejected(teams(R"({"size": 2, "rating": "r", "sides": 2})"), "ticketTypes.3.teams.sides",
                    "unknown key");
    expect_rejected(teams(R"({"size": 2, "rating": "r"})", R"(, "partySize": {"max": 3})"),
                    "ticketTypes.3.partySize.max", "");
}

TEST_CASE("config: sameValue names values all members share, within a tag's length") {
    const std::string duel =
        R"("profiles": ["Duel"], "tags": ["duel"], "properties": {"rank": {"value": "rating"}})";
    auto loaded = load_string(
        with_types(R"({"1": {)" + duel + R"(, "sameValue": ["region", "platform"]}})"), "test.json");
    REQUIRE_MESSAGE(loaded.has_value(), loaded.error().message);
    CHECK(loaded->ticket_types.at(1).same_value == std::vector<std::string>{"region", "platform"});
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "sameValue": "region"}})"),
                    "ticketTypes.1.sameValue", "must be an array");
    expect_rejected(with_types(R"({"1": {)" + duel +
                               R"(, "sameValue": ["a-rather-long-value-name", "another-long-one"]}})"),
                    "ticketTypes.1.sameValue", "more than the 64 a tag may have");
}

TEST_CASE("config: relax steps load in order, and each names only limits the type has") {
    const std::string duel = R"("profiles": ["Duel"], "maxMembers": 4,
        "properties": {"rank": {"value": "rating", "searchSpread": 200}},
        "allowMatch": {"value": "rating", "maxDifference": 100},
        "completeWhen": {"minMembers": 4, "afterSeconds": 5})";
    auto loaded = load_string(with_types(R"({"1": {)" + duel + R"(, "relax": [
        {"afterSeconds": 5, "maxDifference": 300, "searchSpread": 400},
        {"afterSeconds": 10, "minMembers": 2}]}})"),
                              "test.json");
    REQUIRE_MESSAGE(loaded.has_value(), loaded.error().message);
    const auto& relax = loaded->ticket_types.at(1).relax;
    REQUIRE(relax.size() == 2);
    CHECK(relax[0] == matchmesh::config::RelaxStep{5, 300, 400, std::nullopt, std::nullopt});
    CHECK(relax[1] == matchmesh::config::RelaxStep{10, std::nullopt, std::nullopt, std::nullopt, 2});
    const auto with_relax = [&](const std::string& steps) {
        return with_types(R"({"1": {)" + duel + R"(, "relax": )" + steps + "}}");
    };
    expect_rejected(with_relax("[]"), "ticketTypes.1.relax", "1 to 8 steps");
    expect_rejected(with_relax(R"([{"maxDifference": 3}])"), "ticketTypes.1.relax[0]",
                    "needs afterSeconds");
    expect_rejected(with_relax(R"([{"afterSeconds": 5, "maxDifference": 3},
                                  {"afterSeconds": 5, "maxDifference": 4}])"),
                    "ticketTypes.1.relax[1].afterSeconds", "");
    expect_rejected(with_relax(R"([{"afterSeconds": 5}])"), "ticketTypes.1.relax[0]",
                    "relaxes nothing");
    expect_rejected(with_relax(R"([{"afterSeconds": 5, "maxTeamDifference": 3}])"),
                    "ticketTypes.1.relax[0].maxTeamDifference", "needs teams");
    expect_rejected(with_relax(R"([{"afterSeconds": 5, "minMembers": 9}])"),
                    "ticketTypes.1.relax[0].minMembers", "must be 1 to maxMembers (4)");
    expect_rejected(with_relax(R"([{"afterSeconds": 5, "searchSpread": 100000}])"),
                    "ticketTypes.1.relax[0].searchSpread", "limits.rangeValuesMax");
}

TEST_CASE("config: prefer is closest or oldest") {
    const std::string duel = R"("profiles": ["Duel"], "properties": {"rank": {"value": "rating"}})";
    auto loaded = load_string(with_types(R"({"1": {)" + duel + R"(, "prefer": "oldest"}})"),
                              "test.json");
    REQUIRE(loaded.has_value());
    CHECK(loaded->ticket_types.at(1).prefer == "oldest");
    expect_rejected(with_types(R"({"1": {)" + duel + R"(, "prefer": "fastest"}})"),
                    "ticketTypes.1.prefer", "must be \"closest\" or \"oldest\"");
}

TEST_CASE("config: a ticket type the limits would break at every start is refused at load") {
    // A duration below limits.ticketDurationMinSeconds (the default, 10 s), also only with
    // randomize's spread; a search spread that limits.rangeValuesMax would cut short.
    const std::string rank = R"("profiles": ["Duel"], "properties": {"rank": {"value": "rating")";
    expect_rejected(with_types(R"({"1": {)" + rank + R"(}}, "ticketDurationSeconds": 5}})"),
                    "ticketTypes.1.ticketDurationSeconds",
                    "5 s is below limits.ticketDurationMinSeconds (10 s)");
    expect_rejected(with_types(R"({"1": {)" + rank +
                               R"(}}, "ticketDurationSeconds": 20,
                                  "randomize": {"ticketDurationSeconds": 15}}})"),
                    "ticketTypes.1.ticketDurationSeconds",
                    "5 s less randomize.ticketDurationSeconds is below");
    expect_rejected(with_types(R"({"1": {)" + rank +
                               R"(}}, "ticketDurationSeconds": 3590,
                                  "randomize": {"ticketDurationSeconds": 20}}})"),
                    "ticketTypes.1.ticketDurationSeconds", "above the 3600 s");
    // Duel's rank is 100 wide: rangeValuesMax 9 allows 4 buckets each side, a spread of 400.
    const std::string limits = R"(, "limits": {"rangeValuesMax": 9})";
    auto with_spread = [&](int spread) {
        return "{" + profiles + limits + R"(, "ticketTypes": {"1": {"profiles": ["Duel"],
            "properties": {"rank": {"value": "rating", "searchSpread": )" +
               std::to_string(spread) + "}}}}}";
    };
    CHECK(load_string(with_spread(499), "test.json").has_value());
    expect_rejected(with_spread(500), "ticketTypes.1.properties.rank.searchSpread",
                    "500 reaches 5 buckets of 100 each side, but limits.rangeValuesMax (9) allows "
                    "4: at most 400");
}

TEST_CASE("config: token secrets, client limits and the admin port") {
    auto loaded = load_string(R"({"node": {"adminListen": "127.0.0.1:9200"},
        "cluster": {"tokenSecret": "a-token-secret-of-32-bytes-0123"},
        "limits": {"commandsPerSecond": 50, "rangeValuesMax": 16, "ticketDurationMinSeconds": 1}})",
                              "test.json");
    REQUIRE(loaded.has_value());
    CHECK(loaded->node.admin_listen == "127.0.0.1:9200");
    CHECK(loaded->cluster.token_secret == "a-token-secret-of-32-bytes-0123");
    CHECK(loaded->limits.commands_per_second == 50);
    CHECK(loaded->limits.range_values_max == 16);
    CHECK(loaded->limits.ticket_duration_min_seconds == 1);
    auto no_admin = load_string(R"({"node": {"adminListen": ""}})", "test.json");
    REQUIRE(no_admin.has_value());
    CHECK(no_admin->node.admin_listen.empty());

    expect_rejected(R"({"cluster": {"tokenSecret": "short"}})", "cluster.tokenSecret", "");
    expect_rejected(
        R"({"cluster": {"tokenSecret": "a-token-secret-of-32-bytes-0123", "tokenSecretFile": "/x"}})",
        "cluster.tokenSecretFile", "either tokenSecret or tokenSecretFile");
    expect_rejected(R"({"cluster": {"tokenSecretFile": "/nonexistent/token"}})",
                    "cluster.tokenSecretFile", "");
    expect_rejected(R"({"limits": {"commandsPerSecond": 0}})", "limits.commandsPerSecond", "");
    expect_rejected(R"({"limits": {"rangeValuesMax": 1000}})", "limits.rangeValuesMax", "");
    expect_rejected(R"({"limits": {"ticketDurationMinSeconds": 0}})",
                    "limits.ticketDurationMinSeconds", "");
    expect_rejected(R"({"node": {"adminListen": "nowhere"}})", "node.adminListen", "");
}
