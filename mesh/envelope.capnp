@0xe1f991624714c7af;
# The mesh wire format. Every frame between nodes is
#     header: u32 little-endian body length in bytes | u16 frame version | u16 reserved (0)
#     body:   one Cap'n Proto message (flat array with its segment table) whose root is an Envelope
# The body length is a multiple of 8 and at most the configured maximum frame size. A frame that
# breaks any of these rules closes the connection it came on, with the reason logged.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("matchmesh::mesh::wire");

struct Envelope {
  service @0 :UInt16;       # 0 is the mesh itself (the messages below); others belong to modules above
  method @1 :UInt16;        # meaning depends on the service
  correlation @2 :UInt64;   # a request's ID, echoed by its response; 0 for one-way messages
  kind @3 :Kind;
  payload @4 :Data;         # one serialized Cap'n Proto message of the service's own schema
  errorCode @5 :UInt16;     # kind = failure: the reason, a MeshErrc or the service's own code
  errorMessage @6 :Text;    # kind = failure: for humans

  enum Kind {
    oneWay @0;     # no answer expected
    request @1;    # answered by exactly one response or failure with the same correlation
    response @2;
    failure @3;
  }
}

# Mesh control methods (service 0).
const methodChallenge :UInt16 = 1;   # server -> client, first frame on a connection
const methodHello :UInt16 = 2;       # client -> server, answers the challenge
const methodWelcome :UInt16 = 3;     # server -> client, proves the server knows the secret too
const methodSync :UInt16 = 4;        # the sender's member list; the receiver answers with SyncAnswer
const methodLeave :UInt16 = 5;
const methodRejected :UInt16 = 6;    # "you were declared dead": the receiver must rejoin anew
const methodPing :UInt16 = 7;        # Probe: answer with Ack
const methodAck :UInt16 = 8;         # Probe: the answer to a Ping, same sequence and subject
const methodPingRequest :UInt16 = 9; # Probe: "ping the subject for me", asked when my ping went
                                     # unanswered; the helper pings with the asker as subject
const methodIndirectAck :UInt16 = 10; # Probe: a helper's "the subject answered your ping"
const methodSyncAnswer :UInt16 = 11; # the member list, in answer to Sync (not answered again)

struct MemberInfo {
  id @0 :Text;              # node ID, unique in the cluster
  address @1 :Text;         # where its mesh port listens, host:port
  nodeType @2 :Text;        # e.g. "HTTP"; placement uses nodes of the configured target type
  incarnation @3 :UInt64;   # grows each time the node (re)joins; an old incarnation is dead
}

# A connection opens with Challenge, Hello, Welcome; nothing else is accepted before Welcome.
# proof = HMAC-SHA256(cluster secret, role | cluster | challenge nonce | hello nonce | node ID),
# role being "hello" or "welcome", so neither side's proof can be replayed as the other's.
struct Challenge {
  cluster @0 :Text;
  nonce @1 :Data;           # 32 random bytes, fresh for each connection
}

struct Hello {
  cluster @0 :Text;
  member @1 :MemberInfo;
  nonce @2 :Data;           # 32 random bytes chosen by the connecting node
  proof @3 :Data;
}

struct Welcome {
  member @0 :MemberInfo;
  proof @1 :Data;
}

# A full state sync, exchanged with a newly connected peer at once and with one member now and
# then: a joining node learns everyone, and the sides of a healed partition find each other. The
# one now and then sends the digest alone; a member whose own digest differs answers with a full
# Sync (and is answered with the full list in turn), so lists that agree cost one small frame.
struct Sync {
  sender @0 :MemberInfo;
  members @1 :List(MemberInfo);   # the sender's live members (at most 1024); empty if digestOnly
  digest @2 :UInt64;              # of the sender's live list, itself included (ID, incarnation)
  digestOnly @3 :Bool;            # the members are left out
}

# Failure detection: each protocol period a node pings one member; every probe frame carries a
# few recent membership updates (gossip), so that news spreads without frames of its own.
struct Probe {
  sender @0 :MemberInfo;
  aliveCounter @1 :UInt64;        # the sender's own alive counter (raised to refute suspicion)
  sequence @2 :UInt64;            # chosen by the node that probes; echoed by acks
  subject @3 :MemberInfo;         # PingRequest: whom to ping; a helper's Ping and its Ack: the
                                  # asker; IndirectAck: the member that answered; else unset
  updates @4 :List(MemberUpdate); # at most 64
}

struct MemberUpdate {
  member @0 :MemberInfo;
  status @1 :Status;
  aliveCounter @2 :UInt64;        # the member's alive counter the update is about

  enum Status {
    alive @0;     # heard from, or refuted a suspicion by raising its alive counter
    suspect @1;   # did not answer a probe, directly or through helpers
    dead @2;      # suspected for the suspicion timeout and not refuted
    left @3;      # said goodbye
  }
}

struct Leave {
  id @0 :Text;
  incarnation @1 :UInt64;
}

struct Rejected {
  incarnation @0 :UInt64;   # the incarnation that was declared dead
}
