#pragma once
// Tickets: the owner's side of the tickets owned on this node, from start to end: created (or a
// completed room's backfill), searching on a timer, joining another room (one attempt at a time,
// retried by the courier), waiting in its own room with its items in the matching service, a
// waiting ticket's own searches, and its end by deadline, cancel, completion or a join. See
// README.md for the state machine.
//
// Owns: the tickets owned here (by ID and each owner's current one), the one copy of each set of
// names they use, the join attempt counter, and the random source of their searches (seeded from
// the node's ID, so that the simulation's runs repeat). Owned by TicketService; on the node's loop
// thread. Reaches the rooms held here through Rooms (its own room opens, closes, completes) and
// its users' participations through Home.

#include <algorithm>
#include <compare>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "ticket/by_owner.hpp"
#include "ticket/contended_rooms.hpp"
#include "ticket/context.hpp"
#include "ticket/state.hpp"
#include "ticket/waiting_lately.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class Home;
class Rooms;

// A ticket's holder: what AllowMatchIf and OnTicketComplete see of it.
[[nodiscard]] Holder holder_of(const TicketSettings& params);

class Tickets {
public:
    Tickets(Context& context, Rooms& rooms, Home& home);
    Tickets(const Tickets&) = delete;
    Tickets& operator=(const Tickets&) = delete;

    [[nodiscard]] OwnedTicket* find(const TicketId& id) { return tickets_.find(id); }
    [[nodiscard]] const OwnedTicket* find(const TicketId& id) const { return tickets_.find(id); }
    [[nodiscard]] bool contains(const TicketId& id) const { return tickets_.contains(id); }
    [[nodiscard]] OwnedTicket* of_owner(const UserId& owner, TicketType type) {
        return tickets_.of_owner(owner, type);
    }
    [[nodiscard]] const OwnedTicket* of_owner(const UserId& owner, TicketType type) const {
        return tickets_.of_owner(owner, type);
    }
    [[nodiscard]] const std::unordered_map<TicketId, OwnedTicket>& all() const {
        return tickets_.all();
    }
    [[nodiscard]] std::size_t size() const { return tickets_.size(); }

    // A new ticket for `owner` and its claimed party, with its own room; it starts searching (or
    // waiting, with no searches to make).
    [[nodiscard]] Result<OwnedTicket*> create(TicketType type, SharedUser owner,
                                              std::vector<User> party, TicketId id);
    // A backfill ticket for the owner's completed `room`: it waits at once, for the seats left.
    void start_backfill(Room& room, SharedUser owner, TicketParams params, TicketId id);
    // By value: callers may name the ticket's own ID, which ending it frees. `why` is a cancel's
    // reason, pushed with each member's 222 (a 220's or a 219's goes without saying).
    void end(TicketId id, PushKind outcome, EndReason why = EndReason::unspecified);
    // The join `ticket` is trying succeeded (its answer, or a push from that room, says so).
    void conclude_join(OwnedTicket& ticket);
    // A party joined the room of live ticket `id`: its deadline gets the join's extension.
    void extend_on_join(const TicketId& id);
    // A room closed by its ticket's wait search that gets a join from the very room that search is
    // trying to join: the lower ticket ID gives its own join up and takes the other in. Returns
    // the join given up, for take_back_join should the room refuse the other after all.
    struct GivenUpJoin {
        std::unique_ptr<JoinAttempt> attempt;
        LeaveMessage leave;  // to withdraw the party if the ticket cannot wait for that answer
    };
    [[nodiscard]] std::optional<GivenUpJoin> yield_to_crossed_join(Room& room,
                                                                   const JoinMessage& join);
    // The room that gave way refused the crossed join after all (its limits, the game's
    // callbacks), so the other room opens again when that answer arrives, and the join given up,
    // still out (or retried), may then be taken: the ticket waits for its answer again, its room
    // closed, as before it gave way.
    void take_back_join(const TicketId& room_id, GivenUpJoin given_up);
    // A waiting room here, other than the one `join` asked for, that the joining ticket's search
    // finds (its profiles, tags and ranges give one of the keys the room's ticket adds items
    // under): the longest waiting of the tickets that began waiting here lately. Null if none.
    [[nodiscard]] Room* room_found_by(const JoinMessage& join, const Holder& holder);
    // Whether join `attempt` of ticket `id` is one this node's ticket is waiting on.
    [[nodiscard]] bool joining_from_here(const TicketId& id, const std::string& attempt);
    // That join is being seated in room `room_id` of the same node instead.
    void redirect_join(const TicketId& id, const std::string& attempt, const TicketId& room_id);
    // Drops the names no ticket holds any more, and the unused values once more than a few
    // thousand are kept (the service's sweep).
    void forget_unused_settings();
    // The service is going: no ticket's timer may run.
    void cancel_timers();

private:
    // Withdraws a party from a room at `node` that may hold it; nobody waits for the answer.
    void send_leave(const NodeId& node, const LeaveMessage& leave);
    // Sets the ticket's timer for its next step or its deadline, whichever comes first.
    void arm(OwnedTicket& ticket);
    void wake(const TicketId& id);
    void schedule_search(OwnedTicket& ticket, Duration delay);
    void run_search(const TicketId& id);
    void start_search(OwnedTicket& ticket);
    [[nodiscard]] matching::Handout handout(const OwnedTicket& ticket);
    // A room on offer to another search, which this ticket passes by.
    [[nodiscard]] static bool taken_by_another(const OwnedTicket& ticket,
                                               const Candidate& candidate);
    void schedule_look(const OwnedTicket& ticket);
    // A waiting ticket's search: right after its search found nothing (confirming), or on its
    // schedule (counted as a try or as a wait search).
    enum class Look : std::uint8_t { confirming, scheduled };
    void run_look(const TicketId& id, Look look);
    void end_look(OwnedTicket& ticket);
    // Searches at the search interval it still has (searchTries, emptySearches).
    [[nodiscard]] static bool has_tries_left(const OwnedTicket& ticket);
    // Whether the ticket's own room holds its party and nobody else (it may still move).
    [[nodiscard]] bool alone_in_room(const OwnedTicket& ticket) const;
    void on_search_results(const TicketId& id, matching::SearchOutcome outcome);
    void try_next_candidate(OwnedTicket& ticket);
    void spread_candidates(OwnedTicket& ticket);
    [[nodiscard]] static matching::ValueMap waiting_since(const OwnedTicket& ticket);
    [[nodiscard]] static std::int64_t since_of(const matching::Found& item);
    [[nodiscard]] std::int64_t unix_ms() const;
    void send_join(const TicketId& id);
    void on_join_reply(const TicketId& id, const std::string& attempt,
                       std::expected<JoinReplyMessage, std::string> reply);
    // What the answer to a join from here (any answer, or none) says about its room.
    void note_join_answer(const TicketId& room,
                          const std::expected<JoinReplyMessage, std::string>& reply);
    void start_waiting(OwnedTicket& ticket);
    void refresh_items(const TicketId& id);
    void remove_items(const OwnedTicket& ticket);
    void on_deadline(const TicketId& id);
    void finish(OwnedTicket& ticket);
    // Ends the room of a ticket that ended with `outcome` (not by a join, not a backfill).
    void end_room(const TicketId& room_id, PushKind outcome, EndReason why);
    // Keeps a new ticket's parameters, its names and values shared with other tickets naming the
    // same.
    [[nodiscard]] TicketSettings settle(TicketParams params);

    Context& context_;
    Rooms& rooms_;
    Home& home_;
    ByOwner<OwnedTicket> tickets_;  // owned here, in progress
    // One copy of each set of names that tickets use; the sweep drops those no ticket holds.
    // A ticket's names as lists it already holds: looked up by these, a known set costs no
    // allocation.
    struct NamesView {
        std::span<const std::string> add_profiles;
        std::span<const std::string> search_profiles;
        std::span<const std::string> tags;
        friend std::strong_ordering operator<=>(const NamesView& left, const NamesView& right) {
            const auto lists = [](std::span<const std::string> a, std::span<const std::string> b) {
                return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(),
                                                              b.end());
            };
            if (auto order = lists(left.add_profiles, right.add_profiles); order != 0) {
                return order;
            }
            if (auto order = lists(left.search_profiles, right.search_profiles); order != 0) {
                return order;
            }
            return lists(left.tags, right.tags);
        }
    };
    struct NamesLess {
        using is_transparent = void;
        static NamesView of(const std::shared_ptr<const TicketNames>& names) {
            return {names->add_profiles, names->search_profiles, names->tags};
        }
        static NamesView of(const NamesView& names) { return names; }
        bool operator()(const auto& left, const auto& right) const { return of(left) < of(right); }
    };
    std::set<std::shared_ptr<const TicketNames>, NamesLess> names_;
    // One copy of each pair of values that tickets use, the same way, found by a hash of their
    // numbers (tickets of one type name the same properties, so the names add nothing to it).
    struct ValuesHash {
        using is_transparent = void;
        std::size_t operator()(const std::shared_ptr<const TicketValues>& values) const {
            return (*this)(*values);
        }
        std::size_t operator()(const TicketValues& values) const;
    };
    struct ValuesEqual {
        using is_transparent = void;
        static const TicketValues& of(const std::shared_ptr<const TicketValues>& values) {
            return *values;
        }
        static const TicketValues& of(const TicketValues& values) { return values; }
        bool operator()(const auto& left, const auto& right) const {
            return of(left).add_properties == of(right).add_properties &&
                   of(left).search_properties == of(right).search_properties;
        }
    };
    std::unordered_set<std::shared_ptr<const TicketValues>, ValuesHash, ValuesEqual> values_;
    ContendedRooms contended_;  // rooms that joins from here go to, or found gone
    WaitingLately waiting_lately_;
    matching::SearchKeys joiner_keys_;  // room_found_by's scratch
    matching::SearchKey room_key_;
    double join_ms_ = 0;  // how long joins to other nodes took lately, to their answer (average)
    std::uint64_t next_attempt_ = 1;
    std::mt19937_64 random_;  // seeded from the node's ID: the simulation's runs repeat
};

}  // namespace matchmesh::ticket
