#pragma once
// Metrics: the node's Prometheus metrics, in a prometheus-cpp registry that the admin port serves
// (GET /metrics; see admin_server.hpp) beside the process metrics (process_metrics.hpp). README.md
// ("Metrics") lists every family.
//
// Owned by the node. Values are written from the node's loop thread (a snapshot each second, and
// time-to-match, round-trip and match observations as they happen); the admin server's threads
// read them, which prometheus-cpp's metric types allow. Each ticket type's series are found
// through an array indexed by the type, created when the type is configured or first counted:
// a family's own lookup hashes the labels, which the loop should not pay per event.

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "mesh/asio/tcp_transport.hpp"
#include "node/client_commands.hpp"
#include "node/client_server.hpp"
#include "ticket/service.hpp"

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

// What the node counted since it started, and its levels now; the metrics' counters follow it.
struct MetricsSnapshot {
    ticket::TicketCounters tickets;
    ticket::TicketService::PhaseCounts phases{};  // tickets in progress, by type and phase
    StartRefusals refused{};                      // startTicket refused, by type and reason
    ClientCounters clients;
    mesh::TcpCounters mesh;
    std::size_t store_items = 0;
    std::size_t members_alive = 0;
    std::size_t sessions = 0;
    std::int64_t loop_lag_ms = 0;  // the lag admission judges by
    double round_trip_ms = 0;      // and the round trip
};

// GET /metrics from a node's admin address: the value of the sample named `sample` (the metric
// name with its labels, e.g. matchmesh_tickets_started_total{ticket_type="1"}), or -1 when there
// is none.
[[nodiscard]] double read_metric(const std::string& admin, const std::string& sample);

class Metrics {
public:
    Metrics();
    ~Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    // What the admin port serves; it outlives the Metrics if the server holds it longer.
    [[nodiscard]] std::shared_ptr<const prometheus::Collectable> collectable() const;
    // A configured ticket type: its counts and levels are exported (as zeros) from now on, before
    // its first ticket. Other types appear when first counted.
    void add_ticket_type(ticket::TicketType type);
    void update(const MetricsSnapshot& snapshot);
    void observe_time_to_match(ticket::TicketType type, double seconds);
    void observe_mesh_round_trip(double seconds);
    // One match completed by a room held here: its spread, the difference between its sides
    // (team types) and each member's wait, by ticket type, and whether a relax step was in force.
    void observe_match(const MatchResult& match);

private:
    // One ticket type's series; null until created.
    struct TypeSeries {
        prometheus::Counter* started = nullptr;
        std::array<prometheus::Counter*, ticket::end_reasons_count> ended{};  // by EndReason
        std::array<prometheus::Counter*, start_refusals_count> refused{};
        std::array<prometheus::Gauge*, 2> phases{};  // searching, waiting
        prometheus::Histogram* time_to_match = nullptr;
        prometheus::Histogram* spread = nullptr;
        prometheus::Histogram* side_difference = nullptr;
        prometheus::Histogram* wait = nullptr;
        prometheus::Counter* relaxed = nullptr;
    };
    // The families by ticket type.
    struct TypeFamilies {
        prometheus::Family<prometheus::Counter>* started = nullptr;
        prometheus::Family<prometheus::Counter>* ended = nullptr;
        prometheus::Family<prometheus::Counter>* refused = nullptr;
        prometheus::Family<prometheus::Gauge>* phases = nullptr;
        prometheus::Family<prometheus::Histogram>* time_to_match = nullptr;
        prometheus::Family<prometheus::Histogram>* spread = nullptr;
        prometheus::Family<prometheus::Histogram>* side_difference = nullptr;
        prometheus::Family<prometheus::Histogram>* wait = nullptr;
        prometheus::Family<prometheus::Counter>* relaxed = nullptr;
    };
    // The client port's and the mesh's series of a family labelled by port.
    struct ByPort {
        prometheus::Counter* client = nullptr;
        prometheus::Counter* mesh = nullptr;
    };

    void register_tickets(prometheus::Registry& registry);
    void register_matches(prometheus::Registry& registry);
    void register_node(prometheus::Registry& registry);
    void register_connections(prometheus::Registry& registry);
    void register_mesh(prometheus::Registry& registry);
    void update_type(ticket::TicketType type, const MetricsSnapshot& now);
    void update_connections(const MetricsSnapshot& now);
    [[nodiscard]] prometheus::Histogram& time_to_match(ticket::TicketType type);

    std::shared_ptr<prometheus::Registry> registry_;
    TypeFamilies families_;
    std::array<TypeSeries, ticket::ticket_types_count> types_{};
    prometheus::Counter* searches_ = nullptr;
    prometheus::Counter* joins_accepted_ = nullptr;
    prometheus::Counter* joins_refused_ = nullptr;
    prometheus::Counter* joins_seated_elsewhere_ = nullptr;
    std::array<prometheus::Counter*, ticket::join_refusals_count> join_refusals_{};
    prometheus::Counter* pushes_delivered_ = nullptr;
    prometheus::Counter* pushes_dropped_ = nullptr;
    prometheus::Counter* mesh_frames_in_ = nullptr;
    prometheus::Counter* mesh_frames_out_ = nullptr;
    prometheus::Counter* rate_limited_ = nullptr;
    std::array<prometheus::Counter*, close_reasons_count> closed_{};
    std::array<prometheus::Counter*, mesh::frame_errc_count> mesh_rejected_{};
    std::array<prometheus::Counter*, mesh::frame_errc_count> client_rejected_{};
    prometheus::Counter* client_bad_requests_ = nullptr;
    ByPort handshakes_failed_;
    ByPort send_queue_full_;
    prometheus::Gauge* loop_lag_ = nullptr;
    prometheus::Gauge* items_ = nullptr;
    prometheus::Gauge* members_ = nullptr;
    prometheus::Gauge* sessions_ = nullptr;
    prometheus::Histogram* round_trip_ = nullptr;
    MetricsSnapshot seen_;  // the last update's, which the counters already hold
};

}  // namespace matchmesh::node
