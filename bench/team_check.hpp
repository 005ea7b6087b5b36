#pragma once
// Whether a team match keeps its type's team rules, judged from the roster the 220 push carries
// (node/match_result.hpp: each player's side, party and values) rather than from the quality
// figures the node reports beside it, so that a node computing those wrongly shows too. The load
// bench checks every team match it is told of with it. Pure.

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "node/match_result.hpp"

namespace matchmesh::bench {

struct TeamMatchCheck {
    double side_difference = 0;           // from the roster: highest side rating minus the lowest
    std::int64_t spread = 0;              // from the roster: highest player rating minus the lowest
    std::vector<std::string> violations;  // the limits broken, by name; none when it kept them
};

// Violations, by name:
// - "players": not count x size players;
// - "side_size": a player on no side, or a side without exactly `size` players;
// - "party_split": a party's players on different sides;
// - "spread": the spread above maxSpread;
// - "team_difference": the sides further apart than maxTeamDifference;
// - "premade_parity": with premadeParity, sides holding different numbers of parties of a size;
// - "reported_quality": the reported spread or side difference is not the roster's.
// A player's rating is its value named by the rules; a party member without one plays at its
// party's first player's, as the node plays it (ticket::parties_of).
[[nodiscard]] TeamMatchCheck check_team_match(const node::MatchResult& result,
                                              const config::TeamsRule& teams);

}  // namespace matchmesh::bench
