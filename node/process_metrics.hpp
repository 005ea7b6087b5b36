#pragma once
// ProcessMetrics: the node process's own figures, read when the admin port is scraped (the
// prometheus-cpp that Debian ships has no process collector): CPU time, resident and virtual
// memory and the resident peak, open and allowed file descriptors, the start time, and the
// context switches of its threads (voluntary ones count the loop's wake-ups). A figure
// whose source cannot be read is left out of that scrape.
//
// The admin server holds it beside the node's registry; Collect() runs on the server's threads
// and reads only the proc filesystem, getrlimit and getrusage, nothing the loop owns.

#include <filesystem>
#include <optional>
#include <vector>

#include <prometheus/collectable.h>

namespace matchmesh::node {

class ProcessMetrics final : public prometheus::Collectable {
public:
    // `proc`: where the proc filesystem is mounted; its `self` is this process (a test gives a
    // folder of its own).
    explicit ProcessMetrics(std::filesystem::path proc = "/proc");

    [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;

private:
    std::filesystem::path self_;
    double ticks_per_second_;
    std::optional<double> start_time_seconds_;  // since the Unix epoch; read once
};

}  // namespace matchmesh::node
