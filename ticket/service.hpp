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
#include "ticket/by_owner.hpp"
#include "ticket/callbacks.hpp"
#include "ticket/courier.hpp"
#include "ticket/local_users.hpp"
#include "ticket/participations.hpp"
#include "ticket/recall.hpp"
#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

struct TicketServiceOptions {
    ParamLimits limits;
    Duration join_timeout{500};       // one try of a join request
    Duration reservation_ttl{10000};  // a reserved seat is held this long
    Duration matched_memory{60000};   // how long a joined ticket is remembered
    std::chrono::seconds item_ttl_max{60};
    // A session of the user began on another node: the node closes its own (older) session.
    std::function<void(const UserId&)> on_superseded;
    std::size_t tickets_max = 100000;  // live tickets owned on this node
    // New sessions are announced to the other nodes together, at most this long after they
    // began (a busy node sends one message per peer for many connects, not one per connect).
    Duration session_announce_delay{5};
    // A party member is claimed only if its own session accepted the owner's party first
    // (accept_party). Off, the caller of start_ticket vouches for the party: the game's own server
    // code. The node's client port turns it on, so that no player can pull others into a room.
    bool party_consent = false;
    CourierOptions courier;
};

struct TicketCounters {
    std::uint64_t started = 0;
    std::uint64_t completed = 0;
    std::uint64_t timed_out = 0;
    std::uint64_t canceled = 0;
    std::uint64_t searches = 0;
    std::uint64_t joins_accepted = 0;
    std::uint64_t joins_refused = 0;
    std::uint64_t pushes_delivered = 0;
    std::uint64_t pushes_dropped = 0;  // for tickets the user no longer has
};

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
    // Cancels every ticket in progress owned here (222 to all their members; backfills stop):
    // a node's drain. Returns how many.
    std::size_t cancel_all_tickets();
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
    [[nodiscard]] std::size_t user_count() const { return users_.size(); }
    [[nodiscard]] std::size_t room_count() const { return rooms_.size(); }
    [[nodiscard]] std::size_t participation_count() const { return participations_.size(); }
    // Everything held only for a while; zero once all of it has expired.
    [[nodiscard]] std::size_t remembered_count() const { return recall_.size(); }
    [[nodiscard]] const std::map<TicketId, Room>& rooms() const { return rooms_.all(); }
    [[nodiscard]] const Courier& courier() const { return courier_; }
    // Reservations past their expiry still held (should be none: they are freed on time).
    [[nodiscard]] std::size_t stale_reservations() const;

private:
    using Key = std::pair<UserId, TicketType>;

    // --- owner side (lifecycle.cpp): a ticket from start to end ---
    [[nodiscard]] Result<OwnedTicket*> create_ticket(TicketType type, SharedUser owner,
                                                     std::vector<User> party, TicketId id);
    // Sets the ticket's timer for its next step or its deadline, whichever comes first.
    void arm(OwnedTicket& ticket);
    void wake(const TicketId& id);
    void schedule_search(OwnedTicket& ticket, Duration delay);
    void run_search(const TicketId& id);
    void start_search(OwnedTicket& ticket);
    void schedule_wait_search(const OwnedTicket& ticket);
    void run_wait_search(const TicketId& id);
    void end_wait_search(OwnedTicket& ticket);
    // Whether the ticket's own room holds its party and nobody else (it may still move).
    [[nodiscard]] bool alone_in_room(const OwnedTicket& ticket) const;
    // A room closed by its ticket's wait search that gets a join from the very room that search is
    // trying to join: the lower ticket ID gives its own join up and takes the other in.
    void yield_to_crossed_join(Room& room, const JoinMessage& join);
    void on_search_results(const TicketId& id, matching::SearchOutcome outcome);
    void try_next_candidate(OwnedTicket& ticket);
    void spread_candidates(OwnedTicket& ticket);
    void send_join(const TicketId& id);
    void on_join_reply(const TicketId& id, const std::string& attempt,
                       std::expected<JoinReplyMessage, std::string> reply);
    // The join `ticket` is trying succeeded (its answer, or a push from that room, says so).
    void conclude_join(OwnedTicket& ticket);
    void start_waiting(OwnedTicket& ticket);
    void refresh_items(const TicketId& id);
    void remove_items(const OwnedTicket& ticket);
    void on_deadline(const TicketId& id);
    // By value: callers may name the ticket's own ID, which ending it frees.
    void end_ticket(TicketId id, PushKind outcome);
    void finish_ticket(OwnedTicket& ticket);
    [[nodiscard]] OwnedTicket* owned(TicketType type, const UserId& owner);
    [[nodiscard]] const OwnedTicket* owned(TicketType type, const UserId& owner) const;
    [[nodiscard]] Holder holder_of(const TicketSettings& params) const;
    // Keeps a new ticket's parameters, its names shared with other tickets naming the same.
    [[nodiscard]] TicketSettings settle(TicketParams params);
    // The room owner's holder: its running ticket's, or the room's copy once that finished.
    [[nodiscard]] Holder owner_holder(const Room& room) const;

    // --- rooms (rooms.cpp): joins, leaves, broadcasts, at the room's node ---
    Room& open_room(const OwnedTicket& ticket);
    [[nodiscard]] Room* room_of_owner(TicketType type, const UserId& owner);
    [[nodiscard]] const Room* room_of_owner(TicketType type, const UserId& owner) const;
    [[nodiscard]] JoinReplyMessage accept_join(const JoinMessage& join);
    struct JoinRefusal {
        std::string reason;
        bool taken = true;  // the seats are gone (the joiner's next candidate counts it)
    };
    // Why this room cannot seat the join's party now, if it cannot.
    [[nodiscard]] std::optional<JoinRefusal> seat_refusal(const Room& room,
                                                          const JoinMessage& join);
    void seat(Room& room, const JoinMessage& join);
    void complete_late_joiner(const TicketId& room_id, const JoinMessage& join);
    void after_join(const TicketId& room_id, const JoinMessage& join);
    void complete_room(Room& room);
    void close_room(const TicketId& room_id, PushKind outcome);
    // By value: callers may name the room's own ID, which deleting it frees.
    void delete_room(TicketId room_id);
    bool remove_party(Room& room, const TicketId& party, PushKind push, bool announce);
    [[nodiscard]] std::size_t seats_taken(const Room& room, Time now) const;
    void expire_reservations(const TicketId& room_id);
    [[nodiscard]] std::vector<UserId> member_ids(const Room& room) const;
    [[nodiscard]] TicketView view_of(const Room& room, bool finished) const;
    void push_to_members(Room& room, WireKind kind, std::uint8_t ver, std::uint16_t cmd,
                         const Bytes& message);
    void push_to_member(Room& room, const Member& member, WireKind kind, std::uint8_t ver,
                        std::uint16_t cmd, const Bytes& message);
    void announce(Room& room, const std::optional<Announcement>& announcement);

    // --- home side (home.cpp): participations and deliveries ---
    void deliver(const NodeId& home, PushEnvelope push);
    void receive_push(const PushEnvelope& push);
    void receive_end(const PushEnvelope& push, Participation& participation);
    void deliver_locally(const PushEnvelope& push);
    void cancel_participation(const UserId& user, TicketType type, const char* why);
    void leave_room_of(const UserId& user, TicketType type, std::function<void(Result<void>)> done);
    void claim_party(const TicketId& id, TicketType type, const User& owner,
                     std::vector<UserId> party,
                     std::function<void(Result<std::vector<User>>)> done);
    struct PartyClaim;
    void claim_local_member(PartyClaim& claim, const UserId& user_id);
    void claim_remote_member(const std::shared_ptr<PartyClaim>& claim, const UserId& user_id,
                             const std::vector<NodeId>& others);
    void finish_claims(const std::shared_ptr<PartyClaim>& claim);
    // Undoes a party start: every member, at every node (a claim's answer may have been lost).
    void release_claims(const TicketId& id, TicketType type, const std::vector<UserId>& party);

    // --- messages from other nodes ---
    void on_join(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_push(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_leave(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_broadcast(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_claim(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_release(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void announce_sessions();
    void on_session(const NodeId& from, mesh::PayloadView payload);
    void on_membership(const mesh::MembershipEvent& event);
    void on_node_gone(const NodeId& node);
    // Forgets what is only remembered for a while (joined tickets, accepted joins, delivered
    // push IDs); runs every few seconds.
    void sweep();

    [[nodiscard]] TicketId next_ticket_id();
    [[nodiscard]] std::string next_push_id(Room& room);
    [[nodiscard]] const User* local_user(const UserId& id) const { return users_.find(id); }
    [[nodiscard]] bool accepted(const UserId& member, TicketType type, const UserId& owner) const;

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    matching::MatchingService& matching_;
    PushSink& sink_;
    TicketServiceOptions options_;
    Courier courier_;
    std::map<TicketType, Callbacks> callbacks_;
    LocalUsers users_;              // connected here
    ByOwner<OwnedTicket> tickets_;  // owned here, in progress
    ByOwner<Room> rooms_;           // held here, by ID (the owner's ticket ID)
    Recall recall_;                 // joined tickets, accepted joins, delivered pushes, for a while
    Participations participations_;  // of users connected here
    std::set<Key> starting_;         // owners whose party is being claimed
    // One copy of each set of names that tickets use; the sweep drops those no ticket holds.
    struct NamesLess {
        using is_transparent = void;  // looked up by value, so a known set costs no allocation
        static const TicketNames& of(const std::shared_ptr<const TicketNames>& names) {
            return *names;
        }
        static const TicketNames& of(const TicketNames& names) { return names; }
        bool operator()(const auto& left, const auto& right) const { return of(left) < of(right); }
    };
    std::set<std::shared_ptr<const TicketNames>, NamesLess> names_;
    mesh::TimerId sweep_timer_ = 0;
    std::vector<SessionStart> unannounced_;  // sessions begun here since the last announcement
    mesh::TimerId announce_timer_ = 0;
    std::uint64_t next_ticket_ = 1;
    std::uint64_t next_attempt_ = 1;
    std::mt19937_64 random_;  // seeded from the node's ID: the simulation's runs repeat
    TicketCounters counters_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::ticket
