#include "node/node.hpp"

#include <algorithm>
#include <csignal>
#include <iostream>
#include <limits>
#include <random>
#include <tuple>

#include <fmt/format.h>
#include <asio/post.hpp>
#include <nlohmann/json.hpp>

#include "mesh/asio/listener.hpp"
#include "mesh/text.hpp"
#include "node/log_format.hpp"
#include "node/process_metrics.hpp"
#include "node/state_dump.hpp"

namespace matchmesh::node {
namespace {

mesh::TcpOptions tcp_options(const config::Config& config, mesh::TlsContext tls) {
    mesh::TcpOptions options;
    options.tls = std::move(tls);
    options.listen = config.node.mesh_listen;
    options.cluster = config.cluster.name;
    options.secret = config.cluster.secret;
    options.limits.frame_bytes_max = config.limits.frame_bytes_max;
    options.limits.traversal_words_max = config.limits.traversal_words_max;
    options.limits.nesting_max = config.limits.nesting_max;
    options.queue_frames_max = config.limits.send_queue_frames;
    options.queue_bytes_max = config.limits.send_queue_bytes;
    options.connections_max = config.limits.mesh_connections_max;
    options.handshake_timeout = Duration(config.limits.handshake_timeout_ms);
    return options;
}

// The config's TLS contexts: one for the mesh, one for the client port (either may be off).
std::expected<Node::Tls, std::string> tls_contexts(const config::TlsConfig& config) {
    const mesh::TlsFiles files{config.certificate_file, config.private_key_file, config.ca_file};
    Node::Tls tls;
    for (auto [on, role, out] : {std::tuple(config.mesh, mesh::TlsRole::peer, &tls.mesh),
                                 std::tuple(config.clients, mesh::TlsRole::server, &tls.clients)}) {
        if (on) {
            auto context = mesh::make_tls_context(files, role);
            if (!context) {
                return std::unexpected("tls: " + context.error());
            }
            *out = std::move(*context);
        }
    }
    return tls;
}

// A number larger than any incarnation this node ID used before (a restart is a new process, so a
// new incarnation): the wall clock in ms.
std::uint64_t wall_clock_incarnation() {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    return static_cast<std::uint64_t>(now);
}

AdmissionOptions admission_options(const config::LimitsConfig& limits) {
    AdmissionOptions options;
    options.loop_lag_max = Duration(limits.loop_lag_max_ms);
    options.round_trip_max_ms = limits.round_trip_max_ms;
    options.live_tickets_max = limits.live_tickets_max;
    options.requests_in_flight_max = limits.requests_in_flight_max;
    return options;
}

// How often the loop's lag is sampled (and its heartbeat stamped for /livez): often enough to see
// a backlog build within a search interval, rarely enough to cost nothing.
constexpr Duration lag_probe_interval{20};

// A cluster of one by config: no seeds, or none but this node's own mesh address (as
// scripts/cluster.sh seeds its first node). Such a node is ready without another member.
HealthOptions health_options(const config::Config& config) {
    HealthOptions options;
    options.liveness_bound = Duration(config.limits.liveness_bound_ms);
    options.alone_by_config =
        std::ranges::all_of(config.cluster.seeds, [&config](const std::string& seed) {
            return seed == config.node.mesh_listen || seed == config.node.mesh_advertise;
        });
    return options;
}

}  // namespace

Node::Node(const config::Config& config, std::shared_ptr<spdlog::logger> log, Tls tls)
    : config_(config),
      log_(std::move(log)),
      tls_(std::move(tls)),
      scheduler_(context_),
      transport_(context_, tcp_options(config, tls_.mesh), log_),
      health_(health_options(config)),
      signals_(context_, SIGTERM, SIGINT, SIGUSR1),
      admission_(admission_options(config.limits), std::hash<std::string>{}(config.node.id)) {}

Node::~Node() {
    admin_.reset();
    scheduler_.clear();
    clients_.reset();
    commands_.reset();
    services_.reset();
    transport_.stop();
}

std::expected<std::unique_ptr<Node>, std::string> Node::create(
    const config::Config& config, std::shared_ptr<spdlog::logger> log) {
    auto tls = tls_contexts(config.tls);
    if (!tls) {
        return std::unexpected(tls.error());
    }
    std::unique_ptr<Node> node(new Node(config, std::move(log), std::move(*tls)));
    if (auto started = node->start(config); !started) {
        return std::unexpected(started.error());
    }
    return node;
}

std::expected<void, std::string> Node::start(const config::Config& config) {
    auto mesh_endpoint = transport_.listen();
    if (!mesh_endpoint) {
        return std::unexpected(mesh_endpoint.error());
    }
    mesh_address_ = mesh::to_string(*mesh_endpoint);
    health_.beat(scheduler_.now());
    if (!config.node.admin_listen.empty()) {
        metrics_ = std::make_unique<Metrics>();
        for (const auto& configured : config.ticket_types) {
            metrics_->add_ticket_type(static_cast<ticket::TicketType>(configured.first));
        }
        auto admin = AdminServer::create(
            config.node.admin_listen,
            {metrics_->collectable(), std::make_shared<const ProcessMetrics>()}, health_);
        if (!admin) {
            return std::unexpected(admin.error());
        }
        admin_ = std::move(*admin);
    }
    start_mesh(config);
    if (auto built = start_services(config); !built) {
        return built;
    }
    if (auto listening = start_client_port(config); !listening) {
        return listening;
    }
    core_->start();
    transport_.start(*core_, config.cluster.seeds);
    clients_->start();
    health_.set_listening(true);
    wait_for_signal();
    every_second();
    lag_probe_due_ = scheduler_.now() + lag_probe_interval;
    lag_timer_ = scheduler_.run_after(lag_probe_interval, [this] { probe_lag(); });
    return {};
}

void Node::start_mesh(const config::Config& config) {
    mesh::MeshOptions mesh_options;
    mesh_options.membership.heartbeat_interval = Duration(config.cluster.heartbeat_interval_ms);
    mesh_options.membership.dead_after = Duration(config.cluster.dead_after_ms);
    mesh_options.limits = tcp_options(config, nullptr).limits;
    mesh_options.requests_per_peer_max = config.limits.requests_in_flight_max;
    // What peers' messages make the mesh and the store warn about goes through the throttle.
    mesh_options.on_warning = [this](const std::string& text) {
        throttle_.warn(*log_, "mesh", "mesh: {}", mesh::printable(text, 1024));
    };
    mesh_options.on_round_trip = [this](std::chrono::nanoseconds took) {
        const double seconds = std::chrono::duration<double>(took).count();
        admission_.observe_round_trip(seconds * 1000);
        if (metrics_) {
            metrics_->observe_mesh_round_trip(seconds);
        }
    };
    const std::string advertise =
        config.node.mesh_advertise.empty() ? mesh_address_ : config.node.mesh_advertise;
    const mesh::MemberInfo self{NodeId(config.node.id), advertise, config.node.node_type,
                                wall_clock_incarnation()};
    core_ = std::make_unique<mesh::MeshCore>(self, mesh_options, scheduler_, transport_);
    core_->on_membership([this](const mesh::MembershipEvent& event) {
        log_membership(event);
        publish_members();
    });
}

// The node's core over the mesh: its services and the client commands' semantics, with the real
// clock, admission and the client port as their hooks.
std::expected<void, std::string> Node::start_services(const config::Config& config) {
    ServiceHooks hooks;
    hooks.on_store_warning = [this](const std::string& text) {
        throttle_.warn(*log_, "matching", "matching: {}", mesh::printable(text, 1024));
    };
    hooks.on_superseded = [this](const UserId& user) { commands_->superseded(user); };
    hooks.seed = std::random_device{}();
    hooks.unix_ms = [] {
        return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
    };
    auto services = NodeServices::create(config, *core_, scheduler_, *this, std::move(hooks));
    if (!services) {
        return std::unexpected(services.error());
    }
    services_ = std::move(*services);
    services_->types().set_match_observer([this](const MatchResult& match) {
        if (metrics_) {
            metrics_->observe_match(match);
        }
    });
    matching_ = &services_->store();
    tickets_ = &services_->tickets();
    CommandHooks command_hooks;
    command_hooks.unix_ms = [] {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
    };
    command_hooks.admit = [this] { return admission_.admit(load()); };
    command_hooks.close_session = [this](const std::shared_ptr<Session>& session,
                                         std::string_view reason) {
        clients_->close_session(session, reason);
    };
    command_hooks.warn = [this](std::string_view kind, const std::string& line) {
        throttle_.warn(*log_, kind, "{}", line);
    };
    commands_ = std::make_unique<ClientCommands>(config_, *services_, *core_, scheduler_, log_,
                                                 std::move(command_hooks));
    return {};
}

std::expected<void, std::string> Node::start_client_port(const config::Config& config) {
    ClientServerOptions client_options;
    client_options.listen = config.node.client_listen;
    client_options.frame_bytes_max = config.limits.client_frame_bytes_max;
    client_options.connections_max = config.limits.client_connections_max;
    client_options.commands_per_second = config.limits.commands_per_second;
    client_options.hello_timeout = std::chrono::milliseconds(config.limits.client_hello_timeout_ms);
    client_options.tls = tls_.clients;
    clients_ = std::make_unique<ClientServer>(context_, client_options, *this, log_);
    auto client_endpoint = clients_->listen();
    if (!client_endpoint) {
        return std::unexpected(client_endpoint.error());
    }
    client_address_ = mesh::to_string(*client_endpoint);
    if (config.cluster.token_secret.empty()) {
        log_->warn(
            "node: no cluster.tokenSecret: clients are not authenticated (any user ID is "
            "accepted)");
    }
    return {};
}

// A timer set for T that runs at T + lag: the loop had that much work queued before it. That it
// runs at all is the loop's heartbeat.
void Node::probe_lag() {
    const Time now = scheduler_.now();
    health_.beat(now);
    admission_.observe_lag(now, std::max(Duration(0), now - lag_probe_due_));
    admission_.pace(now);
    lag_probe_due_ = now + lag_probe_interval;
    lag_timer_ = scheduler_.run_after(lag_probe_interval, [this] { probe_lag(); });
}

// How many other members are live, for /readyz: on every membership change, and each second in
// case a change reached the live list without an event.
void Node::publish_members() {
    const auto members = core_->live_members();
    const NodeId& self = core_->self().id;
    health_.set_other_members(static_cast<std::size_t>(std::ranges::count_if(
        members, [&self](const mesh::MemberInfo& member) { return member.id != self; })));
}

Load Node::load() const {
    return Load{tickets_->ticket_count(), core_->pending_requests(), tickets_->courier().pending()};
}

int Node::run() {
    context_.run();
    return 0;
}

void Node::post(std::function<void()> task) {
    asio::post(context_, std::move(task));
}

void Node::on_push(std::function<void(const UserId&, const ticket::PushMessage&)> observer) {
    push_observers_.push_back(std::move(observer));
}

void Node::wait_for_signal() {
    signals_.async_wait([this](const std::error_code& error, int signal) {
        if (error) {
            return;
        }
        if (signal == SIGUSR1) {
            dump_text(std::cout);
            std::cout.flush();
            wait_for_signal();
            return;
        }
        log_event(*log_, spdlog::level::info, {"draining", {{"signal", signal}}},
                  "node: signal {} received: draining", signal);
        shutdown();
    });
}

void Node::shutdown() {
    if (commands_->draining()) {
        return;
    }
    commands_->drain();
    health_.set_draining();
    // New tickets are refused from now on; live ones end with 222 reason draining to all their
    // members, and users here leave the tickets held elsewhere (see node.hpp).
    const std::size_t canceled = tickets_->drain();
    log_event(*log_, spdlog::level::info, {"leaving", {{"tickets_canceled", canceled}}},
              "node: canceled {} live tickets (reason draining); leaving the cluster", canceled);
    finish_shutdown(scheduler_.now() + drain_limit_);
}

void Node::finish_shutdown(Time deadline) {
    // Wait for the cancel pushes to be acknowledged, then for the mesh's queues to empty.
    const bool delivered = tickets_->courier().pending() == 0;
    if (!delivered && scheduler_.now() < deadline) {
        scheduler_.run_after(Duration(10), [this, deadline] { finish_shutdown(deadline); });
        return;
    }
    if (!core_->membership().self().id.empty() && clients_) {
        clients_->stop();
        health_.set_listening(false);
        core_->leave();
    }
    auto leave = [this](auto self, Time until) -> void {
        if (!transport_.drained() && scheduler_.now() < until) {
            scheduler_.run_after(Duration(10), [self, until] { self(self, until); });
            return;
        }
        signals_.cancel();
        transport_.stop();
        scheduler_.clear();
        context_.stop();
    };
    leave(leave, scheduler_.now() + Duration(1000));
}

void Node::log_membership(const mesh::MembershipEvent& event) {
    const auto& member = event.member;
    auto level = spdlog::level::info;
    std::string_view name;
    std::string text;
    switch (event.kind) {
        case mesh::MembershipEvent::Kind::joined:
            name = "member_joined";
            text = fmt::format("mesh: {} joined ({}, type {}, incarnation {})", member.id.str(),
                               member.address, member.node_type, member.incarnation);
            break;
        case mesh::MembershipEvent::Kind::died:
            level = spdlog::level::warn;
            name = "member_dead";
            text = fmt::format("mesh: {} declared dead (incarnation {})", member.id.str(),
                               member.incarnation);
            break;
        case mesh::MembershipEvent::Kind::left:
            name = "member_left";
            text = fmt::format("mesh: {} left the cluster", member.id.str());
            break;
        case mesh::MembershipEvent::Kind::reconciled:
            level = spdlog::level::warn;
            name = "member_rejoined";
            text = fmt::format(
                "mesh: {} had declared this node dead; both ended what they shared and meet "
                "again as new members",
                member.id.str());
            break;
    }
    log_event(*log_, level,
              {name,
               {{"member", member.id.str()},
                {"address", member.address},
                {"node_type", member.node_type},
                {"incarnation", member.incarnation}}},
              "{}", text);
}

MetricsSnapshot Node::snapshot() const {
    MetricsSnapshot snapshot;
    snapshot.tickets = tickets_->counters();
    snapshot.phases = tickets_->ticket_counts();
    snapshot.refused = commands_->refusals();
    snapshot.clients = clients_->counters();
    snapshot.mesh = transport_.counters();
    snapshot.store_items = matching_->local_items().size();
    snapshot.members_alive = core_->live_members().size();
    snapshot.sessions = clients_->connection_count();
    snapshot.loop_lag_ms = admission_.lag().count();
    snapshot.round_trip_ms = admission_.round_trip_ms();
    return snapshot;
}

void Node::every_second() {
    publish_members();
    const MetricsSnapshot now = snapshot();
    if (metrics_) {
        metrics_->update(now);
    }
    summary_.second(scheduler_.now(), now, *log_);
    second_timer_ = scheduler_.run_after(Duration(1000), [this] { every_second(); });
}

void Node::push(const UserId& user, const ticket::PushMessage& message) {
    if (auto ran = commands_->on_push(user, message); ran && metrics_) {
        metrics_->observe_time_to_match(message.ticket_type,
                                        std::chrono::duration<double>(*ran).count());
    }
    for (const auto& observer : push_observers_) {
        observer(user, message);
    }
    if (auto session = commands_->session_of(user)) {
        clients_->push(session, message);
    }
}

void Node::dump_text(std::ostream& out) {
    node::dump_text(*core_, *services_, scheduler_.now(), out);
}

nlohmann::json Node::dump_json() {
    return node::dump_json(*core_, *services_, scheduler_.now());
}

void Node::handle(const std::shared_ptr<Session>& session, ClientRequest request, Reply reply) {
    commands_->handle(session, std::move(request), std::move(reply));
}

void Node::session_closed(const std::shared_ptr<Session>& session) {
    commands_->session_closed(session);
}

std::chrono::milliseconds Node::turned_away() {
    return admission_.turn_away();
}

}  // namespace matchmesh::node
