#include "node/services.hpp"

#include <fmt/format.h>

namespace matchmesh::node {

std::expected<std::unique_ptr<NodeServices>, std::string> NodeServices::create(
    const config::Config& config, mesh::Network& network, mesh::Scheduler& scheduler,
    ticket::PushSink& sink, ServiceHooks hooks) {
    std::unique_ptr<NodeServices> services(new NodeServices());
    matching::ServiceOptions store_options;
    store_options.target_node_type = config.matching.target_node_type;
    store_options.replicas = {config.matching.distribution_rate,
                              static_cast<std::size_t>(config.matching.replicas_max)};
    store_options.placement_group = config.matching.placement_group;
    store_options.search_timeout = Duration(config.cluster.request_timeout_ms);
    store_options.on_warning = std::move(hooks.on_store_warning);
    services->store_ =
        std::make_unique<matching::MatchingService>(network, scheduler, store_options);
    for (const auto& [profile_id, widths] : config.matching.profiles) {
        if (auto defined = services->store_->profiles().define(profile_id, widths); !defined) {
            return std::unexpected(
                fmt::format("matching.profiles.{}: {}", profile_id, defined.error().message));
        }
    }

    ticket::TicketServiceOptions ticket_options;
    ticket_options.limits.ticket_duration_min =
        std::chrono::seconds(config.limits.ticket_duration_min_seconds);
    ticket_options.join_timeout = Duration(config.cluster.request_timeout_ms);
    ticket_options.courier.attempt_timeout = Duration(config.cluster.request_timeout_ms);
    ticket_options.party_consent = true;  // players name their parties: each member accepts
    ticket_options.on_superseded = std::move(hooks.on_superseded);
    ticket_options.tickets_max = hooks.tickets_max;
    ticket_options.unix_ms = std::move(hooks.unix_ms);
    services->tickets_ = std::make_unique<ticket::TicketService>(
        network, scheduler, *services->store_, sink, ticket_options);
    services->types_ = std::make_unique<ConfiguredTicketTypes>(
        config.ticket_types, services->store_->profiles(), scheduler,
        config.limits.range_values_max, hooks.seed);
    services->types_->install(*services->tickets_);
    return services;
}

NodeServices::~NodeServices() {
    types_.reset();
    tickets_.reset();
    store_.reset();
}

}  // namespace matchmesh::node
