#include "matching/dump.hpp"

#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matching/profile.hpp"

namespace matchmesh::matching {
namespace {

std::string printable_key(std::string_view key) {
    std::string text;
    text.reserve(key.size() + 8);
    for (char c : key) {
        if (c == '\t') {
            text += "\\t";
        } else {
            text += c;
        }
    }
    return text;
}

std::int64_t remaining_seconds(const FoundItem& item, Time now) {
    const std::int64_t remaining_ms = (item.expires_at - now).count();
    return remaining_ms <= 0 ? 0 : (remaining_ms + 999) / 1000;
}

}  // namespace

void dump_text(const BucketStore& items, Time now, std::ostream& out) {
    items.for_each_bucket([&](const BucketView& bucket) {
        out << "=-=-=-=-=-=[ " << printable_key(bucket.key) << " ]=-=-=-=-=-=\n";
        std::size_t position = 0;
        items.for_each_item(bucket.key, [&](const FoundItem& item) {
            out << fmt::format(
                "{} => ID:{} Value:{} TTL:{} TTLRemaining:{} seconds Expired:{} "
                "Origin:{}\n",
                ++position, item.unique_id, value_to_text(*item.value), item.ttl.count(),
                remaining_seconds(item, now), item.expires_at <= now,
                item.origin.empty() ? "-" : item.origin);
        });
    });
}

nlohmann::json dump_json(const BucketStore& items, Time now) {
    auto buckets = nlohmann::json::array();
    items.for_each_bucket([&](const BucketView& bucket) {
        auto entries = nlohmann::json::array();
        items.for_each_item(bucket.key, [&](const FoundItem& item) {
            entries.push_back({{"id", item.unique_id},
                               {"value", value_to_json(*item.value)},
                               {"ttl_s", item.ttl.count()},
                               {"remaining_s", remaining_seconds(item, now)},
                               {"expired", item.expires_at <= now},
                               {"origin", item.origin}});
        });
        buckets.push_back({{"key", bucket.key},
                           {"hash", fmt::format("{:016x}", key_hash(bucket.key))},
                           {"items", std::move(entries)}});
    });
    return {{"items", items.size()}, {"buckets", std::move(buckets)}};
}

}  // namespace matchmesh::matching
