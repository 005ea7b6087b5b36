#pragma once
// Recall: what a node's ticket service remembers for a while after the fact, so that a message
// that comes again, or news that comes late, meets the same answer as the first time:
//   - tickets owned here that joined a room on another node, with that node: if it dies, it takes
//     its rooms with it, and the homes of the parties' other members must be told;
//   - joins this node accepted, by attempt: a retried join is accepted again, not seated twice,
//     and its answer carries again the pushes the first answer carried (bounded in bytes: past
//     the bound, a join's pushes travel on their own instead) and the room it was seated in;
//   - parties seated in another room than the one their join asked for, by that room and owner:
//     a leave sent to the asked room reaches them;
//   - pushes delivered here that may come more than once (broadcasts, announcements, failures),
//     by push ID: a retried delivery is not delivered twice.
// Each is forgotten once `memory` has passed (the pushes also past a bound on their number), by
// `forget_expired`, which the service's sweep runs. Owns only these; on the service's thread.

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class Recall {
public:
    // What the pushes kept for retried joins may hold at once: a minute of answers at a few
    // thousand joins a second; past it, pushes stop riding on answers until old ones are forgotten.
    static constexpr std::size_t kept_push_bytes_max = 64 << 20;

    explicit Recall(Duration memory, std::size_t kept_push_bytes_max = Recall::kept_push_bytes_max)
        : memory_(memory), kept_push_bytes_max_(kept_push_bytes_max) {}

    // Ticket `id` joined the room on `room_node` with its party.
    void joined(const TicketId& id, MatchedTicket ticket, Time now);
    // Whether ticket `id` of this node joined a room on `node`.
    [[nodiscard]] bool joined_at(const TicketId& id, std::string_view node) const {
        auto found = joined_.find(id);
        return found != joined_.end() && found->second.room_node.str() == node;
    }
    // Takes out every ticket remembered as joined to a room on `node`, in the order of their IDs.
    [[nodiscard]] std::vector<std::pair<TicketId, MatchedTicket>> take_joined_at(
        const NodeId& node);

    void accepted_join(const std::string& attempt, Time now);
    [[nodiscard]] bool accepted_join(const std::string& attempt) const {
        return accepted_joins_.contains(attempt);
    }
    // Accepted join `attempt`, by `owner`'s party, asked for room `asked` and was seated in
    // `room` instead.
    void seated_elsewhere(const std::string& attempt, const TicketId& asked, const UserId& owner,
                          const TicketId& room, Time now);
    // The answer to a retry of accepted join `attempt`: accepted, naming the room it was seated
    // in when not the one it asked for.
    [[nodiscard]] JoinReplyMessage accepted_again(const std::string& attempt) const;
    // The room `owner`'s party was seated in after asking for `asked`; null when none.
    [[nodiscard]] const TicketId* seated_instead_of(const TicketId& asked,
                                                    const UserId& owner) const;
    // Takes the pushes the answer to accepted join `attempt` carries, for a retry of the join,
    // and returns them as kept (answer_pushes has them too); null, leaving them, when that would
    // pass the bound (the caller sends them on their own).
    [[nodiscard]] const std::vector<PushEnvelope>* keep_answer_pushes(
        const std::string& attempt, const NodeId& to, std::vector<PushEnvelope>& pushes);
    // Node `node` is gone: the room let its parties go, and a retry of their joins is refused.
    void forget_answer_pushes_to(const NodeId& node);
    // The pushes kept for a retry of join `attempt`; null when there are none.
    [[nodiscard]] const std::vector<PushEnvelope>* answer_pushes(const std::string& attempt) const;
    [[nodiscard]] std::size_t kept_push_bytes() const { return kept_push_bytes_; }

    // Whether this is the first time this push is delivered here (and remembers it).
    [[nodiscard]] bool first_sight(const std::string& push_id, Time now);

    void forget_expired(Time now);
    // Everything held; zero once all of it has been forgotten.
    [[nodiscard]] std::size_t size() const {
        return joined_.size() + accepted_joins_.size() + seated_elsewhere_.size() +
               seen_pushes_.size();
    }

private:
    Duration memory_;
    std::size_t kept_push_bytes_max_;
    std::unordered_map<TicketId, MatchedTicket> joined_;
    struct AcceptedJoin {
        Time forget_at;
        std::vector<PushEnvelope> pushes;  // its answer carried them
        NodeId to;                         // to the node that sent the join
        TicketId seated_in;                // when not the room it asked for
    };
    std::unordered_map<std::string, AcceptedJoin> accepted_joins_;  // by attempt
    struct SeatedElsewhere {
        Time forget_at;
        TicketId room;
    };
    [[nodiscard]] static std::string seated_key(const TicketId& asked, const UserId& owner);
    std::unordered_map<std::string, SeatedElsewhere> seated_elsewhere_;  // by seated_key
    std::size_t kept_push_bytes_ = 0;
    std::unordered_set<std::string> seen_pushes_;
    std::deque<std::pair<Time, std::string>> seen_order_;  // oldest first, to bound the set
};

}  // namespace matchmesh::ticket
