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

}  // namespace matchmesh::matching
