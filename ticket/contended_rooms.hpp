#pragma once
// What this node's searchers have learned about the rooms their searches find: which ones a join
// from here is on its way to, and which ones a join from here found gone. Every searcher of a
// bucket is handed the same rooms, and the index lists a room until its removal reaches it; under
// load, many searchers here would send a join to the same room or to one already gone, all but
// one refused, each a round trip. With this, a searcher tries first the rooms no other searcher
// here is joining and skips the rooms found gone, for as long as the index may still list them.
//
// Owns: the rooms with joins in flight from here (counted) and the rooms found gone, for
// `gone_hold` each and at most `gone_max` of them, oldest forgotten first. Owned by Tickets; on
// the node's loop thread.

#include <cstddef>
#include <deque>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "mesh/base/strong_id.hpp"
#include "mesh/base/time.hpp"

namespace matchmesh::ticket {

class ContendedRooms {
public:
    // Longer than a removal takes to reach the index, even on a busy cluster.
    static constexpr Duration gone_hold = std::chrono::seconds(2);
    static constexpr std::size_t gone_max = 8192;

    // A join from here to `room` is sent; answered() when its answer comes (or none will).
    void joining(const TicketId& room);
    void answered(const TicketId& room);
    // A join from here to `room` was refused because the room is gone or complete.
    void gone(const TicketId& room, Time now);
    // Forgets the rooms found gone more than `gone_hold` before `now`.
    void forget_gone(Time now);

    [[nodiscard]] bool is_joined(std::string_view room) const {
        return !joins_in_flight_.empty() && joins_in_flight_.find(room) != joins_in_flight_.end();
    }
    [[nodiscard]] bool is_gone(std::string_view room) const {
        return !gone_.empty() && gone_.find(room) != gone_.end();
    }

private:
    void forget_oldest();

    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view id) const noexcept {
            return std::hash<std::string_view>{}(id);
        }
        std::size_t operator()(const TicketId& id) const noexcept { return (*this)(id.str()); }
    };
    struct Equal {
        using is_transparent = void;
        static std::string_view text(std::string_view id) { return id; }
        static std::string_view text(const TicketId& id) { return id.str(); }
        bool operator()(const auto& left, const auto& right) const {
            return text(left) == text(right);
        }
    };

    std::unordered_map<TicketId, std::size_t, Hash, Equal> joins_in_flight_;
    std::unordered_set<TicketId, Hash, Equal> gone_;
    std::deque<std::pair<Time, TicketId>> gone_order_;  // oldest first
};

}  // namespace matchmesh::ticket
