#include "node/process_metrics.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include <sys/resource.h>
#include <unistd.h>

#include <prometheus/metric_family.h>

namespace matchmesh::node {
namespace {

// What /proc/<pid>/stat says past the command name, which may itself hold spaces and parentheses:
// field 3 (the state) onwards, counted from 0.
std::optional<std::vector<std::string>> stat_fields(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    if (!std::getline(in, line)) {
        return std::nullopt;
    }
    const auto name_end = line.rfind(')');
    if (name_end == std::string::npos) {
        return std::nullopt;
    }
    std::istringstream rest(line.substr(name_end + 1));
    std::vector<std::string> fields;
    for (std::string field; rest >> field;) {
        fields.push_back(field);
    }
    return fields;
}

// Fields of /proc/<pid>/stat (man 5 proc), as indices into stat_fields().
constexpr std::size_t user_ticks_field = 14 - 3;
constexpr std::size_t system_ticks_field = 15 - 3;
constexpr std::size_t start_ticks_field = 22 - 3;
constexpr std::size_t virtual_bytes_field = 23 - 3;

std::optional<double> number_at(const std::vector<std::string>& fields, std::size_t index) {
    if (index >= fields.size()) {
        return std::nullopt;
    }
    try {
        return std::stod(fields[index]);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// The value of a "Key: value [kB]" line of a proc file (status, or the boot time in stat).
std::optional<double> keyed_value(const std::filesystem::path& file, const std::string& key) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string name;
        double value = 0;
        std::string unit;
        if (fields >> name >> value && name == key) {
            fields >> unit;
            return unit == "kB" ? value * 1024 : value;
        }
    }
    return std::nullopt;
}

std::optional<double> open_fds(const std::filesystem::path& folder) {
    std::error_code error;
    std::filesystem::directory_iterator entries(folder, error);
    if (error) {
        return std::nullopt;
    }
    double count = 0;
    for (auto it = std::filesystem::begin(entries); it != std::filesystem::end(entries);
         it.increment(error)) {
        if (error) {
            return std::nullopt;
        }
        ++count;
    }
    return count;
}

std::optional<double> max_fds() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return std::nullopt;
    }
    return static_cast<double>(limit.rlim_cur);
}

// The process's context switches, all its threads': voluntary ones are the times a thread slept
// (the loop, in epoll, until a socket or a timer woke it), involuntary ones the times the
// scheduler took the CPU from a thread that could have gone on.
prometheus::MetricFamily context_switches() {
    rusage usage{};
    prometheus::MetricFamily family{"process_context_switches_total",
                                    "Context switches of the process's threads, by kind: "
                                    "voluntary (it slept until woken), involuntary (preempted)",
                                    prometheus::MetricType::Counter,
                                    {}};
    if (getrusage(RUSAGE_SELF, &usage) != 0) {
        return family;
    }
    for (const auto& [kind, count] : {std::pair{"voluntary", usage.ru_nvcsw},
                                      std::pair{"involuntary", usage.ru_nivcsw}}) {
        prometheus::ClientMetric metric;
        metric.label.push_back({"kind", kind});
        metric.counter.value = static_cast<double>(count);
        family.metric.push_back(std::move(metric));
    }
    return family;
}

void add(std::vector<prometheus::MetricFamily>& families, std::string name, std::string help,
         prometheus::MetricType type, std::optional<double> value) {
    if (!value) {
        return;
    }
    prometheus::ClientMetric metric;
    if (type == prometheus::MetricType::Counter) {
        metric.counter.value = *value;
    } else {
        metric.gauge.value = *value;
    }
    families.push_back({std::move(name), std::move(help), type, {metric}});
}

}  // namespace

ProcessMetrics::ProcessMetrics(std::filesystem::path proc)
    : self_(proc / "self"), ticks_per_second_(static_cast<double>(sysconf(_SC_CLK_TCK))) {
    // The process started this many ticks after the machine booted.
    const auto booted = keyed_value(proc / "stat", "btime");
    const auto fields = stat_fields(self_ / "stat");
    const auto started = fields ? number_at(*fields, start_ticks_field) : std::nullopt;
    if (booted && started) {
        start_time_seconds_ = *booted + *started / ticks_per_second_;
    }
}

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> families;
    const auto fields = stat_fields(self_ / "stat");
    std::optional<double> cpu;
    std::optional<double> virtual_bytes;
    if (fields) {
        const auto user = number_at(*fields, user_ticks_field);
        const auto system = number_at(*fields, system_ticks_field);
        if (user && system) {
            cpu = (*user + *system) / ticks_per_second_;
        }
        virtual_bytes = number_at(*fields, virtual_bytes_field);
    }
    add(families, "process_cpu_seconds_total", "CPU time used by the process, user and system",
        MetricType::Counter, cpu);
    add(families, "process_resident_memory_bytes", "Resident memory of the process",
        MetricType::Gauge, keyed_value(self_ / "status", "VmRSS:"));
    add(families, "matchmesh_resident_bytes_peak", "The most resident memory the process has held",
        MetricType::Gauge, keyed_value(self_ / "status", "VmHWM:"));
    add(families, "process_virtual_memory_bytes", "Virtual memory of the process",
        MetricType::Gauge, virtual_bytes);
    add(families, "process_open_fds", "File descriptors the process holds open", MetricType::Gauge,
        open_fds(self_ / "fd"));
    add(families, "process_max_fds", "The most file descriptors the process may open",
        MetricType::Gauge, max_fds());
    add(families, "process_start_time_seconds",
        "When the process started, in seconds since the Unix epoch", MetricType::Gauge,
        start_time_seconds_);
    if (auto switches = context_switches(); !switches.metric.empty()) {
        families.push_back(std::move(switches));
    }
    return families;
}

}  // namespace matchmesh::node
