#include <doctest/doctest.h>

#include "store_fixture.hpp"

using namespace matching_test;
using Ids = std::vector<std::string>;

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/store: add errors name the bad input and change nothing") {
    auto add_error = [&](std::string_view profile, std::string_view id, const Properties& props,
                         std::chrono::seconds ttl, ValueMap value = {}) {
        auto result = store.add(profile, id, "", props, std::move(value), ttl, now);
        REQUIRE_FALSE(result.has_value());
        return result.error();
    };
    add_rank("keep", 5);
    CHECK(add_error("Nope", "u1", {{"rank", 5}}, 30s).code == Errc::unknown_profile);
    CHECK(add_error("RankMatch", "", {{"rank", 5}}, 30s).code == Errc::invalid_unique_id);
    CHECK(add_error("RankMatch", std::string(129, 'u'), {{"rank", 5}}, 30s).code ==
          Errc::invalid_unique_id);
    CHECK(add_error("RankMatch", "u1", {}, 30s).code == Errc::invalid_properties);
    CHECK(add_error("RankMatch", "u1", {{"rank", 5}, {"level", 1}}, 30s).code ==
          Errc::invalid_properties);
    CHECK(add_error("RankMatch", "u1", {{"rnak", 5}}, 30s).message ==
          "property 'rank' of profile 'RankMatch' is missing");
    auto zero_ttl = add_error("RankMatch", "u1", {{"rank", 5}}, 0s);
    CHECK(zero_ttl.code == Errc::invalid_ttl);
    CHECK(zero_ttl.message == "TTL must be 1..60 s, got 0 s");
    CHECK(add_error("RankMatch", "u1", {{"rank", 5}}, 61s).code == Errc::invalid_ttl);
    ValueMap huge;
    for (int i = 0; i < 33; ++i) {
        huge["k" + std::to_string(i)] = std::int64_t{i};
    }
    CHECK(add_error("RankMatch", "u1", {{"rank", 5}}, 30s, huge).code == Errc::invalid_value);
    CHECK(
        add_error("RankMatch", "u1", {{"rank", 5}}, 30s, {{"blob", std::string(5000, 'x')}}).code ==
        Errc::invalid_value);
    CHECK(add_error("RankMatch", "keep", {{"rank", 90}}, 0s).code == Errc::invalid_ttl);

    CHECK(store.size() == 1);
    CHECK(search_rank(5) == Ids{"keep"});  // the refused re-add did not move it
    CHECK(store.add("RankMatch", "u1", "", {{"rank", 5}}, {}, 1s, now).has_value());
    CHECK(store.add("RankMatch", "u2", "", {{"rank", 5}}, {}, 60s, now).has_value());
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: search errors name the bad input") {
    auto search_error = [&](const std::vector<std::string>& profiles, std::string_view tag,
                            const Properties& props, std::size_t limit) {
        auto result = store.search(profiles, tag, props, limit, now, results);
        REQUIRE_FALSE(result.has_value());
        return result.error();
    };
    CHECK(search_error({}, "", {{"rank", 1}}, 10).code == Errc::unknown_profile);
    CHECK(search_error({"Nope"}, "", {{"rank", 1}}, 10).message == "profile 'Nope' is not defined");
    CHECK(search_error({"RankMatch", "RankMatch"}, "", {{"rank", 1}}, 10).message ==
          "profile 'RankMatch' is listed twice");
    CHECK(search_error({"RankMatch"}, "", {{"level", 1}}, 10).code == Errc::invalid_properties);
    CHECK(search_error({"RankMatch"}, "t\t", {{"rank", 1}}, 10).code == Errc::invalid_tag);
    CHECK(search_error({"RankMatch"}, "", {{"rank", 1}}, 0).code == Errc::invalid_limit);
    CHECK(search_error({"RankMatch"}, "", {{"rank", 1}}, 1001).message ==
          "limit must be 1..1000, got 1001");
    // Two profiles with different properties: the same properties cannot fit both.
    CHECK(search_error({"RankMatch", "LevelMatch"}, "", {{"rank", 1}}, 10).message ==
          "property 'league' of profile 'LevelMatch' is missing");
}

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/store: range search errors: more than two ranges, empty "
                  "lists, unknown properties") {
    REQUIRE(store.define("Three", {{"a", 1}, {"b", 1}, {"c", 1}}).has_value());
    auto range_error = [&](const std::string& profile, const RangeProperties& props) {
        const std::vector<std::string> profiles{profile};
        auto result = store.search_with_range(profiles, "", props, 10, now, results);
        REQUIRE_FALSE(result.has_value());
        return result.error();
    };
    auto three = range_error("Three", {{"a", {1, 2}}, {"b", {1, 2}}, {"c", {1, 2}}});
    CHECK(three.code == Errc::too_many_range_properties);
    CHECK(three.message == "3 properties have several values, at most 2 may");
    CHECK(range_error("Three", {{"a", {}}, {"b", {1}}, {"c", {1}}}).message ==
          "property 'a' has no values");
    CHECK(range_error("RankMatch", {{"rank", {1}}, {"level", {1, 2}}}).message ==
          "profile 'RankMatch' has no property 'level'");
    CHECK(range_error("RankMatch", {{"rank", std::vector<std::int64_t>(257, 1)}}).code ==
          Errc::invalid_properties);
    const std::vector<std::string> profiles{"RankMatch"};
    auto no_tags =
        store.search_with_range_with_tags(profiles, {}, {{"rank", {1}}}, 10, now, results);
    REQUIRE_FALSE(no_tags.has_value());
    CHECK(no_tags.error().code == Errc::invalid_tag);

    // Two ranges and any number of single values is fine.
    const std::vector<std::string> three_profile{"Three"};
    CHECK(store
              .search_with_range(three_profile, "", {{"a", {1, 2}}, {"b", {1, 2}}, {"c", {1}}}, 10,
                                 now, results)
              .has_value());
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: exact search finds the bucket, oldest first") {
    add_rank("a", 31);
    now += 10ms;
    add_rank("b", 39);
    now += 10ms;
    add_rank("c", 40);  // next bucket
    add_rank("d", 30);
    CHECK(search_rank(35) == Ids{"a", "b", "d"});
    CHECK(search_rank(40) == Ids{"c"});
    CHECK(search_rank(29).empty());
    CHECK(search_rank(35, "", 2) == Ids{"a", "b"});  // limit
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: buckets at negative values and width 1") {
    add_rank("minus-one", -1);
    add_rank("minus-ten", -10);
    add_rank("minus-eleven", -11);
    add_rank("zero", 0);
    CHECK(search_rank(-5) == Ids{"minus-one", "minus-ten"});
    CHECK(search_rank(-20) == Ids{"minus-eleven"});
    CHECK(search_rank(9) == Ids{"zero"});

    REQUIRE(store.add("LevelMatch", "l-1", "", {{"level", -1}, {"league", 0}}, {}, 30s, now)
                .has_value());
    REQUIRE(
        store.add("LevelMatch", "l0", "", {{"level", 0}, {"league", 0}}, {}, 30s, now).has_value());
    const std::vector<std::string> level{"LevelMatch"};
    REQUIRE(store.search(level, "", {{"level", -1}, {"league", 0}}, 10, now, results).has_value());
    CHECK(ids_of(results) == Ids{"l-1"});
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: tags isolate items") {
    add_rank("eu", 5, "eu");
    add_rank("us", 5, "us");
    add_rank("none", 5);
    CHECK(search_rank(5, "eu") == Ids{"eu"});
    CHECK(search_rank(5, "us") == Ids{"us"});
    CHECK(search_rank(5) == Ids{"none"});

    const std::vector<std::string> profiles{"RankMatch"};
    const std::vector<std::string> tags{"us", "eu"};
    REQUIRE(store.search_with_range_with_tags(profiles, tags, {{"rank", {5}}}, 10, now, results)
                .has_value());
    CHECK(ids_of(results) == Ids{"us", "eu"});
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: range search keeps the given value order") {
    add_rank("r10", 10);
    add_rank("r20", 20);
    add_rank("r30", 30);
    CHECK(range_rank({30, 10, 20}) == Ids{"r30", "r10", "r20"});
    CHECK(range_rank({20, 30, 10}, 2) == Ids{"r20", "r30"});
    CHECK(range_rank({15, 12}) == Ids{"r10"});  // both values fall in one bucket: no repeat

    REQUIRE(store.define("Three", {{"a", 1}, {"b", 1}, {"c", 1}}).has_value());
    for (std::int64_t a : {1, 2}) {
        for (std::int64_t b : {1, 2}) {
            const std::string id = "a" + std::to_string(a) + "b" + std::to_string(b);
            REQUIRE(store.add("Three", id, "", {{"a", a}, {"b", b}, {"c", 7}}, {}, 30s, now)
                        .has_value());
        }
    }
    const std::vector<std::string> profiles{"Three"};
    REQUIRE(store
                .search_with_range(profiles, "", {{"a", {2, 1}}, {"b", {1, 2}}, {"c", {7}}}, 10,
                                   now, results)
                .has_value());
    CHECK(ids_of(results) == Ids{"a2b1", "a2b2", "a1b1", "a1b2"});
}

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/store: several profiles are searched in list order "
                  "and a unique ID is returned once") {
    REQUIRE(store.define("RankMatch2", {{"rank", 100}}).has_value());
    add_rank("shared", 5);
    add_rank("only-rank", 5);
    REQUIRE(store.add("RankMatch2", "shared", "", {{"rank", 5}}, {}, 30s, now).has_value());
    REQUIRE(store.add("RankMatch2", "only-rank2", "", {{"rank", 50}}, {}, 30s, now).has_value());
    const std::vector<std::string> profiles{"RankMatch2", "RankMatch"};
    REQUIRE(store.search(profiles, "", {{"rank", 5}}, 10, now, results).has_value());
    CHECK(ids_of(results) == Ids{"shared", "only-rank2", "only-rank"});
    CHECK(results[0].profile_id == "RankMatch2");
    CHECK(results[2].profile_id == "RankMatch");
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: re-adding replaces the item and its TTL") {
    add_rank("a", 5);
    add_rank("b", 5);
    REQUIRE(store.add("RankMatch", "a", "", {{"rank", 6}}, {{"room", std::string("r2")}}, 60s, now)
                .has_value());
    CHECK(store.size() == 2);
    CHECK(search_rank(5) == Ids{"a", "b"});  // same bucket: keeps its place
    CHECK(std::get<std::string>(results[0].value->at("room")) == "r2");
    CHECK(results[0].expires_at == now + 60s);

    add_rank("a", 95);  // another bucket: moves there
    CHECK(search_rank(5) == Ids{"b"});
    CHECK(search_rank(95) == Ids{"a"});
    CHECK(store.size() == 2);
    CHECK(store.items().bucket_count() == 2);

    add_rank("c", 95);
    add_rank("a", 5);  // back again: goes to the end of its new bucket
    CHECK(search_rank(5) == Ids{"b", "a"});
    CHECK(search_rank(95) == Ids{"c"});

    add_rank("a", 5, "tagged");  // a tag change moves it too
    CHECK(search_rank(5) == Ids{"b"});
    CHECK(search_rank(5, "tagged") == Ids{"a"});
}

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/store: the same unique ID under two profiles is two items") {
    add_rank("u", 5);
    REQUIRE(
        store.add("LevelMatch", "u", "", {{"level", 1}, {"league", 1}}, {}, 30s, now).has_value());
    CHECK(store.size() == 2);
    const std::vector<std::string> ids{"u"};
    auto removed = store.remove("RankMatch", ids, now);
    REQUIRE(removed.has_value());
    CHECK(*removed == 1);
    CHECK(store.size() == 1);
    CHECK(search_rank(5).empty());
}

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/store: IDs short and long keep their text through moves and removes") {
    // Up to 15 characters an ID is kept in the item itself, longer ones apart: both kinds,
    // through a bucket that grows (its items move) and a re-add that moves one to another bucket.
    const Ids ids{"a", std::string(15, 's'), std::string(16, 'l'), std::string(128, 'm')};
    for (const std::string& id : ids) {
        add_rank(id, 5);
    }
    Ids filler;
    for (int i = 0; i < 200; ++i) {
        filler.push_back("filler-" + std::to_string(i) + std::string(i % 20, 'x'));
        add_rank(filler.back(), 5);
    }
    auto found = search_rank(5, "", 1000);
    REQUIRE(found.size() == ids.size() + filler.size());
    CHECK(Ids(found.begin(), found.begin() + 4) == ids);
    CHECK(Ids(found.begin() + 4, found.end()) == filler);

    add_rank(ids[3], 95);
    CHECK(search_rank(95) == Ids{ids[3]});
    auto removed = store.remove("RankMatch", Ids{ids[1], ids[2], ids[3]}, now);
    REQUIRE(removed.has_value());
    CHECK(*removed == 3);
    CHECK(search_rank(95).empty());
    found = search_rank(5, "", 2);
    CHECK(found == Ids{"a", filler[0]});

    // Removing most of the bucket compacts its array: the items left move down, IDs and all.
    Ids doomed;
    Ids kept{"a"};
    for (std::size_t i = 0; i < filler.size(); ++i) {
        (i % 10 == 3 ? kept : doomed).push_back(filler[i]);
    }
    removed = store.remove("RankMatch", doomed, now);
    REQUIRE(removed.has_value());
    CHECK(*removed == doomed.size());
    CHECK(search_rank(5, "", 1000) == kept);
    add_rank(std::string(40, 'n'), 5);
    kept.push_back(std::string(40, 'n'));
    CHECK(search_rank(5, "", 1000) == kept);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: remove takes items out wherever they are") {
    add_rank("a", 5);
    add_rank("b", 55);
    add_rank("c", 5, "eu");
    const std::vector<std::string> doomed{"a", "c", "never-added"};
    auto removed = store.remove("RankMatch", doomed, now);
    REQUIRE(removed.has_value());
    CHECK(*removed == 2);
    CHECK(store.size() == 1);
    CHECK(search_rank(5).empty());
    CHECK(search_rank(5, "eu").empty());
    CHECK(search_rank(55) == Ids{"b"});
    CHECK(store.items().bucket_count() == 1);  // empty buckets are freed

    auto unknown = store.remove("Nope", doomed, now);
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().code == Errc::unknown_profile);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: clearing a definition removes its items") {
    add_rank("a", 5);
    REQUIRE(
        store.add("LevelMatch", "b", "", {{"level", 1}, {"league", 1}}, {}, 30s, now).has_value());
    CHECK(store.clear_definition("RankMatch"));
    CHECK(store.size() == 1);
    CHECK_FALSE(store.clear_definition("RankMatch"));
    const std::vector<std::string> profiles{"RankMatch"};
    CHECK(store.search(profiles, "", {{"rank", 5}}, 10, now, results).error().code ==
          Errc::unknown_profile);
    REQUIRE(store.define("RankMatch", {{"rank", 10}}).has_value());
    CHECK(search_rank(5).empty());
}

TEST_CASE_FIXTURE(StoreFixture, "matching/store: items record their origin and values") {
    REQUIRE(store
                .add("RankMatch", "a", "", {{"rank", 5}},
                     {{"room", std::string("r1")},
                      {"max", std::int64_t{4}},
                      {"ready", true},
                      {"score", 1.5},
                      {"blob", Bytes{{1, 2}}}},
                     30s, now)
                .has_value());
    CHECK(search_rank(5) == Ids{"a"});
    CHECK(results[0].origin == "node-a");
    CHECK(results[0].ttl == 30s);
    const ValueMap& value = *results[0].value;
    CHECK(std::get<std::int64_t>(value.at("max")) == 4);
    CHECK(std::get<bool>(value.at("ready")));
    CHECK(std::get<double>(value.at("score")) == 1.5);
    CHECK(std::get<Bytes>(value.at("blob")).data == std::vector<std::uint8_t>{1, 2});
}
