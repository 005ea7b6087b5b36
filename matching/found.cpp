#include "matching/found.hpp"

#include <algorithm>
#include <cstring>
#include <memory_resource>

namespace matchmesh::matching {

const FoundEntry* find_entry(FoundValue value, std::string_view name) {
    auto found = std::find_if(value.begin(), value.end(),
                              [&](const FoundEntry& entry) { return entry.name == name; });
    return found != value.end() ? &*found : nullptr;
}

Value to_value(const FoundEntry::Scalar& scalar) {
    return std::visit(
        [](const auto& viewed) -> Value {
            using T = std::decay_t<decltype(viewed)>;
            if constexpr (std::is_same_v<T, std::string_view>) {
                return std::string(viewed);
            } else if constexpr (std::is_same_v<T, std::span<const std::uint8_t>>) {
                return Bytes{std::vector<std::uint8_t>(viewed.begin(), viewed.end())};
            } else {
                return viewed;
            }
        },
        scalar);
}

ValueMap to_value_map(FoundValue value) {
    ValueMap map;
    map.reserve(value.size());
    for (const FoundEntry& entry : value) {
        map.emplace(entry.name, to_value(entry.scalar));
    }
    return map;
}

// A search's answers and items fit the first block as a rule; a large one takes more blocks.
struct SearchOutcome::Arena {
    static constexpr std::size_t first_block_bytes = 4096;
    alignas(std::max_align_t) std::byte first_block[first_block_bytes];
    std::pmr::monotonic_buffer_resource memory{first_block, first_block_bytes};
};

SearchOutcome::SearchOutcome() = default;
SearchOutcome::~SearchOutcome() = default;
SearchOutcome::SearchOutcome(SearchOutcome&&) noexcept = default;
SearchOutcome& SearchOutcome::operator=(SearchOutcome&&) noexcept = default;

void* SearchOutcome::room(std::size_t bytes, std::size_t alignment) {
    if (!arena_) {
        arena_ = std::make_unique_for_overwrite<Arena>();  // the block needs no zeroes
    }
    return arena_->memory.allocate(bytes, alignment);
}

std::string_view SearchOutcome::keep_text(std::string_view text) {
    auto* kept = static_cast<char*>(room(text.size() + 1, 1));
    std::memcpy(kept, text.data(), text.size());
    kept[text.size()] = '\0';
    return {kept, text.size()};
}

std::span<const capnp::word> SearchOutcome::keep_answer(std::span<const capnp::word> answer) {
    auto* kept = static_cast<capnp::word*>(room(answer.size_bytes(), alignof(capnp::word)));
    std::memcpy(kept, answer.data(), answer.size_bytes());
    return {kept, answer.size()};
}

std::span<FoundEntry> SearchOutcome::entries(std::size_t count) {
    if (count == 0) {
        return {};
    }
    auto* kept = static_cast<FoundEntry*>(room(count * sizeof(FoundEntry), alignof(FoundEntry)));
    std::uninitialized_default_construct_n(kept, count);
    return {kept, count};
}

Found SearchOutcome::keep_copy(std::string_view profile_id, std::string_view unique_id,
                               const ValueMap& value, std::chrono::seconds ttl, Duration remaining,
                               std::string_view origin) {
    const std::span<FoundEntry> kept = entries(value.size());
    std::size_t i = 0;
    for (const auto& [name, scalar] : value) {
        kept[i].name = keep_text(name);
        kept[i].scalar = std::visit(
            [this](const auto& held) -> FoundEntry::Scalar {
                using T = std::decay_t<decltype(held)>;
                if constexpr (std::is_same_v<T, std::string>) {
                    return keep_text(held);
                } else if constexpr (std::is_same_v<T, Bytes>) {
                    auto* bytes = static_cast<std::uint8_t*>(room(held.data.size(), 1));
                    std::copy(held.data.begin(), held.data.end(), bytes);
                    return std::span<const std::uint8_t>(bytes, held.data.size());
                } else {
                    return held;
                }
            },
            scalar);
        ++i;
    }
    return Found{keep_text(profile_id), keep_text(unique_id), kept, ttl, remaining,
                 keep_text(origin)};
}

Found SearchOutcome::keep_copy(const FoundItem& item, Time now) {
    Found kept = keep_copy(item.profile_id, item.unique_id, *item.value, item.ttl,
                           item.expires_at - now, item.origin);
    kept.offer = item.offer;
    return kept;
}

}  // namespace matchmesh::matching
