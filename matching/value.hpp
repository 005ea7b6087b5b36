#pragma once
// The value a search item carries back to whoever finds it: a small map of named scalars.

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <boost/container/flat_map.hpp>
#include <nlohmann/json_fwd.hpp>

#include "matching/errors.hpp"

namespace matchmesh::matching {

struct Bytes {
    std::vector<std::uint8_t> data;
    friend bool operator==(const Bytes&, const Bytes&) = default;
};

using Value = std::variant<std::int64_t, double, bool, std::string, Bytes>;
// Sorted by name in one array: a user or an item holds a few entries, each without a node.
using ValueMap = boost::container::flat_map<std::string, Value, std::less<>>;

inline constexpr std::size_t value_entries_max = 32;
inline constexpr std::size_t value_bytes_max = 4096;  // names plus payloads

// What one scalar counts toward value_bytes_max: a text's or bytes' length, 8 for the others;
// for a Value and for a view of one alike (FoundEntry::Scalar).
template <typename Scalar>
[[nodiscard]] std::size_t payload_bytes(const Scalar& scalar) {
    return std::visit(
        [](const auto& held) -> std::size_t {
            using T = std::decay_t<decltype(held)>;
            if constexpr (std::is_arithmetic_v<T>) {
                return sizeof(std::int64_t);
            } else if constexpr (std::is_same_v<T, Bytes>) {
                return held.data.size();
            } else {
                return held.size();
            }
        },
        scalar);
}

// Checks the size limits above; the error names the first entry over them.
[[nodiscard]] Result<void> validate_value(const ValueMap& value);

// `{level:3, name:"ann", ready:true, blob:0x0a0b}`: keys in name order, strings quoted.
[[nodiscard]] std::string value_to_text(const ValueMap& value);

// A JSON object; bytes become {"hex": "0a0b"} so they stay distinct from strings.
[[nodiscard]] nlohmann::json value_to_json(const ValueMap& value);

}  // namespace matchmesh::matching
