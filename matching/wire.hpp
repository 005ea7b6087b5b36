#pragma once
// Encoding and strict decoding of the distributed store's messages (matching.capnp). Decoders
// take bytes from peers: every bound is checked, nothing throws, and a message that breaks a bound
// is rejected whole.

#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "matching/bucket_store.hpp"
#include "matching/errors.hpp"
#include "matching/matching.capnp.h"
#include "matching/value.hpp"
#include "mesh/network.hpp"

namespace matchmesh::matching {

inline constexpr std::size_t key_bytes_max = 1024;
inline constexpr std::size_t add_batch_max = 1024;
inline constexpr std::size_t remove_batch_max = 1024;
inline constexpr std::size_t found_items_max = 2 * 1000;  // a node answers at most 2 x limit
inline constexpr std::size_t origin_bytes_max = 256;

struct AddedItem {
    std::string profile_id;
    std::string key;
    std::string unique_id;
    ValueMap value;
    std::chrono::seconds ttl{0};
};

struct RemovedItems {
    std::string profile_id;
    std::vector<std::string> unique_ids;
};

struct SearchQuery {
    std::vector<std::string_view> keys;  // into the request's message
    std::size_t limit = 0;
    std::uint32_t rotation = 0;  // see BucketStore::collect
};

// An item found on some node, copied out of its store.
struct Found {
    std::string profile_id;
    std::string unique_id;
    ValueMap value;
    std::chrono::seconds ttl{0};
    Duration remaining{0};
    std::string origin;
};

// A found item still in its store (views valid until the store changes).
struct KeyedView {
    std::size_t key_index = 0;
    FoundItem item;
};

void write_value(capnp::List<wire::Value>::Builder list, const ValueMap& value);
// Throws std::invalid_argument with the reason when the value breaks a bound.
[[nodiscard]] ValueMap read_value(capnp::List<wire::Value>::Reader list);

[[nodiscard]] mesh::Payload encode_add(std::span<const AddedItem> items);
[[nodiscard]] mesh::Payload encode_remove(std::string_view profile_id,
                                          std::span<const std::string> unique_ids);
[[nodiscard]] mesh::Payload encode_search(std::span<const std::string_view> keys, std::size_t limit,
                                          std::uint32_t rotation = 0);
[[nodiscard]] mesh::Payload encode_search_response(std::span<const KeyedView> items, Time now);

[[nodiscard]] Result<std::vector<AddedItem>> decode_add(mesh::PayloadView payload,
                                                        const capnp::ReaderOptions& options);
[[nodiscard]] Result<RemovedItems> decode_remove(mesh::PayloadView payload,
                                                 const capnp::ReaderOptions& options);
[[nodiscard]] Result<SearchQuery> decode_search(mesh::PayloadView payload,
                                                const capnp::ReaderOptions& options);
// Reads a search's answer into the items `slot(key_index)` gives, one call per item in the
// answer's order; `key_index` numbers the request's keys in the order they were sent, and may
// name none of them (the caller then gives a slot it discards). An answer that breaks a bound
// is an error, with the items read before it already written: the caller drops them.
[[nodiscard]] Result<void> decode_search_response(
    mesh::PayloadView payload, const capnp::ReaderOptions& options,
    const std::function<Found&(std::uint32_t key_index)>& slot);

// Copies a found item out of a store (its views die with the next change to the store).
[[nodiscard]] Found copy_found(const FoundItem& item, Time now);

}  // namespace matchmesh::matching
