// The ticket service's public operations, its users, and the handlers of peer messages.
#include "ticket/service.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {

TicketService::TicketService(mesh::Network& network, mesh::Scheduler& scheduler,
                             matching::MatchingService& matching, PushSink& sink,
                             TicketServiceOptions options)
    : network_(network),
      scheduler_(scheduler),
      matching_(matching),
      sink_(sink),
      options_(options),
      courier_(network, scheduler, options.courier,
               std::hash<std::string>{}(network.self().id.str())),
      recall_(options.matched_memory),
      sessions_(network, scheduler, options.session_announce_delay, options.session_directory_max,
                alive_, [this](const UserId& user) { end_superseded(user); }),
      context_{network_,   scheduler_, matching_, options_,  courier_,
               callbacks_, users(),    recall_,   counters_, alive_},
      tickets_(context_, rooms_, home_),
      rooms_(context_, tickets_, home_),
      home_(context_, sink, tickets_, rooms_),
      claims_(context_, home_.participations(), sessions_.directory()) {
    auto handle =
        [this](mesh::MethodId method,
               void (TicketService::*handler)(const NodeId&, mesh::PayloadView, mesh::Responder)) {
            network_.on_request(
                wire::SERVICE, method,
                [this, alive = alive_, handler](const NodeId& from, mesh::PayloadView payload,
                                                mesh::Responder responder) {
                    if (*alive) {
                        (this->*handler)(from, payload, std::move(responder));
                    } else {
                        responder.fail(mesh::MeshErrc::shutdown, "ticket service stopped");
                    }
                });
        };
    handle(wire::METHOD_JOIN, &TicketService::on_join);
    handle(wire::METHOD_PUSH, &TicketService::on_push);
    handle(wire::METHOD_LEAVE, &TicketService::on_leave);
    handle(wire::METHOD_BROADCAST, &TicketService::on_broadcast);
    handle(wire::METHOD_CLAIM, &TicketService::on_claim);
    handle(wire::METHOD_RELEASE, &TicketService::on_release);
    handle(wire::METHOD_LOCATE, &TicketService::on_locate);
    auto hear = [this](mesh::MethodId method,
                       void (Sessions::*handler)(const NodeId&, mesh::PayloadView)) {
        network_.on_one_way(
            wire::SERVICE, method,
            [this, alive = alive_, handler](const NodeId& from, mesh::PayloadView payload) {
                if (*alive) {
                    (sessions_.*handler)(from, payload);
                }
            });
    };
    hear(wire::METHOD_SESSION, &Sessions::on_register);
    hear(wire::METHOD_SESSION_END, &Sessions::on_end);
    hear(wire::METHOD_SUPERSEDE, &Sessions::on_supersede);
    network_.on_membership([this, alive = alive_](const mesh::MembershipEvent& event) {
        if (*alive) {
            on_membership(event);
        }
    });
    sweep();
}

void TicketService::sweep() {
    const Time now = scheduler_.now();
    recall_.forget_expired(now);
    tickets_.forget_unused_settings();
    sweep_timer_ = scheduler_.run_after(Duration(5000), [this, alive = alive_] {
        if (*alive) {
            sweep();
        }
    });
}

TicketService::~TicketService() {
    *alive_ = false;
    scheduler_.cancel(sweep_timer_);
    sessions_.stop();
    tickets_.cancel_timers();
}

void TicketService::set_callbacks(TicketType type, Callbacks callbacks) {
    callbacks_[type] = std::move(callbacks);
}

Callbacks* TicketService::callbacks(TicketType type) {
    auto found = callbacks_.find(type);
    return found == callbacks_.end() ? nullptr : &found->second;
}

TicketId TicketService::next_ticket_id() {
    return make_ticket_id(next_ticket_++, network_.self().incarnation, network_.self().id);
}

// --- users ---

void TicketService::connect_user(User user) {
    if (users().contains(user.id)) {
        disconnect_user(user.id);  // a reconnect ends what the old session had in progress
    }
    sessions_.begin(std::move(user));
}

bool TicketService::set_user_data(const UserId& user, const matching::ValueMap& values) {
    return users().update_data(user, values);
}

std::size_t TicketService::ticket_count(TicketPhase phase) const {
    return static_cast<std::size_t>(
        std::count_if(tickets_.all().begin(), tickets_.all().end(),
                      [phase](const auto& entry) { return entry.second.phase == phase; }));
}

TicketService::PhaseCounts TicketService::ticket_counts() const {
    static_assert(static_cast<int>(TicketPhase::searching) == 0 &&
                  static_cast<int>(TicketPhase::waiting) == 1);
    PhaseCounts counts{};
    for (const auto& [id, ticket] : tickets_.all()) {
        if (ticket.phase != TicketPhase::matched) {
            ++counts[ticket.type][static_cast<std::size_t>(ticket.phase)];
        }
    }
    return counts;
}

void TicketService::end_superseded(const UserId& user) {
    disconnect_user(user);
    if (options_.on_superseded) {
        options_.on_superseded(user);
    }
}

void TicketService::disconnect_user(const UserId& user) {
    if (!users().contains(user)) {
        return;
    }
    end_participations_of(user, EndReason::disconnected);  // its session gets nothing more
    sessions_.end(user);
}

void TicketService::end_participations_of(const UserId& user, EndReason why) {
    for (TicketType type : home_.participations().types_of(user)) {
        if (owned(type, user) != nullptr) {
            tickets_.end(owned(type, user)->id, PushKind::cancel, why);
        }
        if (home_.participations().contains(user, type)) {
            home_.leave_room_of(user, type, why, [](Result<void>) {});
            // Told here and now, not by the room: its node may be too slow or gone.
            home_.cancel_participation(user, type, why);
        }
    }
}

Result<void> TicketService::accepting() const {
    if (draining_) {
        return fail(Errc::draining, "this node is shutting down: start again on another node");
    }
    return {};
}

void TicketService::accept_party(TicketType type, const UserId& member, UserId owner) {
    users().consent(type, member, std::move(owner));
}

const User* TicketService::find_user(const UserId& user) const {
    return local_user(user);
}

// --- starting tickets ---

void TicketService::start_ticket(TicketType type, const UserId& owner, std::vector<UserId> party,
                                 std::function<void(Result<void>)> done) {
    const User* user = local_user(owner);
    if (user == nullptr) {
        done(fail(Errc::user_not_found,
                  fmt::format("user '{}' is not connected here", owner.str())));
        return;
    }
    if (auto open = accepting(); !open) {
        done(std::unexpected(open.error()));
        return;
    }
    if (callbacks(type) == nullptr || !callbacks(type)->on_issue_ticket) {
        done(fail(Errc::not_set_up,
                  fmt::format("no OnIssueTicket callback for ticket type {}", type)));
        return;
    }
    if (home_.participations().contains(owner, type)) {
        done(owned(type, owner) != nullptr
                 ? fail(Errc::already_has_ticket, "a ticket of this type is already in progress")
                 : fail(Errc::in_previous_room, "the user is still in a room of this ticket type"));
        return;
    }
    if (starting_.contains({owner, type})) {
        done(fail(Errc::already_has_ticket, "a ticket of this type is being started"));
        return;
    }
    std::erase(party, owner);
    if (party.size() + 1 > party_max) {
        done(fail(Errc::invalid_params,
                  fmt::format("a party of {} users, at most {}", party.size() + 1, party_max)));
        return;
    }
    if (party.empty()) {
        auto created = tickets_.create(type, users().shared(owner), {}, next_ticket_id());
        done(created ? Result<void>{} : std::unexpected(created.error()));
        return;
    }
    // Hold the owner while its party is claimed, so that no other start races with this one. The
    // members are claimed under the ticket's own ID.
    const TicketId claim_id = next_ticket_id();
    starting_.insert({owner, type});
    claims_.claim_party(claim_id, type, *user, party,
                        [this, type, owner, claim_id,
                         done = std::move(done)](Result<std::vector<User>> claimed) {
                            start_claimed(type, owner, claim_id, std::move(claimed), done);
                        });
}

void TicketService::start_claimed(TicketType type, const UserId& owner, const TicketId& claim_id,
                                  Result<std::vector<User>> claimed,
                                  const std::function<void(Result<void>)>& done) {
    starting_.erase({owner, type});
    const User* still = local_user(owner);
    if (!claimed || still == nullptr || draining_) {
        if (claimed) {
            claims_.release_claims(claim_id, type, *claimed);
        }
        if (!claimed) {
            done(std::unexpected(claimed.error()));
        } else if (still == nullptr) {
            done(fail(Errc::user_not_found, "the owner disconnected"));
        } else {
            done(accepting());
        }
        return;
    }
    auto created = tickets_.create(type, users().shared(owner), *claimed, claim_id);
    if (!created) {
        claims_.release_claims(claim_id, type, *claimed);
        done(std::unexpected(created.error()));
        return;
    }
    done({});
}

Result<void> TicketService::start_ticket(TicketType type, const UserId& owner) {
    Result<void> result = fail(Errc::unavailable, "not started");
    bool answered = false;
    start_ticket(type, owner, {}, [&](Result<void> outcome) {
        result = std::move(outcome);
        answered = true;
    });
    return answered ? result : fail(Errc::unavailable, "a party start cannot be synchronous");
}

// --- operations on a ticket ---

Result<void> TicketService::cancel_ticket(TicketType type, const UserId& owner) {
    if (local_user(owner) == nullptr) {
        return fail(Errc::user_not_found,
                    fmt::format("user '{}' is not connected here", owner.str()));
    }
    OwnedTicket* ticket = owned(type, owner);
    if (ticket == nullptr) {
        return home_.participations().contains(owner, type)
                   ? fail(Errc::not_active, "the ticket completed, or belongs to another user")
                   : fail(Errc::ticket_not_found, "no ticket of this type");
    }
    if (ticket->backfill) {
        return fail(Errc::not_active, "the ticket completed (stop its backfill instead)");
    }
    tickets_.end(ticket->id, PushKind::cancel, EndReason::canceled);
    return {};
}

std::size_t TicketService::drain() {
    draining_ = true;
    std::vector<TicketId> ids;
    for (const auto& [id, ticket] : tickets_.all()) {
        ids.push_back(id);
    }
    for (const TicketId& id : ids) {
        if (tickets_.contains(id)) {  // ending one may end another (a party's claims)
            tickets_.end(id, PushKind::cancel, EndReason::draining);
        }
    }
    // Then the users here in tickets held elsewhere (or joining there): as if they disconnected,
    // but still connected to hear it.
    std::vector<UserId> users_here;
    for (const auto& [key, participation] : home_.participations().all()) {
        users_here.push_back(key.first);  // a user's are adjacent: ending the first ends them
    }
    for (const UserId& user : users_here) {
        end_participations_of(user, EndReason::draining);
    }
    return ids.size();
}

Result<void> TicketService::mark_ticket_as_complete(TicketType type, const UserId& owner) {
    OwnedTicket* ticket = owned(type, owner);
    if (ticket == nullptr || ticket->backfill) {
        return home_.participations().contains(owner, type)
                   ? fail(Errc::not_owner, "only the ticket's owner may complete it")
                   : fail(Errc::ticket_not_found, "no ticket of this type");
    }
    if (!rooms_.contains(ticket->room_id)) {
        return fail(Errc::room_not_found, "the ticket's room is missing");
    }
    if (ticket->joining) {
        return fail(Errc::not_active, "the ticket is joining another room");
    }
    tickets_.end(ticket->id, PushKind::success);
    return {};
}

bool TicketService::mark_ticket_as_complete_when_expire(TicketType type, const UserId& owner) {
    OwnedTicket* ticket = owned(type, owner);
    if (ticket == nullptr || ticket->backfill) {
        return false;
    }
    ticket->complete_when_expire = true;
    return true;
}

void TicketService::kickout_from_ticket(TicketType type, const UserId& owner, const UserId& target,
                                        std::function<void(Result<void>)> done) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        done(home_.participations().contains(owner, type)
                 ? fail(Errc::not_owner, "only the ticket's owner may kick members out")
                 : fail(Errc::room_not_found, "the owner is in no room of this ticket type"));
        return;
    }
    auto member = std::find_if(room->members.begin(), room->members.end(),
                               [&](const Member& m) { return m.user->id == target; });
    if (member == room->members.end() || member->ticket_id == room->id) {
        done(fail(Errc::target_not_found,
                  fmt::format("'{}' is not a matched member", target.str())));
        return;
    }
    rooms_.remove_party(*room, TicketId(member->ticket_id), EndReason::kicked, true);
    done({});
}

bool TicketService::leave_from_ticket_matchmaking(TicketType type, const UserId& user) {
    if (!home_.participations().contains(user, type)) {
        return false;
    }
    home_.leave_room_of(user, type, EndReason::left, [](Result<void>) {});
    return true;
}

void TicketService::leave_from_ticket_matchmaking_with_callback(
    TicketType type, const UserId& user, std::function<void(Result<void>)> done) {
    home_.leave_room_of(user, type, EndReason::left, std::move(done));
}

Result<void> TicketService::ticket_broadcast(TicketType type, const UserId& user, std::uint8_t ver,
                                             std::uint16_t cmd, Bytes message) {
    return home_.broadcast(type, user, ver, cmd, std::move(message));
}

Result<void> TicketService::start_ticket_backfill(TicketType type, const UserId& owner) {
    if (auto open = accepting(); !open) {
        return open;
    }
    Room* room = room_of_owner(type, owner);
    if (room == nullptr ||
        (room->state != RoomState::completed && room->state != RoomState::backfill)) {
        return fail(Errc::completed_room_required, "the owner has no completed room of this type");
    }
    if (!room->live_ticket.empty() || owned(type, owner) != nullptr) {
        return fail(Errc::ticket_exists,
                    "the ticket has not completed, or its backfill runs already");
    }
    const Callbacks* handlers = callbacks(type);
    const User* user = local_user(owner);
    if (handlers == nullptr || !handlers->on_issue_ticket) {
        return fail(Errc::not_set_up,
                    fmt::format("no OnIssueTicket callback for ticket type {}", type));
    }
    if (user == nullptr) {
        return fail(Errc::user_not_found, "the owner is not connected here");
    }
    auto params = handlers->on_issue_ticket(*user);
    if (!params) {
        return fail(Errc::failed_to_create, "OnIssueTicket gave no ticket parameters");
    }
    params->max_members = static_cast<std::uint8_t>(room->max_members);
    if (auto ok = validate_params(*params, options_.limits, 1, matching_.profiles()); !ok) {
        return ok;
    }
    if (room->members.size() >= room->max_members) {
        return fail(Errc::ticket_exists, "the room is full: no seat to backfill");
    }
    tickets_.start_backfill(*room, users().shared(owner), std::move(*params), next_ticket_id());
    return {};
}

Result<void> TicketService::stop_ticket_backfill(TicketType type, const UserId& owner) {
    OwnedTicket* ticket = owned(type, owner);
    if (ticket == nullptr || !ticket->backfill) {
        return fail(Errc::backfill_not_found, "no backfill ticket to stop");
    }
    if (!rooms_.contains(ticket->room_id)) {
        return fail(Errc::room_not_found, "the backfill ticket's room was discarded");
    }
    tickets_.end(ticket->id, PushKind::timeout);
    return {};
}

void TicketService::join_room_by_id(TicketType type, const std::string& room_id, const UserId& user,
                                    std::function<void(Result<void>)> done) {
    const User* joiner = local_user(user);
    if (joiner == nullptr) {
        done(
            fail(Errc::user_not_found, fmt::format("user '{}' is not connected here", user.str())));
        return;
    }
    if (auto open = accepting(); !open) {
        done(std::unexpected(open.error()));
        return;
    }
    if (home_.participations().contains(user, type)) {
        done(fail(Errc::in_previous_room, "the user is already matchmaking with this ticket type"));
        return;
    }
    auto node = node_of(room_id);
    if (!node) {
        done(fail(Errc::room_not_found, fmt::format("'{}' is not a room ID", room_id)));
        return;
    }
    home_.join_room(type, TicketId(room_id), *node, users().shared(user), next_ticket_id(),
                    std::move(done));
}

void TicketService::push_failure(TicketType type, const UserId& user, std::string_view message,
                                 std::uint16_t code) {
    if (local_user(user) != nullptr) {
        sink_.push(user, PushMessage{type,
                                     PushKind::failure,
                                     push_ver,
                                     ticket::push_failure,
                                     generate_failure_payload(message, code),
                                     TicketId(),
                                     {}});
    }
}

// --- properties and reservations ---

Result<void> TicketService::set_ticket_property(TicketType type, const UserId& owner,
                                                const std::string& key, matching::Value value) {
    return set_ticket_properties(type, owner, {{key, std::move(value)}});
}

Result<void> TicketService::set_ticket_properties(TicketType type, const UserId& owner,
                                                  const matching::ValueMap& values) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return home_.participations().contains(owner, type)
                   ? fail(Errc::not_owner, "only the ticket's owner may set its properties")
                   : fail(Errc::room_not_found, "no room of this ticket type");
    }
    matching::ValueMap merged = room->extras().properties;
    for (const auto& [key, value] : values) {
        merged[key] = value;
    }
    if (auto ok = matching::validate_value(merged); !ok) {
        return fail(Errc::invalid_params, ok.error().message);
    }
    room->edit_extras().properties = std::move(merged);
    return {};
}

bool TicketService::set_ticket_property_if_not_exists(TicketType type, const UserId& owner,
                                                      const std::string& key,
                                                      matching::Value value) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr || room->extras().properties.contains(key)) {
        return false;
    }
    return set_ticket_properties(type, owner, {{key, std::move(value)}}).has_value();
}

Result<void> TicketService::update_ticket_properties(TicketType type, const UserId& owner,
                                                     const matching::ValueMap& values,
                                                     const PropertyUpdate& update) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return fail(Errc::room_not_found, "no room of this ticket type");
    }
    matching::ValueMap changed;
    for (const auto& [key, value] : values) {
        auto stored = room->extras().properties.find(key);
        const bool exists = stored != room->extras().properties.end();
        changed[key] = update(exists, exists ? &stored->second : nullptr, value);
    }
    return set_ticket_properties(type, owner, changed);
}

std::optional<matching::Value> TicketService::get_ticket_property(TicketType type,
                                                                  const UserId& owner,
                                                                  const std::string& key) const {
    const Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return std::nullopt;
    }
    auto found = room->extras().properties.find(key);
    return found == room->extras().properties.end() ? std::nullopt : std::optional(found->second);
}

std::optional<matching::ValueMap> TicketService::get_ticket_properties(
    TicketType type, const UserId& owner, const std::vector<std::string>& keys) const {
    const Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return std::nullopt;
    }
    matching::ValueMap values;
    for (const std::string& key : keys) {
        if (auto found = room->extras().properties.find(key);
            found != room->extras().properties.end()) {
            values.emplace(key, found->second);
        }
    }
    return values;
}

Result<void> TicketService::make_reservation(TicketType type, const UserId& owner,
                                             const UserId& user) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr ||
        (room->state != RoomState::waiting && room->state != RoomState::backfill)) {
        return fail(Errc::room_not_found, "the owner has no room waiting for members");
    }
    return rooms_.reserve(*room, user);
}

bool TicketService::cancel_reservation(TicketType type, const UserId& owner, const UserId& user) {
    Room* room = room_of_owner(type, owner);
    return room != nullptr && room->more && room->more->reservations.erase(user) > 0;
}

bool TicketService::set_on_delete_ticket_room(TicketType type, const UserId& owner,
                                              std::function<void(const std::string&)> callback) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return false;
    }
    room->edit_extras().on_deleted.push_back(std::move(callback));
    return true;
}

bool TicketService::set_on_leave_ticket_room(
    TicketType type, const UserId& owner,
    std::function<void(const std::string&, const User*)> callback) {
    Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return false;
    }
    room->edit_extras().on_left.push_back(std::move(callback));
    return true;
}

// --- queries ---

std::optional<std::vector<UserId>> TicketService::get_ticket_member_ids(TicketType type,
                                                                        const UserId& owner) const {
    const Room* room = room_of_owner(type, owner);
    return room == nullptr ? std::nullopt : std::optional(Rooms::member_ids(*room));
}

std::optional<std::vector<std::string>> TicketService::get_ticket_member_sids(
    TicketType type, const UserId& owner) const {
    const Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return std::nullopt;
    }
    std::vector<std::string> sids;
    for (const Member& member : room->members) {
        sids.push_back(member.user->session_id);
    }
    return sids;
}

std::optional<std::vector<User>> TicketService::get_ticket_member_clients(
    TicketType type, const UserId& owner) const {
    const Room* room = room_of_owner(type, owner);
    if (room == nullptr) {
        return std::nullopt;
    }
    std::vector<User> users;
    for (const Member& member : room->members) {
        users.push_back(*member.user);
    }
    return users;
}

bool TicketService::has_ticket(TicketType type, const UserId& user) const {
    return owned(type, user) != nullptr;
}

bool TicketService::is_ticket_owner(TicketType type, const UserId& user) const {
    return owned(type, user) != nullptr || room_of_owner(type, user) != nullptr;
}

bool TicketService::is_user_in_ticket_matchmaking(TicketType type, const UserId& user) const {
    const Participation* found = home_.participations().find(user, type);
    if (found == nullptr) {
        return false;
    }
    const Participation& participation = *found;
    if (participation.completed || participation.room_id != participation.ticket_id) {
        return true;  // in a completed room, or joined someone else's
    }
    const OwnedTicket* ticket = owned(type, user);
    return ticket != nullptr && ticket->phase == TicketPhase::waiting;
}

std::optional<TicketView> TicketService::find_ticket(TicketType type, const UserId& owner) const {
    const OwnedTicket* ticket = owned(type, owner);
    if (ticket == nullptr) {
        return std::nullopt;
    }
    return TicketView{ticket->id, ticket->type, ticket->room_id.str(), false};
}

// --- messages from other nodes ---

// The pushes a join makes for users at the node that sent it (a 1v1's 220, for one) ride on its
// answer, when that node reads them there: one frame each way instead of two more. The room's
// node keeps them with the accepted attempt, so that a retry's answer carries them again.
void TicketService::on_join(const NodeId& from, mesh::PayloadView payload,
                            mesh::Responder responder) {
    auto join = decode_join(payload, network_.reader_options());
    if (!join) {
        responder.fail(mesh::MeshErrc::malformed, join.error());
        return;
    }
    if (!join->pushes_in_reply || from == network_.self().id) {
        responder.reply(encode(rooms_.accept_join(*join, std::move(join->holder))));
        return;
    }
    if (const auto* carried = recall_.answer_pushes(join->attempt)) {
        responder.reply(encode(recall_.accepted_again(join->attempt), *carried));
        return;
    }
    JoinReplyMessage reply;
    std::vector<PushEnvelope> pushes = home_.hold_pushes_for(
        from, [&] { reply = rooms_.accept_join(*join, std::move(join->holder)); });
    if (!pushes.empty() && reply.accepted) {
        if (const auto* kept = recall_.keep_answer_pushes(join->attempt, from, pushes)) {
            responder.reply(encode(reply, *kept));
            return;
        }
    }
    responder.reply(encode(reply));
    for (PushEnvelope& push : pushes) {  // not kept: on their own
        home_.deliver(from, std::move(push));
    }
}

void TicketService::on_push(const NodeId&, mesh::PayloadView payload, mesh::Responder responder) {
    auto push = decode_push(payload, network_.reader_options());
    if (!push) {
        responder.fail(mesh::MeshErrc::malformed, push.error());
        return;
    }
    home_.receive_push(*push);
    responder.reply(encode(AckMessage{true, {}}));
}

void TicketService::on_leave(const NodeId&, mesh::PayloadView payload, mesh::Responder responder) {
    auto leave = decode_leave(payload, network_.reader_options());
    if (!leave) {
        responder.fail(mesh::MeshErrc::malformed, leave.error());
        return;
    }
    responder.reply(
        encode_leave_reply(rooms_.leave(leave->room_id, leave->user, leave->reason)));
}

void TicketService::on_broadcast(const NodeId&, mesh::PayloadView payload,
                                 mesh::Responder responder) {
    auto broadcast = decode_broadcast(payload, network_.reader_options());
    if (!broadcast) {
        responder.fail(mesh::MeshErrc::malformed, broadcast.error());
        return;
    }
    const bool member = rooms_.broadcast_from(*broadcast);
    responder.reply(encode(AckMessage{member, member ? "" : "not a member of that room"}));
}

void TicketService::on_claim(const NodeId& from, mesh::PayloadView payload,
                             mesh::Responder responder) {
    auto claim = decode_claim(payload, network_.reader_options());
    if (!claim) {
        responder.fail(mesh::MeshErrc::malformed, claim.error());
        return;
    }
    responder.reply(encode(claims_.answer_claim(from, *claim)));
}

void TicketService::on_release(const NodeId&, mesh::PayloadView payload,
                               mesh::Responder responder) {
    auto release = decode_claim(payload, network_.reader_options());
    if (!release) {
        responder.fail(mesh::MeshErrc::malformed, release.error());
        return;
    }
    claims_.release(*release);
    responder.reply(encode(AckMessage{true, {}}));
}

void TicketService::on_locate(const NodeId&, mesh::PayloadView payload,
                              mesh::Responder responder) {
    auto locate = decode_locate(payload, network_.reader_options());
    if (!locate) {
        responder.fail(mesh::MeshErrc::malformed, locate.error());
        return;
    }
    responder.reply(encode(claims_.answer_locate(*locate)));
}

void TicketService::on_membership(const mesh::MembershipEvent& event) {
    switch (event.kind) {
        case mesh::MembershipEvent::Kind::died:
        case mesh::MembershipEvent::Kind::left: on_node_gone(event.member.id); break;
        case mesh::MembershipEvent::Kind::joined:
        case mesh::MembershipEvent::Kind::reconciled: break;
    }
    sessions_.on_membership(event);
}

void TicketService::on_node_gone(const NodeId& node) {
    home_.end_participations_on(node);
    // Rooms held here with members connected there: those members left.
    rooms_.drop_members_of(node);
    // Their retried joins, still on their way, are refused: pushes kept for them go too.
    recall_.forget_answer_pushes_to(node);
    // Parties that joined a room there: tell their other members' homes.
    home_.tell_parties_joined_at(node);
}

std::size_t TicketService::stale_reservations() const {
    return rooms_.stale_reservations();
}

}  // namespace matchmesh::ticket
