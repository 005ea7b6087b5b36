#pragma once
// SimCluster: the simulated-cluster harness every simulation test and the simulation benchmark
// build on. N nodes n0..n{N-1} on one SimWorld (seeded latency, loss, partitions, pauses,
// crashes; replayable by seed), each given n0 as its seed, and on each node the services that
// `build` makes when the node starts (again after a restart) and that go when it stops. What the
// services are is the caller's: a store, a ticket service with a test's callbacks, or the stock
// node's core (core_cluster.hpp).
//
// Single-threaded; owned by one test.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mesh/sim/sim_world.hpp"

namespace test_support {

// A probe period of 100 ms and a suspicion timeout of 600 ms: failures show within about a
// second of virtual time.
inline matchmesh::mesh::MeshOptions fast_mesh_options() {
    matchmesh::mesh::MeshOptions options;
    options.membership.heartbeat_interval = matchmesh::Duration(100);
    options.membership.dead_after = matchmesh::Duration(600);
    return options;
}

template <typename Services>
class SimCluster {
public:
    using Build = std::function<std::unique_ptr<Services>(matchmesh::mesh::sim::SimNode&)>;
    using BeforeStop = std::function<void(const matchmesh::NodeId&)>;

    struct Options {
        std::size_t nodes = 3;
        std::uint64_t seed = 1;
        matchmesh::mesh::sim::LinkModel links;
        matchmesh::mesh::MeshOptions mesh = fast_mesh_options();
        // How long the nodes may take to see each other before the harness gives up (zero: the
        // test waits itself).
        matchmesh::Duration converge_within{5000};
    };

    SimCluster(Options options, Build build, BeforeStop before_stop = {})
        : build_(std::move(build)),
          before_stop_(std::move(before_stop)),
          world(options.seed, options.mesh, options.links) {
        world.on_start(
            [this](matchmesh::mesh::sim::SimNode& node) { services_[node.id()] = build_(node); });
        world.on_stop([this](matchmesh::mesh::sim::SimNode& node) {
            if (before_stop_) {
                before_stop_(node.id());
            }
            services_.erase(node.id());
        });
        for (std::size_t i = 0; i < options.nodes; ++i) {
            names_.push_back(name(i));
            matchmesh::mesh::sim::SimNodeConfig config{name(i), "HTTP", {}};
            if (i > 0) {
                config.seeds.push_back(name(0));
            }
            world.add_node(config);
        }
        if (options.converge_within > matchmesh::Duration(0) &&
            !world.run_until_converged(options.converge_within)) {
            throw std::runtime_error("the simulated cluster did not form");
        }
    }

    static matchmesh::NodeId name(std::size_t i) {
        return matchmesh::NodeId("n" + std::to_string(i));
    }

    [[nodiscard]] Services& at(const matchmesh::NodeId& id) { return *services_.at(id); }
    [[nodiscard]] Services& at(std::size_t i) {
        return at(i < names_.size() ? names_[i] : name(i));  // made once: a lookup per command
    }
    // Whether the node runs now (its services exist).
    [[nodiscard]] bool running(const matchmesh::NodeId& id) const { return services_.contains(id); }
    // The running nodes' services, by node.
    [[nodiscard]] std::map<matchmesh::NodeId, std::unique_ptr<Services>>& running() {
        return services_;
    }

    void run(matchmesh::Duration duration) { world.run_for(duration); }

private:
    std::vector<matchmesh::NodeId> names_;  // name(i) of the nodes the cluster started with
    Build build_;
    BeforeStop before_stop_;
    // Declared before the world: its destructor stops the nodes through the stop hook.
    std::map<matchmesh::NodeId, std::unique_ptr<Services>> services_;

public:
    matchmesh::mesh::sim::SimWorld world;
};

}  // namespace test_support
