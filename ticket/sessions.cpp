// The sessions on this node and their announcement to the other nodes.
#include "ticket/sessions.hpp"

#include <utility>

#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {

void Sessions::begin(User user) {
    user.home = network_.self().id;
    // Tell every other node: an older session of this user elsewhere must end, so that a user
    // has one session, hence one ticket per type, in the whole cluster.
    unannounced_.push_back(SessionStart{user.id, user.epoch});
    if (unannounced_.size() >= sessions_max) {
        announce();
    } else if (announce_timer_ == 0) {
        announce_timer_ = scheduler_.run_after(announce_delay_, [this, alive = alive_] {
            if (*alive) {
                announce_timer_ = 0;
                announce();
            }
        });
    }
    users_.add(std::move(user));
}

void Sessions::announce() {
    scheduler_.cancel(announce_timer_);
    announce_timer_ = 0;
    if (unannounced_.empty()) {
        return;
    }
    const mesh::Payload payload =
        encode(SessionsMessage{network_.self().id, std::exchange(unannounced_, {})});
    for (const mesh::MemberInfo& member : network_.live_members()) {
        if (member.id != network_.self().id) {
            network_.send(member.id, wire::SERVICE, wire::METHOD_SESSION, payload);
        }
    }
}

bool Sessions::superseded_by(const NodeId& from, const SessionStart& session) const {
    const User* local = users_.find(session.user);
    if (local == nullptr) {
        return false;
    }
    return session.epoch > local->epoch ||
           (session.epoch == local->epoch && from > network_.self().id);
}

}  // namespace matchmesh::ticket
