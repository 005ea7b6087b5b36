#pragma once
// matchmesh-bench-sim scale: what a match costs as the cluster grows. Clusters of each size run
// the node's own core (bench/simulated_cluster.hpp) and replay the same 1v1 trace, at the same
// total arrival rate, with users spread evenly over the nodes, once the cluster has formed and
// spread the news of its joins (settle_virtual_seconds: how long that took). Per size:
//   - frames_per_match: frames between nodes during the run, less the membership traffic an idle
//     run of the same length carries, per room completed;
//   - frames_per_match_by_method: the same frames by the matching and ticket method that sent
//     them (add, remove, search, join, push, session...; a request and its reply both count), so
//     that what grows with the cluster shows;
//   - membership_frames_per_node_s: that idle traffic, per node and second;
//   - cpu_us_per_match: the whole simulated cluster's CPU during the run, per match (membership
//     included: it is capacity the matches do not get);
//   - capacity: the matches a second the cluster would sustain with one CPU per node,
//     nodes / CPU-seconds per match;
//   - match_cpu_us: a match's own CPU, the run's less what the same cluster spends idle over as
//     long (at a fixed total rate, a big cluster's upkeep is charged to few matches per node);
//   - match_capacity: nodes x (1 - membership_cpu_share_per_node) / match CPU-seconds, each
//     node's CPU less its upkeep given to matches.
// Figures only; nothing here asserts one.

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "mesh/base/time.hpp"

namespace matchmesh::bench {

struct ScaleOptions {
    std::vector<std::size_t> sizes{3, 6, 12, 24, 48, 96, 192};
    double rate = 500;    // arrivals a second, in total
    double seconds = 10;  // of arrivals
    Duration idle{5000};  // the idle run that measures membership traffic
    std::uint64_t seed = 1;
};

[[nodiscard]] nlohmann::json scale_mode(const ScaleOptions& options);

}  // namespace matchmesh::bench
