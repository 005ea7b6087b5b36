#pragma once
// The ideal matcher: the limit no real matcher can beat. It sees every waiting party at once and
// has no latency: a group forms the instant a compatible set exists (longest-waiting anchor
// first), under the same rules as the cluster's ticket types (rules.hpp; team types by the team
// rules of ticket/teams.hpp, ideal_teams.hpp). Deterministic and offline: it replays a trace in
// virtual time.

#include <map>
#include <vector>

#include "config/config.hpp"
#include "bench/outcomes.hpp"
#include "bench/trace.hpp"

namespace matchmesh::bench {

// One record per arrival (same index). Arrivals of a type missing from `types` are refused.
[[nodiscard]] std::vector<TicketRecord> ideal_outcomes(
    const std::vector<Arrival>& arrivals, const std::map<int, config::TicketTypeConfig>& types);

}  // namespace matchmesh::bench
