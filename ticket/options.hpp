#pragma once
// The ticket service's options and counters (see service.hpp), apart so that its roles can name
// them without the service itself.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>

#include "mesh/scheduler.hpp"
#include "ticket/courier.hpp"
#include "ticket/types.hpp"

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
    // New and ended sessions are sent to their users' directory nodes together, at most this
    // long after they began or ended (a busy node sends one message per directory node for many
    // connects, not one per connect).
    Duration session_announce_delay{5};
    // Users whose sessions this node keeps as their directory; past it a registration is refused
    // (and counted), and that user's next session elsewhere ends no older one.
    std::size_t session_directory_max = 1000000;
    // A party member is claimed only if its own session accepted the owner's party first
    // (accept_party). Off, the caller of start_ticket vouches for the party: the game's own server
    // code. The node's client port turns it on, so that no player can pull others into a room.
    bool party_consent = false;
    // Wall-clock milliseconds, for when a room began waiting (Prefer::oldest compares rooms of
    // different nodes). None: the scheduler's clock, which the simulation shares across nodes.
    std::function<std::int64_t()> unix_ms;
    CourierOptions courier;
};

// Every ticket type there can be: counters kept per type are arrays indexed by the type, so that
// counting costs no lookup.
inline constexpr std::size_t ticket_types_count =
    std::size_t{std::numeric_limits<TicketType>::max()} + 1;

// The tickets owned here of one type: how many started, and how they ended.
struct TicketTypeCounters {
    std::uint64_t started = 0;
    // By why (EndReason): completed (220), timed_out (219), and the reasons of a 222 (canceled,
    // left, kicked, disconnected, node_gone, draining). Never unspecified.
    std::array<std::uint64_t, end_reasons_count> ended{};

    [[nodiscard]] std::uint64_t& ended_as(EndReason why) {
        return ended[static_cast<std::size_t>(why)];
    }
    [[nodiscard]] std::uint64_t ended_as(EndReason why) const {
        return ended[static_cast<std::size_t>(why)];
    }
    [[nodiscard]] std::uint64_t completed() const { return ended_as(EndReason::completed); }
    [[nodiscard]] std::uint64_t timed_out() const { return ended_as(EndReason::timed_out); }
    // Every 222, whatever its reason.
    [[nodiscard]] std::uint64_t canceled() const {
        std::uint64_t sum = 0;
        for (std::size_t why = 0; why < ended.size(); ++why) {
            sum += ended[why];
        }
        return sum - completed() - timed_out();
    }
};

struct TicketCounters {
    std::array<TicketTypeCounters, ticket_types_count> by_type{};
    std::uint64_t searches = 0;
    // Joins answered by the rooms held here (each join is counted once, by its room's node).
    std::uint64_t joins_accepted = 0;
    std::uint64_t joins_refused = 0;
    std::array<std::uint64_t, join_refusals_count> join_refusals{};  // indexed by JoinRefusal
    // Joins whose room was taken that another waiting room here took (Rooms::seat_elsewhere);
    // counted as accepted too.
    std::uint64_t joins_seated_elsewhere = 0;
    // Joins this node's tickets tried that were refused or not answered.
    std::uint64_t own_joins_refused = 0;
    std::uint64_t pushes_delivered = 0;
    std::uint64_t pushes_dropped = 0;  // for tickets the user no longer has

    // All types together.
    [[nodiscard]] TicketTypeCounters total() const {
        TicketTypeCounters sum;
        for (const TicketTypeCounters& type : by_type) {
            sum.started += type.started;
            for (std::size_t why = 0; why < type.ended.size(); ++why) {
                sum.ended[why] += type.ended[why];
            }
        }
        return sum;
    }
};

}  // namespace matchmesh::ticket
