#pragma once
// Store: the local matchmaking store, in the shape of the reference API — profiles, add, exact
// and range searches, remove, dumps — over one BucketStore.
//
// Owned by the node (or a test); lives on the node's loop thread; pure: no sockets, no clock, no
// logging. Every operation takes the current monotonic time. Every input is validated here and
// a rejected call changes nothing.

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "matching/bucket_store.hpp"
#include "matching/profile.hpp"
#include "matching/value.hpp"

namespace matchmesh::matching {

inline constexpr std::size_t unique_id_bytes_max = 128;
inline constexpr std::size_t search_results_max = 1000;

using SearchResults = std::vector<FoundItem>;

class Store {
public:
    // `origin` is recorded on every item this store adds (the node's ID in a cluster).
    explicit Store(std::string origin = {});

    [[nodiscard]] Result<void> define(std::string_view profile_id, const PropertyWidths& widths) {
        return profiles_.define(profile_id, widths);
    }
    [[nodiscard]] Result<void> define_from_json(std::string_view json_text) {
        return profiles_.define_from_json(json_text);
    }
    // Forgets the profile and removes its items; returns whether it was defined.
    bool clear_definition(std::string_view profile_id);
    [[nodiscard]] const ProfileRegistry& profiles() const { return profiles_; }

    [[nodiscard]] Result<std::string> create_key(std::string_view profile_id, std::string_view tag,
                                                 const Properties& properties) const {
        return profiles_.create_key(profile_id, tag, properties);
    }

    // Adds or replaces (same profile and unique ID) a search item for `ttl` (1..60 s).
    [[nodiscard]] Result<void> add(std::string_view profile_id, std::string_view unique_id,
                                   std::string_view tag, const Properties& properties,
                                   ValueMap value, std::chrono::seconds ttl, Time now);

    // Exact search: the item's bucket under each profile in list order, oldest first, at most
    // `limit` items, never an expired one, never a unique ID twice. Results replace `out`'s
    // contents and stay valid until the store is next modified.
    [[nodiscard]] Result<void> search(std::span<const std::string> profile_ids,
                                      std::string_view tag, const Properties& properties,
                                      std::size_t limit, Time now, SearchResults& out);

    // Range search: a property with several values is searched at each of them, in the given
    // order (see ProfileRegistry::range_search_keys for the full order).
    [[nodiscard]] Result<void> search_with_range(std::span<const std::string> profile_ids,
                                                 std::string_view tag,
                                                 const RangeProperties& properties,
                                                 std::size_t limit, Time now, SearchResults& out);
    [[nodiscard]] Result<void> search_with_range_with_tags(std::span<const std::string> profile_ids,
                                                           std::span<const std::string> tags,
                                                           const RangeProperties& properties,
                                                           std::size_t limit, Time now,
                                                           SearchResults& out);

    // Removes the items with these unique IDs under the profile; returns how many existed.
    [[nodiscard]] Result<std::size_t> remove(std::string_view profile_id,
                                             std::span<const std::string> unique_ids, Time now);

    // Frees expired items (every other call does this too); returns how many were freed.
    std::size_t expire(Time now) { return items_.expire(now); }

    [[nodiscard]] std::size_t size() const { return items_.size(); }
    [[nodiscard]] BucketStore& items() { return items_; }
    [[nodiscard]] const BucketStore& items() const { return items_; }

private:
    [[nodiscard]] Result<void> collect(std::size_t limit, std::size_t profile_count, Time now,
                                       SearchResults& out);

    std::string origin_;
    ProfileRegistry profiles_;
    BucketStore items_;
    SearchKeys keys_;     // reused between searches
    SearchKey item_key_;  // reused between adds
};

[[nodiscard]] Result<void> validate_limit(std::size_t limit);
[[nodiscard]] Result<void> validate_unique_id(std::string_view unique_id);
[[nodiscard]] Result<void> validate_ttl(std::chrono::seconds ttl);

// Checks everything an add names (unique ID, TTL, value, profile, tag, properties) and, when
// all is well, writes the item's bucket key to `key`.
[[nodiscard]] Result<void> validate_item(const ProfileRegistry& profiles,
                                         std::string_view profile_id, std::string_view unique_id,
                                         std::string_view tag, const Properties& properties,
                                         const ValueMap& value, std::chrono::seconds ttl,
                                         SearchKey& key);

}  // namespace matchmesh::matching
