#pragma once
// Encoding and strict decoding of the distributed store's messages (matching.capnp). Decoders
// take bytes from peers: every bound is checked, nothing throws, and a message that breaks a bound
// is rejected whole.

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "matching/bucket_store.hpp"
#include "matching/errors.hpp"
#include "matching/found.hpp"
#include "matching/matching.capnp.h"
#include "matching/value.hpp"
#include "mesh/network.hpp"

namespace matchmesh::matching {

inline constexpr std::size_t key_bytes_max = 1024;
inline constexpr std::size_t add_batch_max = 1024;
inline constexpr std::size_t remove_batch_max = 1024;
inline constexpr std::size_t found_items_max = 2 * 1000;  // a node answers at most 2 x limit
// The longest a searcher may have an item offered to it (longer asks are cut to this): an offer
// only orders others' answers, so one long hold could not hide an item, only put it last.
inline constexpr Duration offer_hold_max{1000};
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
    Handout handout;            // see BucketStore::collect
    bool shared_texts = false;  // the searcher reads answers with shared texts (matching.capnp)
};

// Texts an answer shares at most: origins are nodes and value names the game's, so a few.
inline constexpr std::size_t shared_texts_max = 32;

// A found item still in its store (views valid until the store changes).
struct KeyedView {
    std::size_t key_index = 0;
    FoundItem item;
};

void write_value(capnp::List<wire::Value>::Builder list, const ValueMap& value);
void write_value(capnp::List<wire::Value>::Builder list, FoundValue value);
// Throws std::invalid_argument with the reason when the value breaks a bound.
[[nodiscard]] ValueMap read_value(capnp::List<wire::Value>::Reader list);

[[nodiscard]] mesh::Payload encode_add(std::span<const AddedItem> items);
[[nodiscard]] mesh::Payload encode_remove(std::string_view profile_id,
                                          std::span<const std::string> unique_ids);
// Asks for an answer with shared texts, which this version reads.
[[nodiscard]] mesh::Payload encode_search(std::span<const std::string_view> keys, std::size_t limit,
                                          Handout handout = {});
// With `shared_texts`, the answer sends its repeated texts once (see SearchResponse).
[[nodiscard]] mesh::Payload encode_search_response(std::span<const KeyedView> items, Time now,
                                                   bool shared_texts);

[[nodiscard]] Result<std::vector<AddedItem>> decode_add(mesh::PayloadView payload,
                                                        const capnp::ReaderOptions& options);
[[nodiscard]] Result<RemovedItems> decode_remove(mesh::PayloadView payload,
                                                 const capnp::ReaderOptions& options);
[[nodiscard]] Result<SearchQuery> decode_search(mesh::PayloadView payload,
                                                const capnp::ReaderOptions& options);

// A found item and the request key it was found under: `key_index` numbers the request's keys in
// the order they were sent, and may name none of them.
struct KeyedFound {
    std::uint32_t key_index = 0;
    Found item;
};

// Keeps a search's answer in `keeper` and appends its items to `out`, read in place: their views
// point into the kept answer. An item of an answer with shared texts has an empty profile ID: it
// is its key's, which the caller fills in. An answer that breaks a bound is an error, with the
// items read before it already appended: the caller drops them.
[[nodiscard]] Result<void> decode_search_response(mesh::PayloadView payload,
                                                  const capnp::ReaderOptions& options,
                                                  SearchOutcome& keeper,
                                                  std::vector<KeyedFound>& out);

}  // namespace matchmesh::matching
