// matchmesh-bench: simulated players against a running cluster, over the client protocol — and
// the same arrivals against the ideal matcher and the Redis baseline, for comparison.
//
// Parties arrive at --rate per second (Poisson) for --duration seconds (or as a --trace file
// says; --trace-out saves the generated one). Each party is one to several players, each with its
// own connection to a node picked at random from --nodes; the first says hello and starts a
// ticket of a type drawn from the --type mix with its rating drawn from N(--rating-mean,
// --rating-sd), naming the others as its party. For every ticket the bench measures the time
// from sending the start to its 220 (matched), 219 (timed out) or 222 (canceled), and reports
// completions, fill rate, time to match and matches per second, overall and per ticket type;
// with --admin it also reads each node's peak resident memory from its metrics port. --json
// writes the report; --chart draws time to match over the run (gnuplot); --samples writes every
// matched ticket's time to match; --records every ticket's record, for a look at single tickets.
// For a team type (with --config) every match the cluster reports is checked against the type's
// rules, and the report gives the sides' difference and the violations for it and the ideal.
//
// --config names the cluster's config: its ticket types drive the ideal matcher, whose figures
// on the same arrivals are reported next to the measured ones ("ideal" in the report).
// --backend redis runs the arrivals against the Redis baseline (--redis host:port) instead;
// --backend ideal runs only the ideal matcher.
//
//   matchmesh-bench --nodes 127.0.0.1:7201,127.0.0.1:7202 --rate 500 --duration 30
//       --type 1=0.8 --type 2=0.2 --party 2:1=0.8 --party 2:2=0.2 --json report.json --chart
//       ttm.png
// (--party 2:2=0.2: a fifth of type 2's parties are two players; type 1's are all single.)

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <expected>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include <sys/resource.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>
#include <nlohmann/json.hpp>

#include "bench/cluster_driver.hpp"
#include "bench/ideal.hpp"
#include "bench/outcomes.hpp"
#include "bench/redis_baseline.hpp"
#include "bench/trace.hpp"
#include "config/config.hpp"
#include "node/metrics.hpp"

namespace {

using namespace matchmesh;
using namespace matchmesh::bench;

struct Options {
    std::string backend = "cluster";
    std::vector<std::string> nodes;
    std::vector<std::string> admins;
    std::string redis = "127.0.0.1:6379";
    int redis_workers = 4;
    TraceShape shape;
    std::string trace_in;
    std::string trace_out;
    std::string config_path;
    std::string value_name = "rating";
    std::string token_secret;
    double grace = 40;
    double retry_patience = 60;
    int processes = 1;
    std::string json_path;
    std::string chart_path;
    std::string samples_path;
    std::string records_path;
    bool quiet = false;
};

void print_table(const nlohmann::json& report, const char* title) {
    std::printf("\n%s\n%-8s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", title, "type", "started",
                "matched", "timed out", "canceled", "fill", "ttm p50", "ttm p90", "ttm p99",
                "matches/s");
    const auto row = [](const std::string& name, const nlohmann::json& part) {
        std::printf("%-8s %9zu %9zu %9zu %9zu %8.1f%% %7.0fms %7.0fms %7.0fms %9.1f\n",
                    name.c_str(), part["tickets_started"].get<std::size_t>(),
                    part["completed"].get<std::size_t>(), part["timed_out"].get<std::size_t>(),
                    part["canceled"].get<std::size_t>(), 100.0 * part["fill_rate"].get<double>(),
                    part["ttm_ms"]["p50"].get<double>(), part["ttm_ms"]["p90"].get<double>(),
                    part["ttm_ms"]["p99"].get<double>(), part["matches_per_s"].get<double>());
    };
    for (const auto& [type, part] : report["by_type"].items()) {
        row(type, part);
    }
    row("all", report);
    if (report["unfinished"].get<std::size_t>() > 0 || report["refused"].get<std::size_t>() > 0) {
        std::printf("unfinished (lost) %zu, refused %zu %s\n",
                    report["unfinished"].get<std::size_t>(), report["refused"].get<std::size_t>(),
                    report.contains("refusals") ? report["refusals"].dump().c_str() : "");
    }
    if (report["retries"].get<std::size_t>() > 0) {
        std::printf("%zu players were refused as overloaded and tried again (%zu retries)\n",
                    report["players_retried"].get<std::size_t>(),
                    report["retries"].get<std::size_t>());
    }
    std::printf("goodput %.1f matches/s (made while players arrived)\n",
                report["goodput_per_s"].get<double>());
}

// Team matches per type: how far apart the sides were, and the matches that broke a limit.
void print_teams(const nlohmann::json& report, const char* who) {
    for (const auto& [type, part] : report["by_type"].items()) {
        if (!part.contains("teams")) {
            continue;
        }
        const nlohmann::json& teams = part["teams"];
        std::printf(
            "teams type %s (%s): %zu matches, side difference p50 %.1f p99 %.1f max %.1f, "
            "spread p50 %.0f, violations %zu %s\n",
            type.c_str(), who, teams["matches"].get<std::size_t>(),
            teams["side_difference"]["p50"].get<double>(),
            teams["side_difference"]["p99"].get<double>(),
            teams["side_difference"]["max"].get<double>(), teams["spread"]["p50"].get<double>(),
            teams["violations"].get<std::size_t>(),
            teams["violation_kinds"].empty() ? "" : teams["violation_kinds"].dump().c_str());
    }
}

// A team type's match quality next to the ideal's.
void add_team_gaps(const nlohmann::json& part, const nlohmann::json& best, nlohmann::json& gap) {
    if (part.contains("teams")) {
        gap["side_difference_p50"] = part["teams"]["side_difference"]["p50"];
        gap["side_difference_p99"] = part["teams"]["side_difference"]["p99"];
        gap["violations"] = part["teams"]["violations"];
    }
    if (best.contains("teams")) {
        gap["ideal_side_difference_p50"] = best["teams"]["side_difference"]["p50"];
        gap["ideal_side_difference_p99"] = best["teams"]["side_difference"]["p99"];
        gap["ideal_violations"] = best["teams"]["violations"];
    }
}

// Ours next to the ideal's, per ticket type: time to match and fill rate, and the gaps; the
// type's search interval, the slack one search allows the cluster over the ideal.
nlohmann::json compare(const nlohmann::json& measured, const nlohmann::json& ideal,
                       const std::map<int, config::TicketTypeConfig>& ticket_types) {
    auto gaps = nlohmann::json::object();
    for (const auto& [type, part] : measured["by_type"].items()) {
        if (!ideal["by_type"].contains(type)) {
            continue;
        }
        const auto& best = ideal["by_type"][type];
        const auto round1 = [](double value) { return std::round(value * 10) / 10; };
        gaps[type] = {
            {"ttm_p50_ms", part["ttm_ms"]["p50"]},
            {"ideal_ttm_p50_ms", best["ttm_ms"]["p50"]},
            {"ttm_p50_over_ideal_ms",
             round1(part["ttm_ms"]["p50"].get<double>() - best["ttm_ms"]["p50"].get<double>())},
            {"ttm_p99_ms", part["ttm_ms"]["p99"]},
            {"ideal_ttm_p99_ms", best["ttm_ms"]["p99"]},
            {"ttm_p99_over_ideal_ms",
             round1(part["ttm_ms"]["p99"].get<double>() - best["ttm_ms"]["p99"].get<double>())},
            {"fill_rate", part["fill_rate"]},
            {"ideal_fill_rate", best["fill_rate"]},
            {"fill_rate_gap_points",
             round1(100.0 * (best["fill_rate"].get<double>() - part["fill_rate"].get<double>()))}};
        if (const auto config = ticket_types.find(std::stoi(type)); config != ticket_types.end()) {
            gaps[type]["search_interval_ms"] = config->second.search_interval_ms;
        }
        add_team_gaps(part, best, gaps[type]);
    }
    return gaps;
}

void print_comparison(const nlohmann::json& gaps) {
    std::printf(
        "\nagainst the ideal matcher on the same arrivals\n%-8s %12s %12s %12s %12s %10s %10s\n",
        "type", "ttm p50", "ideal p50", "ttm p99", "ideal p99", "fill", "ideal fill");
    for (const auto& [type, gap] : gaps.items()) {
        std::printf("%-8s %10.0fms %10.0fms %10.0fms %10.0fms %9.1f%% %9.1f%%\n", type.c_str(),
                    gap["ttm_p50_ms"].get<double>(), gap["ideal_ttm_p50_ms"].get<double>(),
                    gap["ttm_p99_ms"].get<double>(), gap["ideal_ttm_p99_ms"].get<double>(),
                    100 * gap["fill_rate"].get<double>(),
                    100 * gap["ideal_fill_rate"].get<double>());
    }
}

// The arrivals the cluster accepted, each at the moment its accepted start was sent.
std::vector<Arrival> accepted_arrivals(const std::vector<Arrival>& arrivals,
                                       const std::vector<TicketRecord>& records) {
    std::vector<Arrival> accepted;
    for (std::size_t i = 0; i < arrivals.size() && i < records.size(); ++i) {
        const TicketRecord& record = records[i];
        if (!record.arrived || record.outcome == Outcome::refused) {
            continue;
        }
        Arrival arrival = arrivals[i];
        arrival.at = record.accepted_s > 0 ? record.accepted_s : record.started_s;
        accepted.push_back(std::move(arrival));
    }
    std::sort(accepted.begin(), accepted.end(),
              [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
    return accepted;
}

void write_samples(const std::string& path, const std::vector<TicketRecord>& records) {
    std::ofstream file(path);
    file << "# started_s type ttm_ms (matched tickets)\n";
    for (const auto& record : records) {
        if (record.outcome == Outcome::matched) {
            file << fmt::format("{:.3f} {} {:.2f}\n", record.started_s, record.type, record.ttm_ms);
        }
    }
}

void write_chart(const std::string& chart_path, const std::vector<TicketRecord>& records,
                 const std::map<int, double>& types) {
    // Each matched ticket as a point (when it started, how long it took), one colour per type.
    const std::string data_path = chart_path + ".dat";
    std::ofstream data(data_path);
    for (const auto& [type, weight] : types) {
        data << "# type " << type << "\n";
        for (const auto& record : records) {
            if (record.type == type && record.outcome == Outcome::matched) {
                data << fmt::format("{:.3f} {:.1f}\n", record.started_s, record.ttm_ms);
            }
        }
        data << "\n\n";
    }
    data.close();
    std::string plots;
    int column = 0;
    for (const auto& [type, weight] : types) {
        plots += fmt::format("{}'{}' index {} using 1:2 with points pt 7 ps 0.3 title 'type {}'",
                             plots.empty() ? "" : ", ", data_path, column++, type);
    }
    const std::string script = fmt::format(
        "set terminal png size 1100,600\n"
        "set output '{}'\n"
        "set title 'matchmesh-bench: time to match by start time'\n"
        "set xlabel 'ticket started (s into the run)'\n"
        "set ylabel 'time to match (ms)'\n"
        "set logscale y\n"
        "set grid\n"
        "set key outside right\n"
        "plot {}\n",
        chart_path, plots);
    const std::string script_path = chart_path + ".gp";
    std::ofstream(script_path) << script;
    const int status = std::system(fmt::format("gnuplot '{}' 2>/dev/null", script_path).c_str());
    if (status == 0) {
        std::printf("chart: %s\n", chart_path.c_str());
    } else {
        std::printf("chart: gnuplot failed (is gnuplot installed?); data in %s\n",
                    data_path.c_str());
    }
}

// "1=0.7" -> {1, 0.7}
std::pair<int, double> parse_share(const std::string& text) {
    const auto equals = text.find('=');
    int key = 0;
    double weight = 1;
    const char* end = text.data() + (equals == std::string::npos ? text.size() : equals);
    auto [stop, error] = std::from_chars(text.data(), end, key);
    if (error != std::errc() || stop != end) {
        throw CLI::ValidationError(fmt::format("'{}' is not number=weight", text));
    }
    if (equals != std::string::npos) {
        try {
            weight = std::stod(text.substr(equals + 1));
        } catch (const std::exception&) {
            throw CLI::ValidationError(fmt::format("'{}' is not number=weight", text));
        }
    }
    if (weight <= 0) {
        throw CLI::ValidationError(fmt::format("'{}': the weight must be positive", text));
    }
    return {key, weight};
}

void parse_mixes(Options& options, const std::vector<std::string>& types,
                 const std::vector<std::string>& parties) {
    if (!types.empty()) {
        options.shape.types.clear();
        for (const auto& text : types) {
            auto [type, weight] = parse_share(text);
            if (type < 0 || type > 255) {
                throw CLI::ValidationError(fmt::format("--type {}: a ticket type is 0..255", text));
            }
            options.shape.types[type] = weight;
        }
    }
    for (const auto& text : parties) {
        const auto colon = text.find(':');
        const int type = colon == std::string::npos ? -1 : parse_share(text.substr(0, colon)).first;
        auto [size, weight] =
            parse_share(colon == std::string::npos ? text : text.substr(colon + 1));
        if (size < 1 || size > 8 || type < -1 || type > 255) {
            throw CLI::ValidationError(
                fmt::format("--party {}: a party has 1..8 players; a ticket type is 0..255", text));
        }
        options.shape.party_sizes[type][size] = weight;
    }
}

std::string read_line(const std::string& path) {
    std::ifstream file(path);
    std::string line;
    std::getline(file, line);
    if (line.empty()) {
        throw CLI::ValidationError(fmt::format("cannot read a secret from {}", path));
    }
    return line;
}

// What the players are: how many arrive, of which types and parties, with which ratings.
void add_arrival_options(CLI::App& app, Options& options, std::vector<std::string>& types,
                         std::vector<std::string>& parties) {
    app.add_option("--rate", options.shape.rate, "parties arriving per second")
        ->check(CLI::Range(0.1, 1000000.0));
    app.add_option("--duration", options.shape.duration, "seconds of arrivals")
        ->check(CLI::Range(0.1, 86400.0));
    app.add_option("--type", types, "ticket type and its share, type=weight (repeat)");
    app.add_option(
        "--party", parties,
        "party size and its share, [type:]size=weight (repeat; without a type: all types)");
    app.add_option("--rating-mean", options.shape.rating_mean, "mean of the players' ratings");
    app.add_option("--rating-sd", options.shape.rating_sd, "standard deviation of the ratings")
        ->check(CLI::Range(0.0, 1e6));
    app.add_option("--seed", options.shape.seed, "random seed of the arrivals");
    app.add_option("--trace", options.trace_in,
                   "replay these arrivals (JSON lines) instead of generating");
    app.add_option("--trace-out", options.trace_out, "save the arrivals (JSON lines)");
    app.add_option("--value-name", options.value_name, "the player value the rating is sent as");
}

// What the options say together, and the files they name; throws CLI's errors.
void check_options(Options& options, const std::vector<std::string>& types,
                   const std::vector<std::string>& parties, const std::string& secret_file,
                   std::map<int, config::TicketTypeConfig>& ticket_types) {
    parse_mixes(options, types, parties);
    if (!secret_file.empty()) {
        options.token_secret = read_line(secret_file);
    }
    if (options.backend == "cluster" && options.nodes.empty()) {
        throw CLI::ValidationError("--nodes is required with the cluster backend");
    }
    if (options.backend != "cluster" && options.config_path.empty()) {
        throw CLI::ValidationError(
            "--config (the ticket types to apply) is required with this backend");
    }
    if (!options.config_path.empty()) {
        auto loaded = config::load_file(options.config_path);
        if (!loaded) {
            throw CLI::ValidationError(loaded.error().message);
        }
        ticket_types = loaded->ticket_types;
    }
}

// The command line, checked; an exit code when the program should stop (help, or an error).
std::optional<int> parse_options(int argc, char** argv, Options& options,
                                 std::map<int, config::TicketTypeConfig>& ticket_types) {
    CLI::App app{
        "matchmesh-bench: simulated players against a matchmesh cluster (or the baselines)"};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-bench"));
    std::vector<std::string> types;
    std::vector<std::string> parties;
    std::string secret_file;
    app.add_option("--backend", options.backend, "cluster (default), redis, or ideal")
        ->check(CLI::IsMember({"cluster", "redis", "ideal"}));
    app.add_option("--nodes", options.nodes,
                   "client ports of the nodes, host:port, comma-separated")
        ->delimiter(',');
    app.add_option("--admin", options.admins, "metrics ports of the nodes, for their peak memory")
        ->delimiter(',');
    app.add_option("--redis", options.redis, "the Redis baseline's server, host:port");
    app.add_option("--redis-workers", options.redis_workers, "connections sending to Redis")
        ->check(CLI::Range(1, 64));
    app.add_option("--config", options.config_path,
                   "the cluster's config: its ticket types drive the ideal matcher");
    add_arrival_options(app, options, types, parties);
    app.add_option("--grace", options.grace, "seconds tickets may take after the last arrival");
    app.add_option("--retry-patience", options.retry_patience,
                   "seconds a player refused as overloaded keeps trying (after each hint)")
        ->check(CLI::Range(0.0, 3600.0));
    app.add_option("--processes", options.processes,
                   "player processes sharing the arrivals (each may hold ~20,000 connections)")
        ->check(CLI::Range(1, 16));
    app.add_option("--token-secret-file", secret_file,
                   "sign hello tokens with this cluster secret");
    app.add_option("--json", options.json_path, "write the report here");
    app.add_option("--chart", options.chart_path, "draw time to match into this PNG");
    app.add_option("--records", options.records_path,
                   "write every ticket's record here (JSON lines, in arrival order)");
    app.add_option("--samples", options.samples_path,
                   "write each matched ticket's time to match here");
    app.add_flag("--quiet", options.quiet, "no progress lines");
    try {
        app.parse(argc, argv);
        check_options(options, types, parties, secret_file, ticket_types);
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : 2;
    }
    return std::nullopt;
}

// The arrivals: replayed from --trace or generated, and saved to --trace-out.
std::expected<std::vector<Arrival>, std::string> load_arrivals(Options& options) {
    std::vector<Arrival> arrivals;
    if (!options.trace_in.empty()) {
        auto read = read_trace(options.trace_in);
        if (!read) {
            return std::unexpected(read.error());
        }
        arrivals = std::move(*read);
    } else {
        options.shape.user_prefix =
            fmt::format("bench-{:x}", std::random_device{}() ^ options.shape.seed);
        arrivals = generate_trace(options.shape);
    }
    if (!options.trace_out.empty()) {
        if (auto written = write_trace(options.trace_out, arrivals); !written) {
            return std::unexpected(written.error());
        }
    }
    return arrivals;
}

std::string backend_name(const Options& options) {
    return options.backend == "cluster" ? fmt::format("cluster ({} nodes)", options.nodes.size())
           : options.backend == "redis" ? std::string("Redis baseline")
                                        : std::string("ideal matcher");
}

// CPU seconds of this process and of its player processes that have ended.
double generator_cpu_seconds() {
    double total = 0;
    for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
        rusage usage{};
        getrusage(who, &usage);
        for (const timeval& time : {usage.ru_utime, usage.ru_stime}) {
            total += static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
        }
    }
    return total;
}

// The players' own CPU (this process and its player processes) over a run, and its share of the
// run's wall time: a figure taken while the generator used all of its CPU measures the
// generator, not the system under test.
class GeneratorClock {
public:
    void report(nlohmann::json& extra) const {
        const double cpu = generator_cpu_seconds() - cpu_before_;
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
        extra["generator_cpu_s"] = std::round(cpu * 100) / 100;
        extra["generator_cpu_share"] = wall > 0 ? std::round(cpu / wall * 1000) / 1000 : 0.0;
    }

private:
    double cpu_before_ = generator_cpu_seconds();
    std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
};

// Players against the cluster; the nodes' CPU time, frames and peak memory go into `extra`.
std::vector<TicketRecord> drive_cluster(const Options& options,
                                        const std::vector<Arrival>& arrivals,
                                        const std::map<int, config::TicketTypeConfig>& ticket_types,
                                        nlohmann::json& extra) {
    ClusterDriverOptions driver;
    driver.nodes = options.nodes;
    driver.value_name = options.value_name;
    driver.token_secret = options.token_secret;
    driver.grace_s = options.grace;
    driver.retry_patience_s = options.retry_patience;
    driver.seed = options.shape.seed;
    driver.progress = !options.quiet;
    for (const auto& [number, type] : ticket_types) {
        if (type.teams) {
            driver.teams[number] = *type.teams;
        }
    }
    // The nodes' frame counts are sampled each second (their CPU time is read when asked): wait
    // for a fresh sample before and after.
    const auto cpu_of = [&](const std::string& admin) {
        return node::read_metric(admin, "process_cpu_seconds_total");
    };
    // Counters added up over the nodes, from the sample before the run to the one after.
    struct Summed {
        const char* name;
        const char* metric;
        std::map<std::string, double> before{};
        double total = 0;
    };
    std::array<Summed, 3> summed{{
        {"mesh_frames", R"(matchmesh_mesh_frames_total{direction="out"})"},
        // Joins the nodes' rooms refused: each a round trip a searcher spent on a room that
        // another had taken (or that was gone) by the time its join came.
        {"refused_joins", R"(matchmesh_joins_total{result="refused"})"},
        // Times the nodes' threads slept and were woken (by a frame, a player, a timer): each a
        // trip through the kernel's scheduler, which costs more the more processes share a CPU.
        {"wakeups", R"(process_context_switches_total{kind="voluntary"})"},
    }};
    std::map<std::string, double> cpu_before;
    if (!options.admins.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    }
    for (const std::string& admin : options.admins) {
        cpu_before[admin] = cpu_of(admin);
        for (Summed& counter : summed) {
            counter.before[admin] = node::read_metric(admin, counter.metric);
        }
    }
    GeneratorClock generator;
    ClusterRun run = drive_cluster_in_processes(arrivals, driver, options.processes);
    generator.report(extra);
    extra["party_member_pushes"] = run.party_member_pushes;
    // How late the player processes ran their timers: a time to match measured while they ran
    // late holds their delay too.
    extra["generator_lag_ms"] = percentiles(std::move(run.lag_ms));
    if (!options.admins.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    }
    auto nodes = nlohmann::json::object();
    double cpu_total = 0;
    for (const std::string& admin : options.admins) {
        for (Summed& counter : summed) {
            counter.total +=
                std::max(0.0, node::read_metric(admin, counter.metric) - counter.before[admin]);
        }
        const double peak = node::read_metric(admin, "matchmesh_resident_bytes_peak");
        const double cpu = cpu_of(admin) - cpu_before[admin];
        cpu_total += std::max(0.0, cpu);
        nodes[admin] = {
            {"peak_rss_mib",
             peak < 0 ? nlohmann::json() : nlohmann::json(std::round(peak / 1048576.0 * 10) / 10)},
            {"cpu_s", std::round(cpu * 100) / 100}};
    }
    extra["nodes"] = nodes;
    if (!options.admins.empty()) {
        extra["server_cpu_s"] = std::round(cpu_total * 100) / 100;
        for (const Summed& counter : summed) {
            extra[counter.name] = counter.total;
        }
    }
    return std::move(run.records);
}

nlohmann::json make_report(const Options& options, const std::vector<TicketRecord>& records,
                           double window, nlohmann::json extra) {
    nlohmann::json report = summarize(records, window);
    report["backend"] = options.backend;
    report["window_s"] = std::round(window * 10) / 10;
    report.update(extra);
    report["settings"] = {{"rate_per_s", options.shape.rate},
                          {"duration_s", options.shape.duration},
                          {"rating_mean", options.shape.rating_mean},
                          {"rating_sd", options.shape.rating_sd},
                          {"seed", options.shape.seed},
                          {"trace", options.trace_in}};
    // A total of the run per completed match (times `scale`), to `places` decimals.
    const auto per_match = [&report](const char* total, const char* name, double scale,
                                     int places) {
        if (report.contains(total) && report["matches"].get<double>() > 0) {
            const double unit = std::pow(10.0, places);
            report[name] = std::round(report[total].get<double>() /
                                      report["matches"].get<double>() * scale * unit) /
                           unit;
        }
    };
    per_match("server_cpu_s", "cpu_s_per_1k_matches", 1000, 3);
    // Frames the nodes sent one another, per completed match: the protocol's cost.
    per_match("mesh_frames", "mesh_frames_per_match", 1, 1);
    per_match("refused_joins", "refused_joins_per_match", 1, 2);
    per_match("wakeups", "wakeups_per_match", 1, 1);
    return report;
}

void print_report(const Options& options, nlohmann::json& report,
                  const std::vector<Arrival>& arrivals, const std::vector<TicketRecord>& records,
                  const std::map<int, config::TicketTypeConfig>& ticket_types, double window) {
    print_table(report, options.backend == "cluster" ? "matchmesh cluster"
                        : options.backend == "redis" ? "Redis baseline"
                                                     : "ideal matcher");
    print_teams(report, options.backend.c_str());
    if (!ticket_types.empty() && options.backend != "ideal") {
        const nlohmann::json ideal = summarize(ideal_outcomes(arrivals, ticket_types), window);
        report["ideal"] = ideal;
        report["vs_ideal"] = compare(report, ideal, ticket_types);
        print_comparison(report["vs_ideal"]);
        print_teams(ideal, "ideal");
        if (report["refused"].get<std::size_t>() > 0 || report["retries"].get<std::size_t>() > 0) {
            // What the ideal matcher makes of the arrivals the cluster took, as it took them.
            const auto accepted = accepted_arrivals(arrivals, records);
            report["accepted_ideal"] = summarize(ideal_outcomes(accepted, ticket_types), window);
            std::printf("ideal matcher on the %zu accepted arrivals: fill %.1f%%\n",
                        accepted.size(), 100 * report["accepted_ideal"]["fill_rate"].get<double>());
        }
    }
    if (report.contains("nodes")) {
        for (const auto& [admin, node] : report["nodes"].items()) {
            if (node["peak_rss_mib"].is_number()) {
                std::printf("node %s peak RSS %.1f MiB, CPU %.2f s\n", admin.c_str(),
                            node["peak_rss_mib"].get<double>(), node["cpu_s"].get<double>());
            }
        }
    }
    if (report.contains("cpu_s_per_1k_matches")) {
        std::printf("server CPU %.2f s: %.3f s per 1,000 matches\n",
                    report["server_cpu_s"].get<double>(),
                    report["cpu_s_per_1k_matches"].get<double>());
    }
    if (report.contains("mesh_frames_per_match")) {
        std::printf("frames between nodes: %.1f per match\n",
                    report["mesh_frames_per_match"].get<double>());
    }
    if (report.contains("refused_joins_per_match")) {
        std::printf("joins refused by the rooms' nodes: %.2f per match\n",
                    report["refused_joins_per_match"].get<double>());
    }
    if (report.contains("wakeups_per_match")) {
        std::printf("wake-ups of the nodes: %.1f per match\n",
                    report["wakeups_per_match"].get<double>());
    }
    if (report.contains("generator_cpu_s")) {
        std::printf("load generator CPU %.2f s, %.0f%% of one CPU over the run\n",
                    report["generator_cpu_s"].get<double>(),
                    100 * report["generator_cpu_share"].get<double>());
    }
    if (report.contains("generator_lag_ms")) {
        std::printf("load generator ran late: p99 %.0f ms, at most %.0f ms\n",
                    report["generator_lag_ms"]["p99"].get<double>(),
                    report["generator_lag_ms"]["max"].get<double>());
    }
    if (report.contains("connect_wait_ms")) {
        std::printf("players waited to connect (in their process): p99 %.0f ms, at most %.0f ms\n",
                    report["connect_wait_ms"]["p99"].get<double>(),
                    report["connect_wait_ms"]["max"].get<double>());
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    std::map<int, config::TicketTypeConfig> ticket_types;
    if (auto exit_code = parse_options(argc, argv, options, ticket_types)) {
        return *exit_code;
    }
    auto arrivals = load_arrivals(options);
    if (!arrivals) {
        std::fprintf(stderr, "matchmesh-bench: %s\n", arrivals.error().c_str());
        return 2;
    }
    const double window = arrivals->empty() ? 0 : arrivals->back().at;
    std::map<int, double> types_seen;
    for (const auto& arrival : *arrivals) {
        types_seen[arrival.type] = 1;
    }
    if (!options.quiet) {
        std::fprintf(stderr, "matchmesh-bench: %zu parties over %.1f s against the %s\n",
                     arrivals->size(), window, backend_name(options).c_str());
    }

    std::vector<TicketRecord> records;
    nlohmann::json extra = nlohmann::json::object();
    if (options.backend == "cluster") {
        records = drive_cluster(options, *arrivals, ticket_types, extra);
    } else if (options.backend == "redis") {
        RedisBaselineOptions redis{options.redis, options.redis_workers, options.grace};
        GeneratorClock generator;
        auto run = run_redis_baseline(*arrivals, ticket_types, redis);
        generator.report(extra);
        if (!run) {
            std::fprintf(stderr, "matchmesh-bench: %s\n", run.error().c_str());
            return 3;
        }
        records = std::move(run->records);
        extra["server_cpu_s"] = std::round(run->server_cpu_s * 100) / 100;
        extra["redis"] = {{"address", options.redis},
                          {"workers", options.redis_workers},
                          {"server_cpu_s", run->server_cpu_s},
                          {"server_peak_rss_mib", run->server_peak_rss_mb}};
    } else {
        records = ideal_outcomes(*arrivals, ticket_types);
    }

    nlohmann::json report = make_report(options, records, window, std::move(extra));
    print_report(options, report, *arrivals, records, ticket_types, window);
    if (!options.json_path.empty()) {
        std::ofstream(options.json_path) << report.dump(2) << "\n";
        std::printf("report: %s\n", options.json_path.c_str());
    }
    if (!options.records_path.empty()) {
        std::ofstream file(options.records_path);
        for (const TicketRecord& record : records) {
            file << record_json(record).dump() << "\n";
        }
    }
    if (!options.samples_path.empty()) {
        write_samples(options.samples_path, records);
    }
    if (!options.chart_path.empty()) {
        write_chart(options.chart_path, records, types_seen);
    }
    return 0;
}
