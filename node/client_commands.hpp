#pragma once
// ClientCommands: what each client command does on one node, with the session state that goes
// with it: which session speaks for which user, whether the node is draining, and when each of
// its users' tickets began (for time to match).
//
// - hello binds a session to a user, checking its token when the cluster has a token secret; a
//   token signed with the admin secret opens an operator's session instead. A second session of
//   the same user ends the first.
// - The store commands, `members` and `dump` need an operator's session once tokens are checked.
// - Ticket commands act for the session's user. startTicket checks the ticket type and values,
//   then asks admission (past capacity: `overloaded`, with a retry-after).
//
// Pure: the wall clock (for tokens), admission and closing a connection come in through
// `CommandHooks`, so the node, the simulation and the fuzz targets run the same semantics. Lives
// on its node's loop thread.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <spdlog/logger.h>

#include "config/config.hpp"
#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"
#include "node/admission.hpp"
#include "node/services.hpp"
#include "node/session.hpp"

namespace matchmesh::node {

struct CommandHooks {
    // Milliseconds since the Unix epoch: token expiry, and the connect time that orders two
    // sessions of one user on different nodes.
    std::function<std::uint64_t()> unix_ms;
    // Whether to take one more ticket now (null: always).
    std::function<std::optional<Refusal>()> admit;
    // Close this session's connection; the caller then reports it through session_closed.
    std::function<void(const std::shared_ptr<Session>&, std::string_view reason)> close_session;
    // A warning a client can cause, by kind, for the caller to throttle (null: logged as is).
    std::function<void(std::string_view kind, const std::string& line)> warn;
};

// Why a startTicket was refused: a fixed set, each with a short label for the metrics.
enum class StartRefusal : std::uint8_t {
    overloaded,         // the node is past its capacity (admission)
    draining,           // the node is shutting down
    unknown_type,       // the ticket type is not configured on this node
    invalid,            // the values or the party break the type's rules
    duplicate,          // the user has a ticket of this type already, or is still in its room
    party_unavailable,  // a party member is not connected here, or busy with this type
    unavailable,        // no node can take it now (the ticket limit, no node stores items)
    other,              // anything else the ticket service refused (e.g. the user left)
};
inline constexpr std::size_t start_refusals_count =
    static_cast<std::size_t>(StartRefusal::other) + 1;
[[nodiscard]] std::string_view label_of(StartRefusal refusal);
// Refused starts by ticket type, then by StartRefusal: arrays, so that counting costs no lookup.
using StartRefusals =
    std::array<std::array<std::uint64_t, start_refusals_count>, ticket::ticket_types_count>;

class ClientCommands {
public:
    using Reply = ClientHandler::Reply;

    ClientCommands(const config::Config& config, NodeServices& services, mesh::Network& network,
                   mesh::Scheduler& scheduler, std::shared_ptr<spdlog::logger> log,
                   CommandHooks hooks);

    // One request; `reply` is called once, now or later.
    void handle(const std::shared_ptr<Session>& session, ClientRequest request, Reply reply);
    // The session's connection is gone: its user disconnects (its tickets end).
    void session_closed(const std::shared_ptr<Session>& session);
    // A session of this user began on another node: the one here ends.
    void superseded(const UserId& user);
    // The session that speaks for `user` here, if any.
    [[nodiscard]] std::shared_ptr<Session> session_of(const UserId& user) const;
    // A push to `user`: a terminal one forgets the ticket's application data and, for a ticket
    // started here, says how long it ran.
    std::optional<Duration> on_push(const UserId& user, const ticket::PushMessage& message);

    // From now on hello and startTicket are refused as `draining`.
    void drain() { draining_ = true; }
    [[nodiscard]] bool draining() const { return draining_; }
    [[nodiscard]] const StartRefusals& refusals() const { return refusals_; }

private:
    void hello(const std::shared_ptr<Session>& session, HelloCommand& hello, std::uint64_t id,
               const Reply& reply);
    void end_session_of(const UserId& user, std::string_view reason);
    [[nodiscard]] bool admin_hello(Session& session, const HelloCommand& hello) const;
    void store(Session& session, std::uint64_t id, Command& command, const Reply& reply);
    void ticket(const UserId& user, std::uint64_t id, Command& command, const Reply& reply);
    void ticket_action(const UserId& user, std::uint64_t id, const TicketCommand& command,
                       const Reply& reply);
    void start_ticket(const UserId& user, StartTicketCommand& command, std::uint64_t id,
                      const Reply& reply);
    // Counts a refused start and answers it.
    void refuse_start(ticket::TicketType type, StartRefusal why, ClientReply answer,
                      const Reply& reply);
    // Refuses a search past limits.searchCostMax; charges a wide one as several commands.
    [[nodiscard]] bool over_budget(Session& session, double buckets, std::size_t limit,
                                   std::uint64_t id, const Reply& reply) const;
    [[nodiscard]] std::uint64_t unix_seconds() const { return hooks_.unix_ms() / 1000; }
    void warn(std::string_view kind, const std::string& line) const;

    const config::Config& config_;
    NodeServices& services_;
    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    std::shared_ptr<spdlog::logger> log_;
    CommandHooks hooks_;
    std::unordered_map<UserId, std::weak_ptr<Session>> sessions_;  // by the user they speak for
    bool draining_ = false;
    StartRefusals refusals_{};
};

}  // namespace matchmesh::node
