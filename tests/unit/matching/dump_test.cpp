#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "matching/dump.hpp"
#include "store_fixture.hpp"

using namespace matching_test;

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/dump: text form shows key headers and one line per item") {
    REQUIRE(store
                .add("RankMatch", "u1", "v100", {{"rank", 35}},
                     {{"maxMembers", std::int64_t{2}}, {"roomID", std::string("r1")}}, 30s, now)
                .has_value());
    add_rank("u2", 35, "v100", 3s);
    add_rank("u3", -5, "", 10s);
    now += 2500ms;
    std::ostringstream text;
    dump_text(store.items(), now, text);
    CHECK(text.str() ==
          "=-=-=-=-=-=[ RankMatch\\t\\t-1 ]=-=-=-=-=-=\n"
          "1 => ID:u3 Value:{} TTL:10 TTLRemaining:8 seconds Expired:false Origin:node-a\n"
          "=-=-=-=-=-=[ RankMatch\\tv100\\t3 ]=-=-=-=-=-=\n"
          "1 => ID:u1 Value:{maxMembers:2, roomID:\"r1\"} TTL:30 TTLRemaining:28 seconds "
          "Expired:false Origin:node-a\n"
          "2 => ID:u2 Value:{} TTL:3 TTLRemaining:1 seconds Expired:false Origin:node-a\n");

    now += 500ms;  // u2 expired but not yet freed: shown as expired
    std::ostringstream later;
    dump_text(store.items(), now, later);
    CHECK(later.str().find("ID:u2 Value:{} TTL:3 TTLRemaining:0 seconds Expired:true") !=
          std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/dump: JSON form carries the same content") {
    REQUIRE(store
                .add("RankMatch", "u1", "v100", {{"rank", 35}},
                     {{"blob", Bytes{{0x0a, 0xff}}}, {"ok", true}, {"x", 0.5}}, 30s, now)
                .has_value());
    add_rank("u2", 35, "v100", 3s);
    now += 3s;
    const nlohmann::json dump = dump_json(store.items(), now);
    CHECK(dump["items"] == 2);
    REQUIRE(dump["buckets"].size() == 1);
    const auto& bucket = dump["buckets"][0];
    CHECK(bucket["key"] == "RankMatch\tv100\t3");
    CHECK(bucket["hash"].get<std::string>().size() == 16);
    REQUIRE(bucket["items"].size() == 2);
    const auto& first = bucket["items"][0];
    CHECK(first["id"] == "u1");
    CHECK(first["value"]["blob"]["hex"] == "0aff");
    CHECK(first["value"]["ok"] == true);
    CHECK(first["value"]["x"] == 0.5);
    CHECK(first["ttl_s"] == 30);
    CHECK(first["remaining_s"] == 27);
    CHECK(first["expired"] == false);
    CHECK(first["origin"] == "node-a");
    CHECK(bucket["items"][1]["expired"] == true);
    CHECK(bucket["items"][1]["remaining_s"] == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/dump: an empty store dumps as nothing") {
    std::ostringstream text;
    dump_text(store.items(), now, text);
    CHECK(text.str().empty());
    CHECK(dump_json(store.items(), now) ==
          nlohmann::json{{"items", 0}, {"buckets", nlohmann::json::array()}});
}
