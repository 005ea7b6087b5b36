// The sessions on this node, and their registration with each user's directory node.
#include "ticket/sessions.hpp"

#include <utility>

#include "mesh/base/assert.hpp"
#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {

Sessions::Sessions(mesh::Network& network, mesh::Scheduler& scheduler, Duration send_delay,
                   std::size_t directory_max, std::shared_ptr<bool> alive,
                   EndSuperseded end_superseded)
    : network_(network),
      scheduler_(scheduler),
      send_delay_(send_delay),
      alive_(std::move(alive)),
      end_superseded_(std::move(end_superseded)),
      directory_(directory_max) {
    const auto live = network_.live_members();
    view_.assign(live.begin(), live.end());
    directory_.follow(DirectoryPlacement(view_), network_.self().id);
}

void Sessions::begin(User user) {
    MM_ASSERT(!users_.contains(user.id));
    user.home = network_.self().id;
    const UserId id = user.id;
    const std::uint64_t epoch = user.epoch;
    users_.add(std::move(user));
    queue(Batch::register_sessions, id, epoch);
}

void Sessions::end(const UserId& user) {
    const User* session = users_.find(user);
    if (session == nullptr) {
        return;
    }
    queue(Batch::end_sessions, user, session->epoch);
    users_.remove(user);
}

// A registration or end for the user's directory: handled at once when that is this node,
// else sent with the others for the same node within `send_delay`.
void Sessions::queue(Batch batch, const UserId& user, std::uint64_t epoch) {
    const NodeId* directory = directory_.placement().owner(user);
    const NodeId& self = network_.self().id;
    if (directory == nullptr || *directory == self) {
        const SessionEntry session{self, epoch};
        if (batch == Batch::end_sessions) {
            directory_.end_session(user, session);
        } else if (auto older = directory_.register_session(user, session)) {
            supersede(*older);
        }
        return;
    }
    auto& unsent = unsent_[{*directory, batch}];
    unsent.push_back(SessionStart{user, epoch});
    if (unsent.size() >= sessions_max) {
        send_queued();
    } else if (send_timer_ == 0) {
        send_timer_ = scheduler_.run_after(send_delay_, [this, alive = alive_] {
            if (*alive) {
                send_timer_ = 0;
                send_queued();
            }
        });
    }
}

void Sessions::send_queued() {
    scheduler_.cancel(send_timer_);
    send_timer_ = 0;
    for (auto& [to, sessions] : std::exchange(unsent_, {})) {
        const auto method =
            to.second == Batch::register_sessions ? wire::METHOD_SESSION : wire::METHOD_SESSION_END;
        network_.send(to.first, wire::SERVICE, method,
                      encode(SessionsMessage{network_.self().id, std::move(sessions)}));
    }
}

void Sessions::on_register(const NodeId& from, mesh::PayloadView payload) {
    auto sessions = decode_sessions(payload, network_.reader_options());
    if (!sessions || sessions->home != from) {
        return;
    }
    for (const SessionStart& session : sessions->users) {
        if (auto older = directory_.register_session(session.user, {from, session.epoch})) {
            supersede(*older);
        }
    }
}

void Sessions::on_end(const NodeId& from, mesh::PayloadView payload) {
    auto sessions = decode_sessions(payload, network_.reader_options());
    if (!sessions || sessions->home != from) {
        return;
    }
    for (const SessionStart& session : sessions->users) {
        directory_.end_session(session.user, {from, session.epoch});
    }
}

// Rare (a player who connected again elsewhere): one frame each.
void Sessions::supersede(const Supersede& older) {
    const SessionStart newer{older.user, older.newer.epoch};
    if (older.older_home == network_.self().id) {
        // Not from inside begin(), which may be in the middle of the session's hello.
        scheduler_.run_after(Duration(0), [this, alive = alive_, home = older.newer.home, newer] {
            if (*alive && replaces(home, newer)) {
                end_superseded_(newer.user);
            }
        });
        return;
    }
    network_.send(older.older_home, wire::SERVICE, wire::METHOD_SUPERSEDE,
                  encode(SessionsMessage{older.newer.home, {newer}}));
}

// From the user's directory, which may be a third node: the newer sessions' home is named in
// the message.
void Sessions::on_supersede(const NodeId& from, mesh::PayloadView payload) {
    (void)from;
    auto sessions = decode_sessions(payload, network_.reader_options());
    if (!sessions) {
        return;
    }
    for (const SessionStart& session : sessions->users) {
        if (replaces(sessions->home, session)) {
            end_superseded_(session.user);
        }
    }
}

bool Sessions::replaces(const NodeId& home, const SessionStart& newer) const {
    const User* local = users_.find(newer.user);
    return local != nullptr && home != network_.self().id &&
           newer_session(newer.epoch, home, local->epoch, network_.self().id);
}

void Sessions::on_membership(const mesh::MembershipEvent& event) {
    if (event.kind == mesh::MembershipEvent::Kind::died ||
        event.kind == mesh::MembershipEvent::Kind::left) {
        directory_.forget_home(event.member.id);
    }
    const auto live = network_.live_members();
    std::vector<mesh::MemberInfo> view(live.begin(), live.end());
    if (view == view_) {
        return;
    }
    // The users this node holds the sessions of, whose directory is another node now. Their
    // new directory may know an older session elsewhere (after a partition), or none (its
    // predecessor died): registering again settles both.
    DirectoryPlacement placement(view);
    std::vector<std::pair<UserId, std::uint64_t>> moved;
    users_.for_each([&](const User& user) {
        if (!placement.same_owner(directory_.placement(), user.id)) {
            moved.emplace_back(user.id, user.epoch);
        }
    });
    view_ = std::move(view);
    directory_.follow(std::move(placement), network_.self().id);
    for (const auto& [user, epoch] : moved) {
        queue(Batch::register_sessions, user, epoch);
    }
}

}  // namespace matchmesh::ticket
