#pragma once
// SimulatedCluster: a converged simulated cluster running the stock node's core on every node
// (the tests' one simulation harness, tests/support/core_cluster.hpp: virtual time, no sockets,
// 1 ms links), with users that say hello and start tickets through the node's own command
// semantics, and a tally of the terminal pushes they hear. What matchmesh-bench-sim's modes run.
//
// Owned by one benchmark run; single-threaded. Nothing is random beyond the seed.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bench/trace.hpp"
#include "config/config.hpp"
#include "mesh/sim/sim_world.hpp"
#include "node/client_protocol.hpp"
#include "support/core_cluster.hpp"
#include "ticket/service.hpp"

namespace matchmesh::bench {

inline constexpr ticket::TicketType duel_type = 1;

[[noreturn]] void fatal(const std::string& message);

// The 1v1 ticket type every mode starts from, exactly as a node's config file would give it.
[[nodiscard]] config::Config load_duel_config();

// CPU seconds this process has used.
[[nodiscard]] double cpu_seconds();

// 1v1 arrivals of duel_type at `rate` a second for `seconds`, ratings N(1500, 300).
[[nodiscard]] std::vector<Arrival> duel_trace(double rate, double seconds, std::uint64_t seed);

struct Tally {
    std::uint64_t success = 0;
    std::uint64_t timeout = 0;
    std::uint64_t cancel = 0;
    [[nodiscard]] std::uint64_t total() const { return success + timeout + cancel; }
};

class SimulatedCluster final : public ticket::PushSink {
public:
    SimulatedCluster(config::Config config, std::uint64_t seed, std::size_t tickets_max,
                     std::size_t nodes = 3);
    SimulatedCluster(const SimulatedCluster&) = delete;
    SimulatedCluster& operator=(const SimulatedCluster&) = delete;

    [[nodiscard]] mesh::sim::SimWorld& world() { return cluster_->world(); }
    [[nodiscard]] const config::Config& config() const { return config_; }
    [[nodiscard]] std::size_t size() const { return cluster_->size(); }

    // A client's hello on `node`, and its startTicket with {"rating": rating}.
    void connect_user(std::size_t node, const UserId& user);
    void start_ticket(const UserId& user, ticket::TicketType type, std::int64_t rating);
    void connect_and_start(std::size_t node, const UserId& user, ticket::TicketType type,
                           std::int64_t rating) {
        connect_user(node, user);
        start_ticket(user, type, rating);
    }
    // Each arrival's user connects (to the nodes in turn) and starts its ticket at its time; then
    // virtual time runs until every one of them has had its terminal push. The time it took.
    Duration play(const std::vector<Arrival>& arrivals);
    // Advances virtual time a millisecond at a time until `done`; fatal past `limit`.
    void run_until(const std::function<bool()>& done, Duration limit, std::string_view what);

    [[nodiscard]] std::size_t items_stored();  // store items, every replica counted
    [[nodiscard]] std::size_t tickets_in(ticket::TicketPhase phase);
    [[nodiscard]] std::size_t replicas();
    [[nodiscard]] std::uint64_t rooms_completed();
    // A counter of the nodes' ticket services, added up over the nodes.
    [[nodiscard]] std::uint64_t ticket_counter(std::uint64_t ticket::TicketCounters::*counter);
    // Joins the rooms' nodes refused for this reason, added up over the nodes.
    [[nodiscard]] std::uint64_t joins_refused(ticket::JoinRefusal why);

    void push(const UserId& user, const ticket::PushMessage& message) override;

    Tally tally;
    std::function<void(const UserId&, const ticket::PushMessage&)> on_terminal;

private:
    // A figure of the nodes' ticket counters, added up over the nodes.
    std::uint64_t add_up(
        const std::function<std::uint64_t(const ticket::TicketCounters&)>& counter);

    config::Config config_;
    std::unique_ptr<test_support::CoreCluster> cluster_;
    std::unordered_map<UserId, std::shared_ptr<node::Session>> sessions_;
};

}  // namespace matchmesh::bench
