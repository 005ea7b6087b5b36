#include "ticket/teams.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {
namespace {

constexpr int swap_passes_max = 64;
constexpr int packing_steps_max = 100000;

int players_of(const std::vector<TeamParty>& parties) {
    int players = 0;
    for (const TeamParty& party : parties) {
        players += static_cast<int>(party.size());
    }
    return players;
}

bool spread_allowed(const std::vector<TeamParty>& parties, const TeamRules& rules,
                    std::int64_t& spread) {
    std::int64_t lowest = INT64_MAX;
    std::int64_t highest = INT64_MIN;
    for (const TeamParty& party : parties) {
        for (const std::int64_t rating : party) {
            lowest = std::min(lowest, rating);
            highest = std::max(highest, rating);
        }
    }
    spread = lowest > highest ? 0 : highest - lowest;
    return !rules.max_spread || spread <= *rules.max_spread;
}

// Parties of 2 or more players, counted by size.
std::map<int, int> premades_of(const std::vector<TeamParty>& parties) {
    std::map<int, int> premades;
    for (const TeamParty& party : parties) {
        if (party.size() >= 2) {
            ++premades[static_cast<int>(party.size())];
        }
    }
    return premades;
}

// The search state of one split: what each side holds so far.
struct Sides {
    std::vector<int> players;
    std::vector<double> rating_sums;       // effective rating times players, summed
    std::vector<std::map<int, int>> premades;  // per side, parties by size

    explicit Sides(int count)
        : players(static_cast<std::size_t>(count), 0),
          rating_sums(static_cast<std::size_t>(count), 0.0),
          premades(static_cast<std::size_t>(count)) {}

    void add(int side, int size, double effective, int sign) {
        const auto at = static_cast<std::size_t>(side);
        players[at] += sign * size;
        rating_sums[at] += sign * effective * size;
        if (size >= 2) {
            premades[at][size] += sign;
        }
    }
};

struct Problem {
    const std::vector<TeamParty>& parties;
    const TeamRules& rules;
    std::vector<double> effective;
    std::map<int, int> quota;  // premade parties of each size per side, with parity

    [[nodiscard]] int size_of(std::size_t party) const {
        return static_cast<int>(parties[party].size());
    }
    [[nodiscard]] bool fits(const Sides& sides, int side, std::size_t party) const {
        const int size = size_of(party);
        const auto at = static_cast<std::size_t>(side);
        if (sides.players[at] + size > rules.size) {
            return false;
        }
        if (rules.premade_parity && size >= 2) {
            auto held = sides.premades[at].find(size);
            return (held == sides.premades[at].end() ? 0 : held->second) < quota.at(size);
        }
        return true;
    }
};

TeamSplit describe(const Sides& sides, std::vector<int> side_of, std::int64_t spread) {
    TeamSplit split;
    split.side_of = std::move(side_of);
    split.spread = spread;
    for (std::size_t side = 0; side < sides.players.size(); ++side) {
        split.side_ratings.push_back(sides.players[side] == 0
                                         ? 0.0
                                         : sides.rating_sums[side] / sides.players[side]);
    }
    const auto [lowest, highest] =
        std::minmax_element(split.side_ratings.begin(), split.side_ratings.end());
    split.difference = *highest - *lowest;
    return split;
}

double difference_of(const Sides& sides) {
    double lowest = 0;
    double highest = 0;
    for (std::size_t side = 0; side < sides.players.size(); ++side) {
        const double rating =
            sides.players[side] == 0 ? 0.0 : sides.rating_sums[side] / sides.players[side];
        lowest = side == 0 ? rating : std::min(lowest, rating);
        highest = side == 0 ? rating : std::max(highest, rating);
    }
    return highest - lowest;
}

// Every split, parties in the given order; sides are interchangeable, so a party opens at most
// one new side.
void search_exact(const Problem& problem, std::size_t next, int sides_used, Sides& sides,
                  std::vector<int>& side_of, std::optional<std::vector<int>>& best,
                  double& best_difference) {
    if (next == problem.parties.size()) {
        const double difference = difference_of(sides);
        if (!best || difference < best_difference) {
            best = side_of;
            best_difference = difference;
        }
        return;
    }
    const int open = std::min(sides_used + 1, problem.rules.count);
    for (int side = 0; side < open; ++side) {
        if (!problem.fits(sides, side, next)) {
            continue;
        }
        sides.add(side, problem.size_of(next), problem.effective[next], 1);
        side_of[next] = side;
        search_exact(problem, next + 1, std::max(sides_used, side + 1), sides, side_of, best,
                     best_difference);
        sides.add(side, problem.size_of(next), problem.effective[next], -1);
    }
}

// Larger parties first, each on the side with the lowest rating sum that has room for it, then
// swaps of equal-sized parties between sides while a swap narrows the difference.
std::optional<std::vector<int>> search_by_swaps(const Problem& problem, Sides& sides) {
    std::vector<std::size_t> order(problem.parties.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return problem.size_of(a) != problem.size_of(b) ? problem.size_of(a) > problem.size_of(b)
                                                        : problem.effective[a] > problem.effective[b];
    });
    std::vector<int> side_of(problem.parties.size(), -1);
    for (const std::size_t party : order) {
        int chosen = -1;
        for (int side = 0; side < problem.rules.count; ++side) {
            if (problem.fits(sides, side, party) &&
                (chosen < 0 || sides.rating_sums[static_cast<std::size_t>(side)] <
                                   sides.rating_sums[static_cast<std::size_t>(chosen)])) {
                chosen = side;
            }
        }
        if (chosen < 0) {
            return std::nullopt;
        }
        side_of[party] = chosen;
        sides.add(chosen, problem.size_of(party), problem.effective[party], 1);
    }
    for (int pass = 0; pass < swap_passes_max; ++pass) {
        bool improved = false;
        for (std::size_t a = 0; a < side_of.size(); ++a) {
            for (std::size_t b = a + 1; b < side_of.size(); ++b) {
                if (side_of[a] == side_of[b] || problem.size_of(a) != problem.size_of(b)) {
                    continue;
                }
                const double before = difference_of(sides);
                const int size = problem.size_of(a);
                sides.add(side_of[a], size, problem.effective[a], -1);
                sides.add(side_of[b], size, problem.effective[b], -1);
                sides.add(side_of[a], size, problem.effective[b], 1);
                sides.add(side_of[b], size, problem.effective[a], 1);
                if (difference_of(sides) < before) {
                    std::swap(side_of[a], side_of[b]);
                    improved = true;
                } else {
                    sides.add(side_of[a], size, problem.effective[b], -1);
                    sides.add(side_of[b], size, problem.effective[a], -1);
                    sides.add(side_of[a], size, problem.effective[a], 1);
                    sides.add(side_of[b], size, problem.effective[b], 1);
                }
            }
        }
        if (!improved) {
            break;
        }
    }
    return side_of;
}

// Whether parties of these sizes (largest first) fit on `count` sides of `size` seats.
bool packs(const std::vector<int>& sizes, std::size_t next, std::vector<int>& free_seats,
           int& steps) {
    if (next == sizes.size()) {
        return true;
    }
    if (++steps > packing_steps_max) {
        return false;  // a pathological room is refused rather than searched for long
    }
    for (std::size_t side = 0; side < free_seats.size(); ++side) {
        const bool tried = std::find(free_seats.begin(), free_seats.begin() + side,
                                     free_seats[side]) != free_seats.begin() + side;
        if (tried || free_seats[side] < sizes[next]) {
            continue;  // a side with as many free seats as one tried before is the same choice
        }
        free_seats[side] -= sizes[next];
        if (packs(sizes, next + 1, free_seats, steps)) {
            return true;
        }
        free_seats[side] += sizes[next];
    }
    return false;
}

// Whether the seats left can balance the sides: each player still to come is rated within
// [lowest, highest], independently, and plays at that plus the bonus of a party that fits in the
// seats left on its side; so each side's rating can be anything in an interval, and the sides can
// come within the maximum difference unless the highest lower end is further than that above the
// lowest upper end. Sides are tried for every placement of the known parties (by size only:
// parity is a further constraint, so a placement refused here would be refused with it too).
struct Reachable {
    const std::vector<TeamParty>& parties;
    const TeamRules& rules;
    std::vector<double> effective;
    double lowest = 0;   // the lowest rating a player still to come may have
    double highest = 0;  // and the highest
    int steps = 0;

    // The least and the most bonus a player gets in a party of at most `seats` players.
    [[nodiscard]] std::pair<double, double> bonuses(int seats) const {
        std::int64_t least = 0;  // a solo's
        std::int64_t most = 0;
        for (const auto& [size, bonus] : rules.party_bonus) {
            if (size <= seats) {
                least = std::min(least, bonus);
                most = std::max(most, bonus);
            }
        }
        return {static_cast<double>(least), static_cast<double>(most)};
    }

    [[nodiscard]] bool balanced(const Sides& sides) const {
        double highest_low = -std::numeric_limits<double>::infinity();
        double lowest_high = std::numeric_limits<double>::infinity();
        for (std::size_t side = 0; side < sides.players.size(); ++side) {
            const int seats = rules.size - sides.players[side];
            const auto [least, most] = bonuses(seats);
            highest_low = std::max(
                highest_low, (sides.rating_sums[side] + seats * (lowest + least)) / rules.size);
            lowest_high = std::min(
                lowest_high, (sides.rating_sums[side] + seats * (highest + most)) / rules.size);
        }
        return highest_low - lowest_high <= static_cast<double>(*rules.max_team_difference);
    }

    bool any_placement(std::size_t next, int sides_used, Sides& sides) {
        if (++steps > packing_steps_max) {
            return true;  // too many placements to try: admitted, as without a reach
        }
        if (next == parties.size()) {
            return balanced(sides);
        }
        const int size = static_cast<int>(parties[next].size());
        const int open = std::min(sides_used + 1, rules.count);
        for (int side = 0; side < open; ++side) {
            if (sides.players[static_cast<std::size_t>(side)] + size > rules.size) {
                continue;
            }
            sides.add(side, size, effective[next], 1);
            const bool found = any_placement(next + 1, std::max(sides_used, side + 1), sides);
            sides.add(side, size, effective[next], -1);
            if (found) {
                return true;
            }
        }
        return false;
    }
};

}  // namespace

double effective_rating(const TeamParty& party, const TeamRules& rules) {
    MM_ASSERT(!party.empty());
    double sum = 0;
    for (const std::int64_t rating : party) {
        sum += static_cast<double>(rating);
    }
    const auto bonus = rules.party_bonus.find(static_cast<int>(party.size()));
    return sum / static_cast<double>(party.size()) +
           (bonus == rules.party_bonus.end() ? 0.0 : static_cast<double>(bonus->second));
}

namespace {

// Players still to come are rated within the reach of the room's first player, and within the
// spread limit of those already in.
bool balance_reachable(const std::vector<TeamParty>& parties, const TeamRules& rules) {
    MM_ASSERT(rules.newcomer_reach && rules.max_team_difference && !parties.front().empty());
    std::int64_t lowest = parties.front().front() - *rules.newcomer_reach;
    std::int64_t highest = parties.front().front() + *rules.newcomer_reach;
    if (rules.max_spread) {
        std::int64_t room_lowest = INT64_MAX;
        std::int64_t room_highest = INT64_MIN;
        for (const TeamParty& party : parties) {
            room_lowest = std::min(room_lowest, *std::min_element(party.begin(), party.end()));
            room_highest = std::max(room_highest, *std::max_element(party.begin(), party.end()));
        }
        lowest = std::max(lowest, room_highest - *rules.max_spread);
        highest = std::min(highest, room_lowest + *rules.max_spread);
    }
    if (lowest > highest) {
        return false;  // nobody may still come, and seats are left
    }
    Reachable reachable{
        parties, rules, {}, static_cast<double>(lowest), static_cast<double>(highest)};
    for (const TeamParty& party : parties) {
        reachable.effective.push_back(effective_rating(party, rules));
    }
    Sides sides(rules.count);
    return reachable.any_placement(0, 0, sides);
}

}  // namespace

std::optional<TeamSplit> split_teams(const std::vector<TeamParty>& parties,
                                     const TeamRules& rules) {
    MM_ASSERT(rules.count >= 1 && rules.size >= 1);
    std::int64_t spread = 0;
    if (players_of(parties) != rules.players() || !spread_allowed(parties, rules, spread)) {
        return std::nullopt;
    }
    Problem problem{parties, rules, {}, {}};
    for (const TeamParty& party : parties) {
        if (party.empty() || static_cast<int>(party.size()) > rules.size) {
            return std::nullopt;
        }
        problem.effective.push_back(effective_rating(party, rules));
    }
    if (rules.premade_parity) {
        for (const auto& [size, count] : premades_of(parties)) {
            if (count % rules.count != 0) {
                return std::nullopt;
            }
            problem.quota[size] = count / rules.count;
        }
    }
    Sides sides(rules.count);
    std::optional<std::vector<int>> best;
    if (rules.players() <= exact_split_players_max) {
        std::vector<int> side_of(parties.size(), -1);
        double best_difference = 0;
        search_exact(problem, 0, 0, sides, side_of, best, best_difference);
        if (best) {
            for (std::size_t party = 0; party < parties.size(); ++party) {
                sides.add((*best)[party], problem.size_of(party), problem.effective[party], 1);
            }
        }
    } else {
        best = search_by_swaps(problem, sides);
    }
    if (!best) {
        return std::nullopt;
    }
    TeamSplit split = describe(sides, std::move(*best), spread);
    if (rules.max_team_difference &&
        split.difference > static_cast<double>(*rules.max_team_difference)) {
        return std::nullopt;
    }
    return split;
}

bool can_still_form(const std::vector<TeamParty>& parties, const TeamRules& rules) {
    const int players = players_of(parties);
    std::int64_t spread = 0;
    if (players > rules.players() || !spread_allowed(parties, rules, spread)) {
        return false;
    }
    if (players == rules.players()) {
        return split_teams(parties, rules).has_value();
    }
    std::vector<int> sizes;
    for (const TeamParty& party : parties) {
        if (party.empty() || static_cast<int>(party.size()) > rules.size) {
            return false;
        }
        sizes.push_back(static_cast<int>(party.size()));
    }
    if (rules.premade_parity) {
        // The parties still needed so that each size's count splits evenly must fit too.
        int needed = 0;
        for (const auto& [size, count] : premades_of(parties)) {
            const int missing = (rules.count - count % rules.count) % rules.count;
            needed += missing * size;
            sizes.insert(sizes.end(), static_cast<std::size_t>(missing), size);
        }
        if (players + needed > rules.players()) {
            return false;
        }
    }
    std::sort(sizes.rbegin(), sizes.rend());
    std::vector<int> free_seats(static_cast<std::size_t>(rules.count), rules.size);
    int steps = 0;
    if (!packs(sizes, 0, free_seats, steps)) {
        return false;
    }
    return !rules.max_team_difference || !rules.newcomer_reach || parties.empty() ||
           rules.players() > exact_split_players_max || balance_reachable(parties, rules);
}

namespace {

std::optional<std::int64_t> rating_of(const User& user, const std::string& name) {
    auto found = user.data.find(name);
    if (found == user.data.end() || !std::holds_alternative<std::int64_t>(found->second)) {
        return std::nullopt;
    }
    return std::get<std::int64_t>(found->second);
}

}  // namespace

std::vector<TeamParty> parties_of(const std::vector<Member>& members,
                                  const std::vector<SharedUser>& joining, const TeamRules& rules,
                                  std::vector<std::size_t>* first_member) {
    std::vector<TeamParty> parties;
    std::vector<std::size_t> firsts;
    std::optional<std::int64_t> leader;  // the current party's first player's rating
    const TicketId* party = nullptr;
    const auto add = [&](const User& user, bool opens, std::size_t index) {
        const std::optional<std::int64_t> own = rating_of(user, rules.rating);
        if (opens) {
            parties.emplace_back();
            firsts.push_back(index);
            leader = own;
        }
        parties.back().push_back(own.value_or(leader.value_or(0)));
    };
    for (std::size_t index = 0; index < members.size(); ++index) {
        const Member& member = members[index];
        add(*member.user, party == nullptr || *party != member.ticket_id, index);
        party = &member.ticket_id;
    }
    for (std::size_t index = 0; index < joining.size(); ++index) {
        add(*joining[index], index == 0, members.size() + index);
    }
    if (first_member != nullptr) {
        *first_member = std::move(firsts);
    }
    return parties;
}

}  // namespace matchmesh::ticket
