#pragma once
// CoreCluster: simulated nodes (a SimCluster) that each run the stock node's core exactly as the
// binary wires it (NodeServices and ClientCommands), in virtual time, with client sessions that
// talk to them as the client port would: the node's own command semantics, no sockets, no real
// clock. The wall clock the commands see is the virtual clock.
//
// Every push a node delivers goes to the `sink` given at construction. A session the node closes
// (superseded by a newer one of its user) is reported to it through session_closed, as the client
// port does, and `closed(session)` says so afterwards.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "mesh/sim/sim_world.hpp"
#include "node/client_commands.hpp"
#include "node/services.hpp"
#include "support/sim_cluster.hpp"

namespace test_support {

class CoreCluster {
public:
    struct Options {
        std::size_t nodes = 2;
        std::uint64_t seed = 1;
        matchmesh::mesh::MeshOptions mesh = fast_mesh_options();
        // Admission as the node would ask it (null: every ticket is taken).
        std::function<std::optional<matchmesh::node::Refusal>()> admit;
        std::size_t tickets_max = 100000;  // live tickets owned per node
        matchmesh::Duration converge_within{5000};
    };

    // One node's core: its services and its command semantics. Its pushes go through the
    // commands (as the node's do: a terminal one forgets the ticket) to the cluster's sink.
    struct Node final : matchmesh::ticket::PushSink {
        explicit Node(matchmesh::ticket::PushSink& sink) : sink(sink) {}
        void push(const matchmesh::UserId& user,
                  const matchmesh::ticket::PushMessage& message) override {
            commands->on_push(user, message);
            sink.push(user, message);
        }
        matchmesh::ticket::PushSink& sink;
        std::unique_ptr<matchmesh::node::NodeServices> services;
        std::unique_ptr<matchmesh::node::ClientCommands> commands;
    };

    CoreCluster(const matchmesh::config::Config& config, matchmesh::ticket::PushSink& sink,
                Options options)
        : config_(config),
          sink_(sink),
          seed_(options.seed),
          admit_(std::move(options.admit)),
          tickets_max_(options.tickets_max),
          nodes_(options.nodes),
          sim_({.nodes = options.nodes,
                .seed = options.seed,
                .links = {},
                .mesh = options.mesh,
                .converge_within = options.converge_within},
               [this](matchmesh::mesh::sim::SimNode& node) { return wire(node); }) {}

    static matchmesh::NodeId name(std::size_t i) { return SimCluster<Node>::name(i); }

    [[nodiscard]] matchmesh::mesh::sim::SimWorld& world() { return sim_.world; }
    [[nodiscard]] SimCluster<Node>& sim() { return sim_; }
    [[nodiscard]] matchmesh::node::NodeServices& services(std::size_t node) {
        return *sim_.at(node).services;
    }
    [[nodiscard]] matchmesh::node::ClientCommands& commands(std::size_t node) {
        return *sim_.at(node).commands;
    }
    [[nodiscard]] std::size_t size() const { return nodes_; }

    // A new client connection to `node`.
    std::shared_ptr<matchmesh::node::Session> connect(std::size_t node) {
        auto session = std::make_shared<matchmesh::node::Session>();
        session->id = ++sessions_made_;
        session->remote = "sim-client-" + std::to_string(session->id);
        node_of_[session.get()] = node;
        sessions_.push_back(session);  // kept, so that no later session reuses its address
        return session;
    }

    // Hands the request to the session's node; the reply, once it comes.
    void send(const std::shared_ptr<matchmesh::node::Session>& session,
              matchmesh::node::ClientRequest request,
              std::function<void(matchmesh::node::ClientReply)> reply) {
        commands(node_of_.at(session.get())).handle(session, std::move(request), std::move(reply));
    }

    // Sends, then runs the world until the reply comes or `limit` passes.
    std::optional<matchmesh::node::ClientReply> call(
        const std::shared_ptr<matchmesh::node::Session>& session, matchmesh::node::Command command,
        matchmesh::Duration limit = matchmesh::Duration(5000)) {
        auto answer = std::make_shared<std::optional<matchmesh::node::ClientReply>>();
        send(session, matchmesh::node::ClientRequest{++requests_made_, std::move(command)},
             [answer](matchmesh::node::ClientReply reply) { *answer = std::move(reply); });
        const matchmesh::Time until = sim_.world.now() + limit;
        while (!answer->has_value() && sim_.world.now() < until) {
            sim_.world.run_for(matchmesh::Duration(10));
        }
        return std::move(*answer);
    }

    // The client hangs up (or the node closed the connection): its node hears of it once.
    void close(const std::shared_ptr<matchmesh::node::Session>& session) {
        if (closed_.insert(session.get()).second) {
            commands(node_of_.at(session.get())).session_closed(session);
        }
    }
    [[nodiscard]] bool closed(const std::shared_ptr<matchmesh::node::Session>& session) const {
        return closed_.contains(session.get());
    }
    // Reasons the nodes gave for the connections they closed, in order.
    [[nodiscard]] const std::vector<std::string>& close_reasons() const { return close_reasons_; }

private:
    static std::shared_ptr<spdlog::logger> quiet_log() {
        static const auto log = std::make_shared<spdlog::logger>("sim");  // no sinks
        return log;
    }

    // The node's own wiring and command semantics, with the seed and the virtual clock.
    std::unique_ptr<Node> wire(matchmesh::mesh::sim::SimNode& sim) {
        auto at = std::make_unique<Node>(sink_);
        matchmesh::node::ServiceHooks hooks;
        hooks.on_superseded = [commands = &at->commands](const matchmesh::UserId& user) {
            (*commands)->superseded(user);
        };
        hooks.seed = seed_ + sim.index();
        hooks.tickets_max = tickets_max_;
        auto services = matchmesh::node::NodeServices::create(config_, sim.network(),
                                                              sim.scheduler(), *at, hooks);
        if (!services) {
            throw std::runtime_error("the node's services cannot be built: " + services.error());
        }
        at->services = std::move(*services);
        matchmesh::node::CommandHooks command_hooks;
        command_hooks.unix_ms = [&scheduler = sim.scheduler()] {
            return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  scheduler.now().time_since_epoch())
                                                  .count());
        };
        command_hooks.admit = admit_;
        command_hooks.close_session = [this](const std::shared_ptr<matchmesh::node::Session>& s,
                                             std::string_view reason) {
            close_reasons_.emplace_back(reason);
            close(s);
        };
        at->commands = std::make_unique<matchmesh::node::ClientCommands>(
            config_, *at->services, sim.network(), sim.scheduler(), quiet_log(),
            std::move(command_hooks));
        return at;
    }

    const matchmesh::config::Config& config_;
    matchmesh::ticket::PushSink& sink_;
    std::uint64_t seed_;
    std::function<std::optional<matchmesh::node::Refusal>()> admit_;
    std::size_t tickets_max_;
    std::size_t nodes_;
    std::map<const matchmesh::node::Session*, std::size_t> node_of_;
    std::set<const matchmesh::node::Session*> closed_;
    std::vector<std::string> close_reasons_;
    std::vector<std::shared_ptr<matchmesh::node::Session>> sessions_;
    std::uint64_t sessions_made_ = 0;
    std::uint64_t requests_made_ = 0;
    SimCluster<Node> sim_;  // last: its nodes use everything above
};

}  // namespace test_support
