// Every decoder of peer or client bytes, fed mutated copies of valid messages: each input is
// either decoded or refused with an error, never a crash (the suite also runs under ASan+UBSan).
#include <doctest/doctest.h>

#include "support/sample_messages.hpp"
#include "support/seed.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "matching/wire.hpp"
#include "mesh/control.hpp"
#include "mesh/envelope.capnp.h"
#include "mesh/frame.hpp"
#include "node/client_protocol.hpp"
#include "ticket/wire.hpp"

using namespace matchmesh;

namespace {

std::vector<capnp::word> words_of(const mesh::Frame& frame) {
    std::vector<capnp::word> words((frame.size() - mesh::frame_header_bytes) / sizeof(capnp::word));
    std::memcpy(static_cast<void*>(words.data()), frame.data() + mesh::frame_header_bytes,
                words.size() * sizeof(capnp::word));
    return words;
}

std::vector<capnp::word> words_of(const mesh::Payload& payload) {
    return {payload.words().begin(), payload.words().end()};
}

// Flips bytes, truncates, or writes random words into a copy of `original`.
std::vector<capnp::word> mutate(const std::vector<capnp::word>& original, std::mt19937_64& random) {
    std::vector<capnp::word> copy = original;
    auto* bytes = reinterpret_cast<std::uint8_t*>(copy.data());
    const std::size_t size = copy.size() * sizeof(capnp::word);
    switch (random() % 4) {
        case 0:
            for (int i = 0; i < 1 + static_cast<int>(random() % 4); ++i) {
                bytes[random() % size] ^= static_cast<std::uint8_t>(1 + random() % 255);
            }
            break;
        case 1: copy.resize(random() % (copy.size() + 1)); break;
        case 2:
            for (auto& word : copy) {
                if (random() % 8 == 0) {
                    std::uint64_t noise = random();
                    std::memcpy(static_cast<void*>(&word), &noise, sizeof(noise));
                }
            }
            break;
        default: bytes[random() % size] = static_cast<std::uint8_t>(random()); break;
    }
    return copy;
}

// Every kind of peer message, framed once, plus two client requests: what the mutations start
// from.
std::vector<std::vector<capnp::word>> sample_bodies() {
    std::vector<std::vector<capnp::word>> samples;
    const auto peers = test_support::peer_samples();
    samples.push_back(words_of(peers.front().frame()));  // a whole frame, header included
    for (const auto& sample : peers) {
        samples.push_back(words_of(sample.payload));
    }
    samples.push_back(words_of(node::encode_request(node::ClientRequest{
        5, node::AddCommand{
               "RankMatch", "u1", "eu", {{"rank", 3}}, {{"x", 1.5}}, std::chrono::seconds(9)}})));
    samples.push_back(words_of(node::encode_request(node::ClientRequest{
        6, node::RangeSearchCommand{{"A", "B"}, {"", "eu"}, {{"rank", {1, 2, 3}}}, 10}})));
    return samples;
}

// A one-member party's join of ticket 2.1@node-2 to room 1.1@node-1.
ticket::JoinMessage a_join() {
    const auto user = std::make_shared<const ticket::User>(
        ticket::User{UserId("u1"), "s1", NodeId("node-2"), {}, 3});
    return {"a/1", TicketId("1.1@node-1"), 1, TicketId("2.1@node-2"), {user}, {}, true, {}};
}

}  // namespace

TEST_CASE("mesh/decoders: mutated messages are decoded or refused, never crash") {
    const std::uint64_t seed = test_support::choose_seed("decoder robustness");
    INFO("seed ", seed);
    std::mt19937_64 random(seed);
    const mesh::FrameLimits limits;
    const auto options = limits.reader_options();

    const std::vector<std::vector<capnp::word>> samples = sample_bodies();
    std::size_t decoded = 0;
    std::size_t refused = 0;
    for (int round = 0; round < 20000; ++round) {
        const auto& sample = samples[static_cast<std::size_t>(round) % samples.size()];
        const auto input = mutate(sample, random);
        const mesh::PayloadView view(input.data(), input.size());
        // Each decoder must cope with every input, whatever it was meant to be.
        auto count = [&](bool ok) { ok ? ++decoded : ++refused; };
        count(mesh::decode_body(view, limits).has_value());
        count(mesh::decode_sync(view, options).has_value());
        count(mesh::decode_probe(view, options).has_value());
        count(mesh::decode_hello(view, options).has_value());
        count(matching::decode_add(view, options).has_value());
        count(matching::decode_search(view, options).has_value());
        matching::SearchOutcome keeper;
        std::vector<matching::KeyedFound> found;
        count(matching::decode_search_response(view, options, keeper, found).has_value());
        count(node::decode_request(view, options).has_value());
        count(ticket::decode_sessions(view, options).has_value());
        count(ticket::decode_join(view, options).has_value());
        count(ticket::decode_join_reply(view, options).has_value());
        count(ticket::decode_push(view, options).has_value());
        count(ticket::decode_broadcast(view, options).has_value());
        count(ticket::decode_claim(view, options).has_value());
        count(ticket::decode_locate(view, options).has_value());
        count(ticket::decode_located(view, options).has_value());
    }
    CHECK(decoded > 0);
    CHECK(refused > 0);
}

TEST_CASE("ticket/wire: session announcements round-trip, and too many in one are refused") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    const ticket::SessionsMessage sent{NodeId("node-1"), {{UserId("u1"), 7}, {UserId("u2"), 8}}};
    auto payload = ticket::encode(sent);
    auto received = ticket::decode_sessions(payload.words(), options);
    REQUIRE(received.has_value());
    CHECK(received->home == sent.home);
    REQUIRE(received->users.size() == 2);
    CHECK(received->users[1].user == UserId("u2"));
    CHECK(received->users[1].epoch == 8);

    ticket::SessionsMessage flood{NodeId("node-1"), {}};
    for (std::size_t i = 0; i <= ticket::sessions_max; ++i) {
        flood.users.push_back({UserId(fmt::format("u{}", i)), 1});
    }
    auto refused = ticket::decode_sessions(ticket::encode(flood).words(), options);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().find("sessions in one message") != std::string::npos);
}

TEST_CASE(
    "ticket/wire: a join refused for a room that is gone or complete says so, and no other "
    "refusal does") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    auto reply_to = [&](ticket::JoinRefusal refusal) {
        const mesh::Payload sent = ticket::encode(ticket::refused_join(refusal));
        auto reply = ticket::decode_join_reply(sent.words(), options);
        REQUIRE(reply.has_value());
        CHECK_FALSE(reply->accepted);
        return *reply;
    };
    const ticket::JoinReplyMessage gone = reply_to(ticket::JoinRefusal::room_not_found);
    CHECK(gone.gone);
    CHECK(gone.taken);
    CHECK(gone.reason == "room not found");
    const ticket::JoinReplyMessage complete = reply_to(ticket::JoinRefusal::completed);
    CHECK(complete.gone);
    CHECK(complete.taken);
    CHECK(complete.reason == "the room is complete");
    for (auto refusal : {ticket::JoinRefusal::not_waiting, ticket::JoinRefusal::full,
                         ticket::JoinRefusal::not_allowed, ticket::JoinRefusal::closed}) {
        CHECK_FALSE(reply_to(refusal).gone);
    }
}

TEST_CASE(
    "ticket/wire: an accepted join's answer carries pushes; a refusal or too many is refused") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    const ticket::PushEnvelope push = test_support::sample_push();
    ticket::JoinReplyMessage accepted = ticket::accepted_join();
    accepted.pushes = {push, push};
    accepted.pushes[1].push_id = "p2";
    auto read = ticket::decode_join_reply(ticket::encode(accepted).words(), options);
    REQUIRE(read.has_value());
    CHECK(read->accepted);
    REQUIRE(read->pushes.size() == 2);
    CHECK(read->pushes[1].push_id == "p2");
    CHECK(read->pushes[0].message == ticket::Bytes{9});
    CHECK(read->pushes[0].reason == ticket::EndReason::completed);

    ticket::JoinReplyMessage refused = ticket::refused_join(ticket::JoinRefusal::full);
    refused.pushes = {push};
    auto refused_read = ticket::decode_join_reply(ticket::encode(refused).words(), options);
    REQUIRE_FALSE(refused_read.has_value());
    CHECK(refused_read.error() == "1 pushes on a join's refused answer");

    accepted.pushes.assign(ticket::join_reply_pushes_max + 1, push);
    auto flood = ticket::decode_join_reply(ticket::encode(accepted).words(), options);
    REQUIRE_FALSE(flood.has_value());
    CHECK(flood.error().find("pushes on a join's accepted answer") != std::string::npos);

    accepted.pushes = {push};
    accepted.pushes[0].user = UserId(std::string(4096, 'u'));
    auto long_id = ticket::decode_join_reply(ticket::encode(accepted).words(), options);
    REQUIRE_FALSE(long_id.has_value());
    CHECK(long_id.error().find("user ID") != std::string::npos);
}

// A join from a node that does not read pushes from the answer (an older one) says so by not
// saying it wants them; ours do.
TEST_CASE("ticket/wire: a join says whether its sender reads pushes from the answer") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    ticket::JoinMessage join = a_join();
    CHECK(join.pushes_in_reply);
    for (const bool wants : {true, false}) {
        join.pushes_in_reply = wants;
        auto read = ticket::decode_join(ticket::encode(join).words(), options);
        REQUIRE(read.has_value());
        CHECK(read->pushes_in_reply == wants);
    }
}

// A join names its ticket's search, so that another room of the node its search finds may take
// the party should the asked one be taken; the answer names that room. Bounds hold on both.
TEST_CASE("ticket/wire: a join's search and the room it was seated in round-trip, within bounds") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    ticket::JoinMessage join = a_join();
    join.search_profiles = {"Rank", "Level"};
    join.search_tags = {"", "eu"};
    auto read = ticket::decode_join(ticket::encode(join).words(), options);
    REQUIRE(read.has_value());
    CHECK(read->search_profiles == join.search_profiles);
    CHECK(read->search_tags == join.search_tags);

    join.search_tags.assign(ticket::ticket_tags_max + 1, "eu");
    auto many_tags = ticket::decode_join(ticket::encode(join).words(), options);
    REQUIRE_FALSE(many_tags.has_value());
    CHECK(many_tags.error().find("search tag") != std::string::npos);
    join.search_tags = {};
    join.search_profiles = {std::string(matching::profile_id_bytes_max + 1, 'p')};
    auto long_profile = ticket::decode_join(ticket::encode(join).words(), options);
    REQUIRE_FALSE(long_profile.has_value());
    CHECK(long_profile.error().find("search profile") != std::string::npos);

    ticket::JoinReplyMessage accepted = ticket::accepted_join();
    accepted.seated_in = TicketId("3.1@node-1");
    auto seated = ticket::decode_join_reply(ticket::encode(accepted).words(), options);
    REQUIRE(seated.has_value());
    CHECK(seated->seated_in == accepted.seated_in);
    ticket::JoinReplyMessage refused = ticket::refused_join(ticket::JoinRefusal::completed);
    refused.seated_in = TicketId("3.1@node-1");
    auto refused_read = ticket::decode_join_reply(ticket::encode(refused).words(), options);
    REQUIRE_FALSE(refused_read.has_value());
    CHECK(refused_read.error() == "a refused join seated in another room");
}

TEST_CASE("ticket/wire: where a user is round-trips, and an oversized user ID is refused") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    auto located = ticket::decode_located(
        ticket::encode(ticket::LocatedMessage{NodeId("node-7")}).words(), options);
    REQUIRE(located.has_value());
    CHECK(located->home == NodeId("node-7"));
    auto long_id = ticket::decode_locate(
        ticket::encode(ticket::LocateMessage{UserId(std::string(4096, 'u'))}).words(), options);
    REQUIRE_FALSE(long_id.has_value());
    CHECK(long_id.error().find("user ID") != std::string::npos);
}

TEST_CASE("mesh/wire: probes round-trip, and too many updates or an unknown status are refused") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    const mesh::MemberInfo member{NodeId("node-1"), "127.0.0.1:7100", "HTTP", 42};
    const mesh::MemberUpdate update{member, mesh::MemberUpdate::Status::suspect, 5};
    const mesh::ProbeMessage sent{member, 3, 9, {}, {update}};
    auto received = mesh::decode_probe(mesh::encode(sent).words(), options);
    REQUIRE(received.has_value());
    CHECK(received->sender == member);
    CHECK(received->alive_counter == 3);
    CHECK(received->sequence == 9);
    CHECK(received->subject.id.empty());
    CHECK(received->updates == std::vector{update});

    auto with_updates = [&](unsigned count, std::uint16_t status) {
        return mesh::make_payload<mesh::wire::Probe>([&](mesh::wire::Probe::Builder root) {
            root.initSender().setId("node-1");
            auto updates = root.initUpdates(count);
            for (unsigned i = 0; i < count; ++i) {
                updates[i].initMember().setId(fmt::format("node-{}", i));
                updates[i].setStatus(static_cast<mesh::wire::MemberUpdate::Status>(status));
            }
        });
    };
    CHECK(mesh::decode_probe(with_updates(mesh::probe_updates_max, 0).words(), options));
    auto flood = mesh::decode_probe(with_updates(mesh::probe_updates_max + 1, 0).words(), options);
    REQUIRE_FALSE(flood.has_value());
    CHECK(flood.error().message.find("updates") != std::string::npos);
    CHECK_FALSE(mesh::decode_probe(with_updates(1, 9).words(), options).has_value());
}

TEST_CASE(
    "mesh/wire: member lists and their digests round-trip, and a digest with members is "
    "refused") {
    const capnp::ReaderOptions options = mesh::FrameLimits{}.reader_options();
    const mesh::MemberInfo sender{NodeId("node-1"), "127.0.0.1:7100", "HTTP", 42};
    const mesh::MemberInfo other{NodeId("node-2"), "127.0.0.1:7101", "HTTP", 7};
    auto full = mesh::decode_sync(
        mesh::encode(mesh::SyncMessage{sender, {other}, 99, false}).words(), options);
    REQUIRE(full.has_value());
    CHECK(full->sender == sender);
    CHECK(full->members == std::vector{other});
    CHECK(full->digest == 99);
    CHECK_FALSE(full->digest_only);
    auto digest =
        mesh::decode_sync(mesh::encode(mesh::SyncMessage{sender, {}, 99, true}).words(), options);
    REQUIRE(digest.has_value());
    CHECK(digest->members.empty());
    CHECK(digest->digest_only);

    auto both = mesh::make_payload<mesh::wire::Sync>([&](mesh::wire::Sync::Builder root) {
        root.initSender().setId("node-1");
        root.initMembers(1)[0].setId("node-2");
        root.setDigestOnly(true);
    });
    auto refused = mesh::decode_sync(both.words(), options);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().message.find("digest-only") != std::string::npos);
}
