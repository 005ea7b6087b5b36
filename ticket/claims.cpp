// A party's claims on its members, at their homes, and this node's answers to other nodes' claims.
#include "ticket/claims.hpp"

#include <fmt/format.h>

#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {
namespace {

TicketError not_accepted(const UserId& member, const UserId& owner) {
    return TicketError{Errc::party_unavailable,
                       fmt::format("party member '{}' has not accepted the party of '{}'",
                                   member.str(), owner.str())};
}

TicketError busy(const UserId& member) {
    return TicketError{
        Errc::party_unavailable,
        fmt::format("party member '{}' is busy with this ticket type", member.str())};
}

TicketError not_connected(const UserId& member) {
    return TicketError{Errc::party_unavailable,
                       fmt::format("party member '{}' is not connected", member.str())};
}

}  // namespace

// A party start gathering its members, wherever they are connected: the members claimed so far,
// the homes asked to claim the others, the answers still awaited, and the first reason the party
// cannot start.
struct PartyClaims::Claim {
    TicketId id;
    TicketType type = 0;
    UserId owner;
    std::vector<UserId> party;
    std::vector<User> claimed;
    std::vector<std::pair<UserId, NodeId>> asked;  // member, home
    std::size_t waiting = 0;
    std::optional<TicketError> error;
    std::function<void(Result<std::vector<User>>)> done;
};

void PartyClaims::claim_party(const TicketId& id, TicketType type, const User& owner,
                              std::vector<UserId> party,
                              std::function<void(Result<std::vector<User>>)> done) {
    auto claim = std::make_shared<Claim>(
        Claim{id, type, owner.id, std::move(party), {}, {}, 0, std::nullopt, std::move(done)});
    ++claim->waiting;  // until every member is asked: an answer known at once must not finish it
    for (const UserId& user_id : claim->party) {
        if (user_id == owner.id) {
            continue;
        }
        if (context_.local_user(user_id) != nullptr) {
            claim_local_member(*claim, user_id);
        } else {
            claim_remote_member(claim, user_id, locate_tries);
        }
    }
    --claim->waiting;
    finish_claims(claim);
}

void PartyClaims::claim_local_member(Claim& claim, const UserId& user_id) {
    if (!accepted(user_id, claim.type, claim.owner)) {
        claim.error = not_accepted(user_id, claim.owner);
    } else if (participations_.contains(user_id, claim.type)) {
        claim.error = busy(user_id);
    } else {
        participations_.set(user_id, claim.type,
                            Participation{claim.id, claim.id, context_.self(), false});
        claim.claimed.push_back(*context_.local_user(user_id));
    }
}

// Not connected here: its directory node says where it is, and that node claims it. A session
// begun a moment ago may not be registered yet: the directory is asked again a few times, a
// little longer apart each time, before the member counts as not connected.
void PartyClaims::claim_remote_member(const std::shared_ptr<Claim>& claim, const UserId& user_id,
                                      int tries_left) {
    ++claim->waiting;
    locate(user_id, [this, claim, user_id, tries_left](std::optional<NodeId> home) {
        if (home && *home != context_.self()) {
            claim_at(claim, user_id, *home);
            return;
        }
        if (tries_left > 0) {
            const Duration pause = (context_.options.session_announce_delay + Duration(5)) *
                                   (locate_tries - tries_left + 1);
            context_.scheduler.run_after(
                pause, [this, alive = context_.alive, claim, user_id, tries_left] {
                    if (*alive) {
                        --claim->waiting;
                        claim_remote_member(claim, user_id, tries_left - 1);
                    }
                });
            return;
        }
        claim->error = not_connected(user_id);  // or its session ended here meanwhile
        --claim->waiting;
        finish_claims(claim);
    });
}

void PartyClaims::claim_at(const std::shared_ptr<Claim>& claim, const UserId& user_id,
                           const NodeId& home) {
    claim->asked.emplace_back(user_id, home);
    context_.network.request(
        home, wire::SERVICE, wire::METHOD_CLAIM,
        encode(ClaimMessage{claim->id, claim->type, user_id, claim->owner}),
        context_.options.join_timeout,
        [this, alive = context_.alive, claim,
         user_id](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
            if (!*alive) {
                return;
            }
            auto answer = reply ? decode_claim_reply(*reply, context_.network.reader_options())
                                : std::unexpected(reply.error().message);
            if (answer && answer->claimed) {
                claim->claimed.push_back(answer->user);
            } else if (answer && answer->refusal == ClaimRefusal::busy) {
                claim->error = busy(user_id);
            } else if (answer && answer->refusal == ClaimRefusal::not_accepted) {
                claim->error = not_accepted(user_id, claim->owner);
            } else {
                claim->error = not_connected(user_id);
            }
            --claim->waiting;
            finish_claims(claim);
        });
}

void PartyClaims::locate(const UserId& user, std::function<void(std::optional<NodeId>)> found) {
    const NodeId* directory = directory_.placement().owner(user);
    if (directory == nullptr) {
        found(std::nullopt);
        return;
    }
    if (*directory == context_.self()) {
        const SessionEntry* entry = directory_.find(user);
        found(entry == nullptr ? std::nullopt : std::optional(entry->home));
        return;
    }
    context_.network.request(
        *directory, wire::SERVICE, wire::METHOD_LOCATE, encode(LocateMessage{user}),
        context_.options.join_timeout,
        [this, alive = context_.alive,
         found = std::move(found)](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
            if (!*alive) {
                return;
            }
            auto located = reply ? decode_located(*reply, context_.network.reader_options())
                                 : std::unexpected(reply.error().message);
            found(located && !located->home.empty() ? std::optional(located->home) : std::nullopt);
        });
}

// Once every answer is in: the party starts with the members claimed, or every claim is undone.
void PartyClaims::finish_claims(const std::shared_ptr<Claim>& claim) {
    if (claim->waiting > 0) {
        return;
    }
    // A member claimed here may have lost its claim while others answered (it disconnected,
    // which ends its participation): it has been told, so the ticket must not start with it.
    for (const User& user : claim->claimed) {
        if (!claim->error && user.home == context_.self() &&
            participations_.of_ticket(user.id, claim->type, claim->id) == nullptr) {
            claim->error = TicketError{
                Errc::party_unavailable,
                fmt::format("party member '{}' lost its claim while the party was gathered",
                            user.id.str())};
        }
    }
    if (!claim->error) {
        claim->done(claim->claimed);
        return;
    }
    for (const User& user : claim->claimed) {
        if (user.home == context_.self()) {
            participations_.erase_if_ticket(user.id, claim->type, claim->id);
        }
    }
    for (const auto& [user, home] : claim->asked) {
        release_at(home, claim->id, claim->type, user);
    }
    claim->done(std::unexpected(*claim->error));
}

void PartyClaims::release_claims(const TicketId& id, TicketType type,
                                 const std::vector<User>& claimed) {
    for (const User& user : claimed) {
        if (user.home == context_.self()) {
            participations_.erase_if_ticket(user.id, type, id);
        } else {
            release_at(user.home, id, type, user.id);
        }
    }
}

void PartyClaims::release_at(const NodeId& home, const TicketId& id, TicketType type,
                             const UserId& user) {
    context_.courier.request(home, wire::SERVICE, wire::METHOD_RELEASE,
                             encode(ClaimMessage{id, type, user, {}}), [](auto) {});
}

LocatedMessage PartyClaims::answer_locate(const LocateMessage& locate) const {
    const SessionEntry* entry = directory_.find(locate.user);
    return LocatedMessage{entry == nullptr ? NodeId() : entry->home};
}

bool PartyClaims::accepted(const UserId& member, TicketType type, const UserId& owner) const {
    if (!context_.options.party_consent) {
        return true;
    }
    return context_.users.consents(member, type, owner);
}

ClaimReplyMessage PartyClaims::answer_claim(const NodeId& from, const ClaimMessage& claim) {
    const User* user = context_.local_user(claim.user);
    if (user == nullptr) {
        return ClaimReplyMessage{false, {}, ClaimRefusal::not_connected};
    }
    if (!accepted(claim.user, claim.ticket_type, claim.owner)) {
        return ClaimReplyMessage{false, {}, ClaimRefusal::not_accepted};
    }
    const Participation* existing = participations_.find(claim.user, claim.ticket_type);
    if (existing != nullptr && existing->ticket_id != claim.ticket_id) {
        return ClaimReplyMessage{false, {}, ClaimRefusal::busy};
    }
    // From now on the user is in that party's ticket: whatever ends it, the user hears of it.
    participations_.set(claim.user, claim.ticket_type,
                        Participation{claim.ticket_id, claim.ticket_id, from, false});
    return ClaimReplyMessage{true, *user, ClaimRefusal::none};
}

void PartyClaims::release(const ClaimMessage& claim) {
    participations_.erase_if_ticket(claim.user, claim.ticket_type, claim.ticket_id);
}

}  // namespace matchmesh::ticket
