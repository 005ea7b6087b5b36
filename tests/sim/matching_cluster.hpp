#pragma once
// A simulated cluster with a MatchingService on every node, for the distributed store's tests.

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "matching/service.hpp"
#include "mesh/sim/sim_world.hpp"
#include "support/sim_cluster.hpp"

namespace matching_sim {

using namespace matchmesh;
using namespace matchmesh::matching;
using namespace matchmesh::mesh;
using namespace matchmesh::mesh::sim;
using namespace std::chrono_literals;

struct MatchingCluster {
    std::map<std::string, PropertyWidths> profiles{{"Rank10", {{"rank", 10}}},
                                                   {"Rank100", {{"rank", 100}}},
                                                   {"LevelLeague", {{"league", 5}, {"level", 1}}}};
    std::vector<std::string> warnings;
    test_support::SimCluster<MatchingService> sim;
    SimWorld& world = sim.world;

    MatchingCluster(std::size_t count, int distribution_rate, std::uint64_t seed = 1,
                    LinkModel links = {}, std::size_t replicas_max = ReplicaRule{}.replicas_max)
        : sim({.nodes = count, .seed = seed, .links = links}, [this, distribution_rate,
                                                               replicas_max](SimNode& node) {
              ServiceOptions options;
              options.replicas.distribution_rate = distribution_rate;
              options.replicas.replicas_max = replicas_max;
              options.search_timeout = Duration(200);
              options.on_warning = [this](const std::string& text) { warnings.push_back(text); };
              auto service =
                  std::make_unique<MatchingService>(node.network(), node.scheduler(), options);
              for (const auto& [id, widths] : profiles) {
                  REQUIRE(service->profiles().define(id, widths).has_value());
              }
              return service;
          }) {}

    static NodeId name(std::size_t i) { return test_support::SimCluster<MatchingService>::name(i); }
    MatchingService& at(const NodeId& id) { return sim.at(id); }
    MatchingService& at(std::size_t i) { return sim.at(i); }

    // The nodes that, as `node` sees the cluster, store items of this rank.
    std::vector<NodeId> replicas_of(std::size_t node, std::int64_t rank,
                                    const std::string& profile = "Rank10") {
        SearchKey key;
        REQUIRE(at(node).profiles().item_key(profile, "", {{"rank", rank}}, key).has_value());
        std::vector<NodeId> replicas;
        at(node).placement().replicas(key.place, replicas);
        return replicas;
    }

    // Runs a search started by `start` (which gets the callback) until it answers.
    template <typename Start>
    SearchOutcome await(Start&& start, Duration limit = Duration(5000)) {
        std::optional<SearchOutcome> outcome;
        auto ok = start([&outcome](SearchOutcome result) { outcome = std::move(result); });
        REQUIRE(ok.has_value());
        const Time deadline = world.now() + limit;
        while (!outcome && world.now() < deadline) {
            world.run_for(Duration(1));
        }
        REQUIRE(outcome.has_value());
        return std::move(*outcome);
    }

    SearchOutcome search_rank(std::size_t from, std::int64_t rank, std::size_t limit = 100,
                              const std::string& profile = "Rank10") {
        const std::vector<std::string> ids{profile};
        return await([&](SearchCallback done) {
            return at(from).search(ids, "", {{"rank", rank}}, limit, std::move(done));
        });
    }

    // How many items with this origin any running node still stores.
    std::size_t stored_from(const NodeId& origin) {
        std::size_t count = 0;
        for (auto& [id, service] : sim.running()) {
            service->local_items().for_each_bucket([&](const BucketView& bucket) {
                service->local_items().for_each_item(bucket.key, [&](const FoundItem& item) {
                    count += item.origin == origin.str() ? 1 : 0;
                });
            });
        }
        return count;
    }
};

inline std::vector<std::string> ids_of(const SearchOutcome& outcome) {
    std::vector<std::string> ids;
    for (const Found& item : outcome.items) {
        ids.emplace_back(item.unique_id);
    }
    return ids;
}

}  // namespace matching_sim
