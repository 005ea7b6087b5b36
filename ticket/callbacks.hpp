#pragma once
// The game's callbacks per ticket type, named after the reference's Set...Callback functions.
//
// Every callback runs on the node's loop thread, without any lock held: a callback may call the
// ticket operations. A user passed as nullptr has disconnected (or, for remote users, is a copy
// of what the user was when it joined). Callbacks that say "owner" run on the room owner's node;
// the "matched" ones run on each other member's own node.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mesh/base/time.hpp"
#include "ticket/types.hpp"

namespace matchmesh::ticket {

// The ticket a callback is about (the reference's *Ticket).
struct TicketView {
    TicketId id;
    TicketType type = 0;
    std::string room_id;
    bool finished = false;
};

// A member of a room held on this node; parties share their ticket ID.
struct Member {
    SharedUser user;     // a snapshot; the live user is looked up when it is local
    TicketId ticket_id;  // the member's participation: the ticket that brought it in
    Time since{};        // when that ticket started, by this node's clock
};

struct Callbacks {
    // Required: the parameters of a new ticket for `owner`; nullopt refuses to create one.
    std::function<std::optional<TicketParams>(const User& owner)> on_issue_ticket;
    // Owner: whether `candidate` (the joining ticket's owner) may join. Default: yes.
    std::function<bool(const TicketProperties&, const User* owner, const User* candidate)>
        allow_match_if;
    // Owner: whether the joining party (each player with the values it started with) may take
    // seats beside the room's members; asked after allow_match_if. Default: yes. Policies that
    // need the whole room (sides, player counts) decide here.
    std::function<bool(const std::vector<Member>& members, const std::vector<SharedUser>& party)>
        allow_party_if;
    // Owner: after each join; true completes the ticket now.
    std::function<bool(const TicketView&, const User* matched, const User* owner,
                       const std::string& room_id, const std::vector<UserId>& member_ids)>
        on_ticket_match;
    // Owner: after each join.
    std::function<void(const TicketView&, const User* joined, const User* owner,
                       const std::vector<UserId>& member_ids)>
        member_joined;
    // Owner: after each join; what to push to every member.
    std::function<std::optional<Announcement>(const TicketView&, const User* joined,
                                              const User* owner,
                                              const std::vector<UserId>& member_ids)>
        member_joined_announce;
    // Owner: after a member left (left, kicked or disconnected).
    std::function<void(const TicketView&, const User* left, const User* owner,
                       const std::string& room_id, const std::vector<UserId>& member_ids)>
        member_leave;
    std::function<std::optional<Announcement>(const TicketView&, const User* left,
                                              const User* owner,
                                              const std::vector<UserId>& member_ids)>
        member_leave_announce;
    // Owner: the message pushed with 220 to every member.
    std::function<Bytes(const TicketProperties&, const User* owner)> on_ticket_complete;
    // Owner: the 220's message from the match's roster (every member with the values it joined
    // with, parties sharing a ticket ID); used instead of on_ticket_complete when set.
    std::function<Bytes(const std::string& room_id, const std::vector<Member>& members,
                        const User* owner)>
        on_match_complete;
    // Owner only.
    std::function<void(const User* owner)> on_ticket_canceled;
    std::function<void(const User* owner)> on_ticket_timeout;
    // Each other member, on its own node.
    std::function<void(const UserId& owner_id, const User* user)> on_matched_ticket_canceled;
    std::function<void(const UserId& owner_id, const User* user)> on_matched_ticket_timeout;
};

}  // namespace matchmesh::ticket
