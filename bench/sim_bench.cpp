// matchmesh-bench-sim: costs that noise cannot move. The stock node's core — its services and
// its client command semantics, built as the node builds them — runs a simulated cluster (3
// nodes but in `scale`) in one process (the tests' SimulatedCluster harness: virtual time, no
// sockets, 1 ms links), so a seed gives the same events on every run (event_log_hash says so).
// Nothing is random beyond the seed: ConfiguredTicketTypes only draws from its own generator for
// `randomize`, which these ticket types leave at 0.
//
//   matchmesh-bench-sim matches
//       A fixed, seeded trace of 10,000 1v1 tickets (500/s for 20 s, ratings N(1500, 300)), users
//       connected round-robin to the nodes, run until every ticket has ended. Reports the rooms
//       completed ("matches"); the measured part is the function run_matches, so that
//         valgrind --tool=callgrind --toggle-collect='*run_matches*' matchmesh-bench-sim matches
//       counts only it, and instructions per match = callgrind's Ir / "matches". (Without the
//       toggle, the setup — config, trace, convergence — adds about 3% to the count.) Also
//       counts the heap allocations run_matches makes, per match (bench/allocation_count.hpp).
//   matchmesh-bench-sim memory --waiting 100000
//       N tickets waiting at once (room open, item on every replica); heap bytes in use per
//       waiting ticket, across the three nodes (mallinfo2), the user's session included. The
//       simulated scheduler's entries for each ticket's two timers count too, where a node would
//       hold Asio timers. Unless --no-split, again with 1 and 3 replicas per item, which splits
//       the figure into store item copies and everything else.
//   matchmesh-bench-sim pool --sizes 1000,10000,100000
//       For each pool size P, 1,000 newcomers match one at a time into a pool of P waiting
//       tickets of which only 10% could match them; CPU time and virtual time per newcomer, and
//       the slope of log(CPU per newcomer) over log(P) (0: a newcomer costs the same whatever the
//       pool). The mean counts the periodic work that lands in a newcomer's window (the store's
//       sweeps, which grow with P); the median is the newcomer's own work. The measured part is
//       the function measure_newcomer, so that callgrind can count the instructions of the same
//       windows (--toggle-collect='*measure_newcomer*', scripts/bench.sh --instructions).
//
//   matchmesh-bench-sim latency [--rate 5000 --seconds 10 --nodes 3 --link-ms 1]
//       Time to match in virtual time against the ideal matcher on the same 1v1 arrivals
//       (bench/sim_latency.hpp): what the matching's own timing costs a player, free of CPU
//       and scheduling noise; slower links show how it grows when each trip between nodes
//       takes longer.
//   matchmesh-bench-sim scale --nodes 3,6,12,24,48,96,192 [--rate 500 --seconds 10]
//       The same 1v1 trace on clusters of each size: frames per match, membership frames per
//       node and second, CPU per match and the capacity it implies (bench/sim_scale.hpp).
//
// One JSON object goes to stdout; human lines go to stderr.

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>
#include <nlohmann/json.hpp>

#include "bench/allocation_count.hpp"
#include "bench/fit.hpp"
#include "bench/sim_latency.hpp"
#include "bench/sim_scale.hpp"
#include "bench/simulated_cluster.hpp"
#include "bench/trace.hpp"
#include "config/config.hpp"
#include "matching/service.hpp"
#include "mesh/base/assert.hpp"
#include "mesh/sim/sim_world.hpp"
#include "node/client_protocol.hpp"
#include "node/services.hpp"
#include "support/core_cluster.hpp"
#include "ticket/service.hpp"

namespace {

using namespace matchmesh;
using namespace matchmesh::bench;
using nlohmann::json;

constexpr std::size_t nodes_count = 3;
constexpr ticket::TicketType other_type = 2;  // pool mode: the same profile under another tag

// Bytes the program holds: small chunks in the arenas plus chunks malloc gave their own mapping
// (large vectors and hash tables), which uordblks alone would miss.
std::int64_t heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

// --- matches -------------------------------------------------------------------------------

struct MatchesFigures {
    std::uint64_t matches = 0;  // rooms completed
    Tally tally;
    double virtual_seconds = 0;
};

// The measured part: each arrival connects and starts its ticket at its time, then virtual time
// runs until every user has had its terminal push. Not inlined, so that callgrind's
// --toggle-collect='*run_matches*' finds it.
[[gnu::noinline]] MatchesFigures run_matches(SimulatedCluster& cluster,
                                             const std::vector<bench::Arrival>& arrivals) {
    const Duration spent = cluster.play(arrivals);
    MatchesFigures figures;
    figures.matches = cluster.rooms_completed();
    figures.tally = cluster.tally;
    figures.virtual_seconds = std::chrono::duration<double>(spent).count();
    return figures;
}

json matches_mode(std::uint64_t seed) {
    const std::vector<bench::Arrival> arrivals = duel_trace(500, 20, seed);
    SimulatedCluster cluster(load_duel_config(), seed, ticket::TicketServiceOptions{}.tickets_max);

    const double cpu_before = cpu_seconds();
    const std::optional<std::uint64_t> allocations_before = allocations();
    const MatchesFigures figures = run_matches(cluster, arrivals);
    const std::optional<std::uint64_t> allocations_after = allocations();
    const double cpu = cpu_seconds() - cpu_before;

    const double fill_rate =
        static_cast<double>(figures.tally.success) / static_cast<double>(arrivals.size());
    fmt::print(stderr,
               "matches: {} tickets, {} rooms completed, fill rate {:.1f}% ({} matched, {} timed "
               "out, {} canceled), {:.1f} s virtual, {:.2f} s CPU in run_matches\n",
               arrivals.size(), figures.matches, 100 * fill_rate, figures.tally.success,
               figures.tally.timeout, figures.tally.cancel, figures.virtual_seconds, cpu);
    json allocations_per_match;  // null where this build does not count them
    if (allocations_before && allocations_after && figures.matches > 0) {
        allocations_per_match = static_cast<double>(*allocations_after - *allocations_before) /
                                static_cast<double>(figures.matches);
    }
    return json{{"mode", "matches"},
                {"seed", seed},
                {"tickets", arrivals.size()},
                {"matches", figures.matches},
                {"matched_tickets", figures.tally.success},
                {"timed_out", figures.tally.timeout},
                {"canceled", figures.tally.cancel},
                {"fill_rate", fill_rate},
                {"virtual_seconds", figures.virtual_seconds},
                {"cpu_seconds_run_matches", cpu},
                {"cpu_us_per_match", figures.matches == 0 ? 0.0 : cpu * 1e6 / figures.matches},
                {"allocations_per_match", allocations_per_match},
                {"event_log_hash", cluster.world().event_log_hash()}};
}

// --- memory --------------------------------------------------------------------------------

struct WaitingFigures {
    int distribution_rate = 0;
    std::size_t replicas = 0;
    std::size_t items = 0;
    std::int64_t heap_bytes = 0;   // sessions and waiting tickets
    double bytes_per_ticket = 0;   // the same, per ticket
    double bytes_per_session = 0;  // of that, the connected user alone
    double seconds = 0;
};

// Users connect and start at this pace (a million a second of virtual time), so that few frames
// are in flight at once: a burst of all of them would leave the event queue's arrays sized for
// the burst, which the heap would then count per ticket.
constexpr std::size_t starts_per_ms = 1000;

// `waiting` users connect, then start duel tickets that skip searching (searchTries 0 and no wait
// search) and wait for an hour: each has its room open and its item on every replica when the
// heap is read.
WaitingFigures measure_waiting(int distribution_rate, std::size_t waiting, std::uint64_t seed) {
    const double cpu_before = cpu_seconds();
    config::Config config = load_duel_config();
    config.matching.distribution_rate = distribution_rate;
    config::TicketTypeConfig& duel = config.ticket_types.at(duel_type);
    duel.search_tries = 0;
    duel.wait_searches = 0;
    duel.ticket_duration_seconds = 3600;
    SimulatedCluster cluster(std::move(config), seed, waiting);
    cluster.world().run_for(std::chrono::seconds(2));  // periodic sweeps have run and re-armed
    const auto user = [](std::size_t i) { return UserId(fmt::format("waiting-{}", i)); };

    const std::int64_t before = heap_in_use();
    for (std::size_t i = 0; i < waiting; ++i) {
        cluster.connect_user(i % nodes_count, user(i));
        if ((i + 1) % starts_per_ms == 0) {
            cluster.world().run_for(Duration(1));
        }
    }
    cluster.world().run_for(Duration(10));  // the session announcements have arrived
    const std::int64_t connected = heap_in_use();
    std::mt19937_64 random(seed);
    std::normal_distribution<double> rating(1500, 300);
    for (std::size_t i = 0; i < waiting; ++i) {
        cluster.start_ticket(user(i), duel_type, std::llround(rating(random)));
        if ((i + 1) % starts_per_ms == 0) {
            cluster.world().run_for(Duration(1));
        }
    }
    WaitingFigures figures;
    figures.distribution_rate = distribution_rate;
    figures.replicas = cluster.replicas();
    figures.items = waiting * figures.replicas;
    cluster.run_until([&] { return cluster.items_stored() == figures.items; },
                      std::chrono::seconds(10), "every waiting ticket's items on their replicas");
    if (cluster.tickets_in(ticket::TicketPhase::waiting) != waiting) {
        fatal("memory: not every ticket is waiting");
    }
    if (before == 0) {
        fmt::print(stderr,
                   "memory: mallinfo2 reports no heap (another allocator, e.g. under "
                   "valgrind): the byte counts are meaningless\n");
    }
    figures.heap_bytes = heap_in_use() - before;
    const auto count = static_cast<double>(waiting);
    figures.bytes_per_ticket = static_cast<double>(figures.heap_bytes) / count;
    figures.bytes_per_session = static_cast<double>(connected - before) / count;
    figures.seconds = cpu_seconds() - cpu_before;
    fmt::print(stderr,
               "memory: {} waiting tickets, {} replica(s) per item (distributionRate {}): {:.0f} "
               "bytes per waiting ticket, of which {:.0f} the user's session ({:.1f} MB in all), "
               "{:.1f} s CPU\n",
               waiting, figures.replicas, distribution_rate, figures.bytes_per_ticket,
               figures.bytes_per_session, static_cast<double>(figures.heap_bytes) / 1e6,
               figures.seconds);
    return figures;
}

json waiting_json(const WaitingFigures& figures) {
    return json{{"distribution_rate", figures.distribution_rate},
                {"replicas", figures.replicas},
                {"items_stored", figures.items},
                {"heap_bytes", figures.heap_bytes},
                {"bytes_per_waiting_ticket", figures.bytes_per_ticket},
                {"bytes_per_session", figures.bytes_per_session},
                {"cpu_seconds", figures.seconds}};
}

json memory_mode(std::size_t waiting, bool split, std::uint64_t seed) {
    const WaitingFigures stock = measure_waiting(50, waiting, seed);
    json report{{"mode", "memory"},
                {"waiting", waiting},
                {"bytes_per_waiting_ticket", stock.bytes_per_ticket},
                {"replicas", stock.replicas},
                {"heap_bytes", stock.heap_bytes}};
    if (!split) {
        return report;
    }
    // One, two and three replicas per item: what grows with them is the store's copies.
    const WaitingFigures one = measure_waiting(1, waiting, seed);
    const WaitingFigures all = measure_waiting(100, waiting, seed);
    const std::vector<double> replicas{static_cast<double>(one.replicas),
                                       static_cast<double>(stock.replicas),
                                       static_cast<double>(all.replicas)};
    const double per_replica = least_squares_slope(
        replicas, {one.bytes_per_ticket, stock.bytes_per_ticket, all.bytes_per_ticket});
    const double rest = stock.bytes_per_ticket - per_replica * replicas[1];
    fmt::print(stderr,
               "memory: split: {:.0f} bytes per stored item copy; {:.0f} bytes per ticket without "
               "its items: {:.0f} the session, {:.0f} the ticket, its room, its timers and the "
               "origin's record of its item\n",
               per_replica, rest, stock.bytes_per_session, rest - stock.bytes_per_session);
    report["runs"] = json::array({waiting_json(one), waiting_json(stock), waiting_json(all)});
    report["bytes_per_item_replica"] = per_replica;
    report["bytes_per_ticket_without_items"] = rest;
    report["bytes_per_session"] = stock.bytes_per_session;
    return report;
}

// --- pool ----------------------------------------------------------------------------------

// Slot j of the pool is a duel ticket at 1000 j + 500, alone in any search window around it
// (a search spans +-200, bucket width 100, slots 1000 apart), so a newcomer at 1000 j + 520
// matches exactly it.
std::int64_t slot_rating(std::size_t slot) {
    return static_cast<std::int64_t>(slot) * 1000 + 500;
}

struct PoolFigures {
    std::size_t pool = 0;
    std::size_t relevant = 0;
    std::vector<double> cpu_us;        // per newcomer, in its window
    std::vector<std::int64_t> ttm_ms;  // per newcomer, virtual
    double idle_cpu_seconds = 0;       // the newcomers' virtual time again, with no newcomer
    double virtual_seconds = 0;        // of the newcomers' phase
    double setup_seconds = 0;
};

constexpr Duration settle_after_fill = std::chrono::seconds(1);  // ten search intervals

// The pool: `slots` duel tickets (the relevant 10%), the slot on node slot % 3, and nine "other"
// tickets per slot in the same buckets under another tag, which duel searches (empty tag) never
// read.
void fill_pool(SimulatedCluster& cluster, std::size_t pool, std::size_t slots) {
    for (std::size_t k = 0; k < pool - slots; ++k) {
        const std::int64_t offset = static_cast<std::int64_t>(k % 5) * 100 - 200;
        cluster.connect_and_start(k % nodes_count, UserId(fmt::format("other-{}", k)), other_type,
                                  slot_rating(k % slots) + offset);
    }
    for (std::size_t slot = 0; slot < slots; ++slot) {
        cluster.connect_and_start(slot % nodes_count, UserId(fmt::format("slot-{}-0", slot)),
                                  duel_type, slot_rating(slot));
    }
    const std::size_t items = pool * cluster.replicas();
    cluster.run_until([&] { return cluster.items_stored() == items; }, std::chrono::seconds(10),
                      "the pool's items on their replicas");
    // Each ticket whose first search found nothing looks once more soon after (within a quarter
    // of its search interval), and the duel tickets search again at their interval: the pool's
    // own work, which would otherwise land in the first newcomers' windows (at 100,000 tickets,
    // tens of thousands of searches). The measures start once it is done.
    cluster.world().run_for(settle_after_fill);
}

// One newcomer, measured from its start until it has its 220 and its partner's items are gone.
// It connects to the node after the slot's, so that every size measures a join across nodes.
[[gnu::noinline]] void measure_newcomer(SimulatedCluster& cluster, std::size_t index,
                                        std::size_t slot, std::size_t pool, PoolFigures& figures) {
    const UserId user(fmt::format("newcomer-{}", index));
    std::optional<Time> matched_at;
    cluster.on_terminal = [&](const UserId& who, const ticket::PushMessage& message) {
        if (who == user) {
            if (message.kind != ticket::PushKind::success) {
                fatal(fmt::format("pool: {} ended without a match", user.str()));
            }
            matched_at = cluster.world().now();
        }
    };
    const std::size_t items_after = (pool - 1) * cluster.replicas();
    const Time started_at = cluster.world().now();
    const double cpu_before = cpu_seconds();
    cluster.connect_and_start((slot + 1) % nodes_count, user, duel_type, slot_rating(slot) + 20);
    cluster.run_until([&] { return matched_at && cluster.items_stored() == items_after; },
                      std::chrono::seconds(5), "a newcomer's match");
    figures.cpu_us.push_back((cpu_seconds() - cpu_before) * 1e6);
    figures.ttm_ms.push_back((*matched_at - started_at).count());
    cluster.on_terminal = nullptr;
}

// Background work (heartbeats, sweeps) lands in some newcomers' windows too: the same virtual
// time again, with no newcomer, says how much there is. A function of its own, so that
// profilers can tell it apart.
[[gnu::noinline]] double run_idle(SimulatedCluster& cluster, Duration spent) {
    const double cpu_before = cpu_seconds();
    cluster.world().run_for(spent);
    return cpu_seconds() - cpu_before;
}

PoolFigures measure_pool(std::size_t pool, std::size_t newcomers, std::uint64_t seed) {
    const double setup_before = cpu_seconds();
    config::Config config = load_duel_config();
    config::TicketTypeConfig& duel = config.ticket_types.at(duel_type);
    duel.ticket_duration_seconds = 3600;  // the pool waits through the whole run
    duel.wait_searches = 0;               // and does nothing but wait: only newcomers search
    config::TicketTypeConfig other = duel;
    other.type = other_type;
    other.name = "other";
    other.tags = {"other"};
    other.search_tries = 0;
    config.ticket_types[other_type] = other;
    SimulatedCluster cluster(std::move(config), seed, pool + newcomers);

    PoolFigures figures;
    figures.pool = pool;
    figures.relevant = std::max<std::size_t>(1, pool / 10);
    fill_pool(cluster, pool, figures.relevant);
    figures.setup_seconds = cpu_seconds() - setup_before;

    const Time begin = cluster.world().now();
    for (std::size_t i = 0; i < newcomers; ++i) {
        const std::size_t slot = i % figures.relevant;
        measure_newcomer(cluster, i, slot, pool, figures);
        // Outside the measure: a fresh ticket takes the slot, so every newcomer sees P waiting.
        cluster.connect_and_start(slot % nodes_count,
                                  UserId(fmt::format("slot-{}-{}", slot, i + 1)), duel_type,
                                  slot_rating(slot));
        cluster.run_until([&] { return cluster.items_stored() == pool * cluster.replicas(); },
                          std::chrono::seconds(5), "a slot's new ticket waiting");
    }
    const Duration spent = cluster.world().now() - begin;
    figures.virtual_seconds = std::chrono::duration<double>(spent).count();
    figures.idle_cpu_seconds = run_idle(cluster, spent);
    return figures;
}

template <typename T>
double mean_of(const std::vector<T>& values) {
    double sum = 0;
    for (const T& value : values) {
        sum += static_cast<double>(value);
    }
    return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

double quantile_of(std::vector<double> values, double q) {
    MM_ASSERT(!values.empty() && q >= 0 && q <= 1);
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

json pool_json(const PoolFigures& figures) {
    const auto newcomers = static_cast<double>(figures.cpu_us.size());
    return json{
        {"pool", figures.pool},
        {"relevant", figures.relevant},
        {"newcomers", figures.cpu_us.size()},
        {"cpu_us_per_newcomer", mean_of(figures.cpu_us)},
        {"cpu_us_median", quantile_of(figures.cpu_us, 0.5)},
        {"cpu_us_p90", quantile_of(figures.cpu_us, 0.9)},
        {"cpu_us_max", quantile_of(figures.cpu_us, 1.0)},
        {"idle_cpu_us_per_newcomer", figures.idle_cpu_seconds * 1e6 / newcomers},
        {"virtual_ttm_ms_mean", mean_of(figures.ttm_ms)},
        {"virtual_ttm_ms_max", *std::max_element(figures.ttm_ms.begin(), figures.ttm_ms.end())},
        {"virtual_seconds", figures.virtual_seconds},
        {"setup_cpu_seconds", figures.setup_seconds}};
}

// The mean is what a newcomer costs the process, background included; the median is the
// newcomer's own work (a periodic sweep lands in few windows).
json pool_mode(const std::vector<std::size_t>& sizes, std::size_t newcomers, std::uint64_t seed) {
    json runs = json::array();
    std::vector<double> log_pool;
    std::vector<double> log_mean;
    std::vector<double> log_median;
    for (std::size_t pool : sizes) {
        const json run = pool_json(measure_pool(pool, newcomers, seed));
        fmt::print(
            stderr,
            "pool: P = {} ({} relevant): CPU per newcomer {:.1f} us mean, {:.1f} us "
            "median, {:.1f} us p90; idle background over the same virtual time {:.1f} us "
            "per newcomer; time to match {:.2f} ms mean, {} ms max (virtual); setup {:.1f} "
            "s CPU\n",
            pool, run["relevant"].get<std::size_t>(), run["cpu_us_per_newcomer"].get<double>(),
            run["cpu_us_median"].get<double>(), run["cpu_us_p90"].get<double>(),
            run["idle_cpu_us_per_newcomer"].get<double>(), run["virtual_ttm_ms_mean"].get<double>(),
            run["virtual_ttm_ms_max"].get<std::int64_t>(), run["setup_cpu_seconds"].get<double>());
        log_pool.push_back(std::log(static_cast<double>(pool)));
        log_mean.push_back(std::log(run["cpu_us_per_newcomer"].get<double>()));
        log_median.push_back(std::log(run["cpu_us_median"].get<double>()));
        runs.push_back(run);
    }
    const double exponent = least_squares_slope(log_pool, log_mean);
    const double median_exponent = least_squares_slope(log_pool, log_median);
    fmt::print(stderr,
               "pool: growth exponent {:.3f} (mean CPU per newcomer ~ P^exponent), {:.3f} for "
               "the median\n",
               exponent, median_exponent);
    return json{{"mode", "pool"},
                {"runs", runs},
                {"pool_growth_exponent", exponent},
                {"pool_growth_exponent_median", median_exponent}};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"matchmesh-bench-sim: matching costs on a simulated cluster"};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-bench-sim"));
    app.require_subcommand(1);
    app.fallthrough();
    std::uint64_t seed = 1;
    app.add_option("--seed", seed, "seed of the trace, the ratings and the simulation");
    app.add_subcommand("matches", "10,000 1v1 tickets; rooms completed (for callgrind)");
    auto* memory = app.add_subcommand("memory", "heap bytes per waiting ticket");
    std::size_t waiting = 100000;
    memory->add_option("--waiting", waiting, "tickets waiting at once")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}));
    bool no_split = false;
    memory->add_flag("--no-split", no_split, "skip the runs with 1 and 3 replicas");
    auto* pool = app.add_subcommand("pool", "CPU per newcomer as the waiting pool grows");
    std::vector<std::size_t> sizes{1000, 10000, 100000};
    pool->add_option("--sizes", sizes, "pool sizes")
        ->delimiter(',')
        ->check(CLI::Range(std::size_t{10}, std::size_t{1000000}));
    std::size_t newcomers = 1000;
    pool->add_option("--newcomers", newcomers, "newcomers per pool size")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
    auto* scale = app.add_subcommand("scale", "cost per match as the cluster grows");
    bench::ScaleOptions scaling;
    scale->add_option("--nodes", scaling.sizes, "cluster sizes")
        ->delimiter(',')
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
    scale->add_option("--rate", scaling.rate, "1v1 arrivals a second, in total")
        ->check(CLI::Range(1.0, 100000.0));
    scale->add_option("--seconds", scaling.seconds, "seconds of arrivals")
        ->check(CLI::Range(1.0, 3600.0));
    auto* latency = app.add_subcommand("latency", "time to match against the ideal, virtual time");
    bench::LatencyOptions timing;
    latency->add_option("--rate", timing.rate, "1v1 arrivals a second, in total")
        ->check(CLI::Range(1.0, 100000.0));
    latency->add_option("--seconds", timing.seconds, "seconds of arrivals")
        ->check(CLI::Range(1.0, 3600.0));
    latency->add_option("--nodes", timing.nodes, "cluster size")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
    latency->add_option("--link-ms", timing.link_ms,
                        "milliseconds a message takes between two nodes (slower: busier nodes)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1000}));
    CLI11_PARSE(app, argc, argv);
    scaling.seed = seed;
    timing.seed = seed;

    json report;
    if (app.got_subcommand("matches")) {
        report = matches_mode(seed);
    } else if (app.got_subcommand("memory")) {
        report = memory_mode(waiting, !no_split, seed);
    } else if (app.got_subcommand("latency")) {
        report = bench::latency_mode(timing);
    } else if (app.got_subcommand("scale")) {
        report = bench::scale_mode(scaling);
    } else {
        report = pool_mode(sizes, newcomers, seed);
    }
    fmt::print("{}\n", report.dump(2));
    return 0;
}
