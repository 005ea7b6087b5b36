#pragma once
// Arrival traces: the players a benchmark run sends, so that several systems (the cluster, the
// ideal matcher, the Redis baseline) are measured on the same arrivals, and runs repeat.
//
// File format: JSON lines, one party per line, in arrival order:
//   {"at": 0.0123, "type": 1, "rating": 1512, "users": ["bench-1a2b-0-0", "bench-1a2b-0-1"]}
// `at` is seconds since the run began; `users[0]` starts the ticket, the others are its party.

#include <cstdint>
#include <expected>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace matchmesh::bench {

struct Arrival {
    double at = 0;  // seconds since the run began
    int type = 0;
    std::int64_t rating = 0;
    std::vector<std::string> users;  // the owner first
};

struct TraceShape {
    double rate = 500;                                 // parties per second (Poisson)
    double duration = 30;                              // seconds of arrivals
    std::map<int, double> types{{1, 1.0}};             // ticket type -> weight
    std::map<int, std::map<int, double>> party_sizes;  // type (-1: any) -> size -> weight
    double rating_mean = 1500;
    double rating_sd = 300;
    std::uint64_t seed = 1;
    std::string user_prefix = "bench";
};

[[nodiscard]] std::vector<Arrival> generate_trace(const TraceShape& shape);
[[nodiscard]] std::expected<void, std::string> write_trace(const std::string& path,
                                                           const std::vector<Arrival>& arrivals);
// The error names the file and line.
[[nodiscard]] std::expected<std::vector<Arrival>, std::string> read_trace(const std::string& path);

}  // namespace matchmesh::bench
