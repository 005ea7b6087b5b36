#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>

#include "matching/found.hpp"
#include "matching/wire.hpp"

using namespace matchmesh;
using namespace matchmesh::matching;

namespace {

const ValueMap sample_value{{"blob", Bytes{{0x0a, 0x0b}}},
                            {"level", std::int64_t{3}},
                            {"name", std::string("ann")},
                            {"ratio", 0.5},
                            {"ready", true}};

std::vector<capnp::word> words_of(const mesh::Payload& payload) {
    return {payload.words().begin(), payload.words().end()};
}

// An answer whose only item has a value with these entry names, each a text of `text_bytes`.
std::vector<capnp::word> answer_with_names(const std::vector<std::string>& names,
                                           std::size_t text_bytes = 1) {
    capnp::MallocMessageBuilder message;
    auto item = message.initRoot<wire::SearchResponse>().initItems(1)[0];
    item.setProfileId("P");
    item.setUniqueId("u-1");
    item.setTtlSeconds(30);
    auto value = item.initValue(static_cast<unsigned>(names.size()));
    for (unsigned i = 0; i < names.size(); ++i) {
        value[i].setName(names[i]);
        value[i].setText(std::string(text_bytes, 'x'));
    }
    auto flat = capnp::messageToFlatArray(message);
    return {flat.begin(), flat.end()};
}

Result<void> decode(const std::vector<capnp::word>& words, SearchOutcome& keeper,
                    std::vector<KeyedFound>& out) {
    return decode_search_response(words, capnp::ReaderOptions{}, keeper, out);
}

// The message of the error an answer is refused with (a test failure if it is taken).
std::string refusal_of(const std::vector<capnp::word>& words) {
    SearchOutcome keeper;
    std::vector<KeyedFound> found;
    auto refused = decode(words, keeper, found);
    REQUIRE_FALSE(refused);
    return refused.error().message;
}

}  // namespace

TEST_CASE("matching/found: an answer's items are read where they lie, and outlive its bytes") {
    const Time now(std::chrono::seconds(100));
    const FoundItem first{
        "P",     "u-1", &sample_value, now + std::chrono::seconds(20), std::chrono::seconds(30),
        "node-b"};
    const FoundItem second{
        "Q", "u-2", &sample_value, now + std::chrono::seconds(5), std::chrono::seconds(10), ""};
    const std::vector<KeyedView> served{{0, first}, {3, second}};
    std::vector<capnp::word> bytes = words_of(encode_search_response(served, now, false));

    SearchOutcome keeper;
    std::vector<KeyedFound> found;
    REQUIRE(decode(bytes, keeper, found));
    std::fill(bytes.begin(), bytes.end(), capnp::word{});  // the received frame is gone
    SearchOutcome moved = std::move(keeper);               // and the outcome moved on

    REQUIRE(found.size() == 2);
    CHECK(found[0].key_index == 0);
    CHECK(found[0].item.profile_id == "P");
    CHECK(found[0].item.unique_id == "u-1");
    CHECK(found[0].item.origin == "node-b");
    CHECK(found[0].item.ttl == std::chrono::seconds(30));
    CHECK(found[0].item.remaining == std::chrono::seconds(20));
    CHECK(to_value_map(found[0].item.value) == sample_value);
    CHECK(found[1].key_index == 3);
    CHECK(found[1].item.unique_id == "u-2");
    CHECK(found[1].item.origin.empty());

    const FoundEntry* level = find_entry(found[1].item.value, "level");
    REQUIRE(level != nullptr);
    CHECK(std::get<std::int64_t>(level->scalar) == 3);
    const FoundEntry* name = find_entry(found[1].item.value, "name");
    REQUIRE(name != nullptr);
    CHECK(std::get<std::string_view>(name->scalar) == "ann");
    CHECK(find_entry(found[1].item.value, "nope") == nullptr);

    // Handed on as it was found (a client's search reply writes it so).
    capnp::MallocMessageBuilder rewritten;
    auto entries = rewritten.initRoot<wire::SearchResponse>().initItems(1)[0].initValue(
        static_cast<unsigned>(found[0].item.value.size()));
    write_value(entries, found[0].item.value);
    CHECK(read_value(entries.asReader()) == sample_value);
}

TEST_CASE("matching/found: a value's names may come in any order, never twice") {
    SearchOutcome keeper;
    std::vector<KeyedFound> found;
    REQUIRE(decode(answer_with_names({"b", "a"}), keeper, found));
    REQUIRE(found.size() == 1);
    CHECK(find_entry(found[0].item.value, "a") != nullptr);
    CHECK(find_entry(found[0].item.value, "b") != nullptr);
    CHECK(to_value_map(found[0].item.value).size() == 2);

    for (const std::vector<std::string>& names :
         {std::vector<std::string>{"a", "a"}, std::vector<std::string>{"b", "c", "b"},
          std::vector<std::string>{"a", "c", "b", "c"}}) {
        CHECK(refusal_of(answer_with_names(names)).find("repeat") != std::string::npos);
    }
}

TEST_CASE("matching/found: an answer breaking a value's bounds is refused, naming them") {
    CHECK(refusal_of(answer_with_names({"a", "b"}, value_bytes_max / 2))
              .find("larger than 4096 bytes at entry 'b'") != std::string::npos);

    std::vector<std::string> names;
    for (std::size_t i = 0; i <= value_entries_max; ++i) {
        names.push_back("n" + std::to_string(100 + i));
    }
    CHECK(refusal_of(answer_with_names(names)).find("value entries") != std::string::npos);
}

TEST_CASE("matching/found: a kept copy outlives what it was copied from") {
    SearchOutcome outcome;
    {
        std::string unique_id(40, 'u');  // past the short-string size: on the heap
        ValueMap value = sample_value;
        outcome.items.push_back(outcome.keep_copy("P", unique_id, value, std::chrono::seconds(5),
                                                  Duration(1500), "node-c"));
    }
    const SearchOutcome moved = std::move(outcome);
    REQUIRE(moved.items.size() == 1);
    CHECK(moved.items[0].unique_id == std::string(40, 'u'));
    CHECK(moved.items[0].origin == "node-c");
    CHECK(moved.items[0].remaining == Duration(1500));
    CHECK(to_value_map(moved.items[0].value) == sample_value);
}

TEST_CASE("matching/found: entries for many answers come from chunks that never move") {
    SearchOutcome keeper;
    std::vector<std::span<FoundEntry>> rooms;
    for (std::size_t count : {1u, 40u, 30u, 200u, 2u}) {
        rooms.push_back(keeper.entries(count));
        CHECK(rooms.back().size() == count);
        for (FoundEntry& entry : rooms.back()) {
            entry.scalar = static_cast<std::int64_t>(count);
        }
    }
    for (const auto& room : rooms) {
        for (const FoundEntry& entry : room) {
            CHECK(std::get<std::int64_t>(entry.scalar) == static_cast<std::int64_t>(room.size()));
        }
    }
    CHECK(keeper.entries(0).empty());
}

namespace {

// The answer's root, to look at how it was written.
struct WrittenAnswer {
    explicit WrittenAnswer(const mesh::Payload& payload)
        : words(words_of(payload)), message(kj::arrayPtr(words.data(), words.size())) {}
    [[nodiscard]] wire::SearchResponse::Reader root() {
        return message.getRoot<wire::SearchResponse>();
    }
    std::vector<capnp::word> words;
    capnp::FlatArrayMessageReader message;
};

// An answer of one item (key 0) whose origin is shared text `origin_text` of `texts`, written by
// hand to break the rules.
std::vector<capnp::word> answer_with_texts(const std::vector<std::string>& texts,
                                           std::uint16_t origin_text) {
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<wire::SearchResponse>();
    auto item = root.initItems(1)[0];
    item.setUniqueId("u-1");
    item.setTtlSeconds(30);
    item.setOriginText(origin_text);
    auto list = root.initTexts(static_cast<unsigned>(texts.size()));
    for (unsigned i = 0; i < texts.size(); ++i) {
        list.set(i, texts[i]);
    }
    auto flat = capnp::messageToFlatArray(message);
    return {flat.begin(), flat.end()};
}

}  // namespace

TEST_CASE("matching/found: an answer with shared texts sends each repeated text once") {
    const Time now(std::chrono::seconds(100));
    const auto item = [&](std::string_view profile, std::string_view id, std::string_view origin) {
        return FoundItem{profile, id, &sample_value, now + std::chrono::seconds(20),
                         std::chrono::seconds(30), origin};
    };
    const std::vector<KeyedView> served{{0, item("P", "u-1", "node-b")},
                                        {0, item("P", "u-2", "node-b")},
                                        {1, item("Q", "u-3", "node-c")}};

    WrittenAnswer full(encode_search_response(served, now, false));
    WrittenAnswer shared(encode_search_response(served, now, true));
    CHECK(shared.words.size() < full.words.size());
    CHECK(full.root().getTexts().size() == 0);
    // The value's five names and the two origins, each once; no item carries its profile.
    std::vector<std::string> texts;
    for (auto text : shared.root().getTexts()) {
        texts.emplace_back(text.cStr());
    }
    std::sort(texts.begin(), texts.end());
    CHECK(texts == std::vector<std::string>{"blob", "level", "name", "node-b", "node-c", "ratio",
                                            "ready"});
    for (auto written : shared.root().getItems()) {
        CHECK_FALSE(written.hasProfileId());
        CHECK_FALSE(written.hasOrigin());
        CHECK(written.getOriginText() != 0);
    }

    std::vector<KeyedFound> from_full;
    std::vector<KeyedFound> from_shared;
    SearchOutcome keeper;
    REQUIRE(decode_search_response(full.words, capnp::ReaderOptions{}, keeper, from_full));
    REQUIRE(decode_search_response(shared.words, capnp::ReaderOptions{}, keeper, from_shared));
    REQUIRE(from_shared.size() == 3);
    REQUIRE(from_full.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        const Found& a = from_full[i].item;
        const Found& b = from_shared[i].item;
        CHECK(from_full[i].key_index == from_shared[i].key_index);
        CHECK(b.profile_id.empty());  // its key's: the searcher fills it in
        CHECK(a.unique_id == b.unique_id);
        CHECK(a.origin == b.origin);
        CHECK(a.ttl == b.ttl);
        CHECK(a.remaining == b.remaining);
        CHECK(to_value_map(b.value) == sample_value);
    }
    CHECK(from_full[2].item.profile_id == "Q");
    CHECK(from_shared[2].item.origin == "node-c");
}

TEST_CASE("matching/found: past the shared texts' bound an answer's texts go in their own fields") {
    const Time now(std::chrono::seconds(100));
    const ValueMap value{{"level", std::int64_t{3}}};
    std::vector<std::string> origins;
    for (std::size_t i = 0; i < shared_texts_max + 8; ++i) {
        origins.push_back(fmt::format("node-{:02}", i));
    }
    std::vector<KeyedView> served;
    for (std::size_t i = 0; i < origins.size(); ++i) {
        served.push_back({0, FoundItem{"P", origins[i], &value, now + std::chrono::seconds(20),
                                       std::chrono::seconds(30), origins[i]}});
    }
    WrittenAnswer shared(encode_search_response(served, now, true));
    CHECK(shared.root().getTexts().size() == shared_texts_max);

    SearchOutcome keeper;
    std::vector<KeyedFound> found;
    REQUIRE(decode_search_response(shared.words, capnp::ReaderOptions{}, keeper, found));
    REQUIRE(found.size() == origins.size());
    for (std::size_t i = 0; i < origins.size(); ++i) {
        CHECK(found[i].item.origin == origins[i]);
        REQUIRE(found[i].item.value.size() == 1);
        CHECK(found[i].item.value[0].name == "level");
    }
}

TEST_CASE("matching/found: an answer whose shared texts break a bound is refused, naming it") {
    CHECK(refusal_of(answer_with_texts({"a", "b"}, 3)) == "origin is shared text 3 of 2");
    CHECK(refusal_of(answer_with_texts(std::vector<std::string>(33, "a"), 1)) ==
          "33 shared texts, at most 32 allowed");
    CHECK(refusal_of(answer_with_texts({std::string(300, 'n')}, 1)) ==
          "origin must be 0..256 bytes, got 300");
    CHECK(refusal_of(answer_with_texts({"node\nb"}, 1))
              .find("shared text holds a control character") != std::string::npos);

    // A value's name may be shared too, and must then still be a name.
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<wire::SearchResponse>();
    auto item = root.initItems(1)[0];
    item.setUniqueId("u-1");
    item.setTtlSeconds(30);
    auto entry = item.initValue(1)[0];
    entry.setNameText(1);
    entry.setInt(3);
    root.initTexts(1).set(0, "");
    auto flat = capnp::messageToFlatArray(message);
    CHECK(refusal_of({flat.begin(), flat.end()}) == "value name must be 1..4096 bytes, got 0");
}

TEST_CASE("matching/found: a search asks for shared texts; an older searcher's request does not") {
    const std::string_view keys[] = {"P\t\t1"};
    const mesh::Payload asked = encode_search(keys, 20);
    auto query = decode_search(asked.words(), capnp::ReaderOptions{});
    REQUIRE(query);
    CHECK(query->shared_texts);

    capnp::MallocMessageBuilder older;  // as a node before shared texts writes it
    auto root = older.initRoot<wire::SearchRequest>();
    root.initKeys(1).set(0, "P\t\t1");
    root.setLimit(20);
    auto flat = capnp::messageToFlatArray(older);
    const std::vector<capnp::word> words(flat.begin(), flat.end());
    auto older_query = decode_search(words, capnp::ReaderOptions{});
    REQUIRE(older_query);
    CHECK_FALSE(older_query->shared_texts);
}

TEST_CASE("matching/found: offers travel with a search and its answer, within their bound") {
    const std::string_view keys[] = {"P\t\t1"};
    const auto hold_of = [&](Duration asked) {
        const mesh::Payload request = encode_search(keys, 20, Handout{0, asked});
        auto query = decode_search(request.words(), capnp::ReaderOptions{});
        REQUIRE(query);
        return query->handout.offer_hold;
    };
    CHECK(hold_of(Duration(0)) == Duration(0));  // also what an older searcher's request says
    CHECK(hold_of(Duration(7)) == Duration(7));
    CHECK(hold_of(Duration(3'600'000)) == offer_hold_max);  // a peer cannot hold an item long

    const Time now(std::chrono::seconds(100));
    std::vector<KeyedView> served;
    // The last: a later version's kind of offer, which reads as none.
    for (const Offer offer : {Offer::none, Offer::yours, Offer::another, static_cast<Offer>(9)}) {
        served.push_back({0, FoundItem{"P", "u", &sample_value, now + std::chrono::seconds(20),
                                       std::chrono::seconds(30), "node-b", offer}});
    }
    WrittenAnswer answer(encode_search_response(served, now, true));
    SearchOutcome keeper;
    std::vector<KeyedFound> found;
    REQUIRE(decode_search_response(answer.words, capnp::ReaderOptions{}, keeper, found));
    REQUIRE(found.size() == 4);
    CHECK(found[0].item.offer == Offer::none);
    CHECK(found[1].item.offer == Offer::yours);
    CHECK(found[2].item.offer == Offer::another);
    CHECK(found[3].item.offer == Offer::none);
}
