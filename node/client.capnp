@0x8c3584360f7bb572;
# The client protocol, version 1: what game servers, tools and game clients send to a node's
# client port, and what the node sends back: replies to requests, and pushes.
#
# Framing is the mesh's (mesh/envelope.capnp): an 8-byte header (u32 little-endian body length,
# u16 frame version 1, u16 reserved 0) and a body holding one Cap'n Proto message. A client's
# bodies have a Request root; the node's have a ServerMessage root. A header that breaks the
# framing rules, or a body over the node's limit, closes the connection; a body that is a valid
# frame but not a valid Request is answered with an error (id 0) and the connection stays usable.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("matchmesh::node::wire");

using Matching = import "/matching/matching.capnp";

struct Request {
  id @0 :UInt64;                # chosen by the client; echoed by the reply
  union {
    add @1 :Add;                # store a search item (its replicas get it)
    search @2 :Search;          # exact search
    searchWithRange @3 :SearchWithRange;
    remove @4 :Remove;
    members @5 :Void;           # the live members as this node sees them
    dump @6 :Void;              # this node's items, tickets, rooms and members, as JSON text

    # A session: who this connection speaks for. Ticket commands need one. With a token secret
    # configured, every command but hello needs one. A client need not wait for hello's reply:
    # a connection's requests are read in order, so a startTicket written right behind its hello
    # runs in the session the hello opened (and is refused as unauthenticated if the hello was).
    hello @7 :Hello;
    startTicket @8 :StartTicket;
    cancelTicket @9 :TicketRef;
    leave @10 :TicketRef;               # leave the room of this ticket type the user is in
    kick @11 :Kick;                     # the owner removes a member (and its party)
    markComplete @12 :TicketRef;
    markCompleteWhenExpire @13 :TicketRef;
    broadcast @14 :TicketBroadcast;     # any member: 224 to every member
    setTicketProperties @15 :SetTicketProperties;  # owner only
    getTicketProperties @16 :GetTicketProperties;  # owner only
    startBackfill @17 :TicketRef;
    stopBackfill @18 :TicketRef;
    ticketMembers @19 :TicketRef;       # owner only: the room's member IDs
    acceptParty @20 :AcceptParty;       # this user may be in the owner's party (see below)
  }
}

struct Hello {
  userId @0 :Text;
  token @1 :Text;               # "<expiry unix seconds>.<hex HMAC-SHA256(secret, userId \n expiry)>"
  data @2 :List(Matching.Value);  # copied into the rooms the user joins
}

struct TicketRef {
  ticketType @0 :UInt8;
}

struct StartTicket {
  ticketType @0 :UInt8;
  values @1 :List(Property);    # the player's values (e.g. rating) the ticket type's rules use
  party @2 :List(Text);         # other users, connected to any node, who play with this one
  applicationData @3 :Data;
}

# A startTicket names its party; each member must first have accepted the owner's party, on its
# own session, for that ticket type (else party_unavailable). The consent holds until the member
# accepts another owner, sends an empty owner, or its session ends.
struct AcceptParty {
  ticketType @0 :UInt8;
  owner @1 :Text;
}

struct Kick {
  ticketType @0 :UInt8;
  target @1 :Text;
}

struct TicketBroadcast {
  ticketType @0 :UInt8;
  ver @1 :UInt8;
  cmd @2 :UInt16;
  message @3 :Data;
}

struct SetTicketProperties {
  ticketType @0 :UInt8;
  values @1 :List(Matching.Value);
}

struct GetTicketProperties {
  ticketType @0 :UInt8;
  keys @1 :List(Text);
}

struct Property {
  name @0 :Text;
  value @1 :Int64;
}

struct RangeProperty {
  name @0 :Text;
  values @1 :List(Int64);       # several values make a range property; searched in this order
}

struct Add {
  profileId @0 :Text;
  uniqueId @1 :Text;
  tag @2 :Text;
  properties @3 :List(Property);        # exactly the profile's properties
  value @4 :List(Matching.Value);       # returned with the item by searches
  ttlSeconds @5 :UInt8;                 # 1..60
}

struct Search {
  profileIds @0 :List(Text);    # searched in this order
  tag @1 :Text;
  properties @2 :List(Property);
  limit @3 :UInt32;             # 1..1000
}

struct SearchWithRange {
  profileIds @0 :List(Text);
  tags @1 :List(Text);          # searched in this order; one empty tag for none
  properties @2 :List(RangeProperty);
  limit @3 :UInt32;
}

struct Remove {
  profileId @0 :Text;
  uniqueIds @1 :List(Text);
}

struct ServerMessage {
  union {
    reply @0 :Reply;
    push @1 :Push;
  }
}

# Pushed to a session, unasked. Ticket results are ver 1: 220 success, 219 timeout, 222 cancel,
# 224 broadcast; announcements carry the ver and cmd the game's callback chose (the stock node,
# with a ticket type's announceMembers: ver 1, 221 a player joined the room, 223 one left, the
# payload that player's user ID); 225 is a ticket-failure payload (a message and a code).
struct Push {
  ticketType @0 :UInt8;
  kind @1 :Kind;
  ver @2 :UInt8;
  cmd @3 :UInt16;
  payload @4 :Data;
  ticketId @5 :Text;            # the ticket this push belongs to
  roomId @6 :Text;
  reason @7 :EndReason;         # why the ticket ended, on 220, 219 and 222; else unspecified

  enum Kind {
    success @0;
    timeout @1;
    cancel @2;
    broadcast @3;
    announce @4;
    failure @5;
  }
}

# Why a ticket ended for this user. Values are appended only: a client reads a value it does not
# know as unspecified. A 222's payload may still hold words for humans; programs branch on this.
enum EndReason {
  unspecified @0;               # not a terminal push, or a node too old to say
  completed @1;                 # 220: the match is made
  timedOut @2;                  # 219: the ticket reached its deadline
  canceled @3;                  # the ticket's owner canceled it
  left @4;                      # the user's party (or the searching owner) left the room
  kicked @5;                    # the room's owner kicked the user's party out
  disconnected @6;              # a session of the party ended (the user's own, or its owner's)
  nodeGone @7;                  # the node holding the room, or the user's, left the cluster
  draining @8;                  # the node holding the ticket shuts down: start again (another node)
}

struct Reply {
  id @0 :UInt64;                # the request's id; 0 when the request could not be read
  union {
    ok @1 :Void;
    error @2 :Error;
    items @3 :Items;
    members @4 :List(Member);
    dump @5 :Text;
    properties @6 :List(Matching.Value);
    memberIds @7 :List(Text);
  }
}

# category is a stable snake_case name that programs may branch on. Store commands:
# unknown_profile, invalid_profile, invalid_unique_id, invalid_tag, invalid_properties,
# too_many_range_properties, too_many_range_values, search_too_costly, invalid_ttl, invalid_limit,
# invalid_value, forbidden, unavailable. Sessions:
# unauthenticated, invalid_token, invalid_argument (hello), rate_limited, malformed_request,
# draining. Tickets: not_set_up, already_has_ticket, in_previous_room, failed_to_create,
# invalid_params, user_not_found, ticket_not_found, not_owner, not_active, room_not_found,
# target_not_found, party_unavailable, completed_room_required, ticket_exists,
# backfill_not_found, join_refused, unknown_ticket_type, overloaded (startTicket: the node is past
# its capacity; try again after retryAfterMs, on this node or another).
struct Error {
  category @0 :Text;
  message @1 :Text;             # for humans: names the bad input and why
  retryAfterMs @2 :UInt32;      # when trying again may succeed (overloaded, too_many_connections); 0: no hint
}

struct Items {
  items @0 :List(Matching.FoundItem);   # keyIndex is 0; remainingMs by this node's clock
  keysUnanswered @1 :UInt32;            # keys no replica answered for: results may miss items
}

struct Member {
  id @0 :Text;
  address @1 :Text;
  nodeType @2 :Text;
  incarnation @3 :UInt64;
}

# The payload of a 220 (success) push from the stock node: the match every member receives, so
# that a player (or the game server it hands this to) learns who plays and on which side. A game
# that embeds the node sets its own payload.
struct MatchResult {
  roomId @0 :Text;
  ticketType @1 :UInt8;
  members @2 :List(MatchedPlayer);   # in the order they joined, the room owner's party first
  sides @3 :List(MatchSide);         # one per side for a team type; empty otherwise
  quality @4 :MatchQuality;
}

struct MatchedPlayer {
  user @0 :Text;
  party @1 :Text;                    # the ticket that brought it in: a party's players share it
  side @2 :Int16;                    # index into MatchResult.sides; -1 without teams
  values @3 :List(Property);         # the values it matched with (those it started its ticket with)
  waitMs @4 :UInt32;                 # from the start of the ticket that brought it in to the match
}

struct MatchSide {
  rating @0 :Float64;                # the mean of its players' ratings, party bonuses included
  players @1 :UInt16;
}

struct MatchQuality {
  spread @0 :Int64;                  # highest rating minus lowest (the type's rating value)
  sideDifference @1 :Float64;        # highest side rating minus lowest; 0 without teams
  relaxStep @2 :Int8 = -1;           # the ticket type's relax step in force; -1: none
}
