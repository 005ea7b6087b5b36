#include "bench/sim_scale.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "bench/simulated_cluster.hpp"
#include "matching/matching.capnp.h"
#include "ticket/ticket.capnp.h"

namespace matchmesh::bench {
namespace {

using FramesByMethod = mesh::sim::SimWorld::FramesByMethod;

struct Window {
    double cpu_seconds = 0;
    double virtual_seconds = 0;
    std::uint64_t frames = 0;
    FramesByMethod by_method;
};

template <typename Run>
Window measure(SimulatedCluster& cluster, Run&& run) {
    const double cpu_before = cpu_seconds();
    const std::uint64_t frames_before = cluster.world().frames_delivered();
    FramesByMethod by_method = cluster.world().frames_delivered_by_method();
    const Time began = cluster.world().now();
    run();
    for (const auto& [method, count] : cluster.world().frames_delivered_by_method()) {
        by_method[method] = count - by_method[method];
    }
    return Window{cpu_seconds() - cpu_before,
                  std::chrono::duration<double>(cluster.world().now() - began).count(),
                  cluster.world().frames_delivered() - frames_before, std::move(by_method)};
}

// What the frames of a match are, by the matching and ticket methods that sent them (a request
// and its reply both count); the membership's are left out, as from frames_per_match.
nlohmann::json frames_by_method(const FramesByMethod& frames, double matches) {
    namespace matching_wire = matching::wire;
    namespace ticket_wire = ticket::wire;
    static const std::map<std::pair<mesh::ServiceId, mesh::MethodId>, const char*> names{
        {{matching_wire::SERVICE, matching_wire::METHOD_ADD}, "add"},
        {{matching_wire::SERVICE, matching_wire::METHOD_REMOVE}, "remove"},
        {{matching_wire::SERVICE, matching_wire::METHOD_SEARCH}, "search"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_JOIN}, "join"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_PUSH}, "push"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_LEAVE}, "leave"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_BROADCAST}, "broadcast"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_CLAIM}, "claim"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_RELEASE}, "release"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_SESSION}, "session"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_SESSION_END}, "session_end"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_SUPERSEDE}, "supersede"},
        {{ticket_wire::SERVICE, ticket_wire::METHOD_LOCATE}, "locate"}};
    nlohmann::json per_match = nlohmann::json::object();
    for (const auto& [method, count] : frames) {
        if (method.first == mesh::mesh_service || count == 0 || matches == 0) {
            continue;
        }
        const auto name = names.find(method);
        per_match[name != names.end()
                      ? std::string(name->second)
                      : fmt::format("{}.{}", method.first, method.second)] =
            static_cast<double>(count) / matches;
    }
    return per_match;
}

// A cluster that has just formed still gossips the news of every join: each rides on about
// 3 log2 N probe frames of every node that hears it, a minute's worth at 96 nodes. A cluster in
// service spread it long ago, so the measures start once no node has news left to spread.
Duration settle(SimulatedCluster& cluster) {
    const Time began = cluster.world().now();
    auto quiet = [&] {
        return std::ranges::all_of(cluster.world().nodes(), [](const auto& node) {
            return node->core().membership().news_to_spread() == 0;
        });
    };
    while (!quiet() && cluster.world().now() - began < std::chrono::minutes(10)) {
        cluster.world().run_for(std::chrono::seconds(1));
    }
    return std::chrono::duration_cast<Duration>(cluster.world().now() - began);
}

nlohmann::json measure_size(std::size_t nodes, const ScaleOptions& options,
                            const std::vector<Arrival>& arrivals) {
    const double setup_before = cpu_seconds();
    SimulatedCluster cluster(load_duel_config(), options.seed, arrivals.size() + 1, nodes);
    const Duration settled = settle(cluster);
    const double setup = cpu_seconds() - setup_before;
    const Window idle = measure(cluster, [&] { cluster.world().run_for(options.idle); });
    const Window run = measure(cluster, [&] { (void)cluster.play(arrivals); });

    const double matches = static_cast<double>(cluster.rooms_completed());
    const double membership_frames_s = static_cast<double>(idle.frames) / idle.virtual_seconds;
    const double match_frames =
        static_cast<double>(run.frames) - membership_frames_s * run.virtual_seconds;
    const double cpu_s_per_match = matches == 0 ? 0.0 : run.cpu_seconds / matches;
    const double membership_cpu_share =
        idle.cpu_seconds / idle.virtual_seconds / static_cast<double>(nodes);
    // A match's own CPU: the run's less what the same cluster spends idle over as long (its
    // probes and timers), as frames per match leave the membership's out. The capacity it
    // implies gives each node's CPU less that upkeep to matches.
    const double upkeep_cpu_s = idle.cpu_seconds / idle.virtual_seconds * run.virtual_seconds;
    const double own_cpu_s_per_match =
        matches == 0 ? 0.0 : std::max(0.0, run.cpu_seconds - upkeep_cpu_s) / matches;
    const double own_capacity =
        own_cpu_s_per_match == 0
            ? 0.0
            : static_cast<double>(nodes) * std::max(0.0, 1 - membership_cpu_share) /
                  own_cpu_s_per_match;
    nlohmann::json figures{
        {"nodes", nodes},
        {"replicas", cluster.replicas()},
        {"tickets", arrivals.size()},
        {"matches", cluster.rooms_completed()},
        {"fill_rate",
         static_cast<double>(cluster.tally.success) / static_cast<double>(arrivals.size())},
        {"frames_per_match", matches == 0 ? 0.0 : std::max(0.0, match_frames) / matches},
        {"frames_per_match_by_method", frames_by_method(run.by_method, matches)},
        {"membership_frames_per_node_s", membership_frames_s / static_cast<double>(nodes)},
        {"cpu_us_per_match", cpu_s_per_match * 1e6},
        {"membership_cpu_share_per_node", membership_cpu_share},
        {"match_cpu_us", own_cpu_s_per_match * 1e6},
        {"match_capacity", own_capacity},
        {"capacity", cpu_s_per_match == 0 ? 0.0 : static_cast<double>(nodes) / cpu_s_per_match},
        {"virtual_seconds", run.virtual_seconds},
        {"settle_virtual_seconds", std::chrono::duration<double>(settled).count()},
        {"setup_cpu_seconds", setup}};
    fmt::print(
        stderr,
        "scale: {:>4} nodes (R = {}): {:.1f} frames per match, {:.1f} membership frames "
        "per node per second, {:.0f} us CPU per match ({:.0f} without the idle upkeep), capacity "
        "{:.0f} matches/s ({:.0f}), fill {:.1f}% ({:.1f} s CPU)\n",
        nodes, figures["replicas"].get<std::size_t>(), figures["frames_per_match"].get<double>(),
        membership_frames_s / nodes, cpu_s_per_match * 1e6, own_cpu_s_per_match * 1e6,
        figures["capacity"].get<double>(), own_capacity,
        100 * figures["fill_rate"].get<double>(), setup + idle.cpu_seconds + run.cpu_seconds);
    std::string by_method;
    for (const auto& [name, per_match] : figures["frames_per_match_by_method"].items()) {
        by_method += fmt::format("{}{} {:.2f}", by_method.empty() ? "" : ", ", name,
                                 per_match.get<double>());
    }
    fmt::print(stderr, "scale: {:>4} nodes, frames per match by method: {}\n", nodes, by_method);
    return figures;
}

}  // namespace

nlohmann::json scale_mode(const ScaleOptions& options) {
    const std::vector<Arrival> arrivals = duel_trace(options.rate, options.seconds, options.seed);
    nlohmann::json runs = nlohmann::json::array();
    for (const std::size_t nodes : options.sizes) {
        runs.push_back(measure_size(nodes, options, arrivals));
    }
    return nlohmann::json{{"mode", "scale"},
                          {"rate", options.rate},
                          {"seconds", options.seconds},
                          {"seed", options.seed},
                          {"scale", runs}};
}

}  // namespace matchmesh::bench
