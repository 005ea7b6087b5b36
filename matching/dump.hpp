#pragma once
// Human and machine dumps of a store's items, for operators and tests.
//
// Text form, one header line per bucket (tabs in the key shown as \t), then one line per item:
//   =-=-=-=-=-=[ RankMatch\t\t3 ]=-=-=-=-=-=
//   1 => ID:u42 Value:{room:"r1"} TTL:30 TTLRemaining:12 seconds Expired:false Origin:node-a
// JSON form: {"items": N, "buckets": [{"key": ..., "hash": "<16 hex digits>",
//   "items": [{"id", "value", "ttl_s", "remaining_s", "expired", "origin"}]}]}
// Buckets come in key order, items oldest first.

#include <iosfwd>

#include <nlohmann/json_fwd.hpp>

#include "matching/bucket_store.hpp"

namespace matchmesh::matching {

void dump_text(const BucketStore& items, Time now, std::ostream& out);
[[nodiscard]] nlohmann::json dump_json(const BucketStore& items, Time now);

}  // namespace matchmesh::matching
