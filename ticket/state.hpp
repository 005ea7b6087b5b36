#pragma once
// The records the ticket service keeps. Internal to ticket/; see service.hpp for who owns what.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "matching/bucket_store.hpp"
#include "matching/value.hpp"
#include "mesh/scheduler.hpp"
#include "ticket/callbacks.hpp"
#include "ticket/types.hpp"

namespace matchmesh::ticket {

enum class RoomState : std::uint8_t {
    searching,  // its ticket searches other rooms: closed to joins
    waiting,    // open to joins
    completed,  // the ticket completed; members stay for broadcasts, leaves and backfill
    backfill,   // completed, and open to joins again for the seats left
};

// What few rooms use, kept out of line so that a waiting room stays small.
struct RoomExtras {
    std::map<UserId, Time> reservations;
    matching::ValueMap properties;
    // Each joined party's holder, and the owner's once its ticket completed (until then the
    // ticket has it: see TicketService::owner_holder).
    TicketProperties ticket_properties;
    std::vector<std::function<void(const std::string&)>> on_deleted;
    std::vector<std::function<void(const std::string&, const User*)>> on_left;
};

struct Room {
    TicketId id;           // the owner's ticket ID
    TicketId live_ticket;  // the ticket in progress for this room (empty once completed)
    UserId owner;
    std::vector<Member> members;  // in join order, the owner's party first
    std::uint64_t next_push = 1;
    std::unique_ptr<RoomExtras> more;  // none until something is written there
    TicketType type = 0;
    std::uint8_t max_members = 2;
    RoomState state = RoomState::searching;

    // For reading: empty extras when none were written.
    [[nodiscard]] const RoomExtras& extras() const {
        static const RoomExtras none;
        return more ? *more : none;
    }
    // For writing: allocated on first use.
    RoomExtras& edit_extras() {
        if (!more) {
            more = std::make_unique<RoomExtras>();
        }
        return *more;
    }
};

enum class TicketPhase : std::uint8_t { searching, waiting, matched };

// The profiles and tags a ticket adds and searches under. Tickets of one type mostly name the
// same ones, so the service keeps one copy of each distinct set, shared by its tickets.
struct TicketNames {
    std::vector<std::string> add_profiles;
    std::vector<std::string> search_profiles;
    std::vector<std::string> tags;  // never empty: the empty tag when the ticket names none
    friend auto operator<=>(const TicketNames&, const TicketNames&) = default;
};

// The values a ticket adds and searches under. Tickets of one mode and rating band mostly name
// the same, so the service keeps one copy of each distinct pair, shared by its tickets.
struct TicketValues {
    matching::Properties add_properties;
    matching::RangeProperties search_properties;
};

// What few tickets carry, kept out of line so that a waiting ticket stays small: the game's
// own bytes, wider searches as it waits, and its start as told to searchers that prefer the
// oldest.
struct TicketExtras {
    Bytes application_data;
    std::int64_t waiting_since_ms = 0;  // with Prefer::oldest: its start, wall clock
    Time steps_started{};
    std::vector<SearchStep> search_steps;
};

// What a ticket keeps of its TicketParams: its own settings, and its shared names and values.
struct TicketSettings {
    std::shared_ptr<const TicketNames> names;
    std::shared_ptr<const TicketValues> values;
    std::chrono::milliseconds search_interval{};
    std::chrono::milliseconds wait_search_after{};
    std::chrono::seconds timeout_extension_on_match_join{};
    std::uint8_t max_members = 2;
    std::uint8_t search_tries = 0;
    std::uint8_t empty_searches = 0;
    std::uint8_t wait_searches = 0;
    std::uint8_t how_many = 0;
    Prefer prefer = Prefer::spread;
    std::unique_ptr<const TicketExtras> extras;  // none when the ticket has none of them

    [[nodiscard]] const Bytes& application_data() const {
        static const Bytes none;
        return extras ? extras->application_data : none;
    }
    [[nodiscard]] std::int64_t waiting_since_ms() const {
        return extras ? extras->waiting_since_ms : 0;
    }
    // The search properties in force `now`: the last step begun, else the first ones.
    [[nodiscard]] const matching::RangeProperties& searching_now(Time now) const {
        if (extras) {
            const auto& steps = extras->search_steps;
            for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
                if (now - extras->steps_started >= step->after) {
                    return step->search_properties;
                }
            }
        }
        return values->search_properties;
    }
};

// A room a search found: the ID of its item as the search gave it (so that a search's rooms
// cost no copies; IDs are made for the few tried), and the room's part of it.
struct Candidate {
    std::string item_id;
    std::size_t room_length = 0;
    std::int64_t waiting_since_ms = INT64_MAX;  // with Prefer::oldest: when the room began waiting
    matching::Offer offer = matching::Offer::none;  // see Tickets::handout

    [[nodiscard]] std::string_view room() const {
        return std::string_view(item_id).substr(0, room_length);
    }
};

// A join this node's ticket is trying; it repeats the same attempt until it gets an answer.
struct JoinAttempt {
    std::string attempt;
    TicketId room_id;
    NodeId node;
};

// A ticket owned by a user connected to this node.
struct OwnedTicket {
    TicketId id;
    TicketId room_id;               // its own ID, or the completed room it backfills
    std::vector<SharedUser> party;  // owner first
    TicketSettings params;
    Time started{};
    Time deadline{};
    std::vector<Candidate> candidates;
    std::unique_ptr<JoinAttempt> joining;  // rare, so kept out of line
    // One timer per ticket, for its next step or its deadline, whichever comes first.
    Time next_step = Time::max();  // its next search, or its items' next refresh
    mesh::TimerId timer = 0;
    std::uint32_t next_candidate = 0;
    std::uint16_t searches = 0;
    std::uint16_t empty_searches = 0;
    TicketType type = 0;
    TicketPhase phase = TicketPhase::searching;
    std::uint8_t wait_searches = 0;  // made so far
    std::uint8_t taken = 0;          // candidates of the last search found taken
    bool looking = false;            // waiting, and searching or joining another waiting room
    bool expired = false;            // the deadline passed while a join was unresolved
    bool backfill = false;
    bool complete_when_expire = false;
    std::optional<EndReason> cancel_requested;  // while a join is unresolved: why

    [[nodiscard]] const UserId& owner() const { return party.front()->id; }
};

// A ticket whose party joined another node's room: kept a while, so that if that node dies
// before the party's other homes heard where they went, this node can tell them.
struct MatchedTicket {
    TicketType type = 0;
    std::vector<SharedUser> party;
    NodeId room_node;
    Time forget_at{};
};

// A local user's part in the matchmaking of one ticket type, kept by the user's home node.
struct Participation {
    TicketId ticket_id;  // pushes for other tickets are ignored
    TicketId room_id;
    NodeId room_node;
    bool completed = false;  // got 220; still in the room until it leaves
};

}  // namespace matchmesh::ticket
