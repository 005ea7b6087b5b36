#include "node/metrics.hpp"

#include <sstream>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <matchmesh/version.hpp>

#include "node/admin_server.hpp"
#include "node/match_result.hpp"

namespace matchmesh::node {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;
using prometheus::Registry;

// The outcomes every ticket type has a series for from the start; the other reasons a ticket
// ends for (left, kicked, disconnected, node_gone, draining) get theirs when one first counts.
constexpr std::array<ticket::EndReason, 3> usual_outcomes{
    ticket::EndReason::completed, ticket::EndReason::timed_out, ticket::EndReason::canceled};
constexpr std::array<const char*, 2> phases{"searching", "waiting"};

Labels type_labels(ticket::TicketType type) {
    return {{"ticket_type", std::to_string(type)}};
}

Labels type_labels(ticket::TicketType type, const std::string& name, std::string_view value) {
    return {{"ticket_type", std::to_string(type)}, {name, std::string(value)}};
}

// A series that may not exist yet: created (with the labels `make_labels` gives) when first
// needed, then found through its pointer.
template <typename T, typename MakeLabels, typename... Args>
T& series(Family<T>& family, T*& slot, MakeLabels make_labels, Args&&... args) {
    if (slot == nullptr) {
        slot = &family.Add(make_labels(), std::forward<Args>(args)...);
    }
    return *slot;
}

// Adds to a counter what its source grew by since the last update.
void grow(Counter& counter, std::uint64_t before, std::uint64_t now) {
    if (now > before) {
        counter.Increment(static_cast<double>(now - before));
    }
}

// The same for a series created only once there is something to count.
template <typename MakeLabels>
void grow(Family<Counter>& family, Counter*& slot, std::uint64_t before, std::uint64_t now,
          MakeLabels make_labels) {
    if (now > before) {
        grow(series(family, slot, make_labels), before, now);
    }
}

Counter& add_counter(Registry& registry, const std::string& name, const std::string& help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

Gauge& add_gauge(Registry& registry, const std::string& name, const std::string& help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

Family<Counter>& counter_family(Registry& registry, const std::string& name,
                                const std::string& help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

Family<Histogram>& histogram_family(Registry& registry, const std::string& name,
                                    const std::string& help) {
    return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

const Histogram::BucketBoundaries& time_to_match_buckets() {
    static const Histogram::BucketBoundaries buckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10,  30};
    return buckets;
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
    register_tickets(*registry_);
    register_matches(*registry_);
    register_node(*registry_);
    register_connections(*registry_);
    register_mesh(*registry_);
}

Metrics::~Metrics() = default;

std::shared_ptr<const prometheus::Collectable> Metrics::collectable() const {
    return registry_;
}

void Metrics::register_tickets(prometheus::Registry& registry) {
    families_.started = &counter_family(registry, "matchmesh_tickets_started_total",
                                        "Tickets started on this node (their owner's), by type");
    families_.ended = &counter_family(
        registry, "matchmesh_tickets_ended_total",
        "Tickets owned by this node that ended, by type and outcome (completed, timed_out, and "
        "why a 222 ended it: canceled, left, kicked, disconnected, node_gone, draining)");
    families_.refused = &counter_family(
        registry, "matchmesh_tickets_refused_total",
        "startTicket commands this node refused, by type and reason (overloaded, draining, "
        "unknown_type, invalid, duplicate, party_unavailable, unavailable, other)");
    families_.phases = &prometheus::BuildGauge()
                            .Name("matchmesh_tickets")
                            .Help("Tickets in progress on this node, by type and phase")
                            .Register(registry);
    families_.time_to_match = &histogram_family(
        registry, "matchmesh_time_to_match_seconds",
        "From a ticket's start to its 220, for tickets started on this node, by type");
    searches_ =
        &add_counter(registry, "matchmesh_searches_total", "Searches run by this node's tickets");
    auto& joins = counter_family(registry, "matchmesh_joins_total",
                                 "Join requests answered by this node's rooms");
    joins_accepted_ = &joins.Add({{"result", "accepted"}});
    joins_refused_ = &joins.Add({{"result", "refused"}});
    joins_seated_elsewhere_ = &add_counter(
        registry, "matchmesh_joins_seated_elsewhere_total",
        "Joins whose room was taken that another waiting room of this node took (also accepted)");
    auto& refusals = counter_family(
        registry, "matchmesh_join_refusals_total",
        "Joins this node's rooms refused, by reason (room_not_found, not_waiting, completed, "
        "other_type, already_member, full, not_allowed, closed)");
    for (std::size_t reason = 0; reason < ticket::join_refusals_count; ++reason) {
        join_refusals_[reason] = &refusals.Add(
            {{"reason", std::string(ticket::label_of(static_cast<ticket::JoinRefusal>(reason)))}});
    }
    auto& pushes = counter_family(
        registry, "matchmesh_pushes_total",
        "Pushes for users connected here: delivered, or dropped (a repeat, or for a ticket the "
        "user no longer has)");
    pushes_delivered_ = &pushes.Add({{"result", "delivered"}});
    pushes_dropped_ = &pushes.Add({{"result", "dropped"}});
}

void Metrics::register_matches(prometheus::Registry& registry) {
    families_.spread = &histogram_family(registry, "matchmesh_match_spread",
                                         "Highest rating minus lowest in a match completed here, "
                                         "by ticket type (the type's rating value)");
    families_.side_difference = &histogram_family(
        registry, "matchmesh_match_side_difference",
        "Highest side rating minus lowest in a team match completed here, by ticket type");
    families_.wait = &histogram_family(registry, "matchmesh_match_wait_seconds",
                                       "Each member's wait, from the start of the ticket that "
                                       "brought it in to its match, by ticket type");
    families_.relaxed =
        &counter_family(registry, "matchmesh_matches_relaxed_total",
                        "Matches completed here with a relax step in force, by ticket type");
}

void Metrics::register_node(prometheus::Registry& registry) {
    items_ = &add_gauge(registry, "matchmesh_store_items", "Search items stored on this node");
    members_ =
        &add_gauge(registry, "matchmesh_members_alive", "Live cluster members, this node included");
    loop_lag_ = &add_gauge(
        registry, "matchmesh_loop_lag_seconds",
        "How late the event loop runs its timers: the least over the last fifth of a second");
    prometheus::BuildGauge()
        .Name("matchmesh_build_info")
        .Help("The version and commit this node was built from (always 1)")
        .Register(registry)
        .Add({{"version", std::string(build_version)}, {"commit", std::string(build_commit)}})
        .Set(1);
}

void Metrics::register_connections(prometheus::Registry& registry) {
    sessions_ = &add_gauge(registry, "matchmesh_client_sessions", "Client connections");
    rate_limited_ = &add_counter(registry, "matchmesh_client_commands_rate_limited_total",
                                 "Client commands refused for their session's command rate");
    auto& closed = counter_family(registry, "matchmesh_client_connections_closed_total",
                                  "Client connections that ended, by reason");
    for (std::size_t reason = 0; reason < close_reasons_count; ++reason) {
        closed_[reason] =
            &closed.Add({{"reason", std::string(label_of(static_cast<CloseReason>(reason)))}});
    }
    auto& rejected = counter_family(
        registry, "matchmesh_frames_rejected_total",
        "Frames refused, by port and reason: those that broke the framing rules closed their "
        "connection; a client's bad_request was answered with an error");
    for (std::size_t code = 0; code < mesh::frame_errc_count; ++code) {
        const std::string reason(mesh::label_of(static_cast<mesh::FrameErrc>(code)));
        mesh_rejected_[code] = &rejected.Add({{"port", "mesh"}, {"reason", reason}});
        client_rejected_[code] = &rejected.Add({{"port", "client"}, {"reason", reason}});
    }
    client_bad_requests_ = &rejected.Add({{"port", "client"}, {"reason", "bad_request"}});
    auto& handshakes =
        counter_family(registry, "matchmesh_handshakes_failed_total",
                       "Connection handshakes that failed, by port (the mesh's authentication "
                       "and TLS; the client port's TLS)");
    handshakes_failed_ = {&handshakes.Add({{"port", "client"}}),
                          &handshakes.Add({{"port", "mesh"}})};
    auto& queue_full = counter_family(
        registry, "matchmesh_send_queue_full_total",
        "Frames not queued because their connection's outbox was full, by port (a client's "
        "connection is then closed)");
    send_queue_full_ = {&queue_full.Add({{"port", "client"}}), &queue_full.Add({{"port", "mesh"}})};
}

void Metrics::register_mesh(prometheus::Registry& registry) {
    round_trip_ = &histogram_family(registry, "matchmesh_mesh_round_trip_seconds",
                                    "Requests to other nodes, from sending to the answer")
                       .Add({}, Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                            0.005, 0.01, 0.05, 0.25});
    auto& frames = counter_family(registry, "matchmesh_mesh_frames_total",
                                  "Frames between this node and the other nodes, by direction");
    mesh_frames_in_ = &frames.Add({{"direction", "in"}});
    mesh_frames_out_ = &frames.Add({{"direction", "out"}});
}

void Metrics::add_ticket_type(ticket::TicketType type) {
    TypeSeries& of_type = types_[type];
    series(*families_.started, of_type.started, [type] { return type_labels(type); });
    for (ticket::EndReason why : usual_outcomes) {
        series(*families_.ended, of_type.ended[static_cast<std::size_t>(why)],
               [&] { return type_labels(type, "outcome", ticket::to_string(why)); });
    }
    for (std::size_t i = 0; i < phases.size(); ++i) {
        series(*families_.phases, of_type.phases[i],
               [&] { return type_labels(type, "phase", phases[i]); });
    }
    (void)time_to_match(type);
}

prometheus::Histogram& Metrics::time_to_match(ticket::TicketType type) {
    return series(
        *families_.time_to_match, types_[type].time_to_match, [type] { return type_labels(type); },
        time_to_match_buckets());
}

void Metrics::update_type(ticket::TicketType type, const MetricsSnapshot& now) {
    TypeSeries& of_type = types_[type];
    const ticket::TicketTypeCounters& counts = now.tickets.by_type[type];
    const ticket::TicketTypeCounters& before = seen_.tickets.by_type[type];
    grow(*families_.started, of_type.started, before.started, counts.started,
         [type] { return type_labels(type); });
    for (std::size_t why = 0; why < counts.ended.size(); ++why) {
        grow(*families_.ended, of_type.ended[why], before.ended[why], counts.ended[why], [&] {
            return type_labels(type, "outcome",
                               ticket::to_string(static_cast<ticket::EndReason>(why)));
        });
    }
    for (std::size_t i = 0; i < start_refusals_count; ++i) {
        grow(*families_.refused, of_type.refused[i], seen_.refused[type][i], now.refused[type][i],
             [&] { return type_labels(type, "reason", label_of(static_cast<StartRefusal>(i))); });
    }
    for (std::size_t i = 0; i < phases.size(); ++i) {
        const std::size_t count = now.phases[type][i];
        if (count > 0 || of_type.phases[i] != nullptr) {
            series(*families_.phases, of_type.phases[i], [&] {
                return type_labels(type, "phase", phases[i]);
            }).Set(static_cast<double>(count));
        }
    }
}

void Metrics::update_connections(const MetricsSnapshot& now) {
    const ClientCounters& clients = now.clients;
    const mesh::TcpCounters& mesh = now.mesh;
    grow(*rate_limited_, seen_.clients.rate_limited, clients.rate_limited);
    for (std::size_t i = 0; i < close_reasons_count; ++i) {
        grow(*closed_[i], seen_.clients.closed[i], clients.closed[i]);
    }
    for (std::size_t i = 0; i < mesh::frame_errc_count; ++i) {
        grow(*mesh_rejected_[i], seen_.mesh.frames_rejected[i], mesh.frames_rejected[i]);
        grow(*client_rejected_[i], seen_.clients.frames_rejected[i], clients.frames_rejected[i]);
    }
    grow(*client_bad_requests_, seen_.clients.malformed_requests, clients.malformed_requests);
    // A client's failed handshake and full outbox close its connection: counted there.
    grow(*handshakes_failed_.client, seen_.clients.closed_for(CloseReason::handshake_failed),
         clients.closed_for(CloseReason::handshake_failed));
    grow(*handshakes_failed_.mesh, seen_.mesh.handshakes_failed, mesh.handshakes_failed);
    grow(*send_queue_full_.client, seen_.clients.closed_for(CloseReason::slow_reader),
         clients.closed_for(CloseReason::slow_reader));
    grow(*send_queue_full_.mesh, seen_.mesh.queue_full, mesh.queue_full);
    grow(*mesh_frames_in_, seen_.mesh.frames_in, mesh.frames_in);
    grow(*mesh_frames_out_, seen_.mesh.frames_out, mesh.frames_out);
    sessions_->Set(static_cast<double>(now.sessions));
}

void Metrics::update(const MetricsSnapshot& now) {
    for (std::size_t type = 0; type < ticket::ticket_types_count; ++type) {
        update_type(static_cast<ticket::TicketType>(type), now);
    }
    grow(*searches_, seen_.tickets.searches, now.tickets.searches);
    grow(*joins_accepted_, seen_.tickets.joins_accepted, now.tickets.joins_accepted);
    grow(*joins_refused_, seen_.tickets.joins_refused, now.tickets.joins_refused);
    grow(*joins_seated_elsewhere_, seen_.tickets.joins_seated_elsewhere,
         now.tickets.joins_seated_elsewhere);
    for (std::size_t reason = 0; reason < ticket::join_refusals_count; ++reason) {
        grow(*join_refusals_[reason], seen_.tickets.join_refusals[reason],
             now.tickets.join_refusals[reason]);
    }
    grow(*pushes_delivered_, seen_.tickets.pushes_delivered, now.tickets.pushes_delivered);
    grow(*pushes_dropped_, seen_.tickets.pushes_dropped, now.tickets.pushes_dropped);
    update_connections(now);
    loop_lag_->Set(static_cast<double>(now.loop_lag_ms) / 1000.0);
    items_->Set(static_cast<double>(now.store_items));
    members_->Set(static_cast<double>(now.members_alive));
    seen_ = now;
}

void Metrics::observe_time_to_match(ticket::TicketType type, double seconds) {
    time_to_match(type).Observe(seconds);
}

void Metrics::observe_mesh_round_trip(double seconds) {
    round_trip_->Observe(seconds);
}

void Metrics::observe_match(const MatchResult& match) {
    // Rating units: a few buckets either side of typical limits (100-400).
    static const Histogram::BucketBoundaries rating_buckets{0,   10,  25,  50,  100,
                                                            200, 400, 800, 1600};
    static const Histogram::BucketBoundaries wait_buckets{0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                          2.5,  5,    10,  30,   60};
    const ticket::TicketType type = match.ticket_type;
    TypeSeries& of_type = types_[type];
    const auto labels = [type] { return type_labels(type); };
    series(*families_.spread, of_type.spread, labels, rating_buckets)
        .Observe(static_cast<double>(match.spread));
    if (!match.sides.empty()) {  // a team type's rooms always have sides
        series(*families_.side_difference, of_type.side_difference, labels, rating_buckets)
            .Observe(match.side_difference);
    }
    Histogram& wait = series(*families_.wait, of_type.wait, labels, wait_buckets);
    for (const MatchedPlayer& member : match.members) {
        wait.Observe(static_cast<double>(member.wait_ms) / 1000);
    }
    Counter& relaxed = series(*families_.relaxed, of_type.relaxed, labels);
    if (match.relax_step >= 0) {
        relaxed.Increment();
    }
}

double read_metric(const std::string& admin, const std::string& sample) {
    auto reply = http_get(admin, "/metrics");
    if (!reply || reply->status != 200) {
        return -1;
    }
    std::istringstream lines(reply->body);
    std::string line;
    const std::string key = sample + " ";
    while (std::getline(lines, line)) {
        if (line.starts_with(key)) {
            try {
                return std::stod(line.substr(key.size()));
            } catch (const std::exception&) {
                return -1;
            }
        }
    }
    return -1;
}

}  // namespace matchmesh::node
