@0xb5aa1f9db14e85cb;
# The distributed store's messages between nodes (mesh service 1). Every text field and list is
# bounded by the receiver (see matching/wire.hpp); a message breaking a bound is dropped whole.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("matchmesh::matching::wire");

const service :UInt16 = 1;
const methodAdd :UInt16 = 1;      # one-way AddItems: store these items (the sender is their origin)
const methodRemove :UInt16 = 2;   # one-way RemoveItems
const methodSearch :UInt16 = 3;   # request SearchRequest -> SearchResponse

# One named scalar of an item's value.
struct Value {
  name @0 :Text;
  union {
    int @1 :Int64;
    float @2 :Float64;
    bool @3 :Bool;
    text @4 :Text;
    bytes @5 :Data;
  }
  nameText @6 :UInt16;      # in an answer with shared texts, see SearchResponse
}

struct AddItem {
  profileId @0 :Text;
  key @1 :Text;             # the bucket key the origin computed (profile, tag, buckets)
  uniqueId @2 :Text;
  value @3 :List(Value);
  ttlSeconds @4 :UInt8;     # 1..60
}

struct AddItems {
  items @0 :List(AddItem);
}

struct RemoveItems {
  profileId @0 :Text;
  uniqueIds @1 :List(Text);
}

struct SearchRequest {
  keys @0 :List(Text);      # bucket keys, in the order the searcher wants them visited
  limit @1 :UInt32;         # return at most this many items over all keys, in key order
  rotation @2 :UInt32;      # where each bucket's walk begins: 0 its oldest item, else this
                            # position modulo the bucket's size, wrapping round
  sharedTexts @3 :Bool;     # the searcher reads answers with shared texts (older ones do not)
  offerHoldMs @4 :UInt32;   # nonzero: offer the searcher one item on offer to nobody, passed by
                            # in others' searches for this long (0 from older nodes: no offers)
}

struct FoundItem {
  keyIndex @0 :UInt32;      # position of its key in the request
  profileId @1 :Text;       # left out with shared texts: the key's own profile
  uniqueId @2 :Text;
  value @3 :List(Value);    # with shared texts, the names are in the answer's texts (nameText)
  ttlSeconds @4 :UInt8;
  remainingMs @5 :UInt32;   # time left before it expires, by the replica's clock
  origin @6 :Text;          # node that added it
  originText @7 :UInt16;    # with shared texts, see SearchResponse
  offer @8 :UInt8;          # 0 not on offer, 1 offered to this searcher, 2 on offer to another
}

# With shared texts (when the request asks for them), the texts that repeat from item to item are
# sent once each: origins and value names go in `texts`, which originText and nameText number
# from 1 (0: the text is in the item's own field), and profile IDs are left out, since each key
# names its profile. Reading a 20-item answer then costs a few texts instead of four per item.
struct SearchResponse {
  items @0 :List(FoundItem);
  texts @1 :List(Text);     # at most 32
}
