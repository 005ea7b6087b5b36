#pragma once
// The limits of a stock ticket type in force once its ticket has waited a while: the type's own,
// changed by every `relax` step begun (config::RelaxStep). The searcher widens its own window
// (its search steps) and a waiting room relaxes its own admission, each by its own wait.

#include <optional>

#include "config/config.hpp"
#include "mesh/base/time.hpp"

namespace matchmesh::node {

struct RelaxedLimits {
    int step = -1;  // the last step begun; -1: none
    std::optional<std::int64_t> max_difference;
    std::optional<std::int64_t> max_team_difference;
    std::optional<int> min_members;
};

[[nodiscard]] inline RelaxedLimits limits_in_force(const config::TicketTypeConfig& type,
                                                   Duration waited) {
    RelaxedLimits limits;
    if (type.allow_match) {
        limits.max_difference = type.allow_match->max_difference;
    }
    if (type.teams) {
        limits.max_team_difference = type.teams->max_team_difference;
    }
    if (type.complete_when) {
        limits.min_members = type.complete_when->min_members;
    }
    for (std::size_t i = 0; i < type.relax.size(); ++i) {
        const config::RelaxStep& step = type.relax[i];
        if (waited < std::chrono::seconds(step.after_seconds)) {
            break;
        }
        limits.step = static_cast<int>(i);
        limits.max_difference = step.max_difference ? step.max_difference : limits.max_difference;
        limits.max_team_difference =
            step.max_team_difference ? step.max_team_difference : limits.max_team_difference;
        limits.min_members = step.min_members ? step.min_members : limits.min_members;
    }
    return limits;
}

}  // namespace matchmesh::node
