// The ideal matcher on a team type: parties that can make sides within the rules are matched the
// moment the last of them arrives, with the split's quality recorded; parties that cannot (premade
// parity, the sides' difference) are not matched, and wait out their tickets.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "bench/ideal.hpp"
#include "bench/outcomes.hpp"

using namespace matchmesh;
using namespace matchmesh::bench;

namespace {

// A 3v3 like scripts/cluster.sh's type 3.
std::map<int, config::TicketTypeConfig> three_versus_three() {
    config::TicketTypeConfig type;
    type.type = 3;
    type.name = "3v3";
    type.profiles = {"Team"};
    type.properties["rank"] = config::TicketPropertyRule{"rating", 400};
    config::TeamsRule teams;
    teams.count = 2;
    teams.size = 3;
    teams.rating = "rating";
    teams.party_bonus = {{2, 20}, {3, 40}};
    teams.max_team_difference = 100;
    teams.premade_parity = true;
    type.teams = teams;
    type.max_members = 6;
    type.party_max = 3;
    type.ticket_duration_seconds = 10;
    return {{3, type}};
}

Arrival party(double at, std::int64_t rating, int players) {
    static int next = 0;
    Arrival arrival{at, 3, rating, {}};
    for (int player = 0; player < players; ++player) {
        arrival.users.push_back("p" + std::to_string(next) + "-" + std::to_string(player));
    }
    ++next;
    return arrival;
}

}  // namespace

TEST_CASE("bench/ideal: team parties that can make balanced sides match as the last arrives") {
    // Two pairs (one per side, for premade parity) and two solos; with the pairs' bonus of 20,
    // the best split is 1520 x2 + 1520 against 1530 x2 + 1480, 20/3 apart.
    const std::vector<Arrival> arrivals{party(0.0, 1500, 2), party(0.5, 1480, 1),
                                        party(1.0, 1510, 2), party(2.0, 1520, 1)};
    const auto records = ideal_outcomes(arrivals, three_versus_three());
    REQUIRE(records.size() == 4);
    for (const TicketRecord& record : records) {
        CHECK(record.outcome == Outcome::matched);
        CHECK(record.room == records.front().room);
        REQUIRE(record.side_difference.has_value());
        CHECK(*record.side_difference == doctest::Approx(20.0 / 3));
        CHECK(record.spread == 40);
        CHECK(record.violations.empty());
    }
    CHECK(records[0].ttm_ms == doctest::Approx(2000.0));
    CHECK(records[3].ttm_ms == doctest::Approx(0.0));
    const nlohmann::json summary = summarize(records, 2.0);
    CHECK(summary["teams"]["matches"] == 1);
    CHECK(summary["teams"]["violations"] == 0);
    CHECK(summary["teams"]["side_difference"]["p99"].get<double>() == doctest::Approx(6.7));
}

TEST_CASE("bench/ideal: team parties that cannot make sides within the rules time out") {
    // A party of three has no other party of three to face (premade parity), and six solos whose
    // best split is 130 apart break the maximum team difference of 100.
    const std::vector<Arrival> uneven{party(0.0, 1500, 3), party(0.1, 1500, 1), party(0.2, 1500, 1),
                                      party(0.3, 1500, 1)};
    const std::vector<Arrival> apart{party(0.0, 1100, 1), party(0.1, 1100, 1), party(0.2, 1100, 1),
                                     party(0.3, 1490, 1), party(0.4, 1490, 1), party(0.5, 1490, 1)};
    for (const auto* arrivals : {&uneven, &apart}) {
        const auto records = ideal_outcomes(*arrivals, three_versus_three());
        for (const TicketRecord& record : records) {
            CHECK(record.outcome == Outcome::timed_out);
            CHECK_FALSE(record.side_difference.has_value());
        }
        CHECK_FALSE(summarize(records, 1.0).contains("teams"));
    }
}

TEST_CASE("bench/ideal: team matching is deterministic and every room keeps the rules") {
    // A generated trace like the bench's team run, shortened: the same rooms on every replay,
    // each of six players with sides within the maximum difference.
    TraceShape shape;
    shape.rate = 300;
    shape.duration = 5;
    shape.types = {{3, 1.0}};
    shape.party_sizes[3] = {{1, 0.7}, {2, 0.2}, {3, 0.1}};
    shape.seed = 5;
    const auto arrivals = generate_trace(shape);
    const auto first = ideal_outcomes(arrivals, three_versus_three());
    const auto again = ideal_outcomes(arrivals, three_versus_three());
    std::map<std::string, int> players;
    std::size_t matched = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
        CHECK(first[i].room == again[i].room);
        if (first[i].outcome == Outcome::matched) {
            ++matched;
            players[first[i].room] += first[i].party_size;
            REQUIRE(first[i].side_difference.has_value());
            CHECK(*first[i].side_difference <= 100.0);
        }
    }
    CHECK(matched > first.size() * 9 / 10);
    for (const auto& [room, count] : players) {
        CHECK_MESSAGE(count == 6, room);
    }
}
