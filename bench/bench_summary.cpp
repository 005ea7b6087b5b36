// matchmesh-bench-summary: folds the reports of one scripts/bench.sh run into the summary.
//
// Reads <dir>/runs/<system>-<rate>.json (matchmesh-bench reports, system = matchmesh (3 nodes),
// single_node or redis, with the ideal's own run on each trace in ideal-<rate>.json) and, when
// present, the team run (runs/team-matchmesh.json, team-ideal.json), <dir>/sim-matches.json,
// sim-memory.json, sim-pool.json, sim-scale.json, sim-latency.json, mesh.json, entrance.json
// and, from --instructions, instructions.txt, scale-instructions.txt and pool-instructions.txt;
// writes <dir>/summary.json, <dir>/table.md and the charts' data and gnuplot scripts
// (ttm_cdf.png, ttm_vs_rate.png, scale.png), and prints the table.
//
// A system sustains a rate when its time-to-match p99 is under --p99-limit-ms and its fill rate
// is within --fill-gap-points of the ideal matcher's on the same arrivals (see sustained()).
// With --sustains REPORT --rate RATE it only says whether that one run sustained its rate (exit
// status 0 if so, 1 if not), for bench.sh to decide whether a ramp goes on.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>
#include <nlohmann/json.hpp>

#include "bench/fit.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
    std::ifstream file(path);
    if (!file) {
        return nullptr;
    }
    return json::parse(file, nullptr, false);
}

double round_to(double value, int digits) {
    const double scale = std::pow(10.0, digits);
    return std::round(value * scale) / scale;
}

struct Point {
    double rate = 0;
    json report;
};

struct Criteria {
    double p99_limit_ms = 1000;
    double fill_gap_points = 2;
    double offered_share_min = 0.9;
    double goodput_share_min = 0.97;
};

// A rate is sustained when no ticket is lost, the p99 time to match stays under its limit, the
// fill stays within its gap of the ideal's, the players really arrived at that rate (a generator
// that fell behind, as it shares the machine, offered a lower rate than the step's name), and the
// system kept up with them: it made matches while they arrived nearly as fast as the ideal did on
// the same arrivals. A system short of that builds a queue that grows all through the step, and
// a short step can end before the queue shows in the time to match.
bool sustained(const Point& point, const Criteria& criteria) {
    const json& report = point.report;
    const json& ideal = report.value("ideal", json::object());
    const double gap =
        ideal.contains("fill_rate")
            ? 100.0 * (ideal["fill_rate"].get<double>() - report["fill_rate"].get<double>())
            : 0.0;
    const double ideal_goodput = ideal.value("goodput_per_s", 0.0);
    return report["unfinished"].get<double>() == 0 &&
           report["ttm_ms"]["p99"].get<double>() < criteria.p99_limit_ms &&
           gap <= criteria.fill_gap_points &&
           report.value("arrivals_per_s", 0.0) >= criteria.offered_share_min * point.rate &&
           report.value("goodput_per_s", 0.0) >= criteria.goodput_share_min * ideal_goodput;
}

// The ideal's time to match on a step's trace: its own run (runs/ideal-RATE.json, which
// bench.sh saves while making the trace), else the ideal the step's report carries.
json ideal_ttm_of(const fs::path& dir, double rate, const json& step) {
    const json own = read_json(dir / "runs" / fmt::format("ideal-{}.json", rate));
    const json& report = own.is_object() ? own : step.value("ideal", json::object());
    if (!report.contains("ttm_ms")) {
        return nullptr;
    }
    return {{"p50", report["ttm_ms"]["p50"]}, {"p99", report["ttm_ms"]["p99"]}};
}

// What a step's tail is made of: players turned away (overloaded) who came back, and joins spent
// on rooms already taken; and what a match cost the nodes besides CPU time. Copied from the
// step's report into `entry`, where the report has them.
void add_work_per_match(const json& report, json& entry) {
    for (const char* key : {"mesh_frames_per_match", "refused_joins_per_match", "players_retried",
                            "wakeups_per_match"}) {
        if (report.contains(key)) {
            entry[key] = report[key];
        }
    }
}

json system_summary(const fs::path& dir, const std::vector<Point>& points,
                    const Criteria& criteria) {
    json summary;
    double max_rate = 0;
    const Point* at = points.empty() ? nullptr : &points.front();
    json by_rate = json::array();
    for (const Point& point : points) {
        const bool ok = sustained(point, criteria);
        if (ok && point.rate > max_rate) {
            max_rate = point.rate;
            at = &point;
        }
        json entry{{"rate", point.rate},
                   {"sustained", ok},
                   {"ttm_ms", point.report["ttm_ms"]},
                   {"fill_rate", point.report["fill_rate"]},
                   {"ideal_fill_rate",
                    point.report.value("ideal", json::object()).value("fill_rate", 0.0)},
                   {"ideal_ttm_ms", ideal_ttm_of(dir, point.rate, point.report)},
                   {"cpu_s_per_1k_matches", point.report.value("cpu_s_per_1k_matches", 0.0)},
                   {"generator_cpu_share", point.report.value("generator_cpu_share", json())}};
        add_work_per_match(point.report, entry);
        by_rate.push_back(std::move(entry));
    }
    summary["max_rate"] = max_rate;
    // The first rate above the ceiling that failed, and how busy the load generator was there:
    // a generator near all of its CPU means the ceiling found may be the generator's.
    for (const Point& point : points) {
        if (point.rate > max_rate && !sustained(point, criteria)) {
            summary["failed_at_rate"] = point.rate;
            summary["generator_cpu_share_there"] =
                point.report.value("generator_cpu_share", json());
            break;
        }
    }
    summary["by_rate"] = by_rate;
    if (at != nullptr) {
        const json& report = at->report;
        summary["at_rate"] = at->rate;
        summary["ttm_ms"] = report["ttm_ms"];
        summary["fill_rate"] = report["fill_rate"];
        if (report.contains("ideal")) {
            summary["ideal_ttm_ms"] = report["ideal"]["ttm_ms"];
            summary["ideal_fill_rate"] = report["ideal"]["fill_rate"];
        }
        summary["cpu_s_per_1k_matches"] = report.value("cpu_s_per_1k_matches", 0.0);
        if (report.contains("mesh_frames_per_match")) {
            summary["mesh_frames_per_match"] = report["mesh_frames_per_match"];
        }
        double rss = 0;
        if (report.contains("nodes")) {
            for (const auto& [address, node] : report["nodes"].items()) {
                rss = std::max(rss, node.value("peak_rss_mib", 0.0));
            }
        } else if (report.contains("redis")) {
            rss = report["redis"].value("server_peak_rss_mib", 0.0);
        }
        summary["rss_mb"] = round_to(rss, 1);  // the largest process's peak
    }
    return summary;
}

// Past the ceiling (runs/burst.json, runs/overload_2x.json, when bench.sh ran them): what was
// accepted and refused, lost, the accepted tickets' fill against the ideal matcher's on the
// arrivals as accepted, their p99 time to match, and goodput; for the 2x step, its goodput over
// the goodput at the highest sustained rate.
void add_overload_phases(const fs::path& dir, json& summary) {
    for (const char* phase : {"burst", "overload_2x"}) {
        const json report = read_json(dir / "runs" / (std::string(phase) + ".json"));
        if (!report.is_object()) {
            continue;
        }
        const json& ideal = report.contains("accepted_ideal") ? report["accepted_ideal"]
                            : report.contains("ideal")        ? report["ideal"]
                                                              : json::object();
        json part{{"accepted", report["tickets_started"]},
                  {"refused", report["refused"]},
                  {"players_retried", report["players_retried"]},
                  {"retries", report["retries"]},
                  {"lost", report["unfinished"]},
                  {"accepted_fill_rate", report["fill_rate"]},
                  {"ideal_fill_rate", ideal.value("fill_rate", json())},
                  {"accepted_ttm_p99_ms", report.value("accepted_ttm_ms", report["ttm_ms"])["p99"]},
                  {"goodput_per_s", report["goodput_per_s"]},
                  {"arrivals_per_s", report.value("arrivals_per_s", json())}};
        if (std::string(phase) == "overload_2x" && summary.contains("matchmesh") &&
            summary["matchmesh"].contains("at_rate")) {
            const json sustained = read_json(
                dir / "runs" /
                fmt::format("matchmesh-{}.json", summary["matchmesh"]["at_rate"].get<double>()));
            if (sustained.is_object() && sustained.value("goodput_per_s", 0.0) > 0) {
                part["sustained_goodput_per_s"] = sustained["goodput_per_s"];
                part["goodput_ratio"] = round_to(report["goodput_per_s"].get<double>() /
                                                     sustained["goodput_per_s"].get<double>(),
                                                 3);
            }
        }
        if (const json rates = read_json(dir / "runs" / "overload-rates.json");
            rates.is_object() && rates.contains(phase)) {
            part["planned_rate"] = rates[phase]["planned_rate"];
            part["offered_rate"] = rates[phase]["offered_rate"];
        }
        summary[phase] = part;
    }
}

// Every node paused under load (runs/pause.json, its plan in runs/pause-plan.json): time to match
// of all the step's players against the ideal's on the same arrivals, and the work per match,
// which rises when a pause tips the cluster past what it can drain.
void add_pause(const fs::path& dir, json& summary) {
    const json report = read_json(dir / "runs" / "pause.json");
    const json plan = read_json(dir / "runs" / "pause-plan.json");
    if (!report.is_object() || !plan.is_object()) {
        return;
    }
    json pause{{"rate", plan["rate"]},
               {"pause_ms", plan["pause_ms"]},
               {"ttm_ms", report["ttm_ms"]},
               {"ideal_ttm_ms", ideal_ttm_of(dir, plan["rate"].get<double>(), report)},
               {"fill_rate", report["fill_rate"]},
               {"lost", report["unfinished"]},
               {"cpu_s_per_1k_matches", report.value("cpu_s_per_1k_matches", json())}};
    add_work_per_match(report, pause);
    summary["pause"] = std::move(pause);
}

// The team run (runs/team-matchmesh.json, the ideal on its trace in runs/team-ideal.json): fill,
// time to match and the sides' difference against the ideal's, the matches that broke a limit,
// and whether it meets what we aim for: fill within the fill gap of the ideal's, p50 time to
// match within one search interval of the ideal's, nothing lost, no violation.
void add_teams(const fs::path& dir, const Criteria& criteria, json& summary) {
    const json report = read_json(dir / "runs" / "team-matchmesh.json");
    if (!report.is_object()) {
        return;
    }
    const json own_ideal = read_json(dir / "runs" / "team-ideal.json");
    const json ideal = own_ideal.is_object() ? own_ideal : report.value("ideal", json::object());
    const json teams = report.value("teams", json::object());
    const json ideal_teams = ideal.value("teams", json::object());
    const auto quality = [](const json& part, const char* field, const char* at) {
        return part.contains(field) ? part[field][at] : json();
    };
    json part{{"tickets_started", report["tickets_started"]},
              {"lost", report["unfinished"]},
              {"fill_rate", report["fill_rate"]},
              {"ideal_fill_rate", ideal.value("fill_rate", json())},
              {"ttm_p50_ms", report["ttm_ms"]["p50"]},
              {"ideal_ttm_p50_ms", quality(ideal, "ttm_ms", "p50")},
              {"ttm_p99_ms", report["ttm_ms"]["p99"]},
              {"ideal_ttm_p99_ms", quality(ideal, "ttm_ms", "p99")},
              {"matches", teams.value("matches", 0)},
              {"ideal_matches", ideal_teams.value("matches", 0)},
              {"side_difference_p50", quality(teams, "side_difference", "p50")},
              {"side_difference_p99", quality(teams, "side_difference", "p99")},
              {"ideal_side_difference_p50", quality(ideal_teams, "side_difference", "p50")},
              {"ideal_side_difference_p99", quality(ideal_teams, "side_difference", "p99")},
              {"violations", teams.value("violations", 0)},
              {"ideal_violations", ideal_teams.value("violations", 0)},
              {"violation_kinds", teams.value("violation_kinds", json::object())},
              {"arrivals_per_s", report.value("arrivals_per_s", json())}};
    double interval_ms = 0;
    const json gaps = report.value("vs_ideal", json::object());
    for (const auto& [type, gap] : gaps.items()) {
        interval_ms = std::max(interval_ms, gap.value("search_interval_ms", 0.0));
    }
    part["search_interval_ms"] = interval_ms;
    if (part["ideal_fill_rate"].is_number() && part["ideal_ttm_p50_ms"].is_number()) {
        const double gap_points =
            100.0 * (part["ideal_fill_rate"].get<double>() - part["fill_rate"].get<double>());
        const double over_ms =
            part["ttm_p50_ms"].get<double>() - part["ideal_ttm_p50_ms"].get<double>();
        part["fill_gap_points"] = round_to(gap_points, 1);
        part["ttm_p50_over_ideal_ms"] = round_to(over_ms, 1);
        part["meets_targets"] = gap_points <= criteria.fill_gap_points && over_ms <= interval_ms &&
                                part["violations"].get<std::size_t>() == 0 &&
                                part["lost"].get<std::size_t>() == 0;
    }
    summary["teams"] = part;
}

void write_charts(const fs::path& dir, const std::map<std::string, std::vector<Point>>& systems,
                  double cdf_rate) {
    // Latency against arrival rate, p50 and p99 per system.
    {
        std::ofstream data(dir / "ttm_vs_rate.dat");
        for (const auto& [name, points] : systems) {
            data << "# " << name << " rate p50 p99\n";
            for (const Point& point : points) {
                data << fmt::format("{} {} {}\n", point.rate,
                                    std::max(0.01, point.report["ttm_ms"]["p50"].get<double>()),
                                    std::max(0.01, point.report["ttm_ms"]["p99"].get<double>()));
            }
            data << "\n\n";
        }
        std::string plots;
        int index = 0;
        for (const auto& [name, points] : systems) {
            plots += fmt::format(
                "{}'{}' index {} using 1:2 with linespoints title '{} p50', '{}' index {} using "
                "1:3 with linespoints title '{} p99'",
                plots.empty() ? "" : ", ", (dir / "ttm_vs_rate.dat").string(), index, name,
                (dir / "ttm_vs_rate.dat").string(), index, name);
            ++index;
        }
        std::ofstream(dir / "ttm_vs_rate.gp") << fmt::format(
            "set terminal png size 1000,600\nset output '{}'\nset title 'time to match against "
            "arrival rate (1v1)'\nset xlabel 'arrivals per second'\nset ylabel 'time to match "
            "(ms)'\nset logscale y\nset grid\nplot {}\n",
            (dir / "ttm_vs_rate.png").string(), plots);
    }
    // The distribution of time to match at one rate: matchmesh, Redis, ideal.
    {
        std::string plots;
        for (const std::string name : {"matchmesh", "redis", "ideal"}) {
            const fs::path samples =
                dir / "runs" / fmt::format("{}-{}.samples", name, static_cast<int>(cdf_rate));
            if (!fs::exists(samples)) {
                continue;
            }
            // Matches at 0 ms (the ideal's) sit at the left edge: a log axis has no place for
            // them, and gnuplot would cut the cumulative line at each.
            plots += fmt::format(
                "{}'{}' using ($3 > 0.1 ? $3 : 0.1):(1.0/n_{}) smooth cumulative "
                "title '{}'",
                plots.empty() ? "" : ", ", samples.string(), name, name);
        }
        if (plots.empty()) {
            return;
        }
        std::string counts;
        for (const std::string name : {"matchmesh", "redis", "ideal"}) {
            const fs::path samples =
                dir / "runs" / fmt::format("{}-{}.samples", name, static_cast<int>(cdf_rate));
            std::size_t lines = 0;
            std::ifstream file(samples);
            std::string line;
            while (std::getline(file, line)) {
                lines += line.empty() || line[0] == '#' ? 0 : 1;
            }
            counts += fmt::format("n_{} = {}\n", name, std::max<std::size_t>(lines, 1));
        }
        std::ofstream(dir / "ttm_cdf.gp") << fmt::format(
            "set terminal png size 1000,600\nset output '{}'\nset title 'time to match, 1v1 at {} "
            "arrivals/s (CDF)'\nset xlabel 'time to match (ms)'\nset ylabel 'share of matched "
            "tickets'\nset logscale x\nset xrange [0.1:*]\nset grid\nset key bottom right\n{}plot "
            "{}\n",
            (dir / "ttm_cdf.png").string(), cdf_rate, counts, plots);
    }
}

std::string markdown(const json& summary) {
    std::string table =
        "| system | max sustained 1v1 rate (/s) | ttm p50 / p99 at it (ms) | ideal p50 / p99 (ms) "
        "| fill (ideal) | CPU s per "
        "1k matches | peak RSS (MiB) |\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (const std::string name : {"matchmesh", "single_node", "redis"}) {
        if (!summary.contains(name) || !summary[name].contains("ttm_ms")) {
            continue;
        }
        const json& s = summary[name];
        const std::string shown = name == "matchmesh"     ? "matchmesh, 3 nodes"
                                  : name == "single_node" ? "matchmesh, 1 node"
                                                          : "Redis baseline";
        table +=
            fmt::format("| {} | {} | {} / {} | {} / {} | {:.1f}% ({:.1f}%) | {} | {} |\n", shown,
                        s["max_rate"].get<double>(), s["ttm_ms"]["p50"].get<double>(),
                        s["ttm_ms"]["p99"].get<double>(), s["ideal_ttm_ms"]["p50"].get<double>(),
                        s["ideal_ttm_ms"]["p99"].get<double>(), 100 * s["fill_rate"].get<double>(),
                        100 * s["ideal_fill_rate"].get<double>(),
                        s["cpu_s_per_1k_matches"].get<double>(), s["rss_mb"].get<double>());
    }
    if (summary.contains("teams")) {
        const json& t = summary["teams"];
        const auto number = [](const json& value) {
            return value.is_number() ? fmt::format("{}", value.get<double>()) : std::string("-");
        };
        table += fmt::format(
            "\n| 3v3 | fill | ttm p50 (ms) | side difference p50 / p99 | violations |\n"
            "|---|---:|---:|---:|---:|\n"
            "| matchmesh | {:.1f}% | {} | {} / {} | {} |\n| ideal | {:.1f}% | {} | {} / {} | {} "
            "|\n",
            100 * t["fill_rate"].get<double>(), number(t["ttm_p50_ms"]),
            number(t["side_difference_p50"]), number(t["side_difference_p99"]),
            t["violations"].dump(), 100 * t.value("ideal_fill_rate", 0.0),
            number(t["ideal_ttm_p50_ms"]), number(t["ideal_side_difference_p50"]),
            number(t["ideal_side_difference_p99"]), t["ideal_violations"].dump());
    }
    table += fmt::format("\nrate ratio (matchmesh / redis): {}, 1 node: {}\n",
                         summary.value("rate_ratio", json()).dump(),
                         summary.value("single_node_rate_ratio", json()).dump());
    for (const std::string key :
         {"instructions_per_match", "allocations_per_match", "bytes_per_waiting_ticket",
          "pool_growth_exponent", "pool_growth_exponent_by_instructions"}) {
        if (summary.contains(key)) {
            table += fmt::format("{}: {}\n", key, summary[key].dump());
        }
    }
    if (summary.contains("websocket_entrance")) {
        const json& e = summary["websocket_entrance"];
        table += fmt::format(
            "\nWebSocket entrance (matchmesh-gateway) against the client port, {} commands/s: "
            "round trip {} ms over TCP, {} ms over WebSocket; CPU per command: node {} us (TCP), "
            "node {} us + gateway {} us (WebSocket)\n",
            e["offered_per_s"].dump(), e["tcp"]["round_trip_ms"].dump(),
            e["websocket"]["round_trip_ms"].dump(), e["tcp"]["node_cpu_us_per_command"].dump(),
            e["websocket"]["node_cpu_us_per_command"].dump(),
            e["websocket"]["gateway_cpu_us_per_command"].dump());
    }
    if (summary.contains("scale") && !summary["scale"].empty()) {
        const bool counted = summary["scale"].front().contains("instructions_per_match");
        table += fmt::format(
            "\n| nodes | frames per match | membership frames per node per s | CPU us per "
            "match | capacity (matches/s) |{}\n|---:|---:|---:|---:|---:|{}\n",
            counted ? " instructions per match | capacity by instructions (x smallest) |" : "",
            counted ? "---:|---:|" : "");
        for (const json& size : summary["scale"]) {
            table += fmt::format(
                "| {} | {:.1f} | {:.1f} | {:.0f} | {:.0f} |", size["nodes"].get<std::size_t>(),
                size["frames_per_match"].get<double>(),
                size["membership_frames_per_node_s"].get<double>(),
                size["cpu_us_per_match"].get<double>(), size["capacity"].get<double>());
            if (counted) {
                table +=
                    fmt::format(" {} | {} |", size.value("instructions_per_match", json()).dump(),
                                size.value("capacity_vs_smallest_by_instructions", json()).dump());
            }
            table += "\n";
        }
    }
    return table;
}

// The ramp's runs, by system (runs/SYSTEM-RATE.json, e.g. redis-500.json), by rate.
std::map<std::string, std::vector<Point>> read_runs(const fs::path& dir) {
    std::map<std::string, std::vector<Point>> systems;
    // Runs are named SYSTEM-RATE.json, e.g. redis-500.json.
    for (const auto& entry : fs::directory_iterator(dir / "runs")) {
        const std::string stem = entry.path().stem().string();
        const auto dash = stem.rfind('-');
        if (entry.path().extension() != ".json" || dash == std::string::npos) {
            continue;
        }
        const std::string system = stem.substr(0, dash);
        const std::string rate = stem.substr(dash + 1);
        if ((system != "matchmesh" && system != "single_node" && system != "redis") ||
            rate.empty() || rate.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        json report = read_json(entry.path());
        if (report.is_object()) {
            systems[system].push_back({std::stod(rate), std::move(report)});
        }
    }
    for (auto& [system, points] : systems) {
        std::sort(points.begin(), points.end(),
                  [](const Point& a, const Point& b) { return a.rate < b.rate; });
    }
    return systems;
}

// Instructions per match at each cluster size (scale-instructions.txt: "NODES INSTRUCTIONS" a
// line, from --instructions), and the capacity they imply against the smallest size: nodes per
// instruction per match, relative. CPU seconds on a shared machine drift by half from run to
// run; these do not.
void add_scale_instructions(const fs::path& dir, json& scale) {
    std::ifstream lines(dir / "scale-instructions.txt");
    std::map<std::size_t, double> per_match;
    std::size_t nodes = 0;
    double total = 0;
    while (lines >> nodes >> total) {
        for (const json& size : scale) {
            if (size.value("nodes", std::size_t{0}) == nodes && size.value("matches", 0.0) > 0) {
                per_match[nodes] = total / size["matches"].get<double>();
            }
        }
    }
    if (per_match.empty()) {
        return;
    }
    const auto& [smallest, smallest_cost] = *per_match.begin();
    for (json& size : scale) {
        auto found = per_match.find(size.value("nodes", std::size_t{0}));
        if (found == per_match.end()) {
            continue;
        }
        size["instructions_per_match"] = static_cast<std::int64_t>(std::round(found->second));
        size["capacity_vs_smallest_by_instructions"] =
            std::round(100 * (static_cast<double>(found->first) / found->second) /
                       (static_cast<double>(smallest) / smallest_cost)) /
            100;
    }
}

// Instructions per newcomer at each pool size (pool-instructions.txt: "POOL INSTRUCTIONS" a line,
// the newcomers' windows under callgrind, from --instructions), and the growth exponent they give:
// the pool's cost as the newcomer's own code pays it, which a busy host or the caches a larger
// pool misses cannot move.
void add_pool_instructions(const fs::path& dir, json& summary) {
    std::ifstream lines(dir / "pool-instructions.txt");
    std::vector<double> log_pool;
    std::vector<double> log_cost;
    std::size_t pool = 0;
    double total = 0;
    while (lines >> pool >> total) {
        for (json& run : summary["sim_pool"]["runs"]) {
            if (run.value("pool", std::size_t{0}) == pool && run.value("newcomers", 0.0) > 0) {
                const double per_newcomer = total / run["newcomers"].get<double>();
                run["instructions_per_newcomer"] = std::round(per_newcomer);
                log_pool.push_back(std::log(static_cast<double>(pool)));
                log_cost.push_back(std::log(per_newcomer));
            }
        }
    }
    if (log_pool.size() >= 2) {
        summary["pool_growth_exponent_by_instructions"] =
            std::round(1000 * matchmesh::bench::least_squares_slope(log_pool, log_cost)) / 1000;
    }
}

// The simulation benchmark's figures, when the run made them.
void add_simulation(const fs::path& dir, json& summary) {
    if (const json matches = read_json(dir / "sim-matches.json"); matches.is_object()) {
        summary["sim_matches"] = matches;
        if (matches.contains("allocations_per_match")) {
            summary["allocations_per_match"] = matches["allocations_per_match"];
        }
        std::ifstream instructions(dir / "instructions.txt");
        double total = 0;
        if (instructions >> total && matches.value("matches", 0.0) > 0) {
            summary["instructions_per_match"] =
                std::round(total / matches["matches"].get<double>());
        }
    }
    // Remote searches with 20-item answers between two nodes (matchmesh-bench-mesh).
    if (const json mesh = read_json(dir / "mesh.json"); mesh.is_object()) {
        summary["remote_searches"] = mesh;
    }
    if (const json memory = read_json(dir / "sim-memory.json"); memory.is_object()) {
        summary["bytes_per_waiting_ticket"] = memory.value("bytes_per_waiting_ticket", json());
        summary["sim_memory"] = memory;
    }
    if (const json pool = read_json(dir / "sim-pool.json"); pool.is_object()) {
        summary["pool_growth_exponent"] = pool.value("pool_growth_exponent", json());
        summary["sim_pool"] = pool;
        add_pool_instructions(dir, summary);
    }
    if (const json entrance = read_json(dir / "entrance.json"); entrance.is_object()) {
        summary["websocket_entrance"] = entrance;
    }
    // Time to match in virtual time against the ideal: the matching's own timing, without the
    // machine's CPU and scheduling.
    if (const json latency = read_json(dir / "sim-latency.json"); latency.is_object()) {
        summary["sim_latency"] = latency;
    }
    if (const json scale = read_json(dir / "sim-scale.json"); scale.is_object()) {
        summary["scale"] = scale.value("scale", json::array());
        summary["scale_trace"] = {{"rate", scale.value("rate", json())},
                                  {"seconds", scale.value("seconds", json())}};
        add_scale_instructions(dir, summary["scale"]);
    }
}

// Cost against cluster size, from the simulation: frames and CPU per match, log-log.
void write_scale_chart(const fs::path& dir, const json& summary) {
    if (!summary.contains("scale") || summary["scale"].empty()) {
        return;
    }
    std::ofstream data(dir / "scale.dat");
    data << "# nodes frames_per_match membership_frames_per_node_s cpu_us_per_match\n";
    for (const json& size : summary["scale"]) {
        data << fmt::format("{} {} {} {}\n", size["nodes"].get<std::size_t>(),
                            std::max(0.01, size["frames_per_match"].get<double>()),
                            std::max(0.01, size["membership_frames_per_node_s"].get<double>()),
                            std::max(0.01, size["cpu_us_per_match"].get<double>()));
    }
    const std::string file = (dir / "scale.dat").string();
    std::ofstream(dir / "scale.gp") << fmt::format(
        "set terminal png size 1000,600\nset output '{}'\nset title 'cost against cluster size "
        "(simulated, same total arrival rate)'\nset xlabel 'nodes'\nset logscale xy\nset grid\n"
        "plot '{}' using 1:2 with linespoints title 'frames per match', '{}' using 1:3 with "
        "linespoints title 'membership frames per node per second', '{}' using 1:4 with "
        "linespoints title 'CPU us per match'\n",
        (dir / "scale.png").string(), file, file, file);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"matchmesh-bench-summary: the summary of a scripts/bench.sh run"};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-bench-summary"));
    std::string dir_text;
    Criteria criteria;
    double cdf_rate = 1000;
    std::string placement;
    app.add_option("dir", dir_text, "the run's folder (not with --sustains)");
    app.add_option("--p99-limit-ms", criteria.p99_limit_ms,
                   "time-to-match p99 a sustained rate stays under");
    app.add_option("--fill-gap-points", criteria.fill_gap_points,
                   "fill-rate points a sustained rate may lose to the ideal");
    app.add_option("--offered-share-min", criteria.offered_share_min,
                   "the share of a step's rate its players must really arrive at");
    app.add_option("--goodput-share-min", criteria.goodput_share_min,
                   "the share of the ideal's matches per second (made while players arrive) a "
                   "sustained rate keeps up with");
    app.add_option("--cdf-rate", cdf_rate, "the rate whose time-to-match distribution is charted");
    app.add_option("--placement", placement, "where the processes ran (CPUs), for the record");
    std::string sustains;
    double sustains_rate = 0;
    app.add_option("--sustains", sustains,
                   "only say whether this run's report sustained --rate (exit status 0 if so)");
    app.add_option("--rate", sustains_rate, "the rate the --sustains run was offered");
    CLI11_PARSE(app, argc, argv);
    if (!sustains.empty()) {
        json report = read_json(sustains);
        if (!report.is_object() || !report.contains("ttm_ms") || sustains_rate <= 0) {
            std::fprintf(stderr,
                         "matchmesh-bench-summary: %s is not a run's report (or --rate "
                         "is missing)\n",
                         sustains.c_str());
            return 2;
        }
        const bool ok = sustained(Point{sustains_rate, std::move(report)}, criteria);
        std::printf("%s\n", ok ? "sustained" : "not sustained");
        return ok ? 0 : 1;
    }
    if (dir_text.empty()) {
        std::fprintf(stderr, "matchmesh-bench-summary: the run's folder is required\n");
        return 2;
    }
    const fs::path dir(dir_text);

    const std::map<std::string, std::vector<Point>> systems = read_runs(dir);
    json summary = json::object();
    for (const auto& [system, points] : systems) {
        summary[system] = system_summary(dir, points, criteria);
    }
    // Each matchmesh ceiling against the Redis baseline's.
    for (const auto& [system, ratio] : {std::pair{"matchmesh", "rate_ratio"},
                                        std::pair{"single_node", "single_node_rate_ratio"}}) {
        if (summary.contains(system) && summary.contains("redis") &&
            summary["redis"]["max_rate"].get<double>() > 0) {
            summary[ratio] = round_to(summary[system]["max_rate"].get<double>() /
                                          summary["redis"]["max_rate"].get<double>(),
                                      2);
        }
    }
    add_simulation(dir, summary);
    add_overload_phases(dir, summary);
    add_pause(dir, summary);
    add_teams(dir, criteria, summary);
    summary["criteria"] = {{"p99_limit_ms", criteria.p99_limit_ms},
                           {"fill_gap_points", criteria.fill_gap_points},
                           {"offered_share_min", criteria.offered_share_min},
                           {"goodput_share_min", criteria.goodput_share_min}};
    summary["placement"] = placement;
    std::ofstream(dir / "summary.json") << summary.dump(2) << "\n";
    write_charts(dir, systems, cdf_rate);
    write_scale_chart(dir, summary);
    const std::string table = markdown(summary);
    std::ofstream(dir / "table.md") << table;
    std::printf("%s", table.c_str());
    return 0;
}
