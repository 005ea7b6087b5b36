#include "matching/profile.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>
#include <xxhash.h>
#include <nlohmann/json.hpp>

#include "mesh/base/assert.hpp"

namespace matchmesh::matching {
namespace {

using ValueSpans = std::array<std::span<const std::int64_t>, profile_properties_max>;

Result<void> validate_name(std::string_view what, std::string_view name, std::size_t bytes_max) {
    if (name.empty()) {
        return fail(Errc::invalid_profile, fmt::format("{} must not be empty", what));
    }
    if (name.size() > bytes_max) {
        return fail(Errc::invalid_profile,
                    fmt::format("{} '{}' is longer than {} bytes", what, name, bytes_max));
    }
    if (name.find('\t') != std::string_view::npos) {
        return fail(Errc::invalid_profile, fmt::format("{} '{}' contains a tab", what, name));
    }
    return {};
}

Result<Profile> make_profile(std::string_view profile_id, const PropertyWidths& widths) {
    if (auto ok = validate_name("profile ID", profile_id, profile_id_bytes_max); !ok) {
        return std::unexpected(ok.error());
    }
    if (widths.size() > profile_properties_max) {
        return fail(Errc::invalid_profile,
                    fmt::format("profile '{}' has {} properties, at most {} allowed", profile_id,
                                widths.size(), profile_properties_max));
    }
    Profile profile{std::string(profile_id), {}};
    for (const auto& [name, width] : widths) {
        if (auto ok = validate_name("property name", name, property_name_bytes_max); !ok) {
            return std::unexpected(ok.error());
        }
        if (width <= 0) {
            return fail(Errc::invalid_profile,
                        fmt::format("profile '{}' property '{}': bucket width must be > 0, got {}",
                                    profile_id, name, width));
        }
        profile.properties.push_back({name, width});
    }
    return profile;
}

bool same_properties(const Profile& a, const Profile& b) {
    return std::equal(
        a.properties.begin(), a.properties.end(), b.properties.begin(), b.properties.end(),
        [](const auto& x, const auto& y) { return x.name == y.name && x.width == y.width; });
}

// Matches the caller's properties to the profile's, name by name; both are sorted by name.
template <typename Map, typename ToSpan>
Result<void> collect_values(const Profile& profile, const Map& properties, ToSpan to_span,
                            ValueSpans& out) {
    auto given = properties.begin();
    for (std::size_t i = 0; i < profile.properties.size(); ++i) {
        const auto& name = profile.properties[i].name;
        if (given == properties.end() || given->first != name) {
            if (given != properties.end() && given->first < name) {
                break;  // an unknown name comes first: reported below
            }
            return fail(Errc::invalid_properties,
                        fmt::format("property '{}' of profile '{}' is missing", name, profile.id));
        }
        out[i] = to_span(given->second);
        ++given;
    }
    if (given != properties.end()) {
        return fail(Errc::invalid_properties,
                    fmt::format("profile '{}' has no property '{}'", profile.id, given->first));
    }
    return {};
}

void append_number(std::string& out, std::int64_t number) {
    std::array<char, 24> digits{};
    auto [end, error] = std::to_chars(digits.data(), digits.data() + digits.size(), number);
    MM_ASSERT(error == std::errc());
    out.append(digits.data(), end);
}

// Writes the key of one bucket combination: buckets[i] is the bucket of property i.
void write_key(std::string& out, const Profile& profile, std::string_view tag,
               std::span<const std::int64_t> buckets) {
    out.clear();
    out.append(profile.id);
    out.push_back('\t');
    out.append(tag);
    for (std::int64_t bucket : buckets) {
        out.push_back('\t');
        append_number(out, bucket);
    }
}

// The hash of the placement group of the key write_key() gives for `buckets`: the same text with
// each bucket divided by `group`. Written on the stack, as it is computed for every key.
std::uint64_t place_of(const Profile& profile, std::string_view tag,
                       std::span<const std::int64_t> buckets, std::int64_t group,
                       std::uint64_t key_hash) {
    if (group == 1) {
        return key_hash;
    }
    constexpr std::size_t number_bytes_max = 20;  // "-9223372036854775808"
    std::array<char, profile_id_bytes_max + 1 + tag_bytes_max +
                         profile_properties_max*(1 + number_bytes_max)>
        text{};
    char* end = std::copy(profile.id.begin(), profile.id.end(), text.data());
    *end++ = '\t';
    end = std::copy(tag.begin(), tag.end(), end);
    for (std::int64_t bucket : buckets) {
        *end++ = '\t';
        auto written = std::to_chars(end, text.data() + text.size(), bucket_of(bucket, group));
        MM_ASSERT(written.ec == std::errc());
        end = written.ptr;
    }
    return XXH3_64bits(text.data(), static_cast<std::size_t>(end - text.data()));
}

// The profile at `index` of a search's profile list: defined, and not listed before.
Result<const Profile*> resolve_profile(const ProfileRegistry& registry,
                                       std::span<const std::string> profile_ids,
                                       std::size_t index) {
    const std::string& id = profile_ids[index];
    const Profile* profile = registry.find(id);
    if (profile == nullptr) {
        return fail(Errc::unknown_profile, fmt::format("profile '{}' is not defined", id));
    }
    if (std::find(profile_ids.begin(), profile_ids.begin() + static_cast<std::ptrdiff_t>(index),
                  id) != profile_ids.begin() + static_cast<std::ptrdiff_t>(index)) {
        return fail(Errc::unknown_profile, fmt::format("profile '{}' is listed twice", id));
    }
    return profile;
}

// How collect_values() sees an item's one value and a range's list of values.
std::span<const std::int64_t> single_value(const std::int64_t& value) {
    return {&value, 1};
}
std::span<const std::int64_t> whole_list(const std::vector<std::int64_t>& list) {
    return list;
}

Result<void> write_exact_key(const Profile& profile, std::string_view tag,
                             const Properties& properties, std::int64_t group, SearchKey& out) {
    ValueSpans values;
    if (auto ok = collect_values(profile, properties, single_value, values); !ok) {
        return ok;
    }
    std::array<std::int64_t, profile_properties_max> buckets{};
    for (std::size_t i = 0; i < profile.properties.size(); ++i) {
        buckets[i] = bucket_of(values[i].front(), profile.properties[i].width);
    }
    write_key(out.text, profile, tag, std::span(buckets.data(), profile.properties.size()));
    out.hash = key_hash(out.text);
    out.place = place_of(profile, tag, std::span(buckets.data(), profile.properties.size()), group,
                         out.hash);
    out.profile_index = 0;
    return {};
}

Result<void> validate_ranges(const RangeProperties& properties) {
    std::size_t range_count = 0;
    for (const auto& [name, values] : properties) {
        if (values.empty()) {
            return fail(Errc::invalid_properties, fmt::format("property '{}' has no values", name));
        }
        if (values.size() > range_values_max) {
            return fail(Errc::invalid_properties,
                        fmt::format("property '{}' has {} values, at most {} allowed", name,
                                    values.size(), range_values_max));
        }
        if (values.size() > 1) {
            ++range_count;
        }
    }
    if (range_count > range_properties_max) {
        return fail(Errc::too_many_range_properties,
                    fmt::format("{} properties have several values, at most {} may", range_count,
                                range_properties_max));
    }
    return {};
}

}  // namespace

std::int64_t bucket_of(std::int64_t value, std::int64_t width) {
    MM_ASSERT(width > 0);
    std::int64_t quotient = value / width;
    if (value % width != 0 && value < 0) {
        --quotient;  // C++ division truncates toward zero; buckets floor
    }
    return quotient;
}

std::uint64_t key_hash(std::string_view key) {
    return XXH3_64bits(key.data(), key.size());
}

SearchKey& SearchKeys::push() {
    if (size_ == keys_.size()) {
        keys_.emplace_back();
    }
    return keys_[size_++];
}

Result<void> validate_tag(std::string_view tag) {
    if (tag.size() > tag_bytes_max) {
        return fail(Errc::invalid_tag,
                    fmt::format("tag '{}' is longer than {} bytes", tag, tag_bytes_max));
    }
    if (tag.find('\t') != std::string_view::npos) {
        return fail(Errc::invalid_tag, fmt::format("tag '{}' contains a tab", tag));
    }
    return {};
}

ProfileRegistry::ProfileRegistry(std::int64_t placement_group) : placement_group_(placement_group) {
    MM_ASSERT(placement_group >= 1 && placement_group <= placement_group_max);
}

Result<void> ProfileRegistry::define(std::string_view profile_id, const PropertyWidths& widths) {
    auto profile = make_profile(profile_id, widths);
    if (!profile) {
        return std::unexpected(profile.error());
    }
    if (const Profile* existing = find(profile_id)) {
        if (same_properties(*existing, *profile)) {
            return {};
        }
        return fail(Errc::profile_exists,
                    fmt::format("profile '{}' is already defined with other properties; clear it "
                                "first",
                                profile_id));
    }
    if (profiles_.size() >= profiles_max) {
        return fail(Errc::invalid_profile, fmt::format("cannot define '{}': at most {} profiles",
                                                       profile_id, profiles_max));
    }
    profiles_.emplace(profile->id, std::move(*profile));
    return {};
}

Result<void> ProfileRegistry::define_from_json(std::string_view json_text) {
    auto document = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) {
        return fail(Errc::invalid_profile, "profile definitions are not valid JSON");
    }
    if (!document.is_object()) {
        return fail(Errc::invalid_profile, "profile definitions must be a JSON object");
    }
    ProfileRegistry staged = *this;  // all or nothing
    for (const auto& [profile_id, properties] : document.items()) {
        if (!properties.is_object()) {
            return fail(Errc::invalid_profile,
                        fmt::format("{}: must be an object of property widths", profile_id));
        }
        PropertyWidths widths;
        for (const auto& [name, width] : properties.items()) {
            if (!width.is_number_integer()) {
                return fail(
                    Errc::invalid_profile,
                    fmt::format("{}.{}: bucket width must be an integer", profile_id, name));
            }
            widths[name] = width.get<std::int64_t>();
        }
        if (auto ok = staged.define(profile_id, widths); !ok) {
            return ok;
        }
    }
    *this = std::move(staged);
    return {};
}

bool ProfileRegistry::clear(std::string_view profile_id) {
    auto found = profiles_.find(profile_id);
    if (found == profiles_.end()) {
        return false;
    }
    profiles_.erase(found);
    return true;
}

const Profile* ProfileRegistry::find(std::string_view profile_id) const {
    auto found = profiles_.find(profile_id);
    return found == profiles_.end() ? nullptr : &found->second;
}

Result<std::string> ProfileRegistry::create_key(std::string_view profile_id, std::string_view tag,
                                                const Properties& properties) const {
    SearchKey key;
    if (auto ok = item_key(profile_id, tag, properties, key); !ok) {
        return std::unexpected(ok.error());
    }
    return std::move(key.text);
}

Result<const Profile*> ProfileRegistry::item_profile(std::string_view profile_id,
                                                     std::string_view tag) const {
    const Profile* profile = find(profile_id);
    if (profile == nullptr) {
        return fail(Errc::unknown_profile, fmt::format("profile '{}' is not defined", profile_id));
    }
    if (auto ok = validate_tag(tag); !ok) {
        return std::unexpected(ok.error());
    }
    return profile;
}

Result<void> ProfileRegistry::item_key(std::string_view profile_id, std::string_view tag,
                                       const Properties& properties, SearchKey& out) const {
    auto profile = item_profile(profile_id, tag);
    if (!profile) {
        return std::unexpected(profile.error());
    }
    return write_exact_key(**profile, tag, properties, placement_group_, out);
}

Result<void> ProfileRegistry::check_item(std::string_view profile_id, std::string_view tag,
                                         const Properties& properties) const {
    auto profile = item_profile(profile_id, tag);
    if (!profile) {
        return std::unexpected(profile.error());
    }
    ValueSpans values;
    return collect_values(**profile, properties, single_value, values);
}

Result<void> ProfileRegistry::search_keys(std::span<const std::string> profile_ids,
                                          std::string_view tag, const Properties& properties,
                                          SearchKeys& out) const {
    if (profile_ids.empty()) {
        return fail(Errc::unknown_profile, "no profile IDs given");
    }
    if (auto ok = validate_tag(tag); !ok) {
        return ok;
    }
    for (std::size_t p = 0; p < profile_ids.size(); ++p) {
        auto profile = resolve_profile(*this, profile_ids, p);
        if (!profile) {
            return std::unexpected(profile.error());
        }
        SearchKey& key = out.push();
        if (auto ok = write_exact_key(**profile, tag, properties, placement_group_, key); !ok) {
            return ok;
        }
        key.profile_index = p;
    }
    return {};
}

template <typename Each>
Result<std::size_t> ProfileRegistry::plan_range_search(std::span<const std::string> profile_ids,
                                                       std::span<const std::string> tags,
                                                       const RangeProperties& properties,
                                                       std::size_t keys_before, BucketLists& lists,
                                                       Each each) const {
    if (profile_ids.empty()) {
        return fail(Errc::unknown_profile, "no profile IDs given");
    }
    if (tags.empty()) {
        return fail(Errc::invalid_tag, "no tags given (use an empty tag for none)");
    }
    for (const auto& tag : tags) {
        if (auto ok = validate_tag(tag); !ok) {
            return std::unexpected(ok.error());
        }
    }
    if (auto ok = validate_ranges(properties); !ok) {
        return std::unexpected(ok.error());
    }
    std::size_t keys = 0;
    for (std::size_t p = 0; p < profile_ids.size(); ++p) {
        auto resolved = resolve_profile(*this, profile_ids, p);
        if (!resolved) {
            return std::unexpected(resolved.error());
        }
        const Profile& profile = **resolved;
        ValueSpans values;
        if (auto ok = collect_values(profile, properties, whole_list, values); !ok) {
            return std::unexpected(ok.error());
        }
        // Values that fall in one bucket would visit it twice: keep each bucket's first value.
        std::size_t combinations = 1;
        for (std::size_t i = 0; i < profile.properties.size(); ++i) {
            lists[i].clear();
            for (std::int64_t value : values[i]) {
                const std::int64_t bucket = bucket_of(value, profile.properties[i].width);
                if (std::find(lists[i].begin(), lists[i].end(), bucket) == lists[i].end()) {
                    lists[i].push_back(bucket);
                }
            }
            combinations *= lists[i].size();
        }
        keys += combinations * tags.size();
        if (keys_before + keys > search_keys_max) {
            return fail(Errc::invalid_properties,
                        fmt::format("search would visit more than {} buckets", search_keys_max));
        }
        each(p, profile, combinations);
    }
    return keys;
}

Result<std::size_t> ProfileRegistry::count_range_search_keys(
    std::span<const std::string> profile_ids, std::span<const std::string> tags,
    const RangeProperties& properties, std::size_t keys_before) const {
    thread_local BucketLists lists;  // kept for their capacity
    return plan_range_search(profile_ids, tags, properties, keys_before, lists,
                             [](std::size_t, const Profile&, std::size_t) {});
}

Result<void> ProfileRegistry::range_search_keys(std::span<const std::string> profile_ids,
                                                std::span<const std::string> tags,
                                                const RangeProperties& properties,
                                                SearchKeys& out) const {
    // Each profile's keys are written once it is checked (a refused search leaves those of the
    // profiles before it).
    const BucketLists& lists = out.bucket_lists_;
    auto write = [&](std::size_t p, const Profile& profile, std::size_t combinations) {
        const std::size_t count = profile.properties.size();
        for (const auto& tag : tags) {
            // An odometer over the bucket lists; the last property turns fastest.
            std::array<std::size_t, profile_properties_max> indexes{};
            std::array<std::int64_t, profile_properties_max> buckets{};
            for (std::size_t n = 0; n < combinations; ++n) {
                for (std::size_t i = 0; i < count; ++i) {
                    buckets[i] = lists[i][indexes[i]];
                }
                SearchKey& key = out.push();
                write_key(key.text, profile, tag, std::span(buckets.data(), count));
                key.hash = key_hash(key.text);
                key.place = place_of(profile, tag, std::span(buckets.data(), count),
                                     placement_group_, key.hash);
                key.profile_index = p;
                for (std::size_t i = count; i-- > 0;) {
                    if (++indexes[i] < lists[i].size()) {
                        break;
                    }
                    indexes[i] = 0;
                }
            }
        }
    };
    auto planned =
        plan_range_search(profile_ids, tags, properties, out.size(), out.bucket_lists_, write);
    if (!planned) {
        return std::unexpected(planned.error());
    }
    return {};
}

}  // namespace matchmesh::matching
