#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "matching/profile.hpp"

using namespace matchmesh::matching;

TEST_CASE("matching/profile: bucket is floor(value / width) for every sign") {
    CHECK(bucket_of(0, 10) == 0);
    CHECK(bucket_of(9, 10) == 0);
    CHECK(bucket_of(10, 10) == 1);
    CHECK(bucket_of(-1, 10) == -1);
    CHECK(bucket_of(-10, 10) == -1);
    CHECK(bucket_of(-11, 10) == -2);
    CHECK(bucket_of(-7, 1) == -7);
    CHECK(bucket_of(7, 1) == 7);
    CHECK(bucket_of(INT64_MIN, 1) == INT64_MIN);
    CHECK(bucket_of(INT64_MIN, 3) == -3074457345618258603);
    CHECK(bucket_of(INT64_MAX, 2) == 4611686018427387903);
}

TEST_CASE("matching/profile: keys list profile, tag and buckets in property-name order") {
    ProfileRegistry profiles;
    REQUIRE(profiles.define("RankMatch", {{"rank", 10}, {"league", 1}}).has_value());
    auto key = profiles.create_key("RankMatch", "v100", {{"rank", 35}, {"league", -2}});
    REQUIRE(key.has_value());
    CHECK(*key == "RankMatch\tv100\t-2\t3");  // league before rank

    auto untagged = profiles.create_key("RankMatch", "", {{"rank", -1}, {"league", 0}});
    REQUIRE(untagged.has_value());
    CHECK(*untagged == "RankMatch\t\t0\t-1");
}

TEST_CASE("matching/profile: the key hash is XXH3-64 of the key and stable") {
    // Placement depends on this value: a change here moves every key in a running cluster.
    CHECK(key_hash("RankMatch\t\t3") == key_hash(std::string("RankMatch\t\t3")));
    CHECK(key_hash("") == 0x2d06800538d394c2ULL);
    CHECK(key_hash("RankMatch\t\t3") != key_hash("RankMatch\t\t4"));
}

TEST_CASE("matching/profile: invalid definitions are refused and change nothing") {
    ProfileRegistry profiles;
    auto refused = [&](std::string_view id, const PropertyWidths& widths, Errc code,
                       std::string_view text) {
        auto result = profiles.define(id, widths);
        REQUIRE_FALSE(result.has_value());
        CHECK(result.error().code == code);
        CAPTURE(result.error().message);
        CHECK(result.error().message.find(text) != std::string::npos);
    };
    refused("", {{"rank", 1}}, Errc::invalid_profile, "profile ID must not be empty");
    refused("Rank\tMatch", {{"rank", 1}}, Errc::invalid_profile, "contains a tab");
    refused(std::string(65, 'p'), {{"rank", 1}}, Errc::invalid_profile, "longer than 64");
    refused("RankMatch", {{"rank", 0}}, Errc::invalid_profile, "bucket width must be > 0, got 0");
    refused("RankMatch", {{"rank", -1}}, Errc::invalid_profile, "got -1");
    refused("RankMatch", {{"", 1}}, Errc::invalid_profile, "property name must not be empty");
    refused("RankMatch", {{"a\tb", 1}}, Errc::invalid_profile, "contains a tab");
    PropertyWidths nine;
    for (char c = 'a'; c < 'a' + 9; ++c) {
        nine[std::string(1, c)] = 1;
    }
    refused("Wide", nine, Errc::invalid_profile, "9 properties, at most 8");
    CHECK(profiles.size() == 0);

    REQUIRE(profiles.define("RankMatch", {{"rank", 1}}).has_value());
    CHECK(profiles.define("RankMatch", {{"rank", 1}}).has_value());  // same again: no-op
    refused("RankMatch", {{"rank", 2}}, Errc::profile_exists, "clear it first");
    CHECK(profiles.find("RankMatch")->properties.at(0).width == 1);
    CHECK(profiles.clear("RankMatch"));
    CHECK_FALSE(profiles.clear("RankMatch"));
    CHECK(profiles.define("RankMatch", {{"rank", 2}}).has_value());
}

TEST_CASE("matching/profile: define from JSON is all or nothing") {
    ProfileRegistry profiles;
    REQUIRE(profiles.define_from_json(R"({"RankMatch": {"rank": 1}, "LevelMatch": {"level": 10}})")
                .has_value());
    CHECK(profiles.size() == 2);
    CHECK(profiles.find("LevelMatch")->properties.at(0).width == 10);

    ProfileRegistry other;
    auto bad = other.define_from_json(R"({"A": {"x": 1}, "B": {"y": 0}})");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == Errc::invalid_profile);
    CHECK(other.size() == 0);  // A was not kept

    CHECK(other.define_from_json("{").error().message.find("not valid JSON") != std::string::npos);
    CHECK(other.define_from_json("[]").error().message.find("must be a JSON object") !=
          std::string::npos);
    CHECK(other.define_from_json(R"({"A": 3})").error().message ==
          "A: must be an object of "
          "property widths");
    CHECK(other.define_from_json(R"({"A": {"x": 1.5}})").error().message ==
          "A.x: bucket width must be an integer");
}

TEST_CASE("matching/profile: keys reject undefined profiles, bad tags and wrong properties") {
    ProfileRegistry profiles;
    REQUIRE(profiles.define("RankMatch", {{"rank", 10}, {"league", 1}}).has_value());
    auto error_of = [&](std::string_view profile, std::string_view tag, const Properties& props) {
        auto key = profiles.create_key(profile, tag, props);
        REQUIRE_FALSE(key.has_value());
        return key.error();
    };
    CHECK(error_of("Nope", "", {{"rank", 1}, {"league", 1}}).code == Errc::unknown_profile);
    CHECK(error_of("RankMatch", "a\tb", {{"rank", 1}, {"league", 1}}).code == Errc::invalid_tag);
    CHECK(error_of("RankMatch", std::string(65, 't'), {{"rank", 1}, {"league", 1}}).code ==
          Errc::invalid_tag);
    auto missing = error_of("RankMatch", "", {{"rank", 1}});
    CHECK(missing.code == Errc::invalid_properties);
    CHECK(missing.message == "property 'league' of profile 'RankMatch' is missing");
    auto extra = error_of("RankMatch", "", {{"rank", 1}, {"league", 1}, {"level", 2}});
    CHECK(extra.message == "profile 'RankMatch' has no property 'level'");
    auto early_extra = error_of("RankMatch", "", {{"aaa", 1}, {"rank", 1}, {"league", 1}});
    CHECK(early_extra.message == "profile 'RankMatch' has no property 'aaa'");
    CHECK(error_of("RankMatch", "", {}).code == Errc::invalid_properties);
}

TEST_CASE("matching/profile: range keys follow profile, tag and value order") {
    ProfileRegistry profiles;
    REQUIRE(profiles.define("A", {{"level", 1}, {"rank", 1}}).has_value());
    REQUIRE(profiles.define("B", {{"level", 1}, {"rank", 1}}).has_value());
    SearchKeys keys;
    const std::vector<std::string> ids{"B", "A"};
    const std::vector<std::string> tags{"x", "y"};
    REQUIRE(profiles.range_search_keys(ids, tags, {{"rank", {3, 1}}, {"level", {9, 8}}}, keys)
                .has_value());
    std::vector<std::string> texts;
    for (const auto& key : keys.keys()) {
        texts.push_back(key.text);
    }
    // level (first in name order) is the outer loop; values keep the caller's order.
    const std::vector<std::string> expected{
        "B\tx\t9\t3", "B\tx\t9\t1", "B\tx\t8\t3", "B\tx\t8\t1", "B\ty\t9\t3", "B\ty\t9\t1",
        "B\ty\t8\t3", "B\ty\t8\t1", "A\tx\t9\t3", "A\tx\t9\t1", "A\tx\t8\t3", "A\tx\t8\t1",
        "A\ty\t9\t3", "A\ty\t9\t1", "A\ty\t8\t3", "A\ty\t8\t1",
    };
    CHECK(texts == expected);
    CHECK(keys.keys()[0].profile_index == 0);
    CHECK(keys.keys()[15].profile_index == 1);
}

TEST_CASE("matching/profile: a key is placed by its group of neighbouring buckets") {
    ProfileRegistry single;  // groups of one bucket: the place is the key's own hash
    REQUIRE(single.define("RankMatch", {{"rank", 10}, {"league", 1}}).has_value());
    SearchKey key;
    REQUIRE(single.item_key("RankMatch", "v1", {{"rank", 35}, {"league", -2}}, key).has_value());
    CHECK(key.place == key.hash);

    ProfileRegistry grouped(4);
    REQUIRE(grouped.define("RankMatch", {{"rank", 10}, {"league", 1}}).has_value());
    const auto place = [&](std::int64_t rank, std::int64_t league, std::string_view tag = "v1") {
        SearchKey item;
        REQUIRE(grouped.item_key("RankMatch", tag, {{"rank", rank}, {"league", league}}, item)
                    .has_value());
        return item.place;
    };
    // Buckets 0..3 of each property share a place, and so do -4..-1 (groups floor too); the
    // place is the hash of the key written with the groups.
    CHECK(place(0, 0) == place(39, 3));
    CHECK(place(0, 0) == key_hash("RankMatch\tv1\t0\t0"));
    CHECK(place(-1, -1) == place(-40, -4));
    CHECK(place(-1, -1) == key_hash("RankMatch\tv1\t-1\t-1"));
    CHECK(place(39, 0) != place(40, 0));
    CHECK(place(0, 3) != place(0, 4));
    CHECK(place(0, 0) != place(0, 0, "v2"));

    // A range search's keys carry the same places as the items they look for.
    SearchKeys keys;
    const std::vector<std::string> ids{"RankMatch"};
    const std::vector<std::string> tags{"v1"};
    REQUIRE(grouped.range_search_keys(ids, tags, {{"rank", {35, 45}}, {"league", {2}}}, keys)
                .has_value());
    REQUIRE(keys.size() == 2);
    CHECK(keys.keys()[0].place == place(35, 2));
    CHECK(keys.keys()[1].place == place(45, 2));
    CHECK(keys.keys()[0].place == place(0, 0));
    CHECK(keys.keys()[1].place != keys.keys()[0].place);
}

TEST_CASE("matching/profile: a search or an item is checked without making its keys") {
    ProfileRegistry profiles;
    REQUIRE(profiles.define("A", {{"level", 1}, {"rank", 10}}).has_value());
    REQUIRE(profiles.define("B", {{"level", 2}, {"rank", 10}}).has_value());
    const std::vector<std::string> both{"A", "B"};
    const std::vector<std::string> tags{"x", "y"};
    // Checking and counting agrees with making the keys, for searches that work and that fail.
    auto agree = [&](std::span<const std::string> ids, std::span<const std::string> with_tags,
                     const RangeProperties& properties) {
        SearchKeys keys;
        const auto made = profiles.range_search_keys(ids, with_tags, properties, keys);
        const auto counted = profiles.count_range_search_keys(ids, with_tags, properties);
        REQUIRE(made.has_value() == counted.has_value());
        if (made) {
            CHECK(*counted == keys.size());
        } else {
            CHECK(counted.error().code == made.error().code);
            CHECK(counted.error().message == made.error().message);
        }
        return counted;
    };
    // Values in one bucket count once: rank 31 and 35 share bucket 3, and on B levels 2 and 3
    // share bucket 1; A gives 2 x 2 keys a tag, B 2 x 1.
    CHECK(agree(both, tags, {{"rank", {31, 35, 42}}, {"level", {2, 3}}}).value() == 12);
    CHECK(agree(std::span(both).first(1), std::span(tags).first(1), {{"rank", {1}}, {"level", {1}}})
              .value() == 1);
    CHECK_FALSE(agree({}, tags, {{"rank", {1}}}));
    CHECK_FALSE(agree(both, {}, {{"rank", {1}}}));
    const std::vector<std::string> unknown{"A", "C"};
    CHECK_FALSE(agree(unknown, tags, {{"rank", {1}}, {"level", {1}}}));
    const std::vector<std::string> twice{"B", "B"};
    CHECK_FALSE(agree(twice, tags, {{"rank", {1}}}));
    CHECK_FALSE(agree(both, tags, {{"rank", {1}}}));  // A's level is missing
    CHECK_FALSE(agree(both, tags, {{"rank", {}}, {"level", {1}}}));
    const std::vector<std::string> tabbed{"x\ty"};
    CHECK_FALSE(agree(both, tabbed, {{"rank", {1}}, {"level", {1}}}));
    std::vector<std::int64_t> wide;
    for (std::int64_t rank = 0; rank < 64; ++rank) {
        wide.push_back(rank * 10);
    }
    std::vector<std::int64_t> levels;
    for (std::int64_t level = 0; level < 64; ++level) {
        levels.push_back(level);
    }
    auto too_many = agree(both, tags, {{"rank", wide}, {"level", levels}});
    REQUIRE_FALSE(too_many);
    // With keys already listed, the limit counts them too.
    auto counted = profiles.count_range_search_keys(both, tags, {{"rank", {1}}, {"level", {1}}},
                                                    search_keys_max);
    REQUIRE_FALSE(counted);
    CHECK(counted.error().message.find("more than") != std::string::npos);

    // An item is checked as its key is made.
    auto item_agrees = [&](std::string_view profile, std::string_view tag,
                           const Properties& properties) {
        SearchKey key;
        const auto made = profiles.item_key(profile, tag, properties, key);
        const auto checked = profiles.check_item(profile, tag, properties);
        REQUIRE(made.has_value() == checked.has_value());
        if (!made) {
            CHECK(checked.error().message == made.error().message);
        }
        return checked.has_value();
    };
    CHECK(item_agrees("A", "x", {{"rank", 5}, {"level", 2}}));
    CHECK_FALSE(item_agrees("C", "x", {{"rank", 5}}));
    CHECK_FALSE(item_agrees("B", "x\ty", {{"rank", 5}}));
    CHECK_FALSE(item_agrees("A", "", {{"rank", 5}}));
    CHECK_FALSE(item_agrees("B", "", {{"rank", 5}, {"level", 2}, {"mode", 1}}));
}
