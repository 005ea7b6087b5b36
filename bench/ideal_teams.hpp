#pragma once
// The ideal matcher's part for team types (ticket types with `teams`): it forms a room the
// instant the waiting parties allow one that keeps the type's team rules (ticket/teams.hpp, the
// same functions the cluster's rooms admit parties by), so that the cluster's team matches are
// measured against the best any matcher could do on the same arrivals. Owned by ideal.cpp's
// ideal_outcomes for one run, single-threaded, in virtual time.

#include <cstddef>
#include <memory>
#include <vector>

#include "bench/outcomes.hpp"
#include "bench/trace.hpp"
#include "config/config.hpp"

namespace matchmesh::bench {

// One ticket type's matcher inside the ideal: virtual time moves forward, parties arrive.
class TypeIdeal {
public:
    virtual ~TypeIdeal() = default;
    // Handles the timers due up to `now`.
    virtual void advance(double now) = 0;
    virtual void arrive(std::size_t index) = 0;
};

// Around the longest-waiting party that the newcomer may play with, the newcomer and waiting
// parties nearest in rating are tried (at most a bounded number of combinations) until they fill
// the sides with a split that keeps the rules; the room completes at once. Each matched record
// gets the split's side difference and spread. `type.teams` must be set.
[[nodiscard]] std::unique_ptr<TypeIdeal> team_ideal(const config::TicketTypeConfig& type,
                                                    const std::vector<Arrival>& arrivals,
                                                    std::vector<TicketRecord>& records,
                                                    std::size_t& rooms);

}  // namespace matchmesh::bench
