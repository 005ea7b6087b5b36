#pragma once
// Sessions: the users whose sessions are on this node, and this node's part in keeping one
// session per user in the whole cluster. Each new session is registered with its user's
// directory node, and each ended one is reported there (session_directory.hpp): a directory that
// finds two sessions of a user tells the older one's home to end it. So a connect costs a frame
// or two whatever the cluster's size. Registrations and ends are sent together per directory
// node, at most `send_delay` after they happened.
//
// Owns: the local users (LocalUsers: their snapshots and party consents), the directory entries
// this node keeps for users connected anywhere, the registrations and ends not sent yet and their
// timer, and the view of the cluster the sent registrations followed. Owned by TicketService; on
// the node's loop thread. Ending a session that a newer one replaced is the facade's (its
// `end_superseded`), which ends what the session had in progress and then calls end() here.

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"
#include "ticket/local_users.hpp"
#include "ticket/session_directory.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class Sessions {
public:
    // Ends the local session of a user that a newer session elsewhere replaced.
    using EndSuperseded = std::function<void(const UserId&)>;

    Sessions(mesh::Network& network, mesh::Scheduler& scheduler, Duration send_delay,
             std::size_t directory_max, std::shared_ptr<bool> alive, EndSuperseded end_superseded);
    Sessions(const Sessions&) = delete;
    Sessions& operator=(const Sessions&) = delete;

    [[nodiscard]] LocalUsers& users() { return users_; }
    [[nodiscard]] const LocalUsers& users() const { return users_; }
    [[nodiscard]] const SessionDirectory& directory() const { return directory_; }

    // A new session here (the user has none here now): registered with its directory soon.
    void begin(User user);
    // The user's session here ended: forgotten here, and reported to its directory soon.
    void end(const UserId& user);

    // Messages from other nodes.
    void on_register(const NodeId& from, mesh::PayloadView payload);
    void on_end(const NodeId& from, mesh::PayloadView payload);
    void on_supersede(const NodeId& from, mesh::PayloadView payload);
    // After any change of membership: a gone home's sessions are forgotten, sessions here whose
    // directory moved are registered again, and entries this node no longer keeps are dropped.
    void on_membership(const mesh::MembershipEvent& event);

    // The service is going: nothing more may be sent.
    void stop() { scheduler_.cancel(send_timer_); }

private:
    // Ends before registrations, per directory node: a session that ended and one that began in
    // the same millisecond on this node (a reconnect) leave the new one registered.
    enum class Batch { end_sessions, register_sessions };
    // A directory's answer: the older of two sessions ends at its home.
    void supersede(const Supersede& older);
    // Whether `newer`, begun at `home`, replaces the user's session here.
    [[nodiscard]] bool replaces(const NodeId& home, const SessionStart& newer) const;
    void queue(Batch batch, const UserId& user, std::uint64_t epoch);
    void send_queued();

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    Duration send_delay_;
    std::shared_ptr<bool> alive_;
    EndSuperseded end_superseded_;
    LocalUsers users_;                    // connected here
    SessionDirectory directory_;          // users whose directory this node is
    std::vector<mesh::MemberInfo> view_;  // the live members the registrations sent followed
    std::map<std::pair<NodeId, Batch>, std::vector<SessionStart>> unsent_;  // by directory
    mesh::TimerId send_timer_ = 0;
};

}  // namespace matchmesh::ticket
