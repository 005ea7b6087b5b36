// Team formation: the best split of a full room, and which partial rooms can still form a match.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "ticket/teams.hpp"

using namespace matchmesh;
using namespace matchmesh::ticket;

namespace {

TeamRules sides_of(int count, int size) {
    TeamRules rules;
    rules.count = count;
    rules.size = size;
    rules.rating = "rating";
    return rules;
}

// The least difference over every split, tried the slow way: each party on each side.
double brute_force_difference(const std::vector<TeamParty>& parties, const TeamRules& rules) {
    double best = std::numeric_limits<double>::infinity();
    std::size_t splits = 1;
    for (std::size_t i = 0; i < parties.size(); ++i) {
        splits *= static_cast<std::size_t>(rules.count);
    }
    for (std::size_t code = 0; code < splits; ++code) {
        std::vector<int> players(static_cast<std::size_t>(rules.count), 0);
        std::vector<double> sums(static_cast<std::size_t>(rules.count), 0);
        std::size_t rest = code;
        for (const TeamParty& party : parties) {
            const std::size_t side = rest % static_cast<std::size_t>(rules.count);
            rest /= static_cast<std::size_t>(rules.count);
            players[side] += static_cast<int>(party.size());
            sums[side] += effective_rating(party, rules) * static_cast<double>(party.size());
        }
        if (std::any_of(players.begin(), players.end(), [&](int n) { return n != rules.size; })) {
            continue;
        }
        double lowest = sums[0] / rules.size;
        double highest = lowest;
        for (const double sum : sums) {
            lowest = std::min(lowest, sum / rules.size);
            highest = std::max(highest, sum / rules.size);
        }
        best = std::min(best, highest - lowest);
    }
    return best;
}

}  // namespace

TEST_CASE("ticket/teams: the exact split has the least difference of all splits") {
    std::mt19937 random(7);
    std::normal_distribution<double> rating(1500, 300);
    for (int round = 0; round < 200; ++round) {
        const int count = round % 3 == 0 ? 3 : 2;
        const int size = count == 3 ? 3 : 1 + round % 6;
        TeamRules rules = sides_of(count, size);
        std::vector<TeamParty> parties;
        int left = count * size;
        while (left > 0) {
            const int party = std::min(left, 1 + static_cast<int>(random() % std::min(size, 3)));
            TeamParty players;
            for (int k = 0; k < party; ++k) {
                players.push_back(static_cast<std::int64_t>(rating(random)));
            }
            parties.push_back(players);
            left -= party;
        }
        const auto split = split_teams(parties, rules);
        const double expected = brute_force_difference(parties, rules);
        if (std::isinf(expected)) {
            CHECK_FALSE(split.has_value());  // the parties cannot fill the sides evenly
            continue;
        }
        REQUIRE(split.has_value());
        CHECK(split->difference == doctest::Approx(expected));
        std::vector<int> seats(static_cast<std::size_t>(count), 0);
        for (std::size_t party = 0; party < parties.size(); ++party) {
            seats[static_cast<std::size_t>(split->side_of[party])] +=
                static_cast<int>(parties[party].size());
        }
        CHECK(std::all_of(seats.begin(), seats.end(), [&](int n) { return n == size; }));
    }
}

TEST_CASE("ticket/teams: a 1v1 is two sides of one, and a 2v2 puts the best with the worst") {
    auto split = split_teams({{1400}, {1600}}, sides_of(2, 1));
    REQUIRE(split.has_value());
    CHECK(split->side_of[0] != split->side_of[1]);
    CHECK(split->difference == doctest::Approx(200));
    CHECK(split->spread == 200);
    split = split_teams({{1000}, {1100}, {1900}, {2000}}, sides_of(2, 2));
    REQUIRE(split.has_value());
    CHECK(split->side_of[0] == split->side_of[3]);
    CHECK(split->side_of[1] == split->side_of[2]);
    CHECK(split->difference == doctest::Approx(0));
}

TEST_CASE("ticket/teams: a party stays on one side and plays at its average plus its bonus") {
    TeamRules rules = sides_of(2, 2);
    rules.party_bonus[2] = 100;
    CHECK(effective_rating({1400, 1600}, rules) == doctest::Approx(1600));
    CHECK(effective_rating({1500}, rules) == doctest::Approx(1500));
    const auto split = split_teams({{1400, 1600}, {1550}, {1650}}, rules);
    REQUIRE(split.has_value());
    CHECK(split->side_of[1] == split->side_of[2]);  // the party fills a side alone
    CHECK(split->side_ratings[static_cast<std::size_t>(split->side_of[0])] ==
          doctest::Approx(1600));
    CHECK(split->difference == doctest::Approx(0));
}

TEST_CASE("ticket/teams: limits on spread and side difference refuse a full room") {
    TeamRules rules = sides_of(2, 2);
    rules.max_spread = 500;
    CHECK_FALSE(split_teams({{1000}, {1100}, {1400}, {1600}}, rules).has_value());
    CHECK(split_teams({{1100}, {1200}, {1400}, {1600}}, rules).has_value());
    rules.max_spread.reset();
    rules.max_team_difference = 50;
    CHECK_FALSE(split_teams({{1000, 1000}, {2000, 2000}}, rules).has_value());
    CHECK(split_teams({{1000}, {1010}, {1020}, {1030}}, rules).has_value());
}

TEST_CASE("ticket/teams: premade parity puts as many parties of each size on every side") {
    TeamRules rules = sides_of(2, 3);
    rules.premade_parity = true;
    // One pair only: no side can match the other's premades.
    CHECK_FALSE(split_teams({{1500, 1500}, {1500}, {1500}, {1500}, {1500}}, rules).has_value());
    const auto split =
        split_teams({{1500, 1500}, {1600, 1600}, {1400}, {1700}}, rules);  // one pair a side
    REQUIRE(split.has_value());
    CHECK(split->side_of[0] != split->side_of[1]);
    rules.premade_parity = false;
    CHECK(split_teams({{1500, 1500}, {1500}, {1500}, {1500}, {1500}}, rules).has_value());
}

TEST_CASE("ticket/teams: a partial room is admitted while it can still form a match") {
    TeamRules rules = sides_of(2, 3);
    CHECK(can_still_form({{1500, 1500, 1500}}, rules));
    CHECK(can_still_form({{1500, 1500}, {1500, 1500}}, rules));
    CHECK_FALSE(can_still_form({{1500, 1500}, {1500, 1500}, {1500, 1500}}, rules));  // no fit
    CHECK_FALSE(can_still_form({{1, 2, 3, 4}}, rules));                              // too big
    rules.max_spread = 300;
    CHECK(can_still_form({{1500}, {1800}}, rules));
    CHECK_FALSE(can_still_form({{1500}, {1801}}, rules));
    rules.max_spread.reset();
    rules.premade_parity = true;
    // Three pairs need a fourth to split evenly: eight players on six seats.
    CHECK_FALSE(can_still_form({{1, 1}, {1, 1}, {1, 1}}, rules));
    CHECK(can_still_form({{1, 1}, {1}}, rules));  // a second pair may still come
    CHECK_FALSE(can_still_form({{1, 1}, {1}, {1}, {1}}, rules));  // no seats left for one
}

TEST_CASE("ticket/teams: a room no player within reach could balance is refused a party") {
    // A 3v3 with a pair (1683) and a solo: a second pair at 1214 must face the first (parity), and
    // the last seat would need 296-896 or 2172-2772, none within 400 of the room's first player.
    TeamRules rules = sides_of(2, 3);
    rules.party_bonus = {{2, 20}, {3, 40}};
    rules.max_team_difference = 100;
    rules.premade_parity = true;
    const std::vector<TeamParty> far{{1683, 1683}, {1534}, {1214, 1214}};
    CHECK(can_still_form(far, rules));  // any rating may come: 2200 would do
    rules.newcomer_reach = 400;
    CHECK_FALSE(can_still_form(far, rules));
    CHECK(can_still_form({{1683, 1683}, {1534}, {1500, 1500}}, rules));
    CHECK(can_still_form({{1683, 1683}, {1214}}, rules));  // three seats can still even it out
    // A full room is judged by its split alone, and without a maximum difference nobody's rating
    // matters.
    CHECK(can_still_form({{1683, 1683}, {1534}, {1214, 1214}, {2200}}, rules));
    rules.max_team_difference.reset();
    CHECK(can_still_form(far, rules));
}

TEST_CASE("ticket/teams: a room refused for its reach could not be completed within it") {
    // The reach check may only refuse rooms no later parties within reach complete: for random
    // partial 3v3 rooms it refuses, no solos or pair at ratings within reach (every 10) fill them
    // with a split that keeps the rules.
    std::mt19937 random(11);
    std::normal_distribution<double> rating(1500, 300);
    TeamRules open = sides_of(2, 3);
    open.party_bonus = {{2, 20}, {3, 40}};
    open.max_team_difference = 100;
    open.premade_parity = true;
    TeamRules reach = open;
    reach.newcomer_reach = 400;
    int refused = 0;
    for (int round = 0; round < 3000; ++round) {
        std::vector<TeamParty> parties;
        int players = 0;
        const int target = 4 + static_cast<int>(random() % 2);  // leave one or two seats
        while (players < target) {
            const int size = std::min(target - players, 1 + static_cast<int>(random() % 2));
            const auto value = static_cast<std::int64_t>(rating(random));
            parties.emplace_back(static_cast<std::size_t>(size), value);
            players += size;
        }
        if (!can_still_form(parties, open) || can_still_form(parties, reach)) {
            continue;
        }
        ++refused;
        const std::int64_t first = parties.front().front();
        for (std::int64_t x = first - 400; x <= first + 400; x += 10) {
            auto solo = parties;
            solo.push_back({x});
            CHECK_FALSE(split_teams(solo, open).has_value());
            if (players == 4) {
                auto pair = parties;
                pair.push_back({x, x});
                CHECK_FALSE(split_teams(pair, open).has_value());
                for (std::int64_t y = first - 400; y <= first + 400; y += 40) {
                    auto two = solo;
                    two.push_back({y});
                    CHECK_FALSE(split_teams(two, open).has_value());
                }
            }
        }
    }
    CHECK(refused > 50);  // the check did refuse rooms, so the test looked at some
}

TEST_CASE("ticket/teams: beyond twelve players the swap search still balances the sides") {
    TeamRules rules = sides_of(2, 8);
    std::vector<TeamParty> parties;
    for (int i = 0; i < 16; ++i) {
        parties.push_back({1000 + 100 * i});
    }
    const auto split = split_teams(parties, rules);
    REQUIRE(split.has_value());
    CHECK(split->difference <= 50.0);
    rules.premade_parity = true;
    parties = {{1000, 1000}, {2000, 2000}, {1500, 1500}, {1500, 1500}};
    for (int i = 0; i < 8; ++i) {
        parties.push_back({1200 + 80 * i});
    }
    const auto with_pairs = split_teams(parties, rules);
    REQUIRE(with_pairs.has_value());
    for (int side = 0; side < 2; ++side) {
        CHECK(std::count(with_pairs->side_of.begin(), with_pairs->side_of.begin() + 4, side) == 2);
    }
}

TEST_CASE("ticket/teams: a room's members are read as parties by the ticket that brought them") {
    const auto user = [](const char* id, std::optional<std::int64_t> rating) {
        auto made = std::make_shared<User>();
        made->id = UserId(id);
        if (rating) {
            made->data["rating"] = *rating;
        }
        return SharedUser(made);
    };
    const std::vector<Member> members = {{user("a", 1500), TicketId("t1")},
                                         {user("b", std::nullopt), TicketId("t1")},
                                         {user("c", 1700), TicketId("t2")}};
    std::vector<std::size_t> firsts;
    const auto parties =
        parties_of(members, {user("d", 1200), user("e", 1300)}, sides_of(2, 3), &firsts);
    REQUIRE(parties.size() == 3);
    CHECK(parties[0] == TeamParty{1500, 1500});  // b plays at its party owner's rating
    CHECK(parties[1] == TeamParty{1700});
    CHECK(parties[2] == TeamParty{1200, 1300});
    CHECK(firsts == std::vector<std::size_t>{0, 2, 3});
}
