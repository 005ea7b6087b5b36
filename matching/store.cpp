#include "matching/store.hpp"

#include <fmt/format.h>

namespace matchmesh::matching {
Result<void> validate_unique_id(std::string_view unique_id) {
    if (unique_id.empty()) {
        return fail(Errc::invalid_unique_id, "unique ID must not be empty");
    }
    if (unique_id.size() > unique_id_bytes_max) {
        return fail(Errc::invalid_unique_id,
                    fmt::format("unique ID is {} bytes, at most {} allowed", unique_id.size(),
                                unique_id_bytes_max));
    }
    return {};
}

Result<void> validate_ttl(std::chrono::seconds ttl) {
    if (ttl < ttl_min || ttl > ttl_max) {
        return fail(Errc::invalid_ttl, fmt::format("TTL must be {}..{} s, got {} s",
                                                   ttl_min.count(), ttl_max.count(), ttl.count()));
    }
    return {};
}

Result<void> validate_limit(std::size_t limit) {
    if (limit < 1 || limit > search_results_max) {
        return fail(Errc::invalid_limit,
                    fmt::format("limit must be 1..{}, got {}", search_results_max, limit));
    }
    return {};
}

Store::Store(std::string origin) : origin_(std::move(origin)) {}

bool Store::clear_definition(std::string_view profile_id) {
    items_.remove_profile(profile_id);
    return profiles_.clear(profile_id);
}

Result<void> validate_item(const ProfileRegistry& profiles, std::string_view profile_id,
                           std::string_view unique_id, std::string_view tag,
                           const Properties& properties, const ValueMap& value,
                           std::chrono::seconds ttl, SearchKey& key) {
    if (auto ok = validate_unique_id(unique_id); !ok) {
        return ok;
    }
    if (auto ok = validate_ttl(ttl); !ok) {
        return ok;
    }
    if (auto ok = validate_value(value); !ok) {
        return ok;
    }
    return profiles.item_key(profile_id, tag, properties, key);
}

Result<void> Store::add(std::string_view profile_id, std::string_view unique_id,
                        std::string_view tag, const Properties& properties, ValueMap value,
                        std::chrono::seconds ttl, Time now) {
    if (auto ok =
            validate_item(profiles_, profile_id, unique_id, tag, properties, value, ttl, item_key_);
        !ok) {
        return ok;
    }
    items_.put(PutItem{profile_id, item_key_.text, item_key_.hash, unique_id, std::move(value), ttl,
                       origin_},
               now);
    return {};
}

Result<void> Store::collect(std::size_t limit, std::size_t profile_count, Time now,
                            SearchResults& out) {
    items_.expire(now);
    out.clear();
    // A unique ID lives in one bucket per profile, so only a later profile can repeat one.
    std::size_t profile_start = 0;
    std::size_t current_profile = 0;
    for (const SearchKey& key : keys_.keys()) {
        if (out.size() >= limit) {
            break;
        }
        if (key.profile_index != current_profile) {
            current_profile = key.profile_index;
            profile_start = out.size();
        }
        const std::size_t seen_end = profile_count > 1 ? profile_start : 0;
        items_.collect(key.text, key.hash, now, limit, seen_end, out);
    }
    return {};
}

Result<void> Store::search(std::span<const std::string> profile_ids, std::string_view tag,
                           const Properties& properties, std::size_t limit, Time now,
                           SearchResults& out) {
    if (auto ok = validate_limit(limit); !ok) {
        return ok;
    }
    keys_.clear();
    if (auto ok = profiles_.search_keys(profile_ids, tag, properties, keys_); !ok) {
        return ok;
    }
    return collect(limit, profile_ids.size(), now, out);
}

Result<void> Store::search_with_range(std::span<const std::string> profile_ids,
                                      std::string_view tag, const RangeProperties& properties,
                                      std::size_t limit, Time now, SearchResults& out) {
    const std::string tag_copy(tag);
    return search_with_range_with_tags(profile_ids, std::span(&tag_copy, 1), properties, limit, now,
                                       out);
}

Result<void> Store::search_with_range_with_tags(std::span<const std::string> profile_ids,
                                                std::span<const std::string> tags,
                                                const RangeProperties& properties,
                                                std::size_t limit, Time now, SearchResults& out) {
    if (auto ok = validate_limit(limit); !ok) {
        return ok;
    }
    keys_.clear();
    if (auto ok = profiles_.range_search_keys(profile_ids, tags, properties, keys_); !ok) {
        return ok;
    }
    return collect(limit, profile_ids.size(), now, out);
}

Result<std::size_t> Store::remove(std::string_view profile_id,
                                  std::span<const std::string> unique_ids, Time now) {
    if (profiles_.find(profile_id) == nullptr) {
        return fail(Errc::unknown_profile, fmt::format("profile '{}' is not defined", profile_id));
    }
    return items_.remove(profile_id, unique_ids, now);
}

}  // namespace matchmesh::matching
