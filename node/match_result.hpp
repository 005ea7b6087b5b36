#pragma once
// The match the stock node tells every member of a completed room (the 220 push's payload, a
// MatchResult of client.capnp): who plays, with which values, on which side, and how close the
// match is. Built on the room owner's node from the room's roster; decoded by clients and tests.

#include <expected>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "node/relaxed_limits.hpp"
#include "ticket/callbacks.hpp"
#include "ticket/teams.hpp"

namespace matchmesh::node {

struct MatchedPlayer {
    UserId user;
    TicketId party;
    int side = -1;  // -1 without teams
    matching::Properties values;
    std::int64_t wait_ms = 0;  // from its ticket's start to the match
};

struct MatchSide {
    double rating = 0;
    int players = 0;
};

struct MatchResult {
    std::string room_id;
    ticket::TicketType ticket_type = 0;
    std::vector<MatchedPlayer> members;
    std::vector<MatchSide> sides;
    std::int64_t spread = 0;
    double side_difference = 0;
    int relax_step = -1;  // the relax step in force for the room's ticket; -1: none
};

// The team rules of a configured team type.
[[nodiscard]] ticket::TeamRules team_rules(const config::TeamsRule& teams);

// The result for a room's members under the type's rules and the limits in force: for a team
// type, the split with the least difference between sides (rooms are admitted only while one
// exists).
[[nodiscard]] MatchResult match_result(const std::string& room_id,
                                       const config::TicketTypeConfig& type,
                                       const std::vector<ticket::Member>& members,
                                       const RelaxedLimits& limits, Time now);

[[nodiscard]] ticket::Bytes encode_match_result(const MatchResult& result);
[[nodiscard]] std::expected<MatchResult, std::string> decode_match_result(
    const ticket::Bytes& payload);

}  // namespace matchmesh::node
