#include <doctest/doctest.h>

#include "store_fixture.hpp"

using namespace matching_test;
using Ids = std::vector<std::string>;

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/expiry: an item is visible before its TTL and gone after") {
    add_rank("a", 5, "", 2s);
    now += 1999ms;
    CHECK(search_rank(5) == Ids{"a"});
    now += 1ms;  // exactly at expiry
    CHECK(search_rank(5).empty());
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: expired items are freed, not only hidden") {
    for (int i = 0; i < 960; ++i) {
        add_rank("u" + std::to_string(i), i, "", std::chrono::seconds(1 + i % 60));
    }
    CHECK(store.size() == 960);
    now += 30s + BucketStore::wheel_tick;
    CHECK(store.expire(now) == 480);  // TTLs 1..30 s have run out: half of them
    CHECK(store.size() == 480);
    now += 30s;
    CHECK(store.expire(now) == 480);
    CHECK(store.size() == 0);
    CHECK(store.items().bucket_count() == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: the freeing lags expiry by at most one tick") {
    add_rank("a", 5, "", 1s);
    now += 1s;
    store.expire(now);
    CHECK(store.size() <= 1);
    now += BucketStore::wheel_tick;
    store.expire(now);
    CHECK(store.size() == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: re-adding refreshes the TTL") {
    add_rank("a", 5, "", 2s);
    now += 1500ms;
    add_rank("a", 5, "", 2s);
    now += 1500ms;
    CHECK(search_rank(5) == Ids{"a"});
    now += 600ms;
    store.expire(now);
    CHECK(search_rank(5).empty());
    CHECK(store.size() == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: an expired item re-added goes to the back") {
    add_rank("a", 5, "", 1s);
    add_rank("b", 5, "", 10s);
    now += 1050ms;  // a expired, not yet freed
    add_rank("a", 5, "", 10s);
    CHECK(search_rank(5) == Ids{"b", "a"});
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: a clock jump past the whole wheel frees all") {
    for (int i = 0; i < 100; ++i) {
        add_rank("u" + std::to_string(i), i, "", 60s);
    }
    now += std::chrono::hours(5);
    CHECK(store.expire(now) == 100);
    CHECK(store.size() == 0);
    add_rank("fresh", 5, "", 5s);
    CHECK(search_rank(5) == Ids{"fresh"});
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: a clock that does not move frees nothing early") {
    add_rank("a", 5, "", 1s);
    CHECK(store.expire(now) == 0);
    CHECK(store.expire(now - 5s) == 0);  // a backwards step is ignored
    CHECK(search_rank(5) == Ids{"a"});
}

TEST_CASE_FIXTURE(StoreFixture, "matching/expiry: a rotated walk begins further in and wraps") {
    for (const char* id : {"a", "b", "c", "d"}) {
        add_rank(id, 5);
    }
    std::string key;
    store.items().for_each_bucket([&](const BucketView& bucket) { key = bucket.key; });
    auto walk = [&](std::uint32_t rotation, std::size_t limit) {
        std::vector<FoundItem> out;
        store.items().collect(key, key_hash(key), now, limit, 0, out, Handout{rotation});
        Ids ids;
        for (const FoundItem& found : out) {
            ids.emplace_back(found.unique_id);
        }
        return ids;
    };
    CHECK(walk(0, 10) == Ids{"a", "b", "c", "d"});  // oldest first
    CHECK(walk(2, 10) == Ids{"c", "d", "a", "b"});
    CHECK(walk(7, 2) == Ids{"d", "a"});  // 7 modulo 4
}

TEST_CASE_FIXTURE(StoreFixture,
                  "matching/expiry: an offer goes to one search, and others get it last") {
    for (const char* id : {"a", "b", "c"}) {
        add_rank(id, 5);
    }
    std::string key;
    store.items().for_each_bucket([&](const BucketView& bucket) { key = bucket.key; });
    using Walk = std::vector<std::pair<std::string, Offer>>;
    auto search = [&](matchmesh::Duration hold, std::size_t limit = 10) {
        std::vector<FoundItem> out;
        store.items().collect(key, key_hash(key), now, limit, 0, out, Handout{0, hold});
        Walk walk;
        for (const FoundItem& found : out) {
            walk.emplace_back(found.unique_id, found.offer);
        }
        return walk;
    };
    const matchmesh::Duration hold(25);
    CHECK(search(hold) == Walk{{"a", Offer::yours}, {"b", Offer::none}, {"c", Offer::none}});
    // The next search is offered the oldest room nobody was offered; a's comes last.
    CHECK(search(hold) == Walk{{"b", Offer::yours}, {"c", Offer::none}, {"a", Offer::another}});
    CHECK(search(hold, 2) == Walk{{"c", Offer::yours}, {"a", Offer::another}});
    // Every room on offer: all are still handed out, none offered again.
    CHECK(search(hold) ==
          Walk{{"a", Offer::another}, {"b", Offer::another}, {"c", Offer::another}});
    // A search that asks for no offers is handed the plain order, and hears which are on offer.
    CHECK(search(matchmesh::Duration(0)) ==
          Walk{{"a", Offer::another}, {"b", Offer::another}, {"c", Offer::another}});
    // Offers end with their hold.
    now += hold;
    CHECK(search(hold) == Walk{{"a", Offer::yours}, {"b", Offer::none}, {"c", Offer::none}});
    // Removing an offered item leaves nothing behind it.
    CHECK(store.remove("RankMatch", std::vector<std::string>{"a"}, now).value() == 1);
    CHECK(search(hold) == Walk{{"b", Offer::yours}, {"c", Offer::none}});
}
