#pragma once
// What a search hands back: the items it found, as views into storage the outcome holds itself
// (the peers' answers kept whole, copies of this node's own items). Taking a peer's answer copies
// no item and no field: its bytes are kept once and every item is read where it lies. The views
// live as long as their outcome, which moves but is never copied.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <capnp/common.h>

#include "matching/bucket_store.hpp"
#include "matching/value.hpp"
#include "mesh/base/time.hpp"

namespace matchmesh::matching {

// One named scalar of a found item's value; a text or bytes scalar is a view as well.
struct FoundEntry {
    using Scalar =
        std::variant<std::int64_t, double, bool, std::string_view, std::span<const std::uint8_t>>;
    std::string_view name;
    Scalar scalar;
};
using FoundValue = std::span<const FoundEntry>;
static_assert(std::is_trivially_destructible_v<FoundEntry>);  // kept where nothing destroys it

// The entry named `name`, or null. (A value holds a few entries: a scan.)
[[nodiscard]] const FoundEntry* find_entry(FoundValue value, std::string_view name);
// A scalar of its own (texts and bytes copied).
[[nodiscard]] Value to_value(const FoundEntry::Scalar& scalar);
// The value as a map of its own, for whoever keeps it or hands it on.
[[nodiscard]] ValueMap to_value_map(FoundValue value);

// An item found on some node.
struct Found {
    std::string_view profile_id;
    std::string_view unique_id;
    FoundValue value;
    std::chrono::seconds ttl{0};
    Duration remaining{0};
    std::string_view origin;
    Offer offer = Offer::none;  // see Handout (bucket_store.hpp)
};

class SearchOutcome {
public:
    std::vector<Found> items;
    std::size_t keys_unanswered = 0;  // keys for which no replica answered: results may miss some

    SearchOutcome();
    ~SearchOutcome();
    SearchOutcome(SearchOutcome&&) noexcept;
    SearchOutcome& operator=(SearchOutcome&&) noexcept;
    SearchOutcome(const SearchOutcome&) = delete;  // the copy's views would point into this one
    SearchOutcome& operator=(const SearchOutcome&) = delete;

    // Keeps a copy of a peer's answer: its items can be read in place for as long as this lives.
    [[nodiscard]] std::span<const capnp::word> keep_answer(std::span<const capnp::word> answer);
    // Room for `count` value entries, for as long as this lives.
    [[nodiscard]] std::span<FoundEntry> entries(std::size_t count);
    // A copy of `text` with a NUL after it, as a message's texts have.
    [[nodiscard]] std::string_view keep_text(std::string_view text);
    // Keeps a copy of an item and returns its view.
    Found keep_copy(std::string_view profile_id, std::string_view unique_id, const ValueMap& value,
                    std::chrono::seconds ttl, Duration remaining, std::string_view origin);
    // Keeps a copy of an item of this node's store (whose views die with its next change).
    Found keep_copy(const FoundItem& item, Time now);

private:
    // What the views point into: one block made when something is first kept, which grows by
    // further blocks that never move.
    struct Arena;
    [[nodiscard]] void* room(std::size_t bytes, std::size_t alignment);

    std::unique_ptr<Arena> arena_;
};

}  // namespace matchmesh::matching
