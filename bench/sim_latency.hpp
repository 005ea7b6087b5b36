#pragma once
// matchmesh-bench-sim latency: time to match in virtual time, against the ideal matcher on the
// same arrivals. A seeded 1v1 trace (the duel type, ratings N(1500, 300)) at `rate` arrivals a
// second runs on a simulated cluster (bench/simulated_cluster.hpp: the node's own core, links of
// `link_ms` each way, 1 ms unless told, no CPU cost), so the figures move only with what the
// matching does: when a ticket becomes findable, when it looks again, which candidate it takes,
// and how many trips between nodes that takes (slower links stand for busy nodes, whose messages
// wait for CPU). Arrivals start on the millisecond they fall in (the simulation's clock), and the
// ideal is given the same times. Reports fill rate and ttm_ms {p50, p90, p99, max} for both, and
// the p99's distance.
// Figures only; nothing here asserts one.

#include <cstdint>

#include <nlohmann/json.hpp>

namespace matchmesh::bench {

struct LatencyOptions {
    double rate = 5000;   // arrivals a second, in total
    double seconds = 10;  // of arrivals
    std::size_t nodes = 3;
    std::int64_t link_ms = 1;  // each way, once the cluster has formed
    std::uint64_t seed = 1;
};

[[nodiscard]] nlohmann::json latency_mode(const LatencyOptions& options);

}  // namespace matchmesh::bench
