#pragma once
// BucketStore: search items filed under their bucket keys, oldest first, with expiry.
//
// Owned by one Store (or, on a replica, by the node's matching service); lives on the node's
// loop thread; holds no clock: every call says what time it is, and each call first frees the
// items whose TTL ran out (a timing wheel, amortised O(1) per item).
//
// Items are identified by (profile ID, unique ID). Putting an item that exists again replaces its
// value, TTL and origin; it keeps its place in its bucket if it stays in the same bucket and had
// not expired, and goes to the back of its new bucket otherwise.
//
// Inputs are trusted: callers validate what comes from clients or peers before calling.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "matching/id_index.hpp"
#include "matching/value.hpp"
#include "mesh/base/time.hpp"

namespace matchmesh::matching {

// Interned names with reference counts, so that each item stores a 16-bit index instead of a
// string, and a name no item uses any more frees its slot.
class NameTable {
public:
    [[nodiscard]] std::uint16_t acquire(std::string_view name);
    void release(std::uint16_t index);
    [[nodiscard]] std::optional<std::uint16_t> find(std::string_view name) const;
    [[nodiscard]] std::string_view name(std::uint16_t index) const { return *names_[index]; }

private:
    std::map<std::string, std::uint16_t, std::less<>> by_name_;
    mutable std::optional<std::uint16_t> last_;  // the last name found: most lookups repeat it
    std::vector<const std::string*> names_;      // points at by_name_'s keys
    std::vector<std::size_t> references_;
    std::vector<std::uint16_t> free_;
};

inline constexpr std::chrono::seconds ttl_min{1};
inline constexpr std::chrono::seconds ttl_max{60};

struct PutItem {
    std::string_view profile_id;
    std::string_view key;    // canonical bucket key (see profile.hpp)
    std::uint64_t key_hash;  // key_hash(key)
    std::string_view unique_id;
    ValueMap value;
    std::chrono::seconds ttl;
    std::string_view origin;  // node that added it; empty when unknown
};

// Whether a found item was offered to a searcher that asked for offers (see BucketStore::collect).
enum class Offer : std::uint8_t {
    none,     // on offer to no search
    yours,    // offered to this search: others pass it by for a while
    another,  // on offer to another search that came just before
};

// How a search wants a bucket's items handed out (BucketStore::collect).
struct Handout {
    // Nonzero: begin the walk at this position modulo the bucket's size instead of at the
    // oldest item, wrapping round: searchers that pass different ones see different items.
    std::uint32_t rotation = 0;
    // Nonzero: offer the first item that is on offer to nobody to this search for this long
    // (it comes back as Offer::yours), and hand out the items on offer to others after all
    // the rest (as Offer::another). Searchers that would all try the same room first each
    // try a different one instead; no item is hidden.
    Duration offer_hold{0};
};

// A found item. The views stay valid until the store is next modified.
struct FoundItem {
    std::string_view profile_id;
    std::string_view unique_id;
    const ValueMap* value;
    Time expires_at;
    std::chrono::seconds ttl;
    std::string_view origin;
    Offer offer = Offer::none;
};

// A bucket as dumps see it.
struct BucketView {
    std::string_view key;
    std::size_t size;
};

class BucketStore {
public:
    BucketStore();
    ~BucketStore();
    BucketStore(const BucketStore&) = delete;
    BucketStore& operator=(const BucketStore&) = delete;

    void put(PutItem item, Time now);

    // Appends the live items of bucket `key` (oldest first) to `out` until it holds `limit`,
    // skipping any whose unique ID already appears in out[0, seen_end). `hash` is key_hash(key).
    // Returns whether it made an offer.
    bool collect(std::string_view key, std::uint64_t hash, Time now, std::size_t limit,
                 std::size_t seen_end, std::vector<FoundItem>& out, Handout handout = {});

    // Removes the items with these unique IDs under the profile; returns how many existed.
    std::size_t remove(std::string_view profile_id, std::span<const std::string> unique_ids,
                       Time now);
    std::size_t remove_profile(std::string_view profile_id);
    std::size_t remove_origin(std::string_view origin);

    // Frees every item whose TTL has run out by `now`, except possibly those that expired less
    // than one wheel tick (100 ms) ago; those are already invisible to searches.
    std::size_t expire(Time now);

    [[nodiscard]] std::size_t size() const { return live_items_; }
    [[nodiscard]] std::size_t bucket_count() const { return buckets_.size(); }

    // Dumps: buckets in key order, then each bucket's items oldest first (expired ones included
    // until they are freed).
    void for_each_bucket(const std::function<void(const BucketView&)>& visit) const;
    void for_each_item(std::string_view key,
                       const std::function<void(const FoundItem&)>& visit) const;

    static constexpr Duration wheel_tick{100};
    static constexpr std::size_t wheel_slots = 1024;
    static_assert(wheel_tick * wheel_slots > ttl_max + wheel_tick,
                  "the expiry wheel must span the longest TTL");

private:
    using Handle = IdIndex::Handle;
    static constexpr Handle none = IdIndex::none;

    struct Bucket;

    // An item's unique ID in 16 bytes, where a std::string takes 32: up to 15 characters in
    // place, a longer ID in a heap block of its own.
    class PackedText {
    public:
        PackedText() = default;
        explicit PackedText(std::string_view text);
        PackedText(PackedText&& other) noexcept : bytes_(std::exchange(other.bytes_, {})) {}
        PackedText& operator=(PackedText&& other) noexcept {
            PackedText taken(std::move(other));  // leaves `other` empty
            std::swap(bytes_, taken.bytes_);     // and `taken` frees what this held
            return *this;
        }
        PackedText(const PackedText&) = delete;
        PackedText& operator=(const PackedText&) = delete;
        ~PackedText();
        [[nodiscard]] std::string_view view() const;

    private:
        static constexpr std::size_t in_place_max = 15;
        static constexpr std::uint8_t on_heap = 0xff;
        // In place: the characters, then their count in the last byte. On the heap: the block's
        // address, then the length (std::uint32_t), and `on_heap` in the last byte.
        std::array<char, in_place_max + 1> bytes_{};
        [[nodiscard]] std::uint8_t form() const {
            return static_cast<std::uint8_t>(bytes_[in_place_max]);
        }
    };

    // An item lives inside its bucket's vector, so that a search streams through one contiguous
    // array. Removal leaves a tombstone (handle == none) that compaction clears once tombstones
    // outnumber live items. A handle names an item wherever it moves (see Locator).
    struct Item {
        PackedText unique_id;
        std::unique_ptr<ValueMap> value;  // null for an empty value
        Time expires_at{};
        Time offered_until{};  // on offer to one search until then (see Handout)
        Handle handle = none;
        Handle prev_in_slot = none;  // expiry wheel list
        Handle next_in_slot = none;
        std::uint16_t origin = 0;
        std::uint8_t ttl_s = 0;
    };

    struct Bucket {
        std::string_view key;  // the map's key
        std::vector<Item> items;
        std::uint32_t live = 0;
        std::uint16_t profile = 0;
    };

    // Where a handle's item is now; a free handle links the next free one through `position`.
    struct Locator {
        Bucket* bucket = nullptr;
        std::uint32_t position = 0;
    };

    // A key whose hash the caller already computed.
    struct HashedKey {
        std::string_view text;
        std::uint64_t hash;
    };

    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const;
        std::size_t operator()(const HashedKey& key) const { return key.hash; }
    };

    struct KeyEqual {
        using is_transparent = void;
        bool operator()(std::string_view a, std::string_view b) const { return a == b; }
        bool operator()(const HashedKey& a, std::string_view b) const { return a.text == b; }
        bool operator()(std::string_view a, const HashedKey& b) const { return a == b.text; }
    };

    [[nodiscard]] Item& item(Handle handle) const;
    [[nodiscard]] Handle allocate_handle();
    Bucket& bucket_for(std::string_view key, std::uint64_t hash, std::string_view profile_id);
    // Appends `moved` to `bucket` under `handle`.
    void append(Bucket& bucket, Handle handle, Item&& moved);
    // Leaves a tombstone where the handle's item was; returns the item's contents.
    Item take(Handle handle);
    void compact(Bucket& bucket);
    void link_slot(Handle handle);
    void unlink_slot(Handle handle);
    void erase(Handle handle);
    std::size_t erase_slot(std::size_t slot);
    [[nodiscard]] Handle find_item(std::string_view profile_id, std::string_view unique_id) const;
    [[nodiscard]] std::uint64_t hash_of(Handle handle) const;
    [[nodiscard]] static std::uint64_t id_hash(std::uint16_t profile, std::string_view unique_id);
    [[nodiscard]] static std::size_t slot_of(Time expires_at);
    [[nodiscard]] FoundItem view(const Bucket& bucket, const Item& stored) const;

    std::vector<Locator> locators_;
    Handle free_handles_ = none;
    std::size_t live_items_ = 0;

    std::unordered_map<std::string, Bucket, KeyHash, KeyEqual> buckets_;
    IdIndex ids_;
    std::array<Handle, wheel_slots> slot_heads_;
    std::optional<std::int64_t> swept_tick_;  // every item expiring before this tick is freed

    NameTable profiles_;
    NameTable origins_;
};

}  // namespace matchmesh::matching
