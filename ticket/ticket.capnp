@0xecf10e6c54dcfbbc;
# Messages between the ticket services of different nodes (mesh service 2). Bounds on every field
# are checked by the receiver (ticket/wire.hpp).
#
# Who decides what: the node owning a room (its owner's home node) is the only authority over
# that room's members, and it decides every member's terminal push (220, 219, 222). A user's home
# node (where it is connected) keeps the user's participation per ticket type and delivers pushes
# to it, once. Every request here is idempotent, so that a sender may retry after a lost answer.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("matchmesh::ticket::wire");

using Matching = import "/matching/matching.capnp";

const service :UInt16 = 2;
const methodJoin :UInt16 = 1;       # Join -> JoinReply
const methodPush :UInt16 = 2;       # Push -> Ack (to the user's home node; or on a JoinReply)
const methodLeave :UInt16 = 3;      # Leave -> LeaveReply (to the room's node)
const methodBroadcast :UInt16 = 4;  # Broadcast -> Ack (a member asks the room's node to push 224)
const methodClaim :UInt16 = 5;      # Claim -> ClaimReply (reserve a party member at its home)
const methodRelease :UInt16 = 6;    # Release -> Ack (undo a claim)
# Sessions, all one-way and batched (see session_directory.hpp): a home registers its new sessions
# with each user's directory node and tells it when they end; a directory that finds two sessions
# of a user tells the older one's home to end it.
const methodSession :UInt16 = 7;    # one-way Sessions: sessions begun at `home`, to register
const methodSessionEnd :UInt16 = 8; # one-way Sessions: sessions of `home` that ended
const methodSupersede :UInt16 = 9;  # one-way Sessions: newer sessions at `home`; end yours
const methodLocate :UInt16 = 10;    # Locate -> Located (to the user's directory node)

struct UserInfo {
  id @0 :Text;
  sessionId @1 :Text;
  home @2 :Text;                    # node the user is connected to
  data @3 :List(Matching.Value);    # copied when the user joins a room
}

struct Holder {                     # a ticket's properties, for AllowMatchIf
  addProperties @0 :List(Property);
  searchProperties @1 :List(RangeProperty);
  applicationData @2 :Data;
}

struct Property {
  name @0 :Text;
  value @1 :Int64;
}

struct RangeProperty {
  name @0 :Text;
  values @1 :List(Int64);
}

struct Join {
  attempt @0 :Text;                 # unique per join attempt; a retry repeats it
  roomId @1 :Text;
  ticketType @2 :UInt8;
  ticketId @3 :Text;                # the joining ticket: its members' participation
  party @4 :List(UserInfo);         # the joining users, owner first
  holder @5 :Holder;
  fromSearch @6 :Bool;              # false for a direct join by room ID
  waitedMs @7 :UInt32;              # since the joining ticket started
  pushesInReply @8 :Bool;           # the sender reads JoinReply.pushes (older senders do not)
  # The joining ticket's search, with holder.searchProperties: should the room be taken, another
  # waiting room on the same node that this search finds may take the party instead (its reply
  # says which). Empty: this room only.
  searchProfiles @9 :List(Text);
  searchTags @10 :List(Text);
}

struct JoinReply {
  accepted @0 :Bool;
  reason @1 :Text;                  # why not, when refused
  taken @2 :Bool;                   # refused because the room is gone, closed or full
  gone @3 :Bool;                    # refused because the room is gone or complete
  pushes @4 :List(Push);            # accepted, to a sender that asked: the pushes the join made
                                    # for users connected to the sender, in order, each as if
                                    # sent on its own (methodPush); a retry of the join repeats them
  seatedIn @5 :Text;                # accepted into this other room of the node (the asked one was
                                    # taken; see Join.searchProfiles); empty: the asked room
}

struct Push {
  pushId @0 :Text;                  # unique per push; the home node delivers each once
  userId @1 :Text;
  ticketType @2 :UInt8;
  ticketId @3 :Text;                # the user's participation this push belongs to
  roomId @4 :Text;
  roomOwner @5 :Text;               # the room's owner user
  kind @6 :Kind;
  ver @7 :UInt8;
  cmd @8 :UInt16;
  message @9 :Data;
  reason @10 :EndReason;            # why, for a terminal push (success, timeout, cancel)

  enum Kind {
    success @0;                     # 220: the ticket completed
    timeout @1;                     # 219
    cancel @2;                      # 222: canceled, left, kicked, or the room went away
    broadcast @3;                   # 224
    announce @4;                    # member joined or left: ver and cmd from the game's callback
    roomClosed @5;                  # a completed room was deleted: the user may start again
    placed @6;                      # the user's party joined room roomId (held by its node)
    failure @7;                     # a ticket-failure payload from the game
  }
}

struct Leave {
  roomId @0 :Text;
  userId @1 :Text;
  ticketType @2 :UInt8;
  reason @3 :EndReason;             # what its party's 222 says; unspecified: left
}

# Why a ticket ended for a user (ticket/types.hpp EndReason, and client.capnp's copy): values are
# appended only; a receiver reads one it does not know as unspecified.
enum EndReason {
  unspecified @0;                   # not a terminal push, or a sender that does not say
  completed @1;                     # 220
  timedOut @2;                      # 219
  canceled @3;                      # the ticket's owner canceled it
  left @4;                          # the member's party left the room
  kicked @5;                        # the room's owner kicked the member's party
  disconnected @6;                  # a session of the party ended
  nodeGone @7;                      # the room's node, or the member's, left the cluster
  draining @8;                      # the ticket's node shuts down: start again elsewhere
}

struct LeaveReply {
  left @0 :Bool;                    # false: not a member (any more)
}

struct Broadcast {
  roomId @0 :Text;
  userId @1 :Text;                  # the member broadcasting
  ticketType @2 :UInt8;
  ver @3 :UInt8;
  cmd @4 :UInt16;
  message @5 :Data;
}

struct Claim {
  ticketId @0 :Text;
  ticketType @1 :UInt8;
  userId @2 :Text;
  owner @3 :Text;                   # the party's owner, whom the member must have accepted
}

struct ClaimReply {
  claimed @0 :Bool;
  user @1 :UserInfo;                # when claimed
  reason @2 :Text;                  # when not, in words (for logs)
  refusal @3 :ClaimRefusal;         # when not: why, for the claimer to act on
}

enum ClaimRefusal {
  none @0;
  notConnected @1;                  # the user has no session on this node
  busy @2;                          # the user is in another ticket of this type
  notAccepted @3;                   # the user did not accept this party's owner
}

struct Release {
  ticketId @0 :Text;
  ticketType @1 :UInt8;
  userId @2 :Text;
}

struct Sessions {
  home @0 :Text;                    # the node these users connected to
  users @1 :List(SessionStart);     # sent together, a few milliseconds' worth
}

struct SessionStart {
  userId @0 :Text;
  epoch @1 :UInt64;                 # when it connected (wall clock ms); the newest session wins
}

struct Locate {
  userId @0 :Text;                  # whose session to find
}

struct Located {
  home @0 :Text;                    # the node the user's session is on; empty when not known
}

struct Ack {
  ok @0 :Bool;
  reason @1 :Text;
}

struct Failure {                    # the payload of a ticket-failure push (see failure.hpp)
  message @0 :Text;
  code @1 :UInt16;
}
