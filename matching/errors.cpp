#include "matching/errors.hpp"

namespace matchmesh::matching {

std::string_view to_string(Errc code) {
    switch (code) {
        case Errc::unknown_profile: return "unknown profile";
        case Errc::invalid_profile: return "invalid profile";
        case Errc::profile_exists: return "profile exists";
        case Errc::invalid_unique_id: return "invalid unique ID";
        case Errc::invalid_tag: return "invalid tag";
        case Errc::invalid_properties: return "invalid properties";
        case Errc::too_many_range_properties: return "too many range properties";
        case Errc::invalid_ttl: return "invalid TTL";
        case Errc::invalid_limit: return "invalid limit";
        case Errc::invalid_value: return "invalid value";
        case Errc::timeout: return "timeout";
        case Errc::unavailable: return "unavailable";
    }
    return "unknown error";
}

std::string_view wire_name(Errc code) {
    switch (code) {
        case Errc::unknown_profile: return "unknown_profile";
        case Errc::invalid_profile: return "invalid_profile";
        case Errc::profile_exists: return "profile_exists";
        case Errc::invalid_unique_id: return "invalid_unique_id";
        case Errc::invalid_tag: return "invalid_tag";
        case Errc::invalid_properties: return "invalid_properties";
        case Errc::too_many_range_properties: return "too_many_range_properties";
        case Errc::invalid_ttl: return "invalid_ttl";
        case Errc::invalid_limit: return "invalid_limit";
        case Errc::invalid_value: return "invalid_value";
        case Errc::timeout: return "timeout";
        case Errc::unavailable: return "unavailable";
    }
    return "error";
}

}  // namespace matchmesh::matching
