#pragma once
// IdIndex: an open-addressing hash set of 32-bit item handles, 8 bytes per slot.
//
// It stores no keys: the owner supplies the hash of what it looks up, and a predicate that says
// whether a handle is the one wanted. Each slot keeps 32 bits of the hash, which both place the
// slot and reject most mismatches without touching the item, so growing and deleting never
// read items. Linear probing, load factor at most 1/2, deletion by backward shifting (no
// tombstones).

#include <cstdint>
#include <vector>

#include "mesh/base/assert.hpp"

namespace matchmesh::matching {

class IdIndex {
public:
    using Handle = std::uint32_t;
    static constexpr Handle none = UINT32_MAX;

    template <typename Matches>
    [[nodiscard]] Handle find(std::uint64_t hash, Matches&& matches) const {
        if (slots_.empty()) {
            return none;
        }
        const std::uint32_t short_hash = shorten(hash);
        for (std::size_t i = home(short_hash);; i = (i + 1) & mask()) {
            const Slot& slot = slots_[i];
            if (slot.handle == none) {
                return none;
            }
            if (slot.short_hash == short_hash && matches(slot.handle)) {
                return slot.handle;
            }
        }
    }

    void insert(std::uint64_t hash, Handle handle) {
        MM_ASSERT(handle != none);
        if ((count_ + 1) * 2 > slots_.size()) {
            grow();
        }
        place(Slot{handle, shorten(hash)});
        ++count_;
    }

    void erase(std::uint64_t hash, Handle handle) {
        std::size_t hole = home(shorten(hash));
        while (slots_[hole].handle != handle) {
            MM_ASSERT(slots_[hole].handle != none);
            hole = (hole + 1) & mask();
        }
        // Shift later members of the probe run back into the hole when their home allows it.
        for (std::size_t next = (hole + 1) & mask(); slots_[next].handle != none;
             next = (next + 1) & mask()) {
            const std::size_t wanted = home(slots_[next].short_hash);
            if (((next - wanted) & mask()) >= ((next - hole) & mask())) {
                slots_[hole] = slots_[next];
                hole = next;
            }
        }
        slots_[hole] = Slot{};
        --count_;
    }

    [[nodiscard]] std::size_t size() const { return count_; }

private:
    struct Slot {
        Handle handle = none;
        std::uint32_t short_hash = 0;
    };

    static std::uint32_t shorten(std::uint64_t hash) {
        return static_cast<std::uint32_t>(hash ^ (hash >> 32));
    }
    [[nodiscard]] std::size_t mask() const { return slots_.size() - 1; }
    [[nodiscard]] std::size_t home(std::uint32_t short_hash) const { return short_hash & mask(); }

    void place(Slot slot) {
        std::size_t i = home(slot.short_hash);
        while (slots_[i].handle != none) {
            i = (i + 1) & mask();
        }
        slots_[i] = slot;
    }

    void grow() {
        MM_ASSERT(slots_.size() < (std::size_t{1} << 32));
        std::vector<Slot> old(slots_.empty() ? 16 : slots_.size() * 2);
        old.swap(slots_);
        for (const Slot& slot : old) {
            if (slot.handle != none) {
                place(slot);
            }
        }
    }

    std::vector<Slot> slots_;
    std::size_t count_ = 0;
};

}  // namespace matchmesh::matching
