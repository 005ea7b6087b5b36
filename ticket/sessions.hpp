#pragma once
// Sessions: the users whose sessions are on this node, and the announcement of each new one to
// the other nodes, so that a user has one session, hence one ticket per type, in the whole
// cluster: a session begun later elsewhere supersedes the one here. New sessions are announced
// together, at most `announce_delay` after they began (one message per peer for many connects).
//
// Owns: the local users (LocalUsers: their snapshots and party consents), the sessions begun since
// the last announcement, and the announcement's timer. Owned by TicketService; on the node's loop
// thread. Ending what a session had in progress is the facade's (disconnect_user), through the
// roles.

#include <memory>
#include <vector>

#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"
#include "ticket/local_users.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class Sessions {
public:
    Sessions(mesh::Network& network, mesh::Scheduler& scheduler, Duration announce_delay,
             std::shared_ptr<bool> alive)
        : network_(network),
          scheduler_(scheduler),
          announce_delay_(announce_delay),
          alive_(std::move(alive)) {}
    Sessions(const Sessions&) = delete;
    Sessions& operator=(const Sessions&) = delete;

    [[nodiscard]] LocalUsers& users() { return users_; }
    [[nodiscard]] const LocalUsers& users() const { return users_; }

    // A new session here (the user has none here now), announced to the other nodes soon.
    void begin(User user);
    // Whether `session`, announced by node `from`, is newer than the user's session here.
    [[nodiscard]] bool superseded_by(const NodeId& from, const SessionStart& session) const;
    // The service is going: no announcement may run.
    void stop() { scheduler_.cancel(announce_timer_); }

private:
    // Sends the sessions begun since the last announcement to every other live node.
    void announce();

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    Duration announce_delay_;
    std::shared_ptr<bool> alive_;
    LocalUsers users_;                       // connected here
    std::vector<SessionStart> unannounced_;  // sessions begun here since the last announcement
    mesh::TimerId announce_timer_ = 0;
};

}  // namespace matchmesh::ticket
