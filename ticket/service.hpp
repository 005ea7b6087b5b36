#pragma once
// TicketService: matchmaking tickets on one node, cooperating with the same service on every
// other node. Written against mesh/'s Network and Scheduler and matching/'s service only, so the
// whole life cycle runs unchanged over TCP and in the simulation.
//
// Owned by the node; lives on the node's loop thread; destroy it before the MatchingService and
// the Network. See README.md for the state machine and the protocol.
//
// Roles: a user's *home* node (where its session is) keeps its participation per ticket type and
// delivers its pushes, once each. A room's node (its owner's home) is the only authority over the
// room's members and decides every member's terminal push (220 success, 219 timeout, 222 cancel).
// Each role is a class of its own, owning its state: Tickets (lifecycle.hpp, the tickets owned
// here), Rooms (rooms.hpp, the rooms held here) and Home (home.hpp, the participations of users
// connected here), with PartyClaims (claims.hpp, a party start's claims at its members' homes).
// This class is their facade: it owns them, the sessions (Sessions, sessions.hpp) and what the
// roles share (Context), checks each operation's arguments, ends what a session had in progress,
// and routes the other nodes' messages to the roles.

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "matching/service.hpp"
#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"
#include "ticket/callbacks.hpp"
#include "ticket/claims.hpp"
#include "ticket/context.hpp"
#include "ticket/courier.hpp"
#include "ticket/home.hpp"
#include "ticket/lifecycle.hpp"
#include "ticket/local_users.hpp"
#include "ticket/options.hpp"
#include "ticket/recall.hpp"
#include "ticket/rooms.hpp"
#include "ticket/sessions.hpp"
#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class TicketService {
public:
    TicketService(mesh::Network& network, mesh::Scheduler& scheduler,
                  matching::MatchingService& matching, PushSink& sink,
                  TicketServiceOptions options = {});
    ~TicketService();
    TicketService(const TicketService&) = delete;
    TicketService& operator=(const TicketService&) = delete;

    // The game's callbacks for a ticket type (the reference's Set...Callback functions).
    void set_callbacks(TicketType type, Callbacks callbacks);
    [[nodiscard]] Callbacks* callbacks(TicketType type);

    // Users. A user connects to one node; connecting again replaces the session (and cancels what
    // the old session had in progress, as a reconnect does). Disconnecting cancels the tickets it
    // owns and leaves the rooms it is in.
    void connect_user(User user);
    void disconnect_user(const UserId& user);
    [[nodiscard]] const User* find_user(const UserId& user) const;
    // Replaces values in a connected user's data (copied into rooms it joins from now on).
    bool set_user_data(const UserId& user, const matching::ValueMap& values);

    // A connected user agrees to play in `owner`'s party for tickets of this type, until it says
    // otherwise (an empty owner: no party) or its session ends. See party_consent.
    void accept_party(TicketType type, const UserId& member, UserId owner);

    // Starts a ticket for `owner` (OnIssueTicket gives the parameters).
    [[nodiscard]] Result<void> start_ticket(TicketType type, const UserId& owner);
    // Starts a ticket for a party: the owner and users connected to any node. `done` runs once.
    void start_ticket(TicketType type, const UserId& owner, std::vector<UserId> party,
                      std::function<void(Result<void>)> done);
    [[nodiscard]] Result<void> cancel_ticket(TicketType type, const UserId& owner);
    // A node's drain: from now on no ticket starts here (a party start still claiming its
    // members fails as `draining`); every ticket in progress owned here ends with 222 reason
    // draining to all its members, wherever they are connected (backfills stop); and each user
    // connected here leaves the room it is in, hearing 222 draining at once if its ticket had not
    // ended (the room tells the others as for any leave; a completed room held here closes). So
    // every member of a ticket this node takes part in hears one terminal push that says drain,
    // and its client starts again on another node. Returns how many tickets owned here ended.
    std::size_t drain();
    [[nodiscard]] Result<void> mark_ticket_as_complete(TicketType type, const UserId& owner);
    bool mark_ticket_as_complete_when_expire(TicketType type, const UserId& owner);
    void kickout_from_ticket(TicketType type, const UserId& owner, const UserId& target,
                             std::function<void(Result<void>)> done);
    bool leave_from_ticket_matchmaking(TicketType type, const UserId& user);
    void leave_from_ticket_matchmaking_with_callback(TicketType type, const UserId& user,
                                                     std::function<void(Result<void>)> done);
    [[nodiscard]] Result<void> ticket_broadcast(TicketType type, const UserId& user,
                                                std::uint8_t ver, std::uint16_t cmd, Bytes message);
    [[nodiscard]] Result<void> start_ticket_backfill(TicketType type, const UserId& owner);
    [[nodiscard]] Result<void> stop_ticket_backfill(TicketType type, const UserId& owner);
    void join_room_by_id(TicketType type, const std::string& room_id, const UserId& user,
                         std::function<void(Result<void>)> done);
    // Pushes a ticket-failure payload (message + code) to a user connected to this node (the game
    // logic that decides a failure runs where the user is connected).
    void push_failure(TicketType type, const UserId& user, std::string_view message,
                      std::uint16_t code);

    // Ticket and room properties (owner only).
    [[nodiscard]] Result<void> set_ticket_property(TicketType type, const UserId& owner,
                                                   const std::string& key, matching::Value value);
    [[nodiscard]] Result<void> set_ticket_properties(TicketType type, const UserId& owner,
                                                     const matching::ValueMap& values);
    bool set_ticket_property_if_not_exists(TicketType type, const UserId& owner,
                                           const std::string& key, matching::Value value);
    using PropertyUpdate = std::function<matching::Value(bool exists, const matching::Value* stored,
                                                         const matching::Value& proposed)>;
    [[nodiscard]] Result<void> update_ticket_properties(TicketType type, const UserId& owner,
                                                        const matching::ValueMap& values,
                                                        const PropertyUpdate& update);
    [[nodiscard]] std::optional<matching::Value> get_ticket_property(TicketType type,
                                                                     const UserId& owner,
                                                                     const std::string& key) const;
    [[nodiscard]] std::optional<matching::ValueMap> get_ticket_properties(
        TicketType type, const UserId& owner, const std::vector<std::string>& keys) const;

    // Reservations: a reserved seat counts as taken until it is used, canceled or expires.
    [[nodiscard]] Result<void> make_reservation(TicketType type, const UserId& owner,
                                                const UserId& user);
    bool cancel_reservation(TicketType type, const UserId& owner, const UserId& user);
    bool set_on_delete_ticket_room(TicketType type, const UserId& owner,
                                   std::function<void(const std::string&)> callback);
    bool set_on_leave_ticket_room(TicketType type, const UserId& owner,
                                  std::function<void(const std::string&, const User*)> callback);

    // Queries.
    [[nodiscard]] std::optional<std::vector<UserId>> get_ticket_member_ids(
        TicketType type, const UserId& owner) const;
    [[nodiscard]] std::optional<std::vector<std::string>> get_ticket_member_sids(
        TicketType type, const UserId& owner) const;
    [[nodiscard]] std::optional<std::vector<User>> get_ticket_member_clients(
        TicketType type, const UserId& owner) const;
    [[nodiscard]] bool has_ticket(TicketType type, const UserId& user) const;
    [[nodiscard]] bool is_ticket_owner(TicketType type, const UserId& user) const;
    [[nodiscard]] bool is_user_in_ticket_matchmaking(TicketType type, const UserId& user) const;
    [[nodiscard]] std::optional<TicketView> find_ticket(TicketType type, const UserId& owner) const;

    [[nodiscard]] const TicketCounters& counters() const { return counters_; }
    [[nodiscard]] std::size_t ticket_count() const { return tickets_.size(); }
    [[nodiscard]] std::size_t ticket_count(TicketPhase phase) const;
    // The tickets in progress here, by type and phase (searching, waiting), in one pass.
    using PhaseCounts = std::array<std::array<std::size_t, 2>, ticket_types_count>;
    [[nodiscard]] PhaseCounts ticket_counts() const;
    [[nodiscard]] std::size_t user_count() const { return users().size(); }
    [[nodiscard]] std::size_t room_count() const { return rooms_.size(); }
    [[nodiscard]] std::size_t participation_count() const { return home_.participations().size(); }
    // Everything held only for a while; zero once all of it has expired.
    [[nodiscard]] std::size_t remembered_count() const { return recall_.size(); }
    [[nodiscard]] const std::unordered_map<TicketId, Room>& rooms() const { return rooms_.all(); }
    [[nodiscard]] const Courier& courier() const { return courier_; }
    // Reservations past their expiry still held (should be none: they are freed on time).
    [[nodiscard]] std::size_t stale_reservations() const;

private:
    using Key = std::pair<UserId, TicketType>;

    [[nodiscard]] OwnedTicket* owned(TicketType type, const UserId& owner) {
        return tickets_.of_owner(owner, type);
    }
    [[nodiscard]] const OwnedTicket* owned(TicketType type, const UserId& owner) const {
        return tickets_.of_owner(owner, type);
    }
    [[nodiscard]] Room* room_of_owner(TicketType type, const UserId& owner) {
        return rooms_.of_owner(owner, type);
    }
    [[nodiscard]] const Room* room_of_owner(TicketType type, const UserId& owner) const {
        return rooms_.of_owner(owner, type);
    }
    // Refused as `draining` once drain() ran: what would start a ticket or a participation here.
    [[nodiscard]] Result<void> accepting() const;
    // The user's participations end as `why` says (its own tickets, the rooms it is in).
    void end_participations_of(const UserId& user, EndReason why);
    // A party start once its members are claimed (or not): the ticket, or every claim undone.
    void start_claimed(TicketType type, const UserId& owner, const TicketId& claim_id,
                       Result<std::vector<User>> claimed,
                       const std::function<void(Result<void>)>& done);

    // --- messages from other nodes ---
    void on_join(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_push(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_leave(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_broadcast(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_claim(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_release(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_locate(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    // A newer session of the user began elsewhere: the one here ends.
    void end_superseded(const UserId& user);
    void on_membership(const mesh::MembershipEvent& event);
    void on_node_gone(const NodeId& node);
    // Forgets what is only remembered for a while (joined tickets, accepted joins, delivered
    // push IDs, unused ticket names); runs every few seconds.
    void sweep();

    [[nodiscard]] TicketId next_ticket_id();
    [[nodiscard]] LocalUsers& users() { return sessions_.users(); }
    [[nodiscard]] const LocalUsers& users() const { return sessions_.users(); }
    [[nodiscard]] const User* local_user(const UserId& id) const { return users().find(id); }

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    matching::MatchingService& matching_;
    PushSink& sink_;
    TicketServiceOptions options_;
    Courier courier_;
    std::map<TicketType, Callbacks> callbacks_;
    Recall recall_;  // joined tickets, accepted joins, delivered pushes, for a while
    TicketCounters counters_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    bool draining_ = false;  // drain() ran: nothing starts here any more
    Sessions sessions_;  // the users connected here, and the cluster's session directory
    Context context_;    // the above, as the roles see them
    // The roles, each owning its state; each is built with references to the others it calls.
    Tickets tickets_;         // owned here, in progress
    Rooms rooms_;             // held here
    Home home_;               // the participations of users connected here, and their pushes
    PartyClaims claims_;      // a party start's claims on its members; writes home_'s
    std::set<Key> starting_;  // owners whose party is being claimed
    mesh::TimerId sweep_timer_ = 0;
    std::uint64_t next_ticket_ = 1;
};

}  // namespace matchmesh::ticket
