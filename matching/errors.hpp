#pragma once
// Expected failures of the matching module, as values: callers branch on the category.

#include <expected>
#include <string_view>

#include "mesh/base/error.hpp"

namespace matchmesh::matching {

enum class Errc {
    unknown_profile,            // a profile ID that is not defined
    invalid_profile,            // a definition that cannot be accepted (empty ID, bad width, ...)
    profile_exists,             // define() of an ID already defined differently
    invalid_unique_id,          // empty or oversized unique ID
    invalid_tag,                // tag with a tab or oversized
    invalid_properties,         // properties that do not name exactly the profile's properties
    too_many_range_properties,  // more than two properties with several values
    invalid_ttl,                // TTL outside 1..60 s
    invalid_limit,              // search limit outside 1..search_results_max
    invalid_value,              // value map too large
    timeout,                    // a remote node did not answer in time
    unavailable,                // no node could serve the request
};

[[nodiscard]] std::string_view to_string(Errc code);
// The stable name clients receive as an error's category ("unknown_profile").
[[nodiscard]] std::string_view wire_name(Errc code);

using MatchingError = Error<Errc>;

template <typename T>
using Result = std::expected<T, MatchingError>;

}  // namespace matchmesh::matching
