// The node's metrics as a scrape sees them: series by ticket type and by fixed reasons, counters
// that follow the node's totals without counting twice, and the process figures read from a proc
// folder (a fake one here, so that the values are known).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include <unistd.h>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "node/metrics.hpp"
#include "node/process_metrics.hpp"

using namespace matchmesh;
using namespace matchmesh::node;

namespace {

using Label = prometheus::ClientMetric::Label;

// The value of the series of `family` with exactly these labels, if there is one.
std::optional<double> value_of(const prometheus::Collectable& collectable,
                               const std::string& family, std::vector<Label> labels) {
    std::sort(labels.begin(), labels.end());
    for (const prometheus::MetricFamily& found : collectable.Collect()) {
        if (found.name != family) {
            continue;
        }
        for (const prometheus::ClientMetric& metric : found.metric) {
            auto held = metric.label;
            std::sort(held.begin(), held.end());
            if (held == labels) {
                return found.type == prometheus::MetricType::Counter ? metric.counter.value
                                                                     : metric.gauge.value;
            }
        }
    }
    return std::nullopt;
}

std::size_t index(auto value) {
    return static_cast<std::size_t>(value);
}

// A folder laid out as /proc is, for one process.
struct FakeProc {
    std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("matchmesh-proc-" + std::to_string(getpid()));
    FakeProc() { std::filesystem::create_directories(root); }
    ~FakeProc() { std::filesystem::remove_all(root); }
    void write(const std::string& name, const std::string& text) const {
        std::filesystem::create_directories((root / name).parent_path());
        std::ofstream(root / name) << text;
    }
};

}  // namespace

TEST_CASE("node/metrics: a configured type's series exist before its first ticket") {
    Metrics metrics;
    metrics.add_ticket_type(1);
    const auto& scrape = *metrics.collectable();
    CHECK(value_of(scrape, "matchmesh_tickets_started_total", {{"ticket_type", "1"}}) == 0);
    CHECK(value_of(scrape, "matchmesh_tickets_ended_total",
                   {{"ticket_type", "1"}, {"outcome", "timed_out"}}) == 0);
    CHECK(value_of(scrape, "matchmesh_tickets", {{"ticket_type", "1"}, {"phase", "waiting"}}) == 0);
    CHECK_FALSE(value_of(scrape, "matchmesh_tickets_started_total", {{"ticket_type", "2"}}));
    // The fixed reasons are there from the start too.
    CHECK(value_of(scrape, "matchmesh_frames_rejected_total",
                   {{"port", "mesh"}, {"reason", "too_large"}}) == 0);
    CHECK(value_of(scrape, "matchmesh_client_connections_closed_total",
                   {{"reason", "hello_timeout"}}) == 0);
    CHECK(value_of(scrape, "matchmesh_join_refusals_total", {{"reason", "full"}}) == 0);
}

TEST_CASE("node/metrics: counters follow the node's totals, and each is counted once") {
    Metrics metrics;
    MetricsSnapshot snapshot;
    snapshot.tickets.by_type[2].started = 3;
    snapshot.tickets.by_type[2].ended_as(ticket::EndReason::canceled) = 1;
    snapshot.tickets.by_type[2].ended_as(ticket::EndReason::draining) = 2;
    snapshot.phases[2][0] = 2;  // searching
    snapshot.refused[2][index(StartRefusal::overloaded)] = 5;
    snapshot.clients.rate_limited = 7;
    snapshot.clients.closed[index(CloseReason::hello_timeout)] = 1;
    snapshot.clients.closed[index(CloseReason::slow_reader)] = 2;
    snapshot.clients.frames_rejected[index(mesh::FrameErrc::oversized)] = 4;
    snapshot.mesh.handshakes_failed = 6;
    snapshot.tickets.pushes_dropped = 8;
    snapshot.tickets.joins_refused = 9;
    snapshot.tickets.joins_seated_elsewhere = 10;
    snapshot.tickets.join_refusals[static_cast<std::size_t>(ticket::JoinRefusal::not_waiting)] = 9;
    for (int second = 0; second < 3; ++second) {  // the same totals, three times
        metrics.update(snapshot);
    }
    const auto& scrape = *metrics.collectable();
    CHECK(value_of(scrape, "matchmesh_tickets_started_total", {{"ticket_type", "2"}}) == 3);
    CHECK(value_of(scrape, "matchmesh_tickets_ended_total",
                   {{"ticket_type", "2"}, {"outcome", "canceled"}}) == 1);
    // A 222 counts under its reason: a drain is not a player's cancel.
    CHECK(value_of(scrape, "matchmesh_tickets_ended_total",
                   {{"ticket_type", "2"}, {"outcome", "draining"}}) == 2);
    // Nothing counted, no series: the type's other outcomes and reasons stay out of the scrape.
    CHECK_FALSE(value_of(scrape, "matchmesh_tickets_ended_total",
                         {{"ticket_type", "2"}, {"outcome", "completed"}}));
    CHECK_FALSE(value_of(scrape, "matchmesh_tickets_ended_total",
                         {{"ticket_type", "2"}, {"outcome", "kicked"}}));
    CHECK(value_of(scrape, "matchmesh_tickets", {{"ticket_type", "2"}, {"phase", "searching"}}) ==
          2);
    CHECK(value_of(scrape, "matchmesh_tickets_refused_total",
                   {{"ticket_type", "2"}, {"reason", "overloaded"}}) == 5);
    CHECK(value_of(scrape, "matchmesh_client_commands_rate_limited_total", {}) == 7);
    CHECK(value_of(scrape, "matchmesh_client_connections_closed_total",
                   {{"reason", "hello_timeout"}}) == 1);
    CHECK(value_of(scrape, "matchmesh_send_queue_full_total", {{"port", "client"}}) == 2);
    CHECK(value_of(scrape, "matchmesh_frames_rejected_total",
                   {{"port", "client"}, {"reason", "too_large"}}) == 4);
    CHECK(value_of(scrape, "matchmesh_handshakes_failed_total", {{"port", "mesh"}}) == 6);
    CHECK(value_of(scrape, "matchmesh_joins_total", {{"result", "refused"}}) == 9);
    CHECK(value_of(scrape, "matchmesh_join_refusals_total", {{"reason", "not_waiting"}}) == 9);
    CHECK(value_of(scrape, "matchmesh_joins_seated_elsewhere_total", {}) == 10);
    CHECK(value_of(scrape, "matchmesh_pushes_total", {{"result", "dropped"}}) == 8);

    snapshot.tickets.by_type[2].started = 4;
    snapshot.phases[2][0] = 0;
    metrics.update(snapshot);
    CHECK(value_of(scrape, "matchmesh_tickets_started_total", {{"ticket_type", "2"}}) == 4);
    CHECK(value_of(scrape, "matchmesh_tickets", {{"ticket_type", "2"}, {"phase", "searching"}}) ==
          0);
}

TEST_CASE("node/metrics: every close reason and frame error has its own short label") {
    std::set<std::string> labels;
    for (std::size_t i = 0; i < close_reasons_count; ++i) {
        CHECK(labels.insert(std::string(label_of(static_cast<CloseReason>(i)))).second);
    }
    for (std::size_t i = 0; i < mesh::frame_errc_count; ++i) {
        const std::string label(mesh::label_of(static_cast<mesh::FrameErrc>(i)));
        CHECK(label.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos);
        CHECK(labels.insert(label).second);
    }
}

TEST_CASE("node/process-metrics: the process's figures, from its proc files") {
    FakeProc proc;
    proc.write("stat", "cpu  1 2 3 4\nbtime 1700000000\n");
    // The command name may hold spaces and parentheses; fields 14, 15, 22 and 23 follow it.
    proc.write("self/stat",
               "4242 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 1000 4096000 100 0\n");
    proc.write("self/status", "Name:\tnode\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n");
    for (const char* fd : {"0", "1", "2"}) {
        proc.write(std::string("self/fd/") + fd, "");
    }
    const ProcessMetrics metrics(proc.root);
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    CHECK(value_of(metrics, "process_cpu_seconds_total", {}) == doctest::Approx(300 / ticks));
    CHECK(value_of(metrics, "process_resident_memory_bytes", {}) == 1024 * 1024);
    CHECK(value_of(metrics, "matchmesh_resident_bytes_peak", {}) == 2048 * 1024);
    CHECK(value_of(metrics, "process_virtual_memory_bytes", {}) == 4096000);
    CHECK(value_of(metrics, "process_open_fds", {}) == 3);
    CHECK(value_of(metrics, "process_start_time_seconds", {}) ==
          doctest::Approx(1700000000 + 1000 / ticks));
    CHECK(value_of(metrics, "process_max_fds", {}) > 0);
}

TEST_CASE("node/process-metrics: what cannot be read is left out, the rest is served") {
    FakeProc proc;
    proc.write("self/stat", "4242 (truncated) S 1 1\n");  // no CPU fields
    const ProcessMetrics metrics(proc.root);
    const auto families = metrics.Collect();
    // What comes from system calls rather than the proc files: the descriptor limit and the
    // context switches.
    REQUIRE(families.size() == 2);
    CHECK(families[0].name == "process_max_fds");
    CHECK(families[1].name == "process_context_switches_total");
}

TEST_CASE("node/process-metrics: this process, as the admin port serves it") {
    const ProcessMetrics metrics;
    CHECK(value_of(metrics, "process_resident_memory_bytes", {}) > 0);
    CHECK(value_of(metrics, "process_open_fds", {}) >= 3);
    CHECK(value_of(metrics, "process_start_time_seconds", {}) > 1.7e9);
    CHECK(value_of(metrics, "process_cpu_seconds_total", {}) >= 0);
    // This thread sleeps, so the process has switched voluntarily at least once since.
    const auto slept_before =
        value_of(metrics, "process_context_switches_total", {{"kind", "voluntary"}});
    REQUIRE(slept_before);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(value_of(metrics, "process_context_switches_total", {{"kind", "voluntary"}}) >
          *slept_before);
    CHECK(value_of(metrics, "process_context_switches_total", {{"kind", "involuntary"}}) >= 0);
}
