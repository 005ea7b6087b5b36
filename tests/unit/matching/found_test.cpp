#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize.h>

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
    std::vector<capnp::word> bytes = words_of(encode_search_response(served, now));

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
