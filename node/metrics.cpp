#include "node/metrics.hpp"

#include <fstream>
#include <istream>
#include <sstream>

#include <sys/resource.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <matchmesh/version.hpp>

#include "node/admin_server.hpp"
#include "node/match_result.hpp"

namespace matchmesh::node {

ResidentBytes resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    std::uint64_t now = 0;
    std::uint64_t peak = 0;
    while (std::getline(status, line)) {
        std::istringstream fields(line);
        std::string key;
        std::uint64_t kilobytes = 0;
        fields >> key >> kilobytes;
        if (key == "VmRSS:") {
            now = kilobytes * 1024;
        } else if (key == "VmHWM:") {
            peak = kilobytes * 1024;
        }
    }
    return {now, peak};
}

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& time) {
        return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
    register_tickets(*registry_);
    register_node(*registry_);
    register_mesh(*registry_);
}

std::shared_ptr<const prometheus::Collectable> Metrics::collectable() const {
    return registry_;
}

void Metrics::register_tickets(prometheus::Registry& registry) {
    auto& tickets = prometheus::BuildCounter()
                        .Name("matchmesh_tickets_total")
                        .Help("Tickets owned by this node, by how they ended (or started)")
                        .Register(registry);
    started_ = &tickets.Add({{"event", "started"}});
    completed_ = &tickets.Add({{"event", "completed"}});
    timed_out_ = &tickets.Add({{"event", "timed_out"}});
    canceled_ = &tickets.Add({{"event", "canceled"}});
    auto& phases = prometheus::BuildGauge()
                       .Name("matchmesh_tickets")
                       .Help("Tickets in progress on this node, by phase")
                       .Register(registry);
    searching_ = &phases.Add({{"phase", "searching"}});
    waiting_ = &phases.Add({{"phase", "waiting"}});
    searches_ = &prometheus::BuildCounter()
                     .Name("matchmesh_searches_total")
                     .Help("Searches run by this node's tickets")
                     .Register(registry)
                     .Add({});
    auto& joins = prometheus::BuildCounter()
                      .Name("matchmesh_joins_total")
                      .Help("Join requests answered by this node's rooms")
                      .Register(registry);
    joins_accepted_ = &joins.Add({{"result", "accepted"}});
    joins_refused_ = &joins.Add({{"result", "refused"}});
    time_to_match_ =
        &prometheus::BuildHistogram()
             .Name("matchmesh_time_to_match_seconds")
             .Help("From a ticket's start to its 220, for tickets owned here")
             .Register(registry)
             .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                              0.5, 1, 2.5, 5, 10, 30});
    match_spread_ = &prometheus::BuildHistogram()
                         .Name("matchmesh_match_spread")
                         .Help("Highest rating minus lowest in a match completed here, by ticket "
                               "type (the type's rating value)")
                         .Register(registry);
    side_difference_ = &prometheus::BuildHistogram()
                            .Name("matchmesh_match_side_difference")
                            .Help("Highest side rating minus lowest in a team match completed "
                                  "here, by ticket type")
                            .Register(registry);
    match_wait_ = &prometheus::BuildHistogram()
                       .Name("matchmesh_match_wait_seconds")
                       .Help("Each member's wait, from the start of the ticket that brought it "
                             "in to its match, by ticket type")
                       .Register(registry);
    matches_relaxed_ = &prometheus::BuildCounter()
                            .Name("matchmesh_matches_relaxed_total")
                            .Help("Matches completed here with a relax step in force, by ticket "
                                  "type")
                            .Register(registry);
}

void Metrics::register_node(prometheus::Registry& registry) {
    items_ = &prometheus::BuildGauge()
                  .Name("matchmesh_store_items")
                  .Help("Search items stored on this node")
                  .Register(registry)
                  .Add({});
    members_ = &prometheus::BuildGauge()
                    .Name("matchmesh_members_alive")
                    .Help("Live cluster members, this node included")
                    .Register(registry)
                    .Add({});
    sessions_ = &prometheus::BuildGauge()
                     .Name("matchmesh_client_sessions")
                     .Help("Client connections")
                     .Register(registry)
                     .Add({});
    auto& memory = prometheus::BuildGauge()
                       .Name("matchmesh_resident_bytes")
                       .Help("Resident memory of the node process")
                       .Register(registry);
    resident_ = &memory.Add({{"kind", "current"}});
    peak_resident_ = &memory.Add({{"kind", "peak"}});
    cpu_ = &prometheus::BuildGauge()
                .Name("matchmesh_cpu_seconds")
                .Help("CPU time used by the node process, user and system")
                .Register(registry)
                .Add({});
    prometheus::BuildGauge()
        .Name("matchmesh_build_info")
        .Help("The version and commit this node was built from (always 1)")
        .Register(registry)
        .Add({{"version", std::string(build_version)}, {"commit", std::string(build_commit)}})
        .Set(1);
}

void Metrics::register_mesh(prometheus::Registry& registry) {
    round_trip_ =
        &prometheus::BuildHistogram()
             .Name("matchmesh_mesh_round_trip_seconds")
             .Help("Requests to other nodes, from sending to the answer")
             .Register(registry)
             .Add({}, prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001,
                                                              0.0025, 0.005, 0.01, 0.05, 0.25});
    auto& frames = prometheus::BuildCounter()
                       .Name("matchmesh_mesh_frames_total")
                       .Help("Frames between this node and the other nodes, by direction")
                       .Register(registry);
    mesh_frames_in_ = &frames.Add({{"direction", "in"}});
    mesh_frames_out_ = &frames.Add({{"direction", "out"}});
    rejected_ = &prometheus::BuildCounter()
                     .Name("matchmesh_frames_rejected_total")
                     .Help("Frames that closed their connection, by reason")
                     .Register(registry);
    refused_overloaded_ = &prometheus::BuildCounter()
                               .Name("matchmesh_tickets_refused_overloaded_total")
                               .Help("Ticket starts refused because the node was past its capacity")
                               .Register(registry)
                               .Add({});
    loop_lag_ = &prometheus::BuildGauge()
                     .Name("matchmesh_loop_lag_seconds")
                     .Help("How late the event loop runs its timers, smoothed")
                     .Register(registry)
                     .Add({});
}

Metrics::~Metrics() = default;

void Metrics::advance(prometheus::Counter& counter, std::uint64_t& seen, std::uint64_t now) {
    if (now > seen) {
        counter.Increment(static_cast<double>(now - seen));
        seen = now;
    }
}

void Metrics::update(const MetricsSnapshot& snapshot) {
    advance(*started_, seen_.tickets_started, snapshot.tickets_started);
    advance(*completed_, seen_.tickets_completed, snapshot.tickets_completed);
    advance(*timed_out_, seen_.tickets_timed_out, snapshot.tickets_timed_out);
    advance(*canceled_, seen_.tickets_canceled, snapshot.tickets_canceled);
    advance(*searches_, seen_.searches, snapshot.searches);
    advance(*joins_accepted_, seen_.joins_accepted, snapshot.joins_accepted);
    advance(*joins_refused_, seen_.joins_refused, snapshot.joins_refused);
    advance(*mesh_frames_in_, seen_.mesh_frames_in, snapshot.mesh_frames_in);
    advance(*mesh_frames_out_, seen_.mesh_frames_out, snapshot.mesh_frames_out);
    advance(*refused_overloaded_, seen_.tickets_refused_overloaded,
            snapshot.tickets_refused_overloaded);
    loop_lag_->Set(static_cast<double>(snapshot.loop_lag_ms) / 1000.0);
    for (const auto& [reason, count] : snapshot.frames_rejected) {
        advance(rejected_->Add({{"reason", reason}}), seen_.frames_rejected[reason], count);
    }
    searching_->Set(static_cast<double>(snapshot.tickets_searching));
    waiting_->Set(static_cast<double>(snapshot.tickets_waiting));
    items_->Set(static_cast<double>(snapshot.store_items));
    members_->Set(static_cast<double>(snapshot.members_alive));
    sessions_->Set(static_cast<double>(snapshot.sessions));
    const auto [now, peak] = resident_bytes();
    resident_->Set(static_cast<double>(now));
    peak_resident_->Set(static_cast<double>(peak));
    cpu_->Set(cpu_seconds());
}

void Metrics::observe_time_to_match(double seconds) {
    time_to_match_->Observe(seconds);
}

void Metrics::observe_mesh_round_trip(double seconds) {
    round_trip_->Observe(seconds);
}

void Metrics::observe_match(const MatchResult& match) {
    // Rating units: a few buckets either side of typical limits (100-400).
    static const prometheus::Histogram::BucketBoundaries rating_buckets{
        0, 10, 25, 50, 100, 200, 400, 800, 1600};
    static const prometheus::Histogram::BucketBoundaries wait_buckets{
        0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
    auto [found, added] = match_metrics_.try_emplace(match.ticket_type);
    MatchMetrics& metrics = found->second;
    if (added) {
        const prometheus::Labels type{{"ticket_type", std::to_string(match.ticket_type)}};
        metrics = MatchMetrics{&match_spread_->Add(type, rating_buckets),
                               match.sides.empty() ? nullptr
                                                   : &side_difference_->Add(type, rating_buckets),
                               &match_wait_->Add(type, wait_buckets), &matches_relaxed_->Add(type)};
    }
    metrics.spread->Observe(static_cast<double>(match.spread));
    if (metrics.side_difference != nullptr) {  // a team type's rooms always have sides
        metrics.side_difference->Observe(match.side_difference);
    }
    for (const MatchedPlayer& member : match.members) {
        metrics.wait->Observe(static_cast<double>(member.wait_ms) / 1000);
    }
    if (match.relax_step >= 0) {
        metrics.relaxed->Increment();
    }
}

double read_metric(const std::string& admin, const std::string& sample) {
    auto reply = http_get(admin, "/metrics");
    if (!reply || reply->status != 200) {
        return -1;
    }
    std::istringstream lines(reply->body);
    std::string line;
    const std::string key = sample + " ";
    while (std::getline(lines, line)) {
        if (line.starts_with(key)) {
            try {
                return std::stod(line.substr(key.size()));
            } catch (const std::exception&) {
                return -1;
            }
        }
    }
    return -1;
}

}  // namespace matchmesh::node
