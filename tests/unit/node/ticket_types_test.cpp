// The stock node's ticket types: how a player's values become a ticket's parameters.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "config/config.hpp"
#include "node/ticket_types.hpp"

using namespace matchmesh;

namespace {

// A clock that never moves; timers are kept but never run.
class StillScheduler final : public mesh::Scheduler {
public:
    [[nodiscard]] Time now() const override { return Time(Duration(0)); }
    mesh::TimerId run_after(Duration, mesh::Task) override { return ++timers_; }
    bool cancel(mesh::TimerId) override { return false; }

private:
    mesh::TimerId timers_ = 0;
};

struct Fixture {
    config::Config config;
    matching::ProfileRegistry profiles;
    StillScheduler scheduler;

    explicit Fixture(const std::string& types) {
        auto loaded = config::load_string(
            R"({"matching": {"profiles": {"Duel": {"rank": 100}, "Arena": {"rank": 200, "region": 1}}},
                "ticketTypes": )" +
                types + "}",
            "test.json");
        REQUIRE(loaded.has_value());
        config = std::move(*loaded);
        for (const auto& [id, widths] : config.matching.profiles) {
            REQUIRE(profiles.define(id, widths).has_value());
        }
    }

    static ticket::User player(std::int64_t rating) {
        return ticket::User{UserId("p"), "sid", NodeId("n"), {{"rating", rating}}, 0};
    }
};

}  // namespace

TEST_CASE("ticket types: the rating fills the add property and the search values, nearest first") {
    Fixture fixture(R"({"1": {"profiles": ["Duel"], "maxMembers": 2, "ticketDurationSeconds": 30,
        "searchIntervalMs": 250, "searchTries": 3, "howMany": 7,
        "properties": {"rank": {"value": "rating", "searchSpread": 200}}}})");
    node::ConfiguredTicketTypes types(fixture.config.ticket_types, fixture.profiles,
                                      fixture.scheduler, 64, 1);
    const auto params = types.params_for(fixture.config.ticket_types.at(1), Fixture::player(1500));
    CHECK(params.profile_ids == std::vector<std::string>{"Duel"});
    CHECK(params.add_properties == matching::Properties{{"rank", 1500}});
    CHECK(params.search_properties.at("rank") ==
          std::vector<std::int64_t>{1500, 1400, 1600, 1300, 1700});
    CHECK(params.max_members == 2);
    CHECK(params.ticket_duration == std::chrono::seconds(30));
    CHECK(params.search_interval == std::chrono::milliseconds(250));
    CHECK(params.search_tries == 3);
    CHECK(params.how_many == 7);
}

TEST_CASE("ticket types: the search values stop at the range limit") {
    // The config refuses a spread past limits.rangeValuesMax; the node still cuts it, whatever
    // limit it is given.
    Fixture fixture(R"({"1": {"profiles": ["Duel"],
        "properties": {"rank": {"value": "rating", "searchSpread": 3000}}}})");
    node::ConfiguredTicketTypes types(fixture.config.ticket_types, fixture.profiles,
                                      fixture.scheduler, 9, 1);
    const auto params = types.params_for(fixture.config.ticket_types.at(1), Fixture::player(1500));
    CHECK(params.search_properties.at("rank").size() == 9);
}

TEST_CASE("ticket types: randomize keeps each ticket's settings within the given spread") {
    Fixture fixture(
        R"({"1": {"profiles": ["Duel"], "ticketDurationSeconds": 20, "searchIntervalMs": 300,
        "searchTries": 4, "properties": {"rank": {"value": "rating"}},
        "randomize": {"searchIntervalMs": 50, "searchTries": 2, "ticketDurationSeconds": 3}}})");
    node::ConfiguredTicketTypes types(fixture.config.ticket_types, fixture.profiles,
                                      fixture.scheduler, 64, 1);
    std::set<std::int64_t> intervals;
    for (int i = 0; i < 200; ++i) {
        const auto params =
            types.params_for(fixture.config.ticket_types.at(1), Fixture::player(1500));
        CHECK(params.search_interval >= std::chrono::milliseconds(250));
        CHECK(params.search_interval <= std::chrono::milliseconds(350));
        CHECK(params.search_tries >= 2);
        CHECK(params.search_tries <= 6);
        CHECK(params.ticket_duration >= std::chrono::seconds(17));
        CHECK(params.ticket_duration <= std::chrono::seconds(23));
        intervals.insert(params.search_interval.count());
    }
    CHECK(intervals.size() > 10);  // it does spread
}

TEST_CASE("ticket types: a start without the values the type needs is refused, naming them") {
    Fixture fixture(R"({"2": {"name": "arena", "profiles": ["Arena"], "maxMembers": 8,
        "properties": {"rank": {"value": "rating"}, "region": {"value": "region"}},
        "allowMatch": {"value": "skill", "maxDifference": 10}}})");
    node::ConfiguredTicketTypes types(fixture.config.ticket_types, fixture.profiles,
                                      fixture.scheduler, 64, 1);
    CHECK(types.check_start(2, {{"rating", 1}, {"region", 2}, {"skill", 3}}, 1).has_value());
    auto missing = types.check_start(2, {{"rating", 1}, {"skill", 3}}, 1);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error() == "ticket type 2 (arena) needs the player's value 'region'");
    auto no_skill = types.check_start(2, {{"rating", 1}, {"region", 2}}, 1);
    REQUIRE_FALSE(no_skill.has_value());
    CHECK(no_skill.error().find("'skill'") != std::string::npos);
    CHECK(types.check_start(9, {}, 1).error() == "ticket type 9 is not configured");
    CHECK(types.find(2) != nullptr);
    CHECK(types.find(9) == nullptr);
}

TEST_CASE("ticket types: values outside their range and parties of the wrong size are refused") {
    Fixture fixture(R"({"1": {"name": "duel", "profiles": ["Duel"], "maxMembers": 4,
        "properties": {"rank": {"value": "rating"}},
        "values": {"rating": {"min": 0, "max": 5000}, "region": {"required": false, "max": 9},
                   "level": {"min": 10}},
        "partySize": {"min": 1, "max": 2}}})");
    node::ConfiguredTicketTypes types(fixture.config.ticket_types, fixture.profiles,
                                      fixture.scheduler, 64, 1);
    CHECK(types.check_start(1, {{"rating", 1500}, {"level", 10}}, 1).has_value());
    CHECK(types.check_start(1, {{"rating", 0}, {"level", 99}, {"region", 9}}, 2).has_value());
    CHECK(types.check_start(1, {{"rating", 5001}, {"level", 10}}, 1).error() ==
          "ticket type 1 (duel) takes the value 'rating' from 0 to 5000, not 5001");
    CHECK(types.check_start(1, {{"rating", 1}, {"level", 10}, {"region", 10}}, 1).error() ==
          "ticket type 1 (duel) takes the value 'region' at most 9, not 10");
    CHECK(types.check_start(1, {{"rating", 1}}, 1).error() ==
          "ticket type 1 (duel) needs the player's value 'level'");
    CHECK(types.check_start(1, {{"rating", 1}, {"level", 9}}, 1).error() ==
          "ticket type 1 (duel) takes the value 'level' at least 10, not 9");
    CHECK(types.check_start(1, {{"rating", 1}, {"level", 10}}, 3).error() ==
          "ticket type 1 (duel) takes parties of 1 to 2 players, not 3");
}

TEST_CASE("ticket types: application data travels with the user's next ticket") {
    Fixture fixture(
        R"({"1": {"profiles": ["Duel"], "properties": {"rank": {"value": "rating"}}}})");
    node::ConfiguredTicketTypes types(fixture.config.ticket_types, fixture.profiles,
                                      fixture.scheduler, 64, 1);
    types.set_application_data(UserId("p"), 1, ticket::Bytes{'h', 'i'});
    CHECK(
        types.params_for(fixture.config.ticket_types.at(1), Fixture::player(1)).application_data ==
        ticket::Bytes{'h', 'i'});
    types.forget(UserId("p"));
    CHECK(types.params_for(fixture.config.ticket_types.at(1), Fixture::player(1))
              .application_data.empty());
}

TEST_CASE("ticket types: a team type's rooms expect players within the reach of its search") {
    // Rank buckets of 100 searched 400 each side: a searcher four buckets from a room's owner
    // finds it, at most 499 from the owner's rating; with a range of 5 values only two buckets
    // each side are searched; a search on another value says nothing of the rating.
    Fixture fixture(R"({"3": {"profiles": ["Duel"],
            "teams": {"size": 3, "rating": "rating", "maxTeamDifference": 100},
            "properties": {"rank": {"value": "rating", "searchSpread": 400}}},
        "4": {"profiles": ["Duel"], "teams": {"size": 3, "rating": "rating"},
            "properties": {"rank": {"value": "level", "searchSpread": 400}}}})");
    node::ConfiguredTicketTypes wide(fixture.config.ticket_types, fixture.profiles,
                                     fixture.scheduler, 64, 1);
    CHECK(wide.team_rules_for(fixture.config.ticket_types.at(3)).newcomer_reach == 500);
    CHECK_FALSE(wide.team_rules_for(fixture.config.ticket_types.at(4)).newcomer_reach);
    node::ConfiguredTicketTypes narrow(fixture.config.ticket_types, fixture.profiles,
                                       fixture.scheduler, 5, 1);
    CHECK(narrow.team_rules_for(fixture.config.ticket_types.at(3)).newcomer_reach == 300);
    CHECK(narrow.params_for(fixture.config.ticket_types.at(3), Fixture::player(1500))
              .search_properties.at("rank")
              .size() == 5);
}
