#pragma once
// Profiles (the rules that bucket property values) and the bucket keys they produce.
//
// A bucket key is the canonical string
//     profileID '\t' tag '\t' bucket(p1) '\t' bucket(p2) ...
// with the profile's properties in name order and each bucket in decimal; bucket(v) is
// floor(v / width). The key and its XXH3-64 hash (seed 0) are stable: placement of keys on nodes
// depends on them, so changing this format is a cluster-wide breaking change.
//
// Keys are placed by group: a key's placement group is the key written with each bucket divided
// (floored) by the group size, so up to `placement_group` adjacent buckets of every property sit
// on the same nodes and a range search over neighbouring buckets asks one or two nodes rather
// than one per bucket. Its hash is the key's `place`; with groups of one bucket, the key's own
// hash.

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/flat_map.hpp>

#include "matching/errors.hpp"

namespace matchmesh::matching {

// A ticket holds a handful of these, one entry or two each: sorted vectors, not trees, so that
// an entry costs its key and value and no node of its own.
using Properties = boost::container::flat_map<std::string, std::int64_t, std::less<>>;
using RangeProperties =
    boost::container::flat_map<std::string, std::vector<std::int64_t>, std::less<>>;
using PropertyWidths = std::map<std::string, std::int64_t, std::less<>>;

inline constexpr std::size_t profile_id_bytes_max = 64;
inline constexpr std::size_t property_name_bytes_max = 64;
inline constexpr std::size_t profile_properties_max = 8;
inline constexpr std::size_t profiles_max = 1024;
inline constexpr std::size_t tag_bytes_max = 64;
inline constexpr std::size_t range_properties_max = 2;
inline constexpr std::size_t range_values_max = 256;
inline constexpr std::size_t search_keys_max = 4096;  // keys one search may visit

// floor(value / width) for any sign of value; width must be positive.
[[nodiscard]] std::int64_t bucket_of(std::int64_t value, std::int64_t width);

[[nodiscard]] std::uint64_t key_hash(std::string_view key);

struct ProfileProperty {
    std::string name;
    std::int64_t width;
};

struct Profile {
    std::string id;
    std::vector<ProfileProperty> properties;  // sorted by name
};

// A key to look up, with its hash computed once.
struct SearchKey {
    std::string text;
    std::uint64_t hash = 0;
    std::uint64_t place = 0;        // the hash of its placement group: where it is stored
    std::size_t profile_index = 0;  // position in the searched profile list
};

// A range search's distinct buckets per property of one profile.
using BucketLists = std::array<std::vector<std::int64_t>, profile_properties_max>;

// Keys of one search, in search order. Reuses its strings between searches to avoid allocating.
class SearchKeys {
public:
    [[nodiscard]] std::span<const SearchKey> keys() const { return {keys_.data(), size_}; }
    [[nodiscard]] std::size_t size() const { return size_; }
    void clear() { size_ = 0; }
    SearchKey& push();

private:
    friend class ProfileRegistry;

    std::vector<SearchKey> keys_;
    std::size_t size_ = 0;
    // A range search's buckets per property: scratch, kept for its capacity.
    BucketLists bucket_lists_;
};

// The defined profiles. Owned by a store; single-threaded like everything in a node's loop.
class ProfileRegistry {
public:
    static constexpr std::int64_t placement_group_max = 4096;

    // `placement_group`: buckets per placement group along each property, 1..placement_group_max.
    // Every node of a cluster must use the same.
    explicit ProfileRegistry(std::int64_t placement_group = 1);

    // Defines a profile. Defining an ID again with the same properties is a no-op; with
    // different ones it is an error (clear it first).
    [[nodiscard]] Result<void> define(std::string_view profile_id, const PropertyWidths& widths);

    // Defines every profile of {"<profileID>": {"<property>": <width>, ...}, ...}, or none of them.
    [[nodiscard]] Result<void> define_from_json(std::string_view json_text);

    // Returns whether the profile existed.
    bool clear(std::string_view profile_id);

    [[nodiscard]] const Profile* find(std::string_view profile_id) const;
    [[nodiscard]] std::size_t size() const { return profiles_.size(); }

    // The bucket key of an item or exact search.
    [[nodiscard]] Result<std::string> create_key(std::string_view profile_id, std::string_view tag,
                                                 const Properties& properties) const;

    // The key of one item: `out` gets its text and hash.
    [[nodiscard]] Result<void> item_key(std::string_view profile_id, std::string_view tag,
                                        const Properties& properties, SearchKey& out) const;

    // Appends the keys of an exact search to `out`: one per profile, in list order.
    [[nodiscard]] Result<void> search_keys(std::span<const std::string> profile_ids,
                                           std::string_view tag, const Properties& properties,
                                           SearchKeys& out) const;

    // Checks an item's key as item_key() would make it, without making it.
    [[nodiscard]] Result<void> check_item(std::string_view profile_id, std::string_view tag,
                                          const Properties& properties) const;

    // Checks a range search as range_search_keys() would, without making its keys, with
    // `keys_before` keys already listed; returns how many keys it gives.
    [[nodiscard]] Result<std::size_t> count_range_search_keys(
        std::span<const std::string> profile_ids, std::span<const std::string> tags,
        const RangeProperties& properties, std::size_t keys_before = 0) const;

    // Appends the keys of a range search: for each profile (list order), each tag (list order),
    // every combination of the range values. Values keep the caller's order; with two range
    // properties the one first in name order is the outer loop.
    [[nodiscard]] Result<void> range_search_keys(std::span<const std::string> profile_ids,
                                                 std::span<const std::string> tags,
                                                 const RangeProperties& properties,
                                                 SearchKeys& out) const;

private:
    [[nodiscard]] Result<const Profile*> item_profile(std::string_view profile_id,
                                                      std::string_view tag) const;
    // Checks a range search profile by profile, and hands each profile to `each` (its bucket
    // lists in `lists`) once it is checked and the keys so far fit the limit; returns how many
    // keys the search gives.
    template <typename Each>
    [[nodiscard]] Result<std::size_t> plan_range_search(std::span<const std::string> profile_ids,
                                                        std::span<const std::string> tags,
                                                        const RangeProperties& properties,
                                                        std::size_t keys_before, BucketLists& lists,
                                                        Each each) const;

    std::int64_t placement_group_;
    std::map<std::string, Profile, std::less<>> profiles_;
};

[[nodiscard]] Result<void> validate_tag(std::string_view tag);

}  // namespace matchmesh::matching
