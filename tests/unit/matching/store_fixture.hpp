#pragma once
// Helpers shared by the matching store tests.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "matching/store.hpp"

namespace matching_test {

using namespace matchmesh::matching;
using matchmesh::Time;
using matchmesh::time_from_ms;
using namespace std::chrono_literals;

inline std::vector<std::string> ids_of(const SearchResults& results) {
    std::vector<std::string> ids;
    for (const auto& found : results) {
        ids.emplace_back(found.unique_id);
    }
    return ids;
}

// A store with RankMatch {rank: 10} and LevelMatch {level: 1, league: 1}.
struct StoreFixture {
    Store store{"node-a"};
    Time now = time_from_ms(1'000'000);
    SearchResults results;

    StoreFixture() {
        REQUIRE(store.define("RankMatch", {{"rank", 10}}).has_value());
        REQUIRE(store.define("LevelMatch", {{"level", 1}, {"league", 1}}).has_value());
    }

    void add_rank(const std::string& id, std::int64_t rank, const std::string& tag = "",
                  std::chrono::seconds ttl = 30s) {
        REQUIRE(store.add("RankMatch", id, tag, {{"rank", rank}}, {}, ttl, now).has_value());
    }

    std::vector<std::string> search_rank(std::int64_t rank, const std::string& tag = "",
                                         std::size_t limit = 100) {
        const std::vector<std::string> profiles{"RankMatch"};
        auto ok = store.search(profiles, tag, {{"rank", rank}}, limit, now, results);
        REQUIRE(ok.has_value());
        return ids_of(results);
    }

    std::vector<std::string> range_rank(std::vector<std::int64_t> ranks, std::size_t limit = 100) {
        const std::vector<std::string> profiles{"RankMatch"};
        auto ok = store.search_with_range(profiles, "", {{"rank", std::move(ranks)}}, limit, now,
                                          results);
        REQUIRE(ok.has_value());
        return ids_of(results);
    }
};

}  // namespace matching_test
