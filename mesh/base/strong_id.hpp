#pragma once
// Strong string identifiers: a NodeId cannot be passed where a UserId is expected.

#include <compare>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace matchmesh {

template <typename Tag>
class StrongId {
public:
    StrongId() = default;
    explicit StrongId(std::string value) : value_(std::move(value)) {}
    explicit StrongId(std::string_view value) : value_(value) {}
    explicit StrongId(const char* value) : value_(value) {}

    [[nodiscard]] const std::string& str() const { return value_; }
    [[nodiscard]] bool empty() const { return value_.empty(); }

    friend auto operator<=>(const StrongId&, const StrongId&) = default;
    friend bool operator==(const StrongId&, const StrongId&) = default;

private:
    std::string value_;
};

using NodeId = StrongId<struct NodeIdTag>;
using UserId = StrongId<struct UserIdTag>;
using TicketId = StrongId<struct TicketIdTag>;

}  // namespace matchmesh

template <typename Tag>
struct std::hash<matchmesh::StrongId<Tag>> {
    std::size_t operator()(const matchmesh::StrongId<Tag>& id) const noexcept {
        return std::hash<std::string>{}(id.str());
    }
};
