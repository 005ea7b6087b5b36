#pragma once
// Node: one matchmesh process — the mesh (TCP, authenticated), the distributed store, tickets,
// the client port and the admin port, all on one io_context thread, wired from a validated
// config. It is also the embedding API's node (see include/matchmesh/matchmesh.hpp): game logic
// registers callbacks and calls operations on the loop thread, or posts to it.
//
// Life cycle: create() binds every port (or says why it cannot); run() serves until SIGTERM or
// SIGINT (or shutdown()), then drains, and returns 0. A drain keeps every started ticket's
// promise of one terminal push: it refuses new sessions and tickets (`draining`); each ticket
// owned here that still searches or waits ends with 222 reason `draining` to all its members,
// those connected to other nodes included (its room is here: it cannot move); each user connected
// here that is in a ticket held on another node leaves it, hearing 222 `draining` at once (the
// room there goes on without that party, or ends with reason `draining` if it was the owner's);
// a party start still claiming its members fails as `draining`. A client that hears `draining`
// starts again on another node. A room that had completed closes (no second terminal push). The
// drain then waits, up to drain_limit_, for those pushes to be acknowledged and the mesh's queues
// to empty, leaves the cluster, and stops. SIGUSR1 prints a text dump of the store, tickets,
// rooms and members to stdout without disturbing service. The admin port (metrics, /livez,
// /readyz) is served by its own threads from what the loop publishes (Health).

#include <expected>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include <spdlog/logger.h>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <nlohmann/json_fwd.hpp>

#include "config/config.hpp"
#include "matching/service.hpp"
#include "mesh/asio/asio_scheduler.hpp"
#include "mesh/asio/log_throttle.hpp"
#include "mesh/asio/tcp_transport.hpp"
#include "mesh/mesh_core.hpp"
#include "node/activity_summary.hpp"
#include "node/admin_server.hpp"
#include "node/admission.hpp"
#include "node/client_commands.hpp"
#include "node/client_server.hpp"
#include "node/health.hpp"
#include "node/metrics.hpp"
#include "node/services.hpp"
#include "node/ticket_types.hpp"
#include "ticket/service.hpp"

namespace matchmesh::node {

class Node final : public ClientHandler, public ticket::PushSink {
public:
    [[nodiscard]] static std::expected<std::unique_ptr<Node>, std::string> create(
        const config::Config& config, std::shared_ptr<spdlog::logger> log);
    ~Node() override;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    // The TLS contexts of the mesh and the client port (null: plain TCP).
    struct Tls {
        mesh::TlsContext mesh;
        mesh::TlsContext clients;
    };

    // Serves until a stop signal or shutdown(), drains, and returns the process exit code.
    int run();
    // Starts the drain described above; safe from the loop thread (post() it from others).
    void shutdown();
    // Runs `task` on the loop thread; safe from any thread.
    void post(std::function<void()> task);

    // The embedding API's handles; use them on the loop thread only.
    [[nodiscard]] ticket::TicketService& tickets() { return *tickets_; }
    [[nodiscard]] matching::MatchingService& store() { return *matching_; }
    [[nodiscard]] mesh::Network& network() { return *core_; }
    [[nodiscard]] mesh::Scheduler& scheduler() { return scheduler_; }
    // Hears every push this node delivers to a user connected here (client sessions included).
    void on_push(std::function<void(const UserId&, const ticket::PushMessage&)> observer);

    [[nodiscard]] const std::string& mesh_address() const { return mesh_address_; }
    [[nodiscard]] const std::string& client_address() const { return client_address_; }
    [[nodiscard]] std::string admin_address() const { return admin_ ? admin_->address() : ""; }
    void dump_text(std::ostream& out);
    [[nodiscard]] nlohmann::json dump_json();

    // ClientHandler
    void handle(const std::shared_ptr<Session>& session, ClientRequest request,
                Reply reply) override;
    void session_closed(const std::shared_ptr<Session>& session) override;
    [[nodiscard]] std::chrono::milliseconds turned_away() override;
    // PushSink
    void push(const UserId& user, const ticket::PushMessage& message) override;

private:
    Node(const config::Config& config, std::shared_ptr<spdlog::logger> log, Tls tls);
    [[nodiscard]] std::expected<void, std::string> start(const config::Config& config);
    void start_mesh(const config::Config& config);
    [[nodiscard]] std::expected<void, std::string> start_services(const config::Config& config);
    [[nodiscard]] std::expected<void, std::string> start_client_port(const config::Config& config);
    void wait_for_signal();
    void finish_shutdown(Time deadline);
    void log_membership(const mesh::MembershipEvent& event);
    void every_second();
    [[nodiscard]] MetricsSnapshot snapshot() const;
    void probe_lag();
    void publish_members();
    [[nodiscard]] Load load() const;

    config::Config config_;
    std::shared_ptr<spdlog::logger> log_;
    Tls tls_;
    mesh::LogThrottle throttle_;  // for what clients can make it warn about
    // One thread runs the loop and only it touches the sockets (other threads post() to it), so
    // the reactor's per-socket locks are left out; posting stays thread-safe.
    asio::io_context context_{ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    mesh::AsioScheduler scheduler_;
    mesh::TcpTransport transport_;
    std::unique_ptr<mesh::MeshCore> core_;
    std::unique_ptr<NodeServices> services_;
    // Its parts, for short.
    matching::MatchingService* matching_ = nullptr;
    ticket::TicketService* tickets_ = nullptr;
    std::unique_ptr<ClientCommands> commands_;
    std::unique_ptr<ClientServer> clients_;
    std::unique_ptr<Metrics> metrics_;
    Health health_;
    // Declared after what its threads read (the metrics, health_), so that it stops first.
    std::unique_ptr<AdminServer> admin_;
    asio::signal_set signals_;
    std::vector<std::function<void(const UserId&, const ticket::PushMessage&)>> push_observers_;
    std::string mesh_address_;
    std::string client_address_;
    mesh::TimerId second_timer_ = 0;
    ActivitySummary summary_;
    Admission admission_;
    mesh::TimerId lag_timer_ = 0;
    Time lag_probe_due_{};
    Duration drain_limit_{3000};
};

}  // namespace matchmesh::node
