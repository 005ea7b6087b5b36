#pragma once
// The matching rules of a configured ticket type, as the benchmark's own matchers (the ideal
// matcher and the Redis baseline) apply them, so that they decide as the cluster does:
// - two parties may play together when their ratings differ by at most `window` (allowMatch's
//   maxDifference, else the search spread of the rating);
// - a group is formed around its longest-waiting party (the anchor): every member within `window`
//   of the anchor's rating, parties whole, at most `max_members` players;
// - a group completes when full, or — with completeWhen — once it holds `min_members` players and
//   its anchor has waited `complete_after_s`;
// - a party not in a completed group by `duration_s` after its arrival times out;
// - a team type's group (count x size players) completes only with a split of its parties into
//   sides that keeps the type's team rules (ticket/teams.hpp), as the cluster's rooms admit.

#include <cstdint>
#include <optional>

#include "config/config.hpp"

namespace matchmesh::bench {

struct MatchRules {
    int max_members = 2;
    std::int64_t window = 0;
    std::optional<int> min_members;  // with completeWhen
    double complete_after_s = 0;
    double duration_s = 20;
};

[[nodiscard]] inline MatchRules rules_for(const config::TicketTypeConfig& type) {
    MatchRules rules;
    rules.max_members = type.max_members;
    if (type.allow_match) {
        rules.window = type.allow_match->max_difference;
    } else if (!type.properties.empty()) {
        rules.window = type.properties.begin()->second.search_spread;
    }
    if (type.complete_when) {
        rules.min_members = type.complete_when->min_members;
        rules.complete_after_s = type.complete_when->after_seconds;
    }
    rules.duration_s = type.ticket_duration_seconds;
    return rules;
}

}  // namespace matchmesh::bench
