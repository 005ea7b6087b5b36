// Node::handle: what each client command does. Store commands go to the distributed store;
// hello binds the session to a user (checking its token when the cluster has a token secret);
// ticket commands act for the session's user.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mesh/text.hpp"
#include "node/node.hpp"
#include "node/token.hpp"

namespace matchmesh::node {
namespace {

template <typename Result>
ClientReply error_reply(std::uint64_t id, const Result& result) {
    return ClientReply{id, ReplyError{category_of(result.error().code), result.error().message}};
}

ClientReply refusal(std::uint64_t id, std::string category, std::string message,
                    Duration retry_after = Duration(0)) {
    return ClientReply{id, ReplyError{std::move(category), std::move(message),
                                      static_cast<std::uint32_t>(retry_after.count())}};
}

std::uint64_t unix_seconds() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

std::uint64_t unix_milliseconds() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

// Replies to a ticket operation that answers later.
std::function<void(ticket::Result<void>)> answer_later(std::uint64_t id,
                                                       ClientHandler::Reply reply) {
    return [id, reply = std::move(reply)](ticket::Result<void> result) {
        reply(result ? ClientReply{id, std::monostate{}} : error_reply(id, result));
    };
}

ClientReply answer_now(std::uint64_t id, const ticket::Result<void>& result) {
    return result ? ClientReply{id, std::monostate{}} : error_reply(id, result);
}

// For operations that only say whether they did something.
ClientReply answer_now(std::uint64_t id, bool done, std::string_view what) {
    return done ? ClientReply{id, std::monostate{}}
                : refusal(id, "ticket_not_found",
                          fmt::format("{}: no such ticket for this user", what));
}

// What a client's search may cost: every bucket it may visit, for up to `limit` results each.
// Counted from what it names (values that share a bucket still count), so it is known before any
// work is done.
struct SearchCost {
    double buckets = 0;
    std::size_t limit = 0;
    [[nodiscard]] double total() const { return buckets * static_cast<double>(limit); }
};

SearchCost cost_of(const SearchCommand& search) {
    return {static_cast<double>(search.profile_ids.size()), search.limit};
}

SearchCost cost_of(const RangeSearchCommand& search) {
    double buckets = static_cast<double>(search.profile_ids.size() *
                                         std::max<std::size_t>(search.tags.size(), 1));
    for (const auto& [name, values] : search.properties) {
        buckets *= static_cast<double>(std::max<std::size_t>(values.size(), 1));
    }
    return {buckets, search.limit};
}

constexpr double buckets_per_command = 64;  // a wide search counts as this many more commands

}  // namespace

void Node::handle(const std::shared_ptr<Session>& session, ClientRequest request, Reply reply) {
    const std::uint64_t id = request.id;
    if (auto* hello = std::get_if<HelloCommand>(&request.command)) {
        ClientReply answer;
        handle_hello(session, *hello, id, answer);
        reply(std::move(answer));
        return;
    }
    const bool store_command = std::holds_alternative<AddCommand>(request.command) ||
                               std::holds_alternative<SearchCommand>(request.command) ||
                               std::holds_alternative<RangeSearchCommand>(request.command) ||
                               std::holds_alternative<RemoveCommand>(request.command) ||
                               std::holds_alternative<MembersCommand>(request.command) ||
                               std::holds_alternative<DumpCommand>(request.command);
    // The store commands, `members` and `dump` reach every player's items and the cluster's
    // layout: once tokens are checked, only an admin session may use them (a cluster without
    // tokenSecret authenticates nobody, and the node says so at start).
    const bool open_cluster = config_.cluster.token_secret.empty();
    if (store_command && !session->admin && !open_cluster) {
        reply(refusal(id, "forbidden",
                      config_.cluster.admin_secret.empty()
                          ? "store commands, members and dump need an admin session, and this "
                            "cluster has no cluster.adminSecret"
                          : "store commands, members and dump need an admin session: hello with "
                            "a token signed with cluster.adminSecret"));
        return;
    }
    if (!store_command && !session->user) {
        reply(refusal(id, "unauthenticated", "ticket commands need a player's hello first"));
        return;
    }
    if (store_command) {
        handle_store(session, request, reply);
    } else {
        handle_ticket(*session->user, request, reply);
    }
}

void Node::handle_hello(const std::shared_ptr<Session>& session, HelloCommand& hello,
                        std::uint64_t id, ClientReply& answer) {
    if (hello.user.empty()) {
        answer = refusal(id, "invalid_argument", "hello: the user ID is empty");
        return;
    }
    if (session->user || session->admin) {
        answer = refusal(id, "invalid_argument",
                         fmt::format("hello: this connection already speaks for {}",
                                     session->admin ? "an operator" : session->user->str()));
        return;
    }
    const auto token_lifetime_max =
        static_cast<std::uint64_t>(config_.limits.token_lifetime_max_seconds);
    // A token signed with the admin secret opens an admin session: an operator's tool, not a
    // player (it holds no tickets and supersedes no one).
    if (!config_.cluster.admin_secret.empty() && !hello.token.empty() &&
        verify_token(config_.cluster.admin_secret, hello.user.str(), hello.token, unix_seconds(),
                     token_lifetime_max)) {
        session->admin = true;
        log_->info("client: admin session for {} from {}", mesh::printable(hello.user.str()),
                   session->remote);
        answer = ClientReply{id, std::monostate{}};
        return;
    }
    if (!config_.cluster.token_secret.empty()) {
        auto verified = verify_token(config_.cluster.token_secret, hello.user.str(), hello.token,
                                     unix_seconds(), token_lifetime_max);
        if (!verified) {
            throttle_.warn(*log_, "hello", "client: refused hello from {} for user {}: {}",
                           session->remote, mesh::printable(hello.user.str()), verified.error());
            answer = refusal(id, "invalid_token", "hello: " + verified.error());
            return;
        }
    }
    if (auto previous = sessions_.find(hello.user); previous != sessions_.end()) {
        // The user reconnected: the old connection (if still open) is closed first, which ends
        // what it had in progress, as a reconnect does.
        if (auto old = previous->second.lock()) {
            clients_->close_session(old, "the user connected again");
        }
        sessions_.erase(hello.user);
    }
    if (draining_) {
        answer = refusal(id, "draining", "hello: this node is shutting down; connect to another");
        return;
    }
    session->user = hello.user;
    sessions_[hello.user] = session;
    tickets_->connect_user(ticket::User{hello.user, std::to_string(session->id), core_->self().id,
                                        std::move(hello.data), unix_milliseconds()});
    log_->debug("session: user {} connected from {}", hello.user.str(), session->remote);
    answer = ClientReply{id, std::monostate{}};
}

void Node::handle_store(const std::shared_ptr<Session>& session, ClientRequest& request,
                        Reply& reply) {
    const std::uint64_t id = request.id;
    // A search's cost is bounded per command, and a wide one counts as several commands.
    const auto over_budget = [&](const auto& search) {
        const SearchCost cost = cost_of(search);
        session->charge(std::floor(cost.buckets / buckets_per_command));
        if (cost.total() <= static_cast<double>(config_.limits.search_cost_max)) {
            return false;
        }
        reply(refusal(
            id, "search_too_costly",
            fmt::format("the search may visit {} buckets for up to {} results each: "
                        "{} over this cluster's {} (limits.searchCostMax)",
                        cost.buckets, cost.limit, cost.total(), config_.limits.search_cost_max)));
        return true;
    };
    auto answer_search = [id, reply](matching::SearchOutcome outcome) {
        reply(ClientReply{id, std::move(outcome)});
    };
    std::visit(
        [&](auto& command) {
            using T = std::decay_t<decltype(command)>;
            if constexpr (std::is_same_v<T, AddCommand>) {
                auto added =
                    matching_->add(command.profile_id, command.unique_id, command.tag,
                                   command.properties, std::move(command.value), command.ttl);
                reply(added ? ClientReply{id, std::monostate{}} : error_reply(id, added));
            } else if constexpr (std::is_same_v<T, SearchCommand>) {
                if (over_budget(command)) {
                    return;
                }
                auto started = matching_->search(command.profile_ids, command.tag,
                                                 command.properties, command.limit, answer_search);
                if (!started) {
                    reply(error_reply(id, started));
                }
            } else if constexpr (std::is_same_v<T, RangeSearchCommand>) {
                // Each value of each range property is a bucket to ask: bound the fan-out.
                for (const auto& [name, values] : command.properties) {
                    if (values.size() > config_.limits.range_values_max) {
                        reply(refusal(
                            id, "too_many_range_values",
                            fmt::format("range property '{}' has {} values; this cluster allows {} "
                                        "(limits.rangeValuesMax)",
                                        name, values.size(), config_.limits.range_values_max)));
                        return;
                    }
                }
                if (over_budget(command)) {
                    return;
                }
                auto started = matching_->search_with_range_with_tags(
                    command.profile_ids, command.tags, command.properties, command.limit,
                    answer_search);
                if (!started) {
                    reply(error_reply(id, started));
                }
            } else if constexpr (std::is_same_v<T, RemoveCommand>) {
                auto removed = matching_->remove(command.profile_id, command.unique_ids);
                reply(removed ? ClientReply{id, std::monostate{}} : error_reply(id, removed));
            } else if constexpr (std::is_same_v<T, MembersCommand>) {
                const auto members = core_->live_members();
                reply(
                    ClientReply{id, std::vector<mesh::MemberInfo>(members.begin(), members.end())});
            } else if constexpr (std::is_same_v<T, DumpCommand>) {
                reply(ClientReply{id, dump_json().dump(-1, ' ', false,
                                                       nlohmann::json::error_handler_t::replace)});
            }
        },
        request.command);
}

void Node::handle_ticket(const UserId& user, ClientRequest& request, Reply& reply) {
    const std::uint64_t id = request.id;
    std::visit(
        [&](auto& command) {
            using T = std::decay_t<decltype(command)>;
            if constexpr (std::is_same_v<T, StartTicketCommand>) {
                start_ticket(user, command, id, reply);
            } else if constexpr (std::is_same_v<T, TicketCommand>) {
                const ticket::TicketType type = command.ticket_type;
                switch (command.action) {
                    case TicketAction::cancel:
                        reply(answer_now(id, tickets_->cancel_ticket(type, user)));
                        break;
                    case TicketAction::leave:
                        tickets_->leave_from_ticket_matchmaking_with_callback(
                            type, user, answer_later(id, reply));
                        break;
                    case TicketAction::mark_complete:
                        reply(answer_now(id, tickets_->mark_ticket_as_complete(type, user)));
                        break;
                    case TicketAction::mark_complete_when_expire:
                        reply(answer_now(id,
                                         tickets_->mark_ticket_as_complete_when_expire(type, user),
                                         "markCompleteWhenExpire"));
                        break;
                    case TicketAction::start_backfill:
                        reply(answer_now(id, tickets_->start_ticket_backfill(type, user)));
                        break;
                    case TicketAction::stop_backfill:
                        reply(answer_now(id, tickets_->stop_ticket_backfill(type, user)));
                        break;
                    case TicketAction::members: {
                        auto members = tickets_->get_ticket_member_ids(type, user);
                        reply(members ? ClientReply{id, std::move(*members)}
                                      : refusal(id, "ticket_not_found",
                                                "ticketMembers: no ticket or room of this type for "
                                                "this user"));
                        break;
                    }
                }
            } else if constexpr (std::is_same_v<T, AcceptPartyCommand>) {
                tickets_->accept_party(command.ticket_type, user, std::move(command.owner));
                reply(ClientReply{id, std::monostate{}});
            } else if constexpr (std::is_same_v<T, KickCommand>) {
                tickets_->kickout_from_ticket(command.ticket_type, user, command.target,
                                              answer_later(id, reply));
            } else if constexpr (std::is_same_v<T, BroadcastCommand>) {
                reply(answer_now(
                    id, tickets_->ticket_broadcast(command.ticket_type, user, command.ver,
                                                   command.cmd, std::move(command.message))));
            } else if constexpr (std::is_same_v<T, SetPropertiesCommand>) {
                reply(answer_now(id, tickets_->set_ticket_properties(command.ticket_type, user,
                                                                     command.values)));
            } else if constexpr (std::is_same_v<T, GetPropertiesCommand>) {
                auto values =
                    tickets_->get_ticket_properties(command.ticket_type, user, command.keys);
                reply(values
                          ? ClientReply{id, std::move(*values)}
                          : refusal(
                                id, "ticket_not_found",
                                "getTicketProperties: no ticket of this type owned by this user"));
            }
        },
        request.command);
}

void Node::start_ticket(const UserId& user, StartTicketCommand& command, std::uint64_t id,
                        Reply& reply) {
    const ticket::TicketType type = command.ticket_type;
    if (draining_) {
        reply(refusal(id, "draining", "startTicket: this node is shutting down; no new tickets"));
        return;
    }
    if (ticket_types_->find(type) == nullptr) {
        reply(refusal(
            id, "unknown_ticket_type",
            fmt::format("startTicket: ticket type {} is not configured on this node", type)));
        return;
    }
    if (auto checked = ticket_types_->check_values(type, command.values); !checked) {
        reply(refusal(id, "invalid_params", "startTicket: " + checked.error()));
        return;
    }
    // Past its capacity the node takes no new work; what it took keeps its promises.
    if (auto refused = admission_.admit(load())) {
        log_->debug("client: refused a ticket of user {}: {}", user.str(), refused->reason);
        reply(refusal(id, "overloaded", "startTicket: " + refused->reason, refused->retry_after));
        return;
    }
    matching::ValueMap values;
    for (const auto& [name, value] : command.values) {
        values.emplace(name, value);
    }
    tickets_->set_user_data(user, values);
    ticket_types_->set_application_data(user, type, std::move(command.application_data));
    const Time now = scheduler_.now();
    tickets_->start_ticket(type, user, std::move(command.party),
                           [this, id, reply, user, type, now](ticket::Result<void> started) {
                               if (started) {
                                   ticket_starts_[{user, type}] = now;
                                   reply(ClientReply{id, std::monostate{}});
                               } else {
                                   reply(error_reply(id, started));
                               }
                           });
}

}  // namespace matchmesh::node
