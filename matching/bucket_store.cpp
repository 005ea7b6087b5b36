#include "matching/bucket_store.hpp"

#include <algorithm>
#include <cstring>

#include <xxhash.h>

#include "matching/profile.hpp"
#include "mesh/base/assert.hpp"

namespace matchmesh::matching {
namespace {

std::int64_t floor_div(std::int64_t value, std::int64_t divisor) {
    return value / divisor - (value % divisor != 0 && value < 0 ? 1 : 0);
}

const ValueMap empty_value;

}  // namespace

std::uint16_t NameTable::acquire(std::string_view name) {
    if (auto found = find(name)) {
        ++references_[*found];
        return *found;
    }
    std::uint16_t index = 0;
    if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
    } else {
        MM_ASSERT(names_.size() < UINT16_MAX);
        index = static_cast<std::uint16_t>(names_.size());
        names_.push_back(nullptr);
        references_.push_back(0);
    }
    auto inserted = by_name_.emplace(std::string(name), index).first;
    names_[index] = &inserted->first;
    references_[index] = 1;
    return index;
}

void NameTable::release(std::uint16_t index) {
    MM_ASSERT(index < references_.size() && references_[index] > 0);
    if (--references_[index] == 0) {
        by_name_.erase(*names_[index]);
        names_[index] = nullptr;
        free_.push_back(index);
        if (last_ == index) {
            last_.reset();
        }
    }
}

std::optional<std::uint16_t> NameTable::find(std::string_view name) const {
    if (last_ && *names_[*last_] == name) {
        return last_;
    }
    auto found = by_name_.find(name);
    if (found == by_name_.end()) {
        return std::nullopt;
    }
    last_ = found->second;
    return found->second;
}

std::size_t BucketStore::KeyHash::operator()(std::string_view key) const {
    return key_hash(key);
}

BucketStore::PackedText::PackedText(std::string_view text) {
    static_assert(sizeof(char*) + sizeof(std::uint32_t) <= in_place_max);
    MM_ASSERT(text.size() <= UINT32_MAX);
    if (text.size() <= in_place_max) {
        std::memcpy(bytes_.data(), text.data(), text.size());
        bytes_[in_place_max] = static_cast<char>(text.size());
        return;
    }
    char* block = new char[text.size()];
    std::memcpy(block, text.data(), text.size());
    const auto length = static_cast<std::uint32_t>(text.size());
    std::memcpy(bytes_.data(), &block, sizeof block);
    std::memcpy(bytes_.data() + sizeof block, &length, sizeof length);
    bytes_[in_place_max] = static_cast<char>(on_heap);
}

BucketStore::PackedText::~PackedText() {
    if (form() == on_heap) {
        char* block = nullptr;
        std::memcpy(&block, bytes_.data(), sizeof block);
        delete[] block;
    }
}

std::string_view BucketStore::PackedText::view() const {
    if (form() != on_heap) {
        return {bytes_.data(), form()};
    }
    const char* block = nullptr;
    std::uint32_t length = 0;
    std::memcpy(&block, bytes_.data(), sizeof block);
    std::memcpy(&length, bytes_.data() + sizeof block, sizeof length);
    return {block, length};
}

std::uint64_t BucketStore::id_hash(std::uint16_t profile, std::string_view unique_id) {
    return XXH3_64bits_withSeed(unique_id.data(), unique_id.size(), profile);
}

std::size_t BucketStore::slot_of(Time expires_at) {
    const std::int64_t tick = floor_div(ms_since_epoch(expires_at), wheel_tick.count());
    const auto slots = static_cast<std::int64_t>(wheel_slots);
    return static_cast<std::size_t>(((tick % slots) + slots) % slots);
}

BucketStore::BucketStore() {
    slot_heads_.fill(none);
}

BucketStore::~BucketStore() = default;

BucketStore::Item& BucketStore::item(Handle handle) const {
    MM_ASSERT(handle < locators_.size() && locators_[handle].bucket != nullptr);
    const Locator& where = locators_[handle];
    return where.bucket->items[where.position];
}

std::uint64_t BucketStore::hash_of(Handle handle) const {
    return id_hash(locators_[handle].bucket->profile, item(handle).unique_id.view());
}

BucketStore::Handle BucketStore::allocate_handle() {
    if (free_handles_ != none) {
        const Handle handle = free_handles_;
        free_handles_ = locators_[handle].position;
        return handle;
    }
    MM_ASSERT(locators_.size() < none);
    locators_.emplace_back();
    return static_cast<Handle>(locators_.size() - 1);
}

BucketStore::Bucket& BucketStore::bucket_for(std::string_view key, std::uint64_t hash,
                                             std::string_view profile_id) {
    auto found = buckets_.find(HashedKey{key, hash});
    if (found == buckets_.end()) {
        found = buckets_.emplace(std::string(key), Bucket{}).first;
        found->second.key = found->first;
        found->second.profile = profiles_.acquire(profile_id);  // one reference per bucket
    }
    return found->second;
}

void BucketStore::append(Bucket& bucket, Handle handle, Item&& moved) {
    moved.handle = handle;
    locators_[handle] = Locator{&bucket, static_cast<std::uint32_t>(bucket.items.size())};
    if (bucket.items.size() == bucket.items.capacity()) {
        // Grown by half, not doubled: the arrays are most of what stored items cost, and a
        // doubled one is on average 44% larger than its items, one grown by half 23%.
        bucket.items.reserve(bucket.items.size() + bucket.items.size() / 2 + 4);
    }
    bucket.items.push_back(std::move(moved));
    ++bucket.live;
}

BucketStore::Item BucketStore::take(Handle handle) {
    const Locator where = locators_[handle];
    Bucket& bucket = *where.bucket;
    Item& stored = bucket.items[where.position];
    MM_ASSERT(stored.handle == handle && bucket.live > 0);
    Item taken = std::move(stored);
    stored = Item{};  // tombstone; frees nothing it still held
    locators_[handle].bucket = nullptr;
    if (--bucket.live == 0) {
        profiles_.release(bucket.profile);
        buckets_.erase(buckets_.find(bucket.key));
    } else if (bucket.live * 2 < bucket.items.size()) {
        compact(bucket);
    }
    return taken;
}

void BucketStore::compact(Bucket& bucket) {
    std::size_t kept = 0;
    for (Item& stored : bucket.items) {
        if (stored.handle != none) {
            locators_[stored.handle].position = static_cast<std::uint32_t>(kept);
            if (&bucket.items[kept] != &stored) {
                bucket.items[kept] = std::move(stored);
            }
            ++kept;
        }
    }
    MM_ASSERT(kept == bucket.live);
    bucket.items.resize(kept);
    if (bucket.items.capacity() > 4 * kept + 8) {
        bucket.items.shrink_to_fit();
    }
}

void BucketStore::link_slot(Handle handle) {
    Item& linked = item(handle);
    const std::size_t slot = slot_of(linked.expires_at);
    linked.prev_in_slot = none;
    linked.next_in_slot = slot_heads_[slot];
    if (slot_heads_[slot] != none) {
        item(slot_heads_[slot]).prev_in_slot = handle;
    }
    slot_heads_[slot] = handle;
}

void BucketStore::unlink_slot(Handle handle) {
    Item& unlinked = item(handle);
    if (unlinked.prev_in_slot != none) {
        item(unlinked.prev_in_slot).next_in_slot = unlinked.next_in_slot;
    } else {
        const std::size_t slot = slot_of(unlinked.expires_at);
        MM_ASSERT(slot_heads_[slot] == handle);
        slot_heads_[slot] = unlinked.next_in_slot;
    }
    if (unlinked.next_in_slot != none) {
        item(unlinked.next_in_slot).prev_in_slot = unlinked.prev_in_slot;
    }
    unlinked.prev_in_slot = none;
    unlinked.next_in_slot = none;
}

void BucketStore::erase(Handle handle) {
    unlink_slot(handle);
    ids_.erase(hash_of(handle), handle);
    Item erased = take(handle);
    origins_.release(erased.origin);
    locators_[handle].position = free_handles_;
    free_handles_ = handle;
    --live_items_;
}

BucketStore::Handle BucketStore::find_item(std::string_view profile_id,
                                           std::string_view unique_id) const {
    auto profile = profiles_.find(profile_id);
    if (!profile) {
        return none;
    }
    return ids_.find(id_hash(*profile, unique_id), [&](Handle candidate) {
        return locators_[candidate].bucket->profile == *profile &&
               item(candidate).unique_id.view() == unique_id;
    });
}

void BucketStore::put(PutItem in, Time now) {
    MM_ASSERT(in.ttl >= ttl_min && in.ttl <= ttl_max);
    MM_ASSERT(!in.unique_id.empty());
    MM_ASSERT(in.key.size() > in.profile_id.size() && in.key.starts_with(in.profile_id) &&
              in.key[in.profile_id.size()] == '\t');
    expire(now);
    Handle handle = find_item(in.profile_id, in.unique_id);
    if (handle == none) {
        handle = allocate_handle();
        Item fresh;
        fresh.unique_id = PackedText(in.unique_id);
        fresh.origin = origins_.acquire(in.origin);
        append(bucket_for(in.key, in.key_hash, in.profile_id), handle, std::move(fresh));
        ids_.insert(hash_of(handle), handle);
        ++live_items_;
    } else {
        unlink_slot(handle);
        const Item& stored = item(handle);
        const bool stays = stored.expires_at > now && locators_[handle].bucket->key == in.key;
        if (!stays) {
            // Moving keeps the ID index valid: the profile, hence the hash, is unchanged.
            Item moved = take(handle);
            append(bucket_for(in.key, in.key_hash, in.profile_id), handle, std::move(moved));
        }
        Item& kept = item(handle);
        if (origins_.name(kept.origin) != in.origin) {
            origins_.release(kept.origin);
            kept.origin = origins_.acquire(in.origin);
        }
    }
    Item& stored = item(handle);
    if (in.value.empty()) {
        stored.value.reset();
    } else {
        stored.value = std::make_unique<ValueMap>(std::move(in.value));
    }
    stored.expires_at = now + in.ttl;
    stored.ttl_s = static_cast<std::uint8_t>(in.ttl.count());
    link_slot(handle);
}

FoundItem BucketStore::view(const Bucket& bucket, const Item& stored) const {
    return FoundItem{profiles_.name(bucket.profile),
                     stored.unique_id.view(),
                     stored.value ? stored.value.get() : &empty_value,
                     stored.expires_at,
                     std::chrono::seconds(stored.ttl_s),
                     origins_.name(stored.origin)};
}

bool BucketStore::collect(std::string_view key, std::uint64_t hash, Time now, std::size_t limit,
                          std::size_t seen_end, std::vector<FoundItem>& out, Handout handout) {
    auto found = buckets_.find(HashedKey{key, hash});
    if (found == buckets_.end()) {
        return false;
    }
    Bucket& bucket = found->second;
    const auto seen = [&out, seen_end](std::string_view unique_id) {
        return std::any_of(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(seen_end),
                           [unique_id](const FoundItem& f) { return f.unique_id == unique_id; });
    };
    const bool offers = handout.offer_hold > Duration(0);
    const Item* offered = nullptr;
    bool passed_by = false;  // items on offer to others, left for the second walk
    const std::size_t size = bucket.items.size();
    const std::size_t first = size == 0 ? 0 : handout.rotation % size;
    // With offers, the first walk hands out what is on offer to nobody and the second the rest.
    for (int walk = 0; walk < (offers ? 2 : 1); ++walk) {
        for (std::size_t i = 0; i < size && out.size() < limit; ++i) {
            Item& stored = bucket.items[(first + i) % size];
            if (stored.handle == none || stored.expires_at <= now || &stored == offered ||
                (seen_end != 0 && seen(stored.unique_id.view()))) {
                continue;
            }
            const bool on_offer = stored.offered_until > now;
            if (offers && on_offer != (walk == 1)) {
                passed_by = passed_by || on_offer;
                continue;
            }
            FoundItem& item = out.emplace_back(view(bucket, stored));
            if (on_offer) {
                item.offer = Offer::another;
            } else if (offers && offered == nullptr) {
                stored.offered_until = now + handout.offer_hold;
                item.offer = Offer::yours;
                offered = &stored;
            }
        }
        if (!passed_by) {
            break;
        }
    }
    return offered != nullptr;
}

std::size_t BucketStore::remove(std::string_view profile_id,
                                std::span<const std::string> unique_ids, Time now) {
    expire(now);
    std::size_t removed = 0;
    for (const auto& unique_id : unique_ids) {
        if (Handle handle = find_item(profile_id, unique_id); handle != none) {
            erase(handle);
            ++removed;
        }
    }
    return removed;
}

std::size_t BucketStore::remove_profile(std::string_view profile_id) {
    auto profile = profiles_.find(profile_id);
    if (!profile) {
        return 0;
    }
    std::vector<Handle> doomed;
    for (const auto& [key, bucket] : buckets_) {
        if (bucket.profile == *profile) {
            for (const Item& stored : bucket.items) {
                if (stored.handle != none) {
                    doomed.push_back(stored.handle);
                }
            }
        }
    }
    for (Handle handle : doomed) {
        erase(handle);
    }
    return doomed.size();
}

std::size_t BucketStore::remove_origin(std::string_view origin) {
    auto wanted = origins_.find(origin);
    if (!wanted) {
        return 0;
    }
    std::vector<Handle> doomed;
    for (const auto& [key, bucket] : buckets_) {
        for (const Item& stored : bucket.items) {
            if (stored.handle != none && stored.origin == *wanted) {
                doomed.push_back(stored.handle);
            }
        }
    }
    for (Handle handle : doomed) {
        erase(handle);
    }
    return doomed.size();
}

std::size_t BucketStore::erase_slot(std::size_t slot) {
    std::size_t freed = 0;
    while (slot_heads_[slot] != none) {
        erase(slot_heads_[slot]);
        ++freed;
    }
    return freed;
}

std::size_t BucketStore::expire(Time now) {
    const std::int64_t now_tick = floor_div(ms_since_epoch(now), wheel_tick.count());
    if (!swept_tick_) {
        swept_tick_ = now_tick;
    }
    if (now_tick <= *swept_tick_) {
        return 0;
    }
    // Every item in slot (t % slots) for a tick t in [swept, now_tick) expires within tick t:
    // TTLs span fewer ticks than the wheel has slots, so no slot holds two ticks' items.
    std::size_t freed = 0;
    if (now_tick - *swept_tick_ >= static_cast<std::int64_t>(wheel_slots)) {
        for (std::size_t slot = 0; slot < wheel_slots; ++slot) {
            freed += erase_slot(slot);
        }
    } else {
        for (std::int64_t tick = *swept_tick_; tick < now_tick; ++tick) {
            freed += erase_slot(slot_of(Time(tick * wheel_tick)));
        }
    }
    swept_tick_ = now_tick;
    return freed;
}

void BucketStore::for_each_bucket(const std::function<void(const BucketView&)>& visit) const {
    std::vector<const Bucket*> ordered;
    ordered.reserve(buckets_.size());
    for (const auto& [key, bucket] : buckets_) {
        ordered.push_back(&bucket);
    }
    std::sort(ordered.begin(), ordered.end(),
              [](const Bucket* a, const Bucket* b) { return a->key < b->key; });
    for (const Bucket* bucket : ordered) {
        visit(BucketView{bucket->key, bucket->live});
    }
}

void BucketStore::for_each_item(std::string_view key,
                                const std::function<void(const FoundItem&)>& visit) const {
    auto found = buckets_.find(key);
    if (found == buckets_.end()) {
        return;
    }
    for (const Item& stored : found->second.items) {
        if (stored.handle != none) {
            visit(view(found->second, stored));
        }
    }
}

}  // namespace matchmesh::matching
