#pragma once
// Metrics: the node's Prometheus metrics, in a prometheus-cpp registry that the admin port serves
// (GET /metrics; see admin_server.hpp).
//
// Owned by the node. Values are written from the node's loop thread (a snapshot each second, and
// time-to-match and round-trip observations as they happen); the admin server's threads read
// them, which prometheus-cpp's metric types allow.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace prometheus {  // kept out of the node's public headers
class Collectable;
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace matchmesh::node {

struct MatchResult;

// Totals since the node started; the metrics' counters follow them.
struct MetricsSnapshot {
    std::uint64_t tickets_started = 0;
    std::uint64_t tickets_completed = 0;
    std::uint64_t tickets_timed_out = 0;
    std::uint64_t tickets_canceled = 0;
    std::uint64_t searches = 0;
    std::uint64_t joins_accepted = 0;
    std::uint64_t joins_refused = 0;
    std::size_t tickets_searching = 0;
    std::size_t tickets_waiting = 0;
    std::size_t store_items = 0;
    std::size_t members_alive = 0;
    std::size_t sessions = 0;
    std::uint64_t mesh_frames_in = 0;
    std::uint64_t mesh_frames_out = 0;
    std::map<std::string, std::uint64_t> frames_rejected;  // by reason
    std::uint64_t tickets_refused_overloaded = 0;          // startTicket refused: past capacity
    std::int64_t loop_lag_ms = 0;                          // the lag admission judges by
    double round_trip_ms = 0;                              // and the round trip
};

// GET /metrics from a node's admin address: the value of the sample named `sample` (the metric
// name with its labels, e.g. matchmesh_resident_bytes{kind="peak"}), or -1 when there is none.
[[nodiscard]] double read_metric(const std::string& admin, const std::string& sample);

class Metrics {
public:
    Metrics();
    ~Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    // What the admin port serves; it outlives the Metrics if the server holds it longer.
    [[nodiscard]] std::shared_ptr<const prometheus::Collectable> collectable() const;
    void update(const MetricsSnapshot& snapshot);
    void observe_time_to_match(double seconds);
    void observe_mesh_round_trip(double seconds);
    // One match completed by a room held here: its spread, the difference between its sides
    // (team types) and each member's wait, by ticket type, and whether a relax step was in force.
    void observe_match(const MatchResult& match);

private:
    void register_tickets(prometheus::Registry& registry);
    void register_node(prometheus::Registry& registry);
    void register_mesh(prometheus::Registry& registry);
    void advance(prometheus::Counter& counter, std::uint64_t& seen, std::uint64_t now);

    std::shared_ptr<prometheus::Registry> registry_;
    prometheus::Counter* started_ = nullptr;
    prometheus::Counter* completed_ = nullptr;
    prometheus::Counter* timed_out_ = nullptr;
    prometheus::Counter* canceled_ = nullptr;
    prometheus::Counter* searches_ = nullptr;
    prometheus::Counter* joins_accepted_ = nullptr;
    prometheus::Counter* joins_refused_ = nullptr;
    prometheus::Counter* mesh_frames_in_ = nullptr;
    prometheus::Counter* mesh_frames_out_ = nullptr;
    prometheus::Counter* refused_overloaded_ = nullptr;
    prometheus::Gauge* loop_lag_ = nullptr;
    prometheus::Gauge* searching_ = nullptr;
    prometheus::Gauge* waiting_ = nullptr;
    prometheus::Gauge* items_ = nullptr;
    prometheus::Gauge* members_ = nullptr;
    prometheus::Gauge* sessions_ = nullptr;
    prometheus::Gauge* resident_ = nullptr;
    prometheus::Gauge* peak_resident_ = nullptr;
    prometheus::Gauge* cpu_ = nullptr;
    prometheus::Histogram* time_to_match_ = nullptr;
    prometheus::Histogram* round_trip_ = nullptr;
    // Each ticket type's match metrics, found once (a family's lookup hashes the labels).
    struct MatchMetrics {
        prometheus::Histogram* spread = nullptr;
        prometheus::Histogram* side_difference = nullptr;
        prometheus::Histogram* wait = nullptr;
        prometheus::Counter* relaxed = nullptr;
    };
    std::map<int, MatchMetrics> match_metrics_;
    prometheus::Family<prometheus::Histogram>* match_spread_ = nullptr;
    prometheus::Family<prometheus::Histogram>* side_difference_ = nullptr;
    prometheus::Family<prometheus::Histogram>* match_wait_ = nullptr;
    prometheus::Family<prometheus::Counter>* matches_relaxed_ = nullptr;
    prometheus::Family<prometheus::Counter>* rejected_ = nullptr;
    MetricsSnapshot seen_;
};

// The process's resident set now and at its peak, in bytes (from /proc/self/status).
struct ResidentBytes {
    std::uint64_t current = 0;
    std::uint64_t peak = 0;
};
[[nodiscard]] ResidentBytes resident_bytes();
// The CPU time the process has used, user and system, in seconds.
[[nodiscard]] double cpu_seconds();

}  // namespace matchmesh::node
