#include "bench/team_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ticket/teams.hpp"

namespace matchmesh::bench {
namespace {

// Reported figures are doubles that went through the wire as they are: only a sum taken in
// another order may differ, by far less than this.
constexpr double reported_tolerance = 1e-6;

struct RosterParty {
    ticket::TeamParty ratings;
    std::set<int> sides;
};

// The roster's parties in order of their first player, each player at its rating.
std::vector<RosterParty> parties_in(const node::MatchResult& result, const std::string& rating) {
    std::vector<RosterParty> parties;
    std::map<std::string, std::size_t> by_ticket;
    for (const node::MatchedPlayer& player : result.members) {
        const auto [at, opened] = by_ticket.try_emplace(player.party.str(), parties.size());
        if (opened) {
            parties.emplace_back();
        }
        RosterParty& party = parties[at->second];
        const auto own = player.values.find(rating);
        const std::int64_t leader = party.ratings.empty() ? 0 : party.ratings.front();
        party.ratings.push_back(own != player.values.end() ? own->second : leader);
        party.sides.insert(player.side);
    }
    return parties;
}

std::int64_t spread_of(const std::vector<RosterParty>& parties) {
    std::int64_t lowest = INT64_MAX;
    std::int64_t highest = INT64_MIN;
    for (const RosterParty& party : parties) {
        for (const std::int64_t rating : party.ratings) {
            lowest = std::min(lowest, rating);
            highest = std::max(highest, rating);
        }
    }
    return lowest > highest ? 0 : highest - lowest;
}

// Whether every player is on a side and every side holds exactly `size` players.
bool sides_full(const node::MatchResult& result, const config::TeamsRule& teams) {
    std::vector<int> players(static_cast<std::size_t>(teams.count), 0);
    for (const node::MatchedPlayer& player : result.members) {
        if (player.side < 0 || player.side >= teams.count) {
            return false;
        }
        ++players[static_cast<std::size_t>(player.side)];
    }
    return std::all_of(players.begin(), players.end(), [&](int n) { return n == teams.size; }) &&
           result.sides.size() == static_cast<std::size_t>(teams.count);
}

// Each side's rating (the mean of its players' effective ratings); the difference between sides.
double side_difference_of(const std::vector<RosterParty>& parties, const config::TeamsRule& teams) {
    const ticket::TeamRules rules = node::team_rules(teams);
    std::vector<double> sums(static_cast<std::size_t>(teams.count), 0.0);
    for (const RosterParty& party : parties) {
        const auto side = static_cast<std::size_t>(*party.sides.begin());
        sums[side] += ticket::effective_rating(party.ratings, rules) *
                      static_cast<double>(party.ratings.size());
    }
    const auto [lowest, highest] = std::minmax_element(sums.begin(), sums.end());
    return (*highest - *lowest) / static_cast<double>(teams.size);
}

bool premades_even(const std::vector<RosterParty>& parties, const config::TeamsRule& teams) {
    std::vector<std::map<std::size_t, int>> premades(static_cast<std::size_t>(teams.count));
    for (const RosterParty& party : parties) {
        if (party.ratings.size() >= 2) {
            ++premades[static_cast<std::size_t>(*party.sides.begin())][party.ratings.size()];
        }
    }
    return std::all_of(premades.begin(), premades.end(),
                       [&](const auto& side) { return side == premades.front(); });
}

}  // namespace

TeamMatchCheck check_team_match(const node::MatchResult& result, const config::TeamsRule& teams) {
    TeamMatchCheck check;
    const std::vector<RosterParty> parties = parties_in(result, teams.rating);
    check.spread = spread_of(parties);
    const auto broke = [&](const char* limit) { check.violations.emplace_back(limit); };
    if (result.members.size() != static_cast<std::size_t>(teams.count * teams.size)) {
        broke("players");
    }
    if (teams.max_spread && check.spread > *teams.max_spread) {
        broke("spread");
    }
    const bool sides_ok = sides_full(result, teams);
    if (!sides_ok) {
        broke("side_size");
    }
    const bool parties_whole = std::all_of(
        parties.begin(), parties.end(), [](const RosterParty& p) { return p.sides.size() == 1; });
    if (!parties_whole) {
        broke("party_split");
    }
    if (!sides_ok || !parties_whole) {
        return check;  // no side ratings to speak of
    }
    check.side_difference = side_difference_of(parties, teams);
    if (teams.max_team_difference &&
        check.side_difference >
            static_cast<double>(*teams.max_team_difference) + reported_tolerance) {
        broke("team_difference");
    }
    if (teams.premade_parity && !premades_even(parties, teams)) {
        broke("premade_parity");
    }
    if (result.spread != check.spread ||
        std::abs(result.side_difference - check.side_difference) > reported_tolerance) {
        broke("reported_quality");
    }
    return check;
}

}  // namespace matchmesh::bench
