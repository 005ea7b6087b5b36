#pragma once
// Recall: what a node's ticket service remembers for a while after the fact, so that a message
// that comes again, or news that comes late, meets the same answer as the first time:
//   - tickets owned here that joined a room on another node, with that node: if it dies, it takes
//     its rooms with it, and the homes of the parties' other members must be told;
//   - joins this node accepted, by attempt: a retried join is accepted again, not seated twice;
//   - pushes delivered here that may come more than once (broadcasts, announcements, failures),
//     by push ID: a retried delivery is not delivered twice.
// Each is forgotten once `memory` has passed (the pushes also past a bound on their number), by
// `forget_expired`, which the service's sweep runs. Owns only these; on the service's thread.

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ticket/state.hpp"

namespace matchmesh::ticket {

class Recall {
public:
    explicit Recall(Duration memory) : memory_(memory) {}

    // Ticket `id` joined the room on `room_node` with its party.
    void joined(const TicketId& id, MatchedTicket ticket, Time now);
    // Takes out every ticket remembered as joined to a room on `node`, in the order of their IDs.
    [[nodiscard]] std::vector<std::pair<TicketId, MatchedTicket>> take_joined_at(
        const NodeId& node);

    void accepted_join(const std::string& attempt, Time now);
    [[nodiscard]] bool accepted_join(const std::string& attempt) const {
        return accepted_joins_.contains(attempt);
    }

    // Whether this is the first time this push is delivered here (and remembers it).
    [[nodiscard]] bool first_sight(const std::string& push_id, Time now);

    void forget_expired(Time now);
    // Everything held; zero once all of it has been forgotten.
    [[nodiscard]] std::size_t size() const {
        return joined_.size() + accepted_joins_.size() + seen_pushes_.size();
    }

private:
    Duration memory_;
    std::unordered_map<TicketId, MatchedTicket> joined_;
    std::unordered_map<std::string, Time> accepted_joins_;  // attempt: when to forget it
    std::unordered_set<std::string> seen_pushes_;
    std::deque<std::pair<Time, std::string>> seen_order_;  // oldest first, to bound the set
};

}  // namespace matchmesh::ticket
