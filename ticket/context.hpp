#pragma once
// Context: what the ticket service's roles (Tickets, Rooms, Home, PartyClaims) use alike: the
// node's network, loop and matching service, the service's options and courier, the game's
// callbacks, the users connected here, what is recalled for a while, the counters, and the flag
// that tells a late callback the service is gone. A small shared context is the honest shape
// here: every role needs most of these, and none of them belongs to one role. Everything else a
// role reaches goes through the other roles' references it was built with.
//
// Owned by TicketService, which owns or was given everything it refers to; the roles hold a
// reference to it. On the node's loop thread.

#include <map>
#include <memory>

#include "matching/service.hpp"
#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"
#include "ticket/callbacks.hpp"
#include "ticket/courier.hpp"
#include "ticket/local_users.hpp"
#include "ticket/options.hpp"
#include "ticket/recall.hpp"

namespace matchmesh::ticket {

struct Context {
    mesh::Network& network;
    mesh::Scheduler& scheduler;
    matching::MatchingService& matching;
    const TicketServiceOptions& options;
    Courier& courier;
    const std::map<TicketType, Callbacks>& callbacks_by_type;
    const LocalUsers& users;  // connected here
    Recall& recall;           // joined tickets (Tickets), accepted joins (Rooms), pushes (Home)
    TicketCounters& counters;
    std::shared_ptr<bool> alive;  // false once the service is gone: late callbacks do nothing

    [[nodiscard]] const NodeId& self() const { return network.self().id; }
    [[nodiscard]] const Callbacks* callbacks(TicketType type) const {
        auto found = callbacks_by_type.find(type);
        return found == callbacks_by_type.end() ? nullptr : &found->second;
    }
    [[nodiscard]] const User* local_user(const UserId& id) const { return users.find(id); }
};

}  // namespace matchmesh::ticket
