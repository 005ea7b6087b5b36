#include "node/health.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"

namespace matchmesh::node {

void Health::set_other_members(std::size_t count) {
    other_members_.store(count, std::memory_order_relaxed);
    if (count > 0) {
        joined_before_.store(true, std::memory_order_relaxed);
    }
}

HealthVerdict Health::liveness(Time now) const {
    MM_ASSERT(options_.liveness_bound > Duration(0));
    const std::int64_t last = last_beat_ms_.load(std::memory_order_relaxed);
    if (last == never) {
        return {false, "the event loop has not started"};
    }
    // A beat stamped after the caller read its clock is no older than now.
    const std::int64_t ago_ms = std::max<std::int64_t>(0, ms_since_epoch(now) - last);
    if (Duration(ago_ms) > options_.liveness_bound) {
        return {false, fmt::format("the event loop last answered {} ms ago (bound {} ms)", ago_ms,
                                   options_.liveness_bound.count())};
    }
    return {true, fmt::format("the event loop answered {} ms ago", ago_ms)};
}

HealthVerdict Health::readiness(Time now) const {
    if (draining_.load(std::memory_order_relaxed)) {
        return {false, "draining: refusing new tickets before leaving the cluster"};
    }
    if (HealthVerdict live = liveness(now); !live.ok) {
        return {false, "not live: " + live.text};
    }
    if (!listening_.load(std::memory_order_relaxed)) {
        return {false, "not listening on the client port"};
    }
    const std::size_t others = other_members_.load(std::memory_order_relaxed);
    if (others > 0) {
        return {true, fmt::format("ready: {} other live member(s)", others)};
    }
    if (options_.alone_by_config) {
        return {true, "ready: alone by config (no seeds but itself)"};
    }
    // Once joined, a node whose peers all died or are cut off still serves its players: taking
    // the last survivors out of service would turn a degraded cluster into none.
    if (joined_before_.load(std::memory_order_relaxed)) {
        return {true, "ready: joined, no other member live now"};
    }
    return {false, "not joined: no other member seen yet"};
}

}  // namespace matchmesh::node
