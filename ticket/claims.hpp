#pragma once
// PartyClaims: a party start claiming each of its members at the member's home (here, or the node
// the member's directory names), gathering the answers, and undoing every claim if the party
// cannot start; and this node's answers to other nodes' claims, releases and questions of where a
// user is. A claim is a participation in the party's ticket, made before the ticket exists.
// Finding and claiming a member costs a few frames whatever the cluster's size: one question to
// its directory node, one claim at its home.
//
// Owns: only the claims under way, each kept by its pending answers until the last one is in.
// Writes the participations of users connected here, which Home owns (by reference); reads the
// directory entries this node keeps, which Sessions owns. Owned by TicketService; on the node's
// loop thread.

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ticket/context.hpp"
#include "ticket/participations.hpp"
#include "ticket/session_directory.hpp"
#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class PartyClaims {
public:
    PartyClaims(Context& context, Participations& participations, const SessionDirectory& directory)
        : context_(context), participations_(participations), directory_(directory) {}
    PartyClaims(const PartyClaims&) = delete;
    PartyClaims& operator=(const PartyClaims&) = delete;

    // Claims a party's members for ticket `id`, wherever they are connected; `done` gets them, or
    // why the party cannot start (every claim then undone).
    void claim_party(const TicketId& id, TicketType type, const User& owner,
                     std::vector<UserId> party,
                     std::function<void(Result<std::vector<User>>)> done);
    // Undoes a party start whose members were all claimed: each at its home.
    void release_claims(const TicketId& id, TicketType type, const std::vector<User>& claimed);
    // Another node claims a user connected here for its party's ticket.
    [[nodiscard]] ClaimReplyMessage answer_claim(const NodeId& from, const ClaimMessage& claim);
    // Another node releases its claim.
    void release(const ClaimMessage& claim);
    // Another node asks where a user whose directory this node is has its session.
    [[nodiscard]] LocatedMessage answer_locate(const LocateMessage& locate) const;

private:
    struct Claim;
    // A member's home, from its directory node (asked unless it is this one): none when the
    // directory knows no session of it.
    void locate(const UserId& user, std::function<void(std::optional<NodeId>)> found);
    // Undoes one member's claim at `home` (a claim whose answer was lost may have been made).
    void release_at(const NodeId& home, const TicketId& id, TicketType type, const UserId& user);
    // Whether `member` may be claimed for `owner`'s party (see party_consent).
    [[nodiscard]] bool accepted(const UserId& member, TicketType type, const UserId& owner) const;
    void claim_local_member(Claim& claim, const UserId& user_id);
    // Times a member's directory is asked again when it does not know the member (yet).
    static constexpr int locate_tries = 3;
    void claim_remote_member(const std::shared_ptr<Claim>& claim, const UserId& user_id,
                             int tries_left);
    void claim_at(const std::shared_ptr<Claim>& claim, const UserId& user_id, const NodeId& home);
    void finish_claims(const std::shared_ptr<Claim>& claim);

    Context& context_;
    Participations& participations_;     // Home's
    const SessionDirectory& directory_;  // Sessions'
};

}  // namespace matchmesh::ticket
