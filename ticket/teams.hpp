#pragma once
// Team formation for a room: which side each party plays on, and whether a room (partial or
// full) can still make a match that keeps the type's limits. Pure functions of the parties'
// ratings, so that a test, the stock binary and the bench's ideal matcher share one rule.
//
// A party's players share one effective rating: their average plus the bonus for a party of
// that size. A side's rating is the mean of its players' effective ratings; the difference of a
// split is its highest side rating minus its lowest. The spread of a match is its highest raw
// rating minus its lowest.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ticket/callbacks.hpp"

namespace matchmesh::ticket {

struct TeamRules {
    int count = 2;       // sides
    int size = 1;        // players per side
    std::string rating;  // the player value sides are balanced by
    std::map<int, std::int64_t> party_bonus;  // by party size, added to the party's average
    std::optional<std::int64_t> max_spread;
    std::optional<std::int64_t> max_team_difference;
    bool premade_parity = false;  // each side holds as many parties of each size (2 or more)
    // How far from the room's first player's rating a player still to come may be rated (the
    // reach of the searches that can find the room). With max_team_difference, a room not yet
    // full is refused when no such players could balance its sides: it would only wait out its
    // ticket. Unset: any rating may still come.
    std::optional<std::int64_t> newcomer_reach;

    [[nodiscard]] int players() const { return count * size; }
};

// One party's players' ratings (a solo player is a party of one).
using TeamParty = std::vector<std::int64_t>;

struct TeamSplit {
    std::vector<int> side_of;  // per party, in the order given
    std::vector<double> side_ratings;
    double difference = 0;
    std::int64_t spread = 0;
};

// Up to this many players the best split is found by trying every one; beyond, by swaps.
inline constexpr int exact_split_players_max = 12;

// The split of a full room with the least difference between sides that keeps the rules; none
// when the parties do not fill the sides exactly or no split keeps them.
[[nodiscard]] std::optional<TeamSplit> split_teams(const std::vector<TeamParty>& parties,
                                                   const TeamRules& rules);

// Whether these parties (a room not yet full) can still become a match: they fit on the sides,
// their spread is within the limit, premade parity can still be reached with the seats left, and
// with newcomer_reach, players rated within it could fill the seats left with sides within the
// maximum difference (up to exact_split_players_max players; beyond, not asked). A full room is
// asked the same as split_teams.
[[nodiscard]] bool can_still_form(const std::vector<TeamParty>& parties, const TeamRules& rules);

[[nodiscard]] double effective_rating(const TeamParty& party, const TeamRules& rules);

// A room's members (and a joining party after them) as parties: members that came in with one
// ticket are one party. A player's rating is its value named by the rules; a party member that
// submitted none plays at its party's first player's (the one who started the ticket), and a
// player with no rating at all at 0. `first_member` gets, per party, the index of its first
// player in members followed by the joining party.
[[nodiscard]] std::vector<TeamParty> parties_of(const std::vector<Member>& members,
                                                const std::vector<SharedUser>& joining,
                                                const TeamRules& rules,
                                                std::vector<std::size_t>* first_member = nullptr);

}  // namespace matchmesh::ticket
