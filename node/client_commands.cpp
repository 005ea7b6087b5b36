#include "node/client_commands.hpp"

#include <set>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mesh/base/assert.hpp"
#include "mesh/text.hpp"
#include "node/state_dump.hpp"
#include "node/token.hpp"

namespace matchmesh::node {
namespace {

template <typename Result>
ClientReply error_reply(std::uint64_t id, const Result& result) {
    return ClientReply{id, error_of(result.error())};
}

ClientReply refusal(std::uint64_t id, ClientErrc code, std::string message,
                    Duration retry_after = Duration(0)) {
    return ClientReply{
        id, error_of(code, std::move(message), static_cast<std::uint32_t>(retry_after.count()))};
}

ClientReply done(std::uint64_t id) {
    return ClientReply{id, std::monostate{}};
}

// Replies to a ticket operation that answers later.
std::function<void(ticket::Result<void>)> answer_later(std::uint64_t id,
                                                       ClientCommands::Reply reply) {
    return [id, reply = std::move(reply)](ticket::Result<void> result) {
        reply(result ? done(id) : error_reply(id, result));
    };
}

template <typename Result>
ClientReply answer_now(std::uint64_t id, const Result& result) {
    return result ? done(id) : error_reply(id, result);
}

// For operations that only say whether they did something.
ClientReply answer_now(std::uint64_t id, bool found, std::string_view what) {
    return found ? done(id)
                 : refusal(id, ClientErrc::ticket_not_found,
                           fmt::format("{}: no such ticket for this user", what));
}

StartRefusal refusal_of(ticket::Errc code) {
    switch (code) {
        case ticket::Errc::already_has_ticket:
        case ticket::Errc::in_previous_room: return StartRefusal::duplicate;
        case ticket::Errc::invalid_params:
        case ticket::Errc::failed_to_create: return StartRefusal::invalid;
        case ticket::Errc::party_unavailable: return StartRefusal::party_unavailable;
        case ticket::Errc::unavailable: return StartRefusal::unavailable;
        default: return StartRefusal::other;
    }
}

bool is_store_command(const Command& command) {
    return std::holds_alternative<AddCommand>(command) ||
           std::holds_alternative<SearchCommand>(command) ||
           std::holds_alternative<RangeSearchCommand>(command) ||
           std::holds_alternative<RemoveCommand>(command) ||
           std::holds_alternative<MembersCommand>(command) ||
           std::holds_alternative<DumpCommand>(command);
}

// The buckets a range search may visit: counted from what it names (values that share a bucket
// still count), so it is known before any work is done.
double buckets_of(const RangeSearchCommand& search) {
    double buckets = static_cast<double>(search.profile_ids.size() *
                                         std::max<std::size_t>(search.tags.size(), 1));
    for (const auto& [name, values] : search.properties) {
        buckets *= static_cast<double>(std::max<std::size_t>(values.size(), 1));
    }
    return buckets;
}

constexpr double buckets_per_command = 64;  // a wide search counts as this many more commands

}  // namespace

std::string_view label_of(StartRefusal refusal) {
    switch (refusal) {
        case StartRefusal::overloaded: return "overloaded";
        case StartRefusal::draining: return "draining";
        case StartRefusal::unknown_type: return "unknown_type";
        case StartRefusal::invalid: return "invalid";
        case StartRefusal::duplicate: return "duplicate";
        case StartRefusal::party_unavailable: return "party_unavailable";
        case StartRefusal::unavailable: return "unavailable";
        case StartRefusal::other: return "other";
    }
    return "other";
}

ClientCommands::ClientCommands(const config::Config& config, NodeServices& services,
                               mesh::Network& network, mesh::Scheduler& scheduler,
                               std::shared_ptr<spdlog::logger> log, CommandHooks hooks)
    : config_(config),
      services_(services),
      network_(network),
      scheduler_(scheduler),
      log_(std::move(log)),
      hooks_(std::move(hooks)) {
    MM_ASSERT(log_ != nullptr && hooks_.unix_ms && hooks_.close_session);
}

void ClientCommands::warn(std::string_view kind, const std::string& line) const {
    if (hooks_.warn) {
        hooks_.warn(kind, line);
    } else {
        log_->warn("{}", line);
    }
}

void ClientCommands::handle(const std::shared_ptr<Session>& session, ClientRequest request,
                            Reply reply) {
    const std::uint64_t id = request.id;
    if (auto* said = std::get_if<HelloCommand>(&request.command)) {
        hello(session, *said, id, reply);
        return;
    }
    const bool store_command = is_store_command(request.command);
    // The store commands, `members` and `dump` reach every player's items and the cluster's
    // layout: once tokens are checked, only an admin session may use them (a cluster without
    // tokenSecret authenticates nobody, and the node says so at start).
    const bool open_cluster = config_.cluster.token_secret.empty();
    if (store_command && !session->admin && !open_cluster) {
        reply(refusal(id, ClientErrc::forbidden,
                      config_.cluster.admin_secret.empty()
                          ? "store commands, members and dump need an admin session, and this "
                            "cluster has no cluster.adminSecret"
                          : "store commands, members and dump need an admin session: hello with "
                            "a token signed with cluster.adminSecret"));
        return;
    }
    if (!store_command && !session->user) {
        reply(refusal(id, ClientErrc::unauthenticated,
                      "ticket commands need a player's hello first"));
        return;
    }
    if (store_command) {
        store(*session, id, request.command, reply);
    } else {
        ticket(*session->user, id, request.command, reply);
    }
}

// A token signed with the admin secret opens an admin session: an operator's tool, not a player
// (it holds no tickets and supersedes no one).
bool ClientCommands::admin_hello(Session& session, const HelloCommand& hello) const {
    if (config_.cluster.admin_secret.empty() || hello.token.empty() ||
        !verify_token(config_.cluster.admin_secret, hello.user.str(), hello.token, unix_seconds(),
                      static_cast<std::uint64_t>(config_.limits.token_lifetime_max_seconds))) {
        return false;
    }
    session.admin = true;
    log_->info("client: admin session for {} from {}", mesh::printable(hello.user.str()),
               session.remote);
    return true;
}

void ClientCommands::hello(const std::shared_ptr<Session>& session, HelloCommand& hello,
                           std::uint64_t id, const Reply& reply) {
    if (hello.user.empty()) {
        reply(refusal(id, ClientErrc::invalid_argument, "hello: the user ID is empty"));
        return;
    }
    if (session->user || session->admin) {
        reply(refusal(id, ClientErrc::invalid_argument,
                      fmt::format("hello: this connection already speaks for {}",
                                  session->admin ? "an operator" : session->user->str())));
        return;
    }
    if (admin_hello(*session, hello)) {
        reply(done(id));
        return;
    }
    if (!config_.cluster.token_secret.empty()) {
        auto verified = verify_token(
            config_.cluster.token_secret, hello.user.str(), hello.token, unix_seconds(),
            static_cast<std::uint64_t>(config_.limits.token_lifetime_max_seconds));
        if (!verified) {
            warn("hello",
                 fmt::format("client: refused hello from {} for user {}: {}", session->remote,
                             mesh::printable(hello.user.str()), verified.error()));
            reply(refusal(id, ClientErrc::invalid_token, "hello: " + verified.error()));
            return;
        }
    }
    // The user reconnected: the old connection (if still open) is closed first, which ends what
    // it had in progress, as a reconnect does.
    end_session_of(hello.user, "the user connected again");
    if (draining_) {
        reply(refusal(id, ClientErrc::draining,
                      "hello: this node is shutting down; connect to another"));
        return;
    }
    session->user = hello.user;
    sessions_[hello.user] = session;
    services_.tickets().connect_user(ticket::User{hello.user, std::to_string(session->id),
                                                  network_.self().id, std::move(hello.data),
                                                  hooks_.unix_ms()});
    log_->debug("session: user {} connected from {}", hello.user.str(), session->remote);
    reply(done(id));
}

void ClientCommands::superseded(const UserId& user) {
    end_session_of(user, "the user connected to another node");
}

void ClientCommands::end_session_of(const UserId& user, std::string_view reason) {
    auto previous = sessions_.find(user);
    if (previous == sessions_.end()) {
        return;
    }
    if (auto old = previous->second.lock()) {
        hooks_.close_session(old, reason);  // which reports it through session_closed
    }
    sessions_.erase(user);
}

std::shared_ptr<Session> ClientCommands::session_of(const UserId& user) const {
    auto found = sessions_.find(user);
    return found == sessions_.end() ? nullptr : found->second.lock();
}

void ClientCommands::session_closed(const std::shared_ptr<Session>& session) {
    if (!session->user) {
        return;
    }
    const UserId user = *session->user;
    auto found = sessions_.find(user);
    if (found == sessions_.end() || found->second.lock() != session) {
        return;  // not the session that speaks for this user
    }
    sessions_.erase(found);
    services_.tickets().disconnect_user(user);
    services_.types().forget(user);
    log_->debug("session: user {} disconnected", user.str());
}

std::optional<Duration> ClientCommands::on_push(const UserId& user,
                                                const ticket::PushMessage& message) {
    if (!ticket::is_terminal(message.kind)) {
        return std::nullopt;
    }
    log_->debug("ticket: user {} ticket {} ended: {} in room {}", user.str(),
                message.ticket_id.str(), message.cmd, message.room_id);
    services_.types().forget(user, message.ticket_type);
    const auto session = session_of(user);
    const std::optional<Time> started =
        session ? session->ended(message.ticket_type) : std::nullopt;
    if (!started || message.kind != ticket::PushKind::success) {
        return std::nullopt;
    }
    return scheduler_.now() - *started;
}

bool ClientCommands::over_budget(Session& session, double buckets, std::size_t limit,
                                 std::uint64_t id, const Reply& reply) const {
    session.charge(std::floor(buckets / buckets_per_command));
    const double cost = buckets * static_cast<double>(limit);
    if (cost <= static_cast<double>(config_.limits.search_cost_max)) {
        return false;
    }
    reply(refusal(id, ClientErrc::search_too_costly,
                  fmt::format("the search may visit {} buckets for up to {} results each: {} "
                              "over this cluster's {} (limits.searchCostMax)",
                              buckets, limit, cost, config_.limits.search_cost_max)));
    return true;
}

void ClientCommands::store(Session& session, std::uint64_t id, Command& command,
                           const Reply& reply) {
    matching::MatchingService& store = services_.store();
    auto answer_search = [id, reply](matching::SearchOutcome outcome) {
        reply(ClientReply{id, std::move(outcome)});
    };
    if (auto* add = std::get_if<AddCommand>(&command)) {
        reply(answer_now(id, store.add(add->profile_id, add->unique_id, add->tag, add->properties,
                                       std::move(add->value), add->ttl)));
    } else if (auto* search = std::get_if<SearchCommand>(&command)) {
        if (!over_budget(session, static_cast<double>(search->profile_ids.size()), search->limit,
                         id, reply)) {
            auto started = store.search(search->profile_ids, search->tag, search->properties,
                                        search->limit, answer_search);
            if (!started) {
                reply(error_reply(id, started));
            }
        }
    } else if (auto* range = std::get_if<RangeSearchCommand>(&command)) {
        // Each value of each range property is a bucket to ask: bound the fan-out.
        for (const auto& [name, values] : range->properties) {
            if (values.size() > config_.limits.range_values_max) {
                reply(refusal(id, ClientErrc::too_many_range_values,
                              fmt::format("range property '{}' has {} values; this cluster allows "
                                          "{} (limits.rangeValuesMax)",
                                          name, values.size(), config_.limits.range_values_max)));
                return;
            }
        }
        if (!over_budget(session, buckets_of(*range), range->limit, id, reply)) {
            auto started = store.search_with_range_with_tags(
                range->profile_ids, range->tags, range->properties, range->limit, answer_search);
            if (!started) {
                reply(error_reply(id, started));
            }
        }
    } else if (auto* remove = std::get_if<RemoveCommand>(&command)) {
        reply(answer_now(id, store.remove(remove->profile_id, remove->unique_ids)));
    } else if (std::holds_alternative<MembersCommand>(command)) {
        const auto members = network_.live_members();
        reply(ClientReply{id, std::vector<mesh::MemberInfo>(members.begin(), members.end())});
    } else if (std::holds_alternative<DumpCommand>(command)) {
        reply(ClientReply{id, dump_json(network_, services_, scheduler_.now())
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
    }
}

void ClientCommands::ticket(const UserId& user, std::uint64_t id, Command& command,
                            const Reply& reply) {
    ticket::TicketService& tickets = services_.tickets();
    if (auto* start = std::get_if<StartTicketCommand>(&command)) {
        start_ticket(user, *start, id, reply);
    } else if (auto* action = std::get_if<TicketCommand>(&command)) {
        ticket_action(user, id, *action, reply);
    } else if (auto* accept = std::get_if<AcceptPartyCommand>(&command)) {
        tickets.accept_party(accept->ticket_type, user, std::move(accept->owner));
        reply(done(id));
    } else if (auto* kick = std::get_if<KickCommand>(&command)) {
        tickets.kickout_from_ticket(kick->ticket_type, user, kick->target, answer_later(id, reply));
    } else if (auto* broadcast = std::get_if<BroadcastCommand>(&command)) {
        reply(answer_now(id,
                         tickets.ticket_broadcast(broadcast->ticket_type, user, broadcast->ver,
                                                  broadcast->cmd, std::move(broadcast->message))));
    } else if (auto* set = std::get_if<SetPropertiesCommand>(&command)) {
        reply(answer_now(id, tickets.set_ticket_properties(set->ticket_type, user, set->values)));
    } else if (auto* get = std::get_if<GetPropertiesCommand>(&command)) {
        auto values = tickets.get_ticket_properties(get->ticket_type, user, get->keys);
        reply(values ? ClientReply{id, std::move(*values)}
                     : refusal(id, ClientErrc::ticket_not_found,
                               "getTicketProperties: no ticket of this type owned by this user"));
    }
}

void ClientCommands::ticket_action(const UserId& user, std::uint64_t id,
                                   const TicketCommand& command, const Reply& reply) {
    ticket::TicketService& tickets = services_.tickets();
    const ticket::TicketType type = command.ticket_type;
    switch (command.action) {
        case TicketAction::cancel: reply(answer_now(id, tickets.cancel_ticket(type, user))); break;
        case TicketAction::leave:
            tickets.leave_from_ticket_matchmaking_with_callback(type, user,
                                                                answer_later(id, reply));
            break;
        case TicketAction::mark_complete:
            reply(answer_now(id, tickets.mark_ticket_as_complete(type, user)));
            break;
        case TicketAction::mark_complete_when_expire:
            reply(answer_now(id, tickets.mark_ticket_as_complete_when_expire(type, user),
                             "markCompleteWhenExpire"));
            break;
        case TicketAction::start_backfill:
            reply(answer_now(id, tickets.start_ticket_backfill(type, user)));
            break;
        case TicketAction::stop_backfill:
            reply(answer_now(id, tickets.stop_ticket_backfill(type, user)));
            break;
        case TicketAction::members: {
            auto members = tickets.get_ticket_member_ids(type, user);
            reply(members ? ClientReply{id, std::move(*members)}
                          : refusal(id, ClientErrc::ticket_not_found,
                                    "ticketMembers: no ticket or room of this type for this user"));
            break;
        }
    }
}

void ClientCommands::refuse_start(ticket::TicketType type, StartRefusal why, ClientReply answer,
                                  const Reply& reply) {
    ++refusals_[type][static_cast<std::size_t>(why)];
    reply(std::move(answer));
}

void ClientCommands::start_ticket(const UserId& user, StartTicketCommand& command, std::uint64_t id,
                                  const Reply& reply) {
    const ticket::TicketType type = command.ticket_type;
    ConfiguredTicketTypes& types = services_.types();
    if (draining_) {
        refuse_start(type, StartRefusal::draining,
                     refusal(id, ClientErrc::draining,
                             "startTicket: this node is shutting down; no new tickets"),
                     reply);
        return;
    }
    if (types.find(type) == nullptr) {
        refuse_start(type, StartRefusal::unknown_type,
                     refusal(id, ClientErrc::unknown_ticket_type,
                             fmt::format("startTicket: ticket type {} is not configured on this node",
                                         type)),
                     reply);
        return;
    }
    std::set<UserId> party(command.party.begin(), command.party.end());
    party.erase(user);  // its owner may name itself
    if (auto checked = types.check_start(type, command.values, party.size() + 1); !checked) {
        refuse_start(type, StartRefusal::invalid,
                     refusal(id, ClientErrc::invalid_params, "startTicket: " + checked.error()),
                     reply);
        return;
    }
    // Past its capacity the node takes no new work; what it took keeps its promises.
    if (auto refused = hooks_.admit ? hooks_.admit() : std::nullopt) {
        log_->debug("client: refused a ticket of user {}: {}", user.str(), refused->reason);
        refuse_start(type, StartRefusal::overloaded,
                     refusal(id, ClientErrc::overloaded, "startTicket: " + refused->reason,
                             refused->retry_after),
                     reply);
        return;
    }
    matching::ValueMap values;
    for (const auto& [name, value] : command.values) {
        values.emplace(name, value);
    }
    services_.tickets().set_user_data(user, values);
    types.set_application_data(user, type, std::move(command.application_data));
    services_.tickets().start_ticket(
        type, user, std::move(command.party),
        [this, id, reply, user, type, now = scheduler_.now()](ticket::Result<void> started) {
            if (!started) {
                refuse_start(type, refusal_of(started.error().code), error_reply(id, started),
                             reply);
                return;
            }
            if (auto session = session_of(user)) {
                session->started(type, now);
            }
            reply(done(id));
        });
}

}  // namespace matchmesh::node
