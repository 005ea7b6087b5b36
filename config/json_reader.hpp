#pragma once
// Strict reading of JSON config values. Each function names the JSON path of what it rejects by
// throwing Rejected; the loader turns that into an error value, so a section parser reads as a
// list of fields.

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace matchmesh::config {

struct Rejected {
    std::string path;
    std::string reason;
};

[[noreturn]] void reject(std::string path, std::string reason);

[[nodiscard]] std::string child_path(std::string_view parent, std::string_view key);

// Rejects `value` unless it is an object whose keys are all in `allowed`.
void expect_object(const nlohmann::json& value, std::string_view path,
                   std::initializer_list<std::string_view> allowed);

// Rejects `value` unless it is an object (any keys).
void expect_any_object(const nlohmann::json& value, std::string_view path);

[[nodiscard]] std::int64_t read_integer(const nlohmann::json& value, std::string_view path,
                                        std::int64_t min, std::int64_t max);

[[nodiscard]] std::string read_string(const nlohmann::json& value, std::string_view path,
                                      std::size_t bytes_min, std::size_t bytes_max);

// Parses text strictly: duplicate keys and nesting deeper than `depth_max` are rejected with
// the path where they occur; a syntax error rejects with a line and column.
[[nodiscard]] nlohmann::json parse_strict(std::string_view text, std::size_t depth_max);

}  // namespace matchmesh::config
