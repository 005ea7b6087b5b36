#include "bench/simulated_cluster.hpp"

#include <time.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace matchmesh::bench {
namespace {

// The ticket type every mode starts from, exactly as a node's config file would give it.
constexpr std::string_view duel_config = R"({
  "matching": {"distributionRate": 50, "profiles": {"Duel": {"rank": 100}}},
  "ticketTypes": {"1": {"name": "duel", "profiles": ["Duel"], "maxMembers": 2,
    "properties": {"rank": {"value": "rating", "searchSpread": 200}},
    "allowMatch": {"value": "rating", "maxDifference": 300},
    "ticketDurationSeconds": 20, "searchIntervalMs": 100, "searchTries": 1}}})";

}  // namespace

[[noreturn]] void fatal(const std::string& message) {
    fmt::print(stderr, "matchmesh-bench-sim: {}\n", message);
    std::exit(1);
}

config::Config load_duel_config() {
    auto loaded = config::load_string(duel_config, "<duel config>");
    if (!loaded) {
        fatal(loaded.error().message);
    }
    return std::move(*loaded);
}

std::vector<Arrival> duel_trace(double rate, double seconds, std::uint64_t seed) {
    TraceShape shape;
    shape.rate = rate;
    shape.duration = seconds;
    shape.types = {{duel_type, 1.0}};
    shape.rating_mean = 1500;
    shape.rating_sd = 300;
    shape.seed = seed;
    return generate_trace(shape);
}

double cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void SimulatedCluster::push(const UserId& user, const ticket::PushMessage& message) {
    if (!ticket::is_terminal(message.kind)) {
        return;
    }
    if (message.kind == ticket::PushKind::success) {
        ++tally.success;
    } else if (message.kind == ticket::PushKind::timeout) {
        ++tally.timeout;
    } else {
        ++tally.cancel;
    }
    if (on_terminal) {
        on_terminal(user, message);
    }
}

mesh::MeshOptions mesh_options(const config::Config& config) {
    mesh::MeshOptions options;
    options.membership.heartbeat_interval = Duration(config.cluster.heartbeat_interval_ms);
    options.membership.dead_after = Duration(config.cluster.dead_after_ms);
    return options;
}

SimulatedCluster::SimulatedCluster(config::Config config, std::uint64_t seed,
                                   std::size_t tickets_max, std::size_t nodes)
    : config_(std::move(config)) {
    test_support::CoreCluster::Options options;
    options.nodes = nodes;
    options.seed = seed;
    options.mesh = mesh_options(config_);
    options.tickets_max = tickets_max;
    options.converge_within = std::chrono::seconds(10 + nodes / 4);  // a large cluster takes longer
    try {
        cluster_ = std::make_unique<test_support::CoreCluster>(config_, *this, std::move(options));
    } catch (const std::exception& failed) {
        fatal(fmt::format("sim: {}", failed.what()));
    }
}

void SimulatedCluster::connect_user(std::size_t node, const UserId& user) {
    auto session = cluster_->connect(node);
    cluster_->send(session, node::ClientRequest{1, node::HelloCommand{user, "", {}}},
                   [user](const node::ClientReply& reply) {
                       if (const auto* error = std::get_if<node::ReplyError>(&reply.body)) {
                           fatal(fmt::format("hello for {}: {}", user.str(), error->message));
                       }
                   });
    sessions_[user] = std::move(session);
}

void SimulatedCluster::start_ticket(const UserId& user, ticket::TicketType type,
                                    std::int64_t rating) {
    node::StartTicketCommand start;
    start.ticket_type = type;
    start.values["rating"] = rating;
    cluster_->send(sessions_.at(user), node::ClientRequest{2, std::move(start)},
                   [user](const node::ClientReply& reply) {
                       if (const auto* error = std::get_if<node::ReplyError>(&reply.body)) {
                           fatal(fmt::format("startTicket for {}: {}", user.str(), error->message));
                       }
                   });
}

Duration SimulatedCluster::play(const std::vector<Arrival>& arrivals) {
    const Time begin = world().now();
    const std::uint64_t ended_before = tally.total();
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
        const Arrival& arrival = arrivals[i];
        world().run_until(begin + Duration(std::llround(arrival.at * 1000)));
        connect_and_start(i % size(), UserId(arrival.users.front()),
                          static_cast<ticket::TicketType>(arrival.type), arrival.rating);
    }
    const Duration patience =
        std::chrono::seconds(config_.ticket_types.at(duel_type).ticket_duration_seconds + 10);
    run_until([&] { return tally.total() - ended_before >= arrivals.size(); }, patience,
              "every ticket's end");
    return world().now() - begin;
}

void SimulatedCluster::run_until(const std::function<bool()>& done, Duration limit,
                                 std::string_view what) {
    const Time deadline = world().now() + limit;
    while (!done()) {
        if (world().now() >= deadline) {
            fatal(fmt::format("sim: {} did not happen within {} ms of virtual time", what,
                              limit.count()));
        }
        world().run_for(Duration(1));
    }
}

std::size_t SimulatedCluster::items_stored() {
    std::size_t items = 0;
    for (std::size_t i = 0; i < size(); ++i) {
        items += cluster_->services(i).store().local_items().size();
    }
    return items;
}

std::size_t SimulatedCluster::tickets_in(ticket::TicketPhase phase) {
    std::size_t tickets = 0;
    for (std::size_t i = 0; i < size(); ++i) {
        tickets += cluster_->services(i).tickets().ticket_count(phase);
    }
    return tickets;
}

std::size_t SimulatedCluster::replicas() {
    return cluster_->services(0).store().placement().replica_count();
}

std::uint64_t SimulatedCluster::add_up(
    const std::function<std::uint64_t(const ticket::TicketCounters&)>& counter) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < size(); ++i) {
        sum += counter(cluster_->services(i).tickets().counters());
    }
    return sum;
}

std::uint64_t SimulatedCluster::ticket_counter(std::uint64_t ticket::TicketCounters::*counter) {
    return add_up([&](const ticket::TicketCounters& counters) { return counters.*counter; });
}

std::uint64_t SimulatedCluster::joins_refused(ticket::JoinRefusal why) {
    return add_up([&](const ticket::TicketCounters& counters) {
        return counters.join_refusals[static_cast<std::size_t>(why)];
    });
}

std::uint64_t SimulatedCluster::rooms_completed() {
    return add_up(
        [](const ticket::TicketCounters& counters) { return counters.total().completed(); });
}

}  // namespace matchmesh::bench
