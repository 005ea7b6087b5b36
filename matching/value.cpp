#include "matching/value.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace matchmesh::matching {
namespace {

std::string to_hex(const std::vector<std::uint8_t>& data) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(data.size() * 2);
    for (std::uint8_t byte : data) {
        hex.push_back(digits[byte >> 4]);
        hex.push_back(digits[byte & 0x0f]);
    }
    return hex;
}

}  // namespace

Result<void> validate_value(const ValueMap& value) {
    if (value.size() > value_entries_max) {
        return fail(Errc::invalid_value, fmt::format("value has {} entries, at most {} allowed",
                                                     value.size(), value_entries_max));
    }
    std::size_t total = 0;
    for (const auto& [name, entry] : value) {
        total += name.size() + payload_bytes(entry);
        if (total > value_bytes_max) {
            return fail(
                Errc::invalid_value,
                fmt::format("value is larger than {} bytes at entry '{}'", value_bytes_max, name));
        }
    }
    return {};
}

std::string value_to_text(const ValueMap& value) {
    std::string text = "{";
    for (const auto& [name, entry] : value) {
        if (text.size() > 1) {
            text += ", ";
        }
        text += name;
        text += ':';
        std::visit(
            [&text](const auto& scalar) {
                using T = std::decay_t<decltype(scalar)>;
                if constexpr (std::is_same_v<T, std::string>) {
                    // Bytes that are not UTF-8 (an embedder's own value) become U+FFFD.
                    text += nlohmann::json(scalar).dump(-1, ' ', false,
                                                        nlohmann::json::error_handler_t::replace);
                } else if constexpr (std::is_same_v<T, Bytes>) {
                    text += "0x" + to_hex(scalar.data);
                } else if constexpr (std::is_same_v<T, bool>) {
                    text += scalar ? "true" : "false";
                } else {
                    text += fmt::format("{}", scalar);
                }
            },
            entry);
    }
    text += '}';
    return text;
}

nlohmann::json value_to_json(const ValueMap& value) {
    auto object = nlohmann::json::object();
    for (const auto& [name, entry] : value) {
        std::visit(
            [&](const auto& scalar) {
                using T = std::decay_t<decltype(scalar)>;
                if constexpr (std::is_same_v<T, Bytes>) {
                    object[name] = {{"hex", to_hex(scalar.data)}};
                } else {
                    object[name] = scalar;
                }
            },
            entry);
    }
    return object;
}

}  // namespace matchmesh::matching
