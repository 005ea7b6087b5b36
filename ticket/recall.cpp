#include "ticket/recall.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {
namespace {

constexpr std::size_t seen_pushes_max = 65536;
std::size_t bytes_of(const std::vector<PushEnvelope>& pushes) {
    std::size_t bytes = pushes.capacity() * sizeof(PushEnvelope);
    for (const PushEnvelope& push : pushes) {
        bytes += push.push_id.capacity() + push.user.str().capacity() +
                 push.ticket_id.str().capacity() + push.room_id.str().capacity() +
                 push.room_owner.str().capacity() + push.message.capacity();
    }
    return bytes;
}

}  // namespace

void Recall::joined(const TicketId& id, MatchedTicket ticket, Time now) {
    ticket.forget_at = now + memory_;
    joined_[id] = std::move(ticket);
}

std::vector<std::pair<TicketId, MatchedTicket>> Recall::take_joined_at(const NodeId& node) {
    std::vector<std::pair<TicketId, MatchedTicket>> taken;
    for (auto it = joined_.begin(); it != joined_.end();) {
        if (it->second.room_node == node) {
            taken.emplace_back(it->first, std::move(it->second));
            it = joined_.erase(it);
        } else {
            ++it;
        }
    }
    // In the order of their IDs, whatever the table's: a node's death is handled the same way
    // each time.
    std::ranges::sort(taken, {},
                      [](const auto& entry) -> const std::string& { return entry.first.str(); });
    return taken;
}

void Recall::accepted_join(const std::string& attempt, Time now) {
    accepted_joins_[attempt].forget_at = now + memory_;
}

// Neither ID holds a newline.
std::string Recall::seated_key(const TicketId& asked, const UserId& owner) {
    return asked.str() + '\n' + owner.str();
}

void Recall::seated_elsewhere(const std::string& attempt, const TicketId& asked,
                              const UserId& owner, const TicketId& room, Time now) {
    AcceptedJoin& join = accepted_joins_[attempt];
    join.forget_at = now + memory_;
    join.seated_in = room;
    seated_elsewhere_[seated_key(asked, owner)] = SeatedElsewhere{now + memory_, room};
}

JoinReplyMessage Recall::accepted_again(const std::string& attempt) const {
    JoinReplyMessage again = ticket::accepted_join();  // not the member of that name
    if (auto found = accepted_joins_.find(attempt); found != accepted_joins_.end()) {
        again.seated_in = found->second.seated_in;
    }
    return again;
}

const TicketId* Recall::seated_instead_of(const TicketId& asked, const UserId& owner) const {
    auto found = seated_elsewhere_.find(seated_key(asked, owner));
    return found == seated_elsewhere_.end() ? nullptr : &found->second.room;
}

const std::vector<PushEnvelope>* Recall::keep_answer_pushes(const std::string& attempt,
                                                            const NodeId& to,
                                                            std::vector<PushEnvelope>& pushes) {
    auto found = accepted_joins_.find(attempt);
    MM_ASSERT(found != accepted_joins_.end() && found->second.pushes.empty());
    const std::size_t bytes = bytes_of(pushes);
    if (kept_push_bytes_ + bytes > kept_push_bytes_max_) {
        return nullptr;
    }
    kept_push_bytes_ += bytes;
    found->second.pushes = std::move(pushes);
    found->second.to = to;
    return &found->second.pushes;
}

void Recall::forget_answer_pushes_to(const NodeId& node) {
    for (auto& [attempt, join] : accepted_joins_) {
        if (!join.pushes.empty() && join.to == node) {
            kept_push_bytes_ -= bytes_of(join.pushes);
            join.pushes = std::vector<PushEnvelope>();  // its storage too
        }
    }
}

const std::vector<PushEnvelope>* Recall::answer_pushes(const std::string& attempt) const {
    auto found = accepted_joins_.find(attempt);
    return found == accepted_joins_.end() || found->second.pushes.empty() ? nullptr
                                                                          : &found->second.pushes;
}

bool Recall::first_sight(const std::string& push_id, Time now) {
    if (!seen_pushes_.insert(push_id).second) {
        return false;
    }
    seen_order_.emplace_back(now, push_id);
    if (seen_order_.size() > seen_pushes_max) {
        seen_pushes_.erase(seen_order_.front().second);
        seen_order_.pop_front();
    }
    MM_ASSERT(seen_order_.size() == seen_pushes_.size());
    return true;
}

void Recall::forget_expired(Time now) {
    std::erase_if(joined_, [now](const auto& entry) { return entry.second.forget_at <= now; });
    std::erase_if(seated_elsewhere_,
                  [now](const auto& entry) { return entry.second.forget_at <= now; });
    std::erase_if(accepted_joins_, [this, now](const auto& entry) {
        if (entry.second.forget_at > now) {
            return false;
        }
        kept_push_bytes_ -= bytes_of(entry.second.pushes);
        return true;
    });
    // A retry of a push comes within the courier's patience; the memory is ample.
    while (!seen_order_.empty() && now - seen_order_.front().first > memory_) {
        seen_pushes_.erase(seen_order_.front().second);
        seen_order_.pop_front();
    }
}

}  // namespace matchmesh::ticket
