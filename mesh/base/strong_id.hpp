#pragma once
// Strong string identifiers: a NodeId cannot be passed where a UserId is expected.
//
// An ID is immutable and its text is shared: a copy is one pointer and a reference count, not a
// new string. A waiting ticket's ID sits in a dozen records (its ticket, its room, the owner's
// entries, the members' participations), and user and node IDs in as many; shared, each extra
// copy costs 8 bytes instead of a 32-byte string and, for IDs past 15 characters, a heap block
// of its own. The count is atomic, so an ID may be copied on any thread.

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace matchmesh {

namespace detail {

// The text of an ID, its hash and how many IDs refer to it. An ID is looked up in hash tables
// many times for each time it is made, so the hash is kept; it and the count take 32 bits each,
// so the record stays 40 bytes (4 billion copies of one ID would take 32 GB).
struct SharedText {
    explicit SharedText(std::string value) : hash(hash_of(value)), text(std::move(value)) {}
    static std::uint32_t hash_of(std::string_view text) {
        return static_cast<std::uint32_t>(std::hash<std::string_view>{}(text));
    }
    std::atomic<std::uint32_t> references{1};
    const std::uint32_t hash;
    const std::string text;
};

}  // namespace detail

template <typename Tag>
class StrongId {
public:
    StrongId() = default;
    explicit StrongId(std::string value)
        : shared_(value.empty() ? nullptr : new detail::SharedText(std::move(value))) {}
    explicit StrongId(std::string_view value) : StrongId(std::string(value)) {}
    explicit StrongId(const char* value) : StrongId(std::string(value)) {}

    StrongId(const StrongId& other) noexcept : shared_(other.shared_) {
        if (shared_ != nullptr) {
            shared_->references.fetch_add(1, std::memory_order_relaxed);
        }
    }
    StrongId(StrongId&& other) noexcept : shared_(std::exchange(other.shared_, nullptr)) {}
    StrongId& operator=(StrongId other) noexcept {
        std::swap(shared_, other.shared_);
        return *this;
    }
    ~StrongId() {
        if (shared_ != nullptr &&
            shared_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            delete shared_;
        }
    }

    [[nodiscard]] const std::string& str() const {
        static const std::string none;
        return shared_ == nullptr ? none : shared_->text;
    }
    [[nodiscard]] bool empty() const { return shared_ == nullptr; }
    // Of the text, made once: equal IDs have equal hashes.
    [[nodiscard]] std::size_t hash() const { return shared_ == nullptr ? 0 : shared_->hash; }
    // What hash() is for an ID of this text, for lookups by text alone.
    [[nodiscard]] static std::size_t hash_of(std::string_view text) {
        return text.empty() ? 0 : detail::SharedText::hash_of(text);
    }

    friend std::strong_ordering operator<=>(const StrongId& left, const StrongId& right) {
        return left.shared_ == right.shared_ ? std::strong_ordering::equal
                                             : left.str() <=> right.str();
    }
    friend bool operator==(const StrongId& left, const StrongId& right) {
        return left.shared_ == right.shared_ ||
               (left.hash() == right.hash() && left.str() == right.str());
    }

private:
    detail::SharedText* shared_ = nullptr;
};

using NodeId = StrongId<struct NodeIdTag>;
using UserId = StrongId<struct UserIdTag>;
using TicketId = StrongId<struct TicketIdTag>;

}  // namespace matchmesh

template <typename Tag>
struct std::hash<matchmesh::StrongId<Tag>> {
    std::size_t operator()(const matchmesh::StrongId<Tag>& id) const noexcept { return id.hash(); }
};
