// Randomized differential test: the store against a deliberately naive model that keeps every
// item in one vector and answers each search by scanning it.
#include <doctest/doctest.h>

#include "support/seed.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>

#include "store_fixture.hpp"

using namespace matching_test;

namespace {

struct ModelItem {
    std::string profile;
    std::string unique_id;
    std::string tag;
    std::vector<std::int64_t> buckets;  // in property-name order
    Time expires_at;
    std::uint64_t order;  // position in its bucket: smaller is older
};

struct ModelResult {
    std::string profile;
    std::string unique_id;
    Time expires_at;
    friend bool operator==(const ModelResult&, const ModelResult&) = default;
};

std::int64_t naive_bucket(std::int64_t value, std::int64_t width) {
    return static_cast<std::int64_t>(
        std::floor(static_cast<double>(value) / static_cast<double>(width)));
}

class Model {
public:
    std::map<std::string, PropertyWidths> profiles;

    std::optional<Errc> add(const std::string& profile, const std::string& unique_id,
                            const std::string& tag, const Properties& props,
                            std::chrono::seconds ttl, Time now) {
        auto buckets = buckets_of(profile, props);
        if (!profiles.contains(profile)) {
            return Errc::unknown_profile;
        }
        if (ttl < 1s || ttl > 60s) {
            return Errc::invalid_ttl;
        }
        if (!buckets) {
            return Errc::invalid_properties;
        }
        auto existing = std::find_if(items_.begin(), items_.end(), [&](const ModelItem& item) {
            return item.profile == profile && item.unique_id == unique_id;
        });
        if (existing == items_.end()) {
            items_.push_back({profile, unique_id, tag, *buckets, now + ttl, next_order_++});
            return std::nullopt;
        }
        const bool stays =
            existing->expires_at > now && existing->tag == tag && existing->buckets == *buckets;
        if (!stays) {
            existing->order = next_order_++;
        }
        existing->tag = tag;
        existing->buckets = *buckets;
        existing->expires_at = now + ttl;
        return std::nullopt;
    }

    void remove(const std::string& profile, const std::vector<std::string>& ids) {
        std::erase_if(items_, [&](const ModelItem& item) {
            return item.profile == profile &&
                   std::find(ids.begin(), ids.end(), item.unique_id) != ids.end();
        });
    }

    std::variant<Errc, std::vector<ModelResult>> search(const std::vector<std::string>& profile_ids,
                                                        const std::vector<std::string>& tags,
                                                        const RangeProperties& props,
                                                        std::size_t limit, Time now) const {
        std::size_t ranges = 0;
        for (const auto& [name, values] : props) {
            ranges += values.size() > 1 ? 1 : 0;
        }
        for (const auto& id : profile_ids) {
            if (!profiles.contains(id)) {
                return Errc::unknown_profile;
            }
        }
        if (ranges > 2) {
            return Errc::too_many_range_properties;
        }
        std::vector<ModelResult> results;
        for (const auto& profile : profile_ids) {
            const auto& widths = profiles.at(profile);
            if (widths.size() != props.size() ||
                !std::equal(widths.begin(), widths.end(), props.begin(),
                            [](const auto& w, const auto& p) { return w.first == p.first; })) {
                return Errc::invalid_properties;
            }
            for (const auto& tag : tags) {
                for (const auto& combination : combinations(widths, props)) {
                    std::vector<const ModelItem*> bucket;
                    for (const auto& item : items_) {
                        if (item.profile == profile && item.tag == tag &&
                            item.buckets == combination && item.expires_at > now) {
                            bucket.push_back(&item);
                        }
                    }
                    std::sort(bucket.begin(), bucket.end(),
                              [](auto* a, auto* b) { return a->order < b->order; });
                    for (const ModelItem* item : bucket) {
                        const bool seen = std::any_of(results.begin(), results.end(), [&](auto& r) {
                            return r.unique_id == item->unique_id;
                        });
                        if (!seen && results.size() < limit) {
                            results.push_back({item->profile, item->unique_id, item->expires_at});
                        }
                    }
                }
            }
        }
        return results;
    }

    [[nodiscard]] std::size_t live(Time now) const {
        return static_cast<std::size_t>(
            std::count_if(items_.begin(), items_.end(),
                          [now](const ModelItem& i) { return i.expires_at > now; }));
    }

    [[nodiscard]] std::size_t present(Time now) const {
        // Expired items may linger until the end of the wheel tick they expired in.
        const Time cutoff = now - BucketStore::wheel_tick;
        return static_cast<std::size_t>(
            std::count_if(items_.begin(), items_.end(),
                          [cutoff](const ModelItem& i) { return i.expires_at > cutoff; }));
    }

private:
    std::optional<std::vector<std::int64_t>> buckets_of(const std::string& profile,
                                                        const Properties& props) const {
        auto found = profiles.find(profile);
        if (found == profiles.end() || found->second.size() != props.size()) {
            return std::nullopt;
        }
        std::vector<std::int64_t> buckets;
        for (const auto& [name, width] : found->second) {
            auto value = props.find(name);
            if (value == props.end()) {
                return std::nullopt;
            }
            buckets.push_back(naive_bucket(value->second, width));
        }
        return buckets;
    }

    // Every combination of the range values, the last property varying fastest.
    static std::vector<std::vector<std::int64_t>> combinations(const PropertyWidths& widths,
                                                               const RangeProperties& props) {
        std::vector<std::vector<std::int64_t>> all{{}};
        for (const auto& [name, width] : widths) {
            std::vector<std::vector<std::int64_t>> longer;
            for (const auto& prefix : all) {
                for (std::int64_t value : props.at(name)) {
                    auto next = prefix;
                    next.push_back(naive_bucket(value, width));
                    longer.push_back(std::move(next));
                }
            }
            all = std::move(longer);
        }
        return all;
    }

    std::vector<ModelItem> items_;
    std::uint64_t next_order_ = 0;
};

// One run: the store and the model side by side, driven by one seeded generator.
class Differential {
public:
    explicit Differential(std::uint64_t seed) : random_(seed), store_("node-a") {
        model_.profiles = {{"Rank10", {{"rank", 10}}},
                           {"Rank100", {{"rank", 100}}},
                           {"LevelLeague", {{"league", 5}, {"level", 1}}}};
        for (const auto& [id, widths] : model_.profiles) {
            REQUIRE(store_.define(id, widths).has_value());
        }
        now_ = time_from_ms(pick(0, 1'000'000));
    }

    // One random operation on both, and the check that they agree.
    void step() {
        const auto roll = pick(0, 99);
        const std::string& profile = std::next(model_.profiles.begin(), pick(0, 2))->first;
        if (roll < 35) {
            add(profile);
        } else if (roll < 60) {
            search(profile);
        } else if (roll < 75) {
            range_search(profile);
        } else if (roll < 83) {
            remove(profile);
        } else if (roll < 98) {
            now_ += std::chrono::milliseconds(pick(0, 3000));
        } else {
            store_.expire(now_);
            REQUIRE(store_.size() >= model_.live(now_));
            REQUIRE(store_.size() <= model_.present(now_));
        }
    }

    std::size_t searches = 0;
    std::size_t nonempty = 0;

private:
    std::int64_t pick(std::int64_t low, std::int64_t high) {
        return std::uniform_int_distribution<std::int64_t>(low, high)(random_);
    }
    const std::string& tag() { return tags_[static_cast<std::size_t>(pick(0, 2))]; }

    Properties random_props(const std::string& profile) {
        Properties props;
        if (profile == "LevelLeague") {
            props = {{"level", pick(-3, 3)}, {"league", pick(-10, 10)}};
        } else {
            props = {{"rank", pick(-60, 60)}};
        }
        if (pick(0, 99) == 0) {
            props["bogus"] = 1;  // occasionally wrong
        }
        return props;
    }

    std::vector<std::int64_t> random_values(std::int64_t low, std::int64_t high) {
        std::vector<std::int64_t> list(static_cast<std::size_t>(pick(1, 3)));
        for (auto& v : list) {
            v = pick(low, high);
        }
        return list;
    }

    RangeProperties random_range(bool level_league) {
        RangeProperties props;
        if (level_league) {
            props = {{"level", random_values(-3, 3)}, {"league", random_values(-10, 10)}};
            if (pick(0, 49) == 0) {
                props["third"] = {1, 2};  // three ranges: an error
            }
        } else {
            props = {{"rank", random_values(-60, 60)}};
        }
        return props;
    }

    void compare(const std::variant<Errc, std::vector<ModelResult>>& expected,
                 const Result<void>& actual) {
        ++searches;
        nonempty += results_.empty() ? 0 : 1;
        if (std::holds_alternative<Errc>(expected)) {
            REQUIRE_FALSE(actual.has_value());
            REQUIRE(actual.error().code == std::get<Errc>(expected));
            return;
        }
        REQUIRE(actual.has_value());
        std::vector<ModelResult> got;
        for (const auto& found : results_) {
            got.push_back(
                {std::string(found.profile_id), std::string(found.unique_id), found.expires_at});
        }
        REQUIRE(got == std::get<std::vector<ModelResult>>(expected));
    }

    void add(const std::string& profile) {
        const std::string id = "u" + std::to_string(pick(0, 59));
        const std::string& item_tag = tag();
        const auto props = random_props(profile);
        const auto ttl = std::chrono::seconds(pick(0, 99) < 2 ? pick(61, 70) : pick(1, 20));
        auto expected = model_.add(profile, id, item_tag, props, ttl, now_);
        auto actual = store_.add(profile, id, item_tag, props, {}, ttl, now_);
        REQUIRE(actual.has_value() == !expected.has_value());
        if (expected) {
            REQUIRE(actual.error().code == *expected);
        }
    }

    void search(const std::string& profile) {
        std::vector<std::string> profile_ids{profile};
        if (profile != "LevelLeague" && pick(0, 1) == 1) {
            profile_ids.push_back(profile == "Rank10" ? "Rank100" : "Rank10");
        }
        const auto props = random_props(profile);
        RangeProperties as_range;
        for (const auto& [name, value] : props) {
            as_range[name] = {value};
        }
        const std::string& search_tag = tag();
        const auto limit = static_cast<std::size_t>(pick(1, 30));
        auto expected = model_.search(profile_ids, {search_tag}, as_range, limit, now_);
        auto actual = store_.search(profile_ids, search_tag, props, limit, now_, results_);
        compare(expected, actual);
    }

    void range_search(const std::string& profile) {
        const std::vector<std::string> profile_ids{profile};
        std::vector<std::string> search_tags{tag()};
        if (pick(0, 1) == 1) {
            search_tags.push_back(tag());
        }
        if (search_tags.size() == 2 && search_tags[0] == search_tags[1]) {
            search_tags.pop_back();
        }
        const auto props = random_range(profile == "LevelLeague");
        const auto limit = static_cast<std::size_t>(pick(1, 30));
        auto expected = model_.search(profile_ids, search_tags, props, limit, now_);
        auto actual = store_.search_with_range_with_tags(profile_ids, search_tags, props, limit,
                                                         now_, results_);
        compare(expected, actual);
    }

    void remove(const std::string& profile) {
        std::vector<std::string> ids;
        for (auto n = pick(1, 4); n > 0; --n) {
            ids.push_back("u" + std::to_string(pick(0, 59)));
        }
        model_.remove(profile, ids);
        REQUIRE(store_.remove(profile, ids, now_).has_value());
    }

    std::mt19937_64 random_;
    Store store_;
    Model model_;
    const std::vector<std::string> tags_{"", "eu", "us"};
    Time now_{};
    SearchResults results_;
};

}  // namespace

TEST_CASE("matching/store: 150,000 random operations agree with a naive model") {
    const std::uint64_t seed = test_support::choose_seed("matching differential");
    INFO("seed ", seed, " (replay with MATCHMESH_SEED=", seed, ")");
    Differential run(seed);
    for (int step = 0; step < 150'000; ++step) {
        CAPTURE(step);
        run.step();
    }
    std::printf("matching differential: %zu searches, %zu with results\n", run.searches,
                run.nonempty);
    // The run must have exercised real matches, not only empty buckets.
    CHECK(run.searches > 50'000);
    CHECK(run.nonempty > run.searches / 3);
}
