#pragma once
// PartyClaims: a party start claiming each of its members at the member's home (here, or every
// other node asked, the one where the member is connected answering), gathering the answers, and
// undoing every claim if the party cannot start; and this node's answers to other nodes' claims
// and releases. A claim is a participation in the party's ticket, made before the ticket exists.
//
// Owns: only the claims under way, each kept by its pending answers until the last one is in.
// Writes the participations of users connected here, which Home owns (by reference). Owned by
// TicketService; on the node's loop thread.

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ticket/context.hpp"
#include "ticket/participations.hpp"
#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class PartyClaims {
public:
    PartyClaims(Context& context, Participations& participations)
        : context_(context), participations_(participations) {}
    PartyClaims(const PartyClaims&) = delete;
    PartyClaims& operator=(const PartyClaims&) = delete;

    // Claims a party's members for ticket `id`, wherever they are connected; `done` gets them, or
    // why the party cannot start (every claim then undone).
    void claim_party(const TicketId& id, TicketType type, const User& owner,
                     std::vector<UserId> party,
                     std::function<void(Result<std::vector<User>>)> done);
    // Undoes a party start: every member, at every node (a claim's answer may have been lost).
    void release_claims(const TicketId& id, TicketType type, const std::vector<UserId>& party);
    // Another node claims a user connected here for its party's ticket.
    [[nodiscard]] ClaimReplyMessage answer_claim(const NodeId& from, const ClaimMessage& claim);
    // Another node releases its claim.
    void release(const ClaimMessage& claim);

private:
    struct Claim;
    // Whether `member` may be claimed for `owner`'s party (see party_consent).
    [[nodiscard]] bool accepted(const UserId& member, TicketType type, const UserId& owner) const;
    void claim_local_member(Claim& claim, const UserId& user_id);
    void claim_remote_member(const std::shared_ptr<Claim>& claim, const UserId& user_id,
                             const std::vector<NodeId>& others);
    void finish_claims(const std::shared_ptr<Claim>& claim);

    Context& context_;
    Participations& participations_;  // Home's
};

}  // namespace matchmesh::ticket
