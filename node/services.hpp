#pragma once
// NodeServices: what one node runs, wired from its config in this one place: the distributed
// store with the config's profiles, the ticket service, and the stock ticket types installed on
// it. It takes the Network, the Scheduler and a seed as parameters, so that the real node, the
// simulation and the fuzz targets build their nodes alike. No sockets, no real clock.
//
// Lives on its node's loop thread.

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "matching/service.hpp"
#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"
#include "node/ticket_types.hpp"
#include "ticket/service.hpp"

namespace matchmesh::node {

struct ServiceHooks {
    // What peers' messages make the store warn about (the node logs it through its throttle).
    std::function<void(const std::string&)> on_store_warning;
    // A session of this user began on another node: its session here must end.
    std::function<void(const UserId&)> on_superseded;
    // Wall-clock milliseconds (when rooms began waiting); none: the scheduler's clock.
    std::function<std::int64_t()> unix_ms;
    std::size_t tickets_max = 100000;  // live tickets owned on this node
    std::uint64_t seed = 0;            // the ticket types' randomisation
};

class NodeServices {
public:
    // Fails, naming the setting, when the config's profiles cannot be defined.
    [[nodiscard]] static std::expected<std::unique_ptr<NodeServices>, std::string> create(
        const config::Config& config, mesh::Network& network, mesh::Scheduler& scheduler,
        ticket::PushSink& sink, ServiceHooks hooks = {});
    // The ticket types go first, then the tickets, then the store: nothing calls into what is
    // already gone.
    ~NodeServices();
    NodeServices(const NodeServices&) = delete;
    NodeServices& operator=(const NodeServices&) = delete;

    [[nodiscard]] matching::MatchingService& store() { return *store_; }
    [[nodiscard]] ticket::TicketService& tickets() { return *tickets_; }
    [[nodiscard]] ConfiguredTicketTypes& types() { return *types_; }

private:
    NodeServices() = default;

    std::unique_ptr<matching::MatchingService> store_;
    std::unique_ptr<ticket::TicketService> tickets_;
    std::unique_ptr<ConfiguredTicketTypes> types_;
};

}  // namespace matchmesh::node
