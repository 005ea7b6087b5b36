// What a node does with hostile or broken traffic on its mesh and client ports: it closes the
// connection or answers with an error, logs the reason, and keeps serving everyone else.
#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>

#include "mesh/control.hpp"
#include "mesh/envelope.capnp.h"
#include "node/blocking_client.hpp"
#include "node/client.capnp.h"
#include "node_process.hpp"
#include "raw_connection.hpp"
#include "tests/integration/hostile.capnp.h"

using namespace integration;
using namespace matchmesh;
using namespace matchmesh::node;
using namespace std::chrono_literals;

namespace {

constexpr const char* secret = "integration-secret-0123456789";

bool serves(const NodeProcess& node) {
    auto client = BlockingClient::connect(node.client_address());
    if (!client) {
        return false;
    }
    auto reply = client->call(MembersCommand{});
    return reply && std::holds_alternative<std::vector<mesh::MemberInfo>>(reply->body);
}

// A body whose segment table claims 600 segments.
std::vector<std::byte> many_segments() {
    constexpr std::uint32_t segments = 600;
    const std::size_t table_bytes = ((4 + 4 * segments) + 7) / 8 * 8;
    std::vector<std::byte> frame = header_bytes(static_cast<std::uint32_t>(table_bytes), 1, 0);
    std::vector<std::byte> table(table_bytes);
    table[0] = static_cast<std::byte>((segments - 1) & 0xff);
    table[1] = static_cast<std::byte>((segments - 1) >> 8);
    frame.insert(frame.end(), table.begin(), table.end());
    return frame;
}

struct OneNode {
    TestFolder folder;
    std::filesystem::path config = folder.write(
        "node.json",
        test_config(secret, R"(, "limits": {"maxFrameBytes": 65536, "handshakeTimeoutMs": 400,
        "maxClientFrameBytes": 8192, "maxClientConnections": 6, "clientHelloTimeoutMs": 300})"));
    NodeProcess node = NodeProcess::start(folder, "target", config);
};

// A node that gives a client connection 4 s to say hello.
struct SlowHellos {
    TestFolder folder;
    std::filesystem::path config = folder.write(
        "node.json", test_config(secret, R"(, "limits": {"clientHelloTimeoutMs": 4000})"));
    NodeProcess node = NodeProcess::start(folder, "target", config);
};

// A node that takes client frames of up to 16 MiB.
struct BigFrames {
    TestFolder folder;
    std::filesystem::path config = folder.write(
        "node.json", test_config(secret, R"(, "limits": {"maxClientFrameBytes": 16777216})"));
    NodeProcess node = NodeProcess::start(folder, "target", config);
};

// A node whose mesh handshakes may take 10 s.
struct SlowHandshakes {
    TestFolder folder;
    std::filesystem::path config = folder.write(
        "node.json", test_config(secret, R"(, "limits": {"handshakeTimeoutMs": 10000})"));
    NodeProcess node = NodeProcess::start(folder, "target", config);
};

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
        ++count;
    }
    return count;
}

// The process's resident memory, in KiB.
long resident_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with("VmRSS:")) {
            return std::stol(line.substr(6));
        }
    }
    return -1;
}

}  // namespace

TEST_CASE_FIXTURE(OneNode,
                  "integration/bad-input: broken mesh frames close only their connection") {
    struct Case {
        const char* what;
        std::vector<std::byte> bytes;
        const char* logged;
    };
    std::vector<std::byte> garbage(64, std::byte{0xff});
    std::vector<std::byte> truncated = header_bytes(64, 1, 0);
    truncated.resize(truncated.size() + 10);
    const std::vector<Case> cases{
        {"length 0", header_bytes(0, 1, 0), "empty frame"},
        {"one byte over the limit", header_bytes(65536 + 8, 1, 0), "oversized frame"},
        {"4 GiB", header_bytes(0xfffffff8u, 1, 0), "oversized frame"},
        {"garbage", garbage, "bad frame version"},
        {"bad version", header_bytes(8, 7, 0), "frame version 7"},
        {"reserved bits", header_bytes(8, 1, 3), "bad frame version"},
        {"not whole words", header_bytes(13, 1, 0), "misaligned frame"},
        {"600 segments", many_segments(), "malformed frame"},
        {"100 levels of nesting", deep_message(), "malformed frame"},
    };
    for (const Case& bad : cases) {
        CAPTURE(bad.what);
        RawConnection connection(node.mesh_address());
        connection.send(bad.bytes);
        CHECK(connection.closed_by_peer(3s));
        CHECK(logged(node, bad.logged));
        CHECK(serves(node));
    }
    RawConnection cut(node.mesh_address());
    cut.send(truncated);
    cut.close();  // truncated, then gone
    CHECK(serves(node));
    // Each is counted under its reason, a word from a fixed set.
    const auto rejected = [](const char* reason) {
        return fmt::format(R"(matchmesh_frames_rejected_total{{port="mesh",reason="{}"}})", reason);
    };
    CHECK(metric_becomes(node, rejected("malformed"), 3));  // the truncated one too
    CHECK(metric_becomes(node, rejected("empty"), 1));
    CHECK(metric_becomes(node, rejected("too_large"), 2));
    CHECK(metric_becomes(node, rejected("bad_version"), 3));
    CHECK(metric_becomes(node, rejected("misaligned"), 1));
    CHECK(metric_becomes(node, R"(matchmesh_frames_rejected_total{port="client",reason="empty"})",
                         0));
}

TEST_CASE_FIXTURE(OneNode, "integration/bad-input: nothing is accepted before the handshake") {
    RawConnection early(node.mesh_address());
    const mesh::SyncMessage heartbeat{{NodeId("rogue"), "127.0.0.1:1", "HTTP", 1}, {}};
    early.send(
        bytes_of(mesh::control_frame(mesh::wire::METHOD_SYNC, mesh::encode(heartbeat))));
    CHECK(early.closed_by_peer(3s));
    CHECK(logged(node, "handshake refused: a frame before authentication"));

    RawConnection silent(node.mesh_address());  // never answers the challenge
    CHECK(silent.closed_by_peer(3s));
    CHECK(logged(node, "handshake timed out"));

    RawConnection wrong_cluster(node.mesh_address());
    CHECK_FALSE(wrong_cluster.handshake("rogue", "another-cluster", secret).has_value());
    CHECK(logged(node, "wrong cluster name 'another-cluster'"));

    // A hello recorded on one connection proves nothing on another (fresh challenge nonce).
    RawConnection recorded(node.mesh_address());
    std::vector<std::byte> hello;
    REQUIRE(recorded.handshake("replayer", "integration", secret, &hello).has_value());
    RawConnection replay(node.mesh_address());
    REQUIRE(replay.read_body(3s).has_value());  // its challenge
    replay.send(hello);
    CHECK(replay.closed_by_peer(3s));
    CHECK(logged(node, "wrong secret from 'replayer'"));
    CHECK(serves(node));
    // A frame too early, silence, the wrong cluster, a replayed hello.
    CHECK(metric_becomes(node, R"(matchmesh_handshakes_failed_total{port="mesh"})", 4));
    CHECK(metric_becomes(node, R"(matchmesh_handshakes_failed_total{port="client"})", 0));
}

TEST_CASE_FIXTURE(OneNode,
                  "integration/bad-input: after the handshake, unknown services and bad "
                  "payloads get failures and the connection stays") {
    RawConnection peer(node.mesh_address());
    REQUIRE(peer.handshake("fake-peer", "integration", secret) == std::string("target"));
    const std::vector<capnp::word> junk(4, capnp::word{});
    auto expect_failure = [&](mesh::ServiceId service, mesh::MethodId method,
                              std::uint64_t correlation) {
        peer.send(bytes_of(mesh::encode_frame(
            mesh::FrameFields{service, method, correlation, mesh::EnvelopeKind::request, 0, {}},
            junk)));
        auto body = peer.read_body(3s);
        REQUIRE(body.has_value());
        auto envelope = mesh::decode_body(*body, mesh::FrameLimits{});
        REQUIRE(envelope.has_value());
        CHECK(envelope->kind == mesh::EnvelopeKind::failure);
        CHECK(envelope->correlation == correlation);
        return static_cast<mesh::MeshErrc>(envelope->error_code);
    };
    // Not a member yet (no member list sent): refused, but politely.
    CHECK(expect_failure(77, 1, 10) == mesh::MeshErrc::unreachable);
    const mesh::SyncMessage heartbeat{{NodeId("fake-peer"), "127.0.0.1:1", "HTTP", 1}, {}};
    peer.send(bytes_of(mesh::control_frame(mesh::wire::METHOD_SYNC, mesh::encode(heartbeat))));
    CHECK(eventually([&] { return expect_failure(77, 1, 11) == mesh::MeshErrc::no_handler; }, 2s));
    CHECK(expect_failure(1, 3, 12) == mesh::MeshErrc::malformed);    // a garbled search
    CHECK(expect_failure(77, 2, 13) == mesh::MeshErrc::no_handler);  // still connected
    CHECK(serves(node));
}

TEST_CASE_FIXTURE(OneNode,
                  "integration/bad-input: the client port closes broken streams and "
                  "answers unreadable requests") {
    std::vector<std::byte> garbage(64, std::byte{0x5a});
    for (const auto& bytes :
         {garbage, header_bytes(8192 + 8, 1, 0), header_bytes(0, 1, 0), header_bytes(16, 9, 0)}) {
        RawConnection connection(node.client_address());
        connection.send(bytes);
        CHECK(connection.closed_by_peer(3s));
    }
    CHECK(logged(node, "client: closed connection"));

    // An oversized frame is answered with its error before the close.
    RawConnection oversized(node.client_address());
    oversized.send(header_bytes(8192 + 8, 1, 0));
    auto said = oversized.read_body(3s);
    REQUIRE(said.has_value());
    auto too_large = decode_reply(*said, mesh::FrameLimits{}.reader_options());
    REQUIRE(too_large.has_value());
    CHECK(std::get<ReplyError>(too_large->body).category == "frame_too_large");
    CHECK(std::get<ReplyError>(too_large->body).message.find("limits.maxClientFrameBytes") !=
          std::string::npos);
    CHECK(oversized.closed_by_peer(3s));

    // A readable frame that is not a request: an error reply, and the connection still works.
    RawConnection confused(node.client_address());
    confused.send(deep_message());
    auto body = confused.read_body(3s);
    REQUIRE(body.has_value());
    auto reply = decode_reply(*body, mesh::FrameLimits{}.reader_options());
    REQUIRE(reply.has_value());
    auto* error = std::get_if<ReplyError>(&reply->body);
    REQUIRE(error != nullptr);
    CHECK(error->category == "malformed_request");
    confused.send(bytes_of(encode_request(ClientRequest{7, MembersCommand{}})));
    auto members = confused.read_body(3s);
    REQUIRE(members.has_value());
    CHECK(decode_reply(*members, mesh::FrameLimits{}.reader_options())->id == 7);

    // Oversized lists are refused by count, before anything is built from them.
    std::vector<std::string> many(100, "RankMatch");
    auto client = BlockingClient::connect(node.client_address());
    REQUIRE(client.has_value());
    auto refused = client->call(SearchCommand{many, "", {{"rank", 1}}, 10});
    REQUIRE(refused.has_value());
    REQUIRE(std::holds_alternative<ReplyError>(refused->body));
    CHECK(std::get<ReplyError>(refused->body).message == "100 profile IDs, at most 64 allowed");

    // Semantic errors name the input and keep the connection.
    auto unknown = client->call(AddCommand{"Nope", "u", "", {{"rank", 1}}, {}, 10s});
    REQUIRE(unknown.has_value());
    CHECK(std::get<ReplyError>(unknown->body).category == "unknown_profile");
    auto bad_ttl = client->call(AddCommand{"RankMatch", "u", "", {{"rank", 1}}, {}, 0s});
    CHECK(std::get<ReplyError>(bad_ttl->body).message == "TTL must be 1..60 s, got 0 s");
    CHECK(serves(node));
    // Counted by reason (the store's refusals are answers, not bad requests).
    CHECK(metric_becomes(node, R"(matchmesh_client_connections_closed_total{reason="bad_frame"})",
                         5));
    CHECK(metric_becomes(node, R"(matchmesh_frames_rejected_total{port="client",reason="too_large"})",
                         2));
    CHECK(metric_becomes(
        node, R"(matchmesh_frames_rejected_total{port="client",reason="bad_request"})", 2));
}

TEST_CASE_FIXTURE(OneNode, "integration/bad-input: connections over the client limit are refused") {
    std::vector<BlockingClient> held;
    for (int i = 0; i < 6; ++i) {
        auto client = BlockingClient::connect(node.client_address());
        REQUIRE(client.has_value());
        REQUIRE(client->call(MembersCommand{}).has_value());
        held.push_back(std::move(*client));
    }
    RawConnection extra(node.client_address());  // TCP accepts; the node says why and closes it
    auto said = extra.read_body(3s);
    REQUIRE(said.has_value());
    auto refusal = decode_reply(*said, mesh::FrameLimits{}.reader_options());
    REQUIRE(refusal.has_value());
    CHECK(std::get<ReplyError>(refusal->body).category == "too_many_connections");
    CHECK(std::get<ReplyError>(refusal->body).retry_after_ms >= 125);  // with a hint, as overloaded
    CHECK(extra.closed_by_peer(3s));
    CHECK(logged(node, "client: refused a connection: 6 connections already open"));
    CHECK(metric_becomes(node, R"(matchmesh_client_connections_closed_total{reason="limit"})", 1));
    held.pop_back();
    CHECK(eventually([&] { return serves(node); }, 2s));
}

TEST_CASE_FIXTURE(OneNode,
                  "integration/bad-input: text that is not UTF-8, or an ID with a control "
                  "character, is refused at the edge and naming its field") {
    // Such bytes once reached the store and the sessions: a dump then threw out of the node
    // (SIGUSR1 aborted it) or out of a client's connection, which was never answered or closed.
    auto client = BlockingClient::connect(node.client_address());
    REQUIRE(client.has_value());
    const auto refusal = [&](auto command) {
        auto reply = client->call(std::move(command));
        REQUIRE(reply.has_value());
        auto* error = std::get_if<ReplyError>(&reply->body);
        REQUIRE(error != nullptr);
        CHECK(error->category == "malformed_request");
        return error->message;
    };
    matching::ValueMap bad_value{{"note", std::string("caf\xc3")}};
    CHECK(refusal(AddCommand{"RankMatch", "u1", "", {{"rank", 1}}, bad_value, 10s}) ==
          "value text is not valid UTF-8 (at byte 3)");
    CHECK(refusal(AddCommand{"RankMatch", "u\xff", "", {{"rank", 1}}, {}, 10s}) ==
          "unique ID is not valid UTF-8 (at byte 1)");
    CHECK(refusal(HelloCommand{UserId("eve\n2026-01-01 info forged"), "", {}}) ==
          "user ID holds a control character at byte 3");
    CHECK(refusal(HelloCommand{UserId("\xed\xa0\x80"), "", {}}) ==
          "user ID is not valid UTF-8 (at byte 0)");

    // Free text may hold newlines; the dumps show everything stored and the node stays up.
    matching::ValueMap note{{"note", std::string("two\nlines, caf\xc3\xa9")}};
    auto added = client->call(AddCommand{"RankMatch", "u2", "", {{"rank", 1}}, note, 10s});
    REQUIRE(added.has_value());
    CHECK_FALSE(std::holds_alternative<ReplyError>(added->body));
    auto dump = client->call(DumpCommand{});
    REQUIRE(dump.has_value());
    REQUIRE(std::holds_alternative<std::string>(dump->body));
    CHECK(std::get<std::string>(dump->body).find("u2") != std::string::npos);
    node.send_signal(SIGUSR1);
    CHECK(eventually([&] { return node.stdout_text().find("=== end ===") != std::string::npos; },
                     2s));
    CHECK(node.stdout_text().find("u2") != std::string::npos);
    CHECK(serves(node));
}

TEST_CASE_FIXTURE(OneNode,
                  "integration/bad-input: a client connection that never says hello is "
                  "closed") {
    // 10,000 such sockets once held every connection a node takes, locking players out.
    RawConnection silent(node.client_address());
    CHECK(silent.closed_by_peer(3s));
    CHECK(logged(node, "no hello within 300 ms"));
    CHECK(metric_becomes(
        node, R"(matchmesh_client_connections_closed_total{reason="hello_timeout"})", 1));
    // One that said hello stays, however quiet.
    auto client = BlockingClient::connect(node.client_address());
    REQUIRE(client.has_value());
    REQUIRE(client->call(HelloCommand{UserId("quiet"), "", {}}).has_value());
    std::this_thread::sleep_for(600ms);
    CHECK(client->call(MembersCommand{}).has_value());
}

TEST_CASE_FIXTURE(SlowHellos,
                  "integration/bad-input: many greeted connections within the hello timeout leave "
                  "a silent one to be closed, and the greeted ones open") {
    // Past 1,024 connections awaiting their check, those that said hello or closed are dropped
    // from the queue: the silent one among them must keep its place, the greeted ones their
    // connections.
    RawConnection silent(node.client_address());
    const auto opened = std::chrono::steady_clock::now();
    auto kept = BlockingClient::connect(node.client_address());
    REQUIRE(kept.has_value());
    REQUIRE(kept->call(HelloCommand{UserId("kept"), "", {}}).has_value());
    for (int i = 0; i < 1500; ++i) {
        auto passing = BlockingClient::connect(node.client_address());
        REQUIRE(passing.has_value());
        REQUIRE(passing->call(HelloCommand{UserId(fmt::format("passing-{}", i)), "", {}})
                    .has_value());
    }
    CHECK(silent.closed_by_peer(8s));
    CHECK(std::chrono::steady_clock::now() - opened >= 4s);
    CHECK(metric_becomes(
        node, R"(matchmesh_client_connections_closed_total{reason="hello_timeout"})", 1));
    CHECK(kept->call(MembersCommand{}).has_value());
}

TEST_CASE_FIXTURE(BigFrames,
                  "integration/bad-input: frames promised but not sent hold little "
                  "memory") {
    // Each header promises 16 MiB and nothing follows. The node once reserved what was promised:
    // 5,000 such connections took it from 12 MB to 374 MB.
    const long before = resident_kib(node.pid());
    std::vector<std::unique_ptr<RawConnection>> slow;
    for (int i = 0; i < 100; ++i) {
        slow.push_back(std::make_unique<RawConnection>(node.client_address()));
        slow.back()->send_header(16 * 1024 * 1024);
    }
    std::this_thread::sleep_for(500ms);  // the node reads every header
    CHECK(serves(node));
    const long grown_kib = resident_kib(node.pid()) - before;
    CAPTURE(grown_kib);
    CHECK(grown_kib < 32 * 1024);  // 1.6 GB if the promises were taken at their word
}

TEST_CASE_FIXTURE(SlowHandshakes,
                  "integration/bad-input: one address cannot hold every pending "
                  "mesh handshake, and its refusals do not flood the log") {
    // An unauthenticated flood once kept a restarted node out of the cluster for 35 s while it
    // logged 928,626 warnings in 40 s.
    std::vector<std::unique_ptr<RawConnection>> pending;
    for (int i = 0; i < 16; ++i) {
        pending.push_back(std::make_unique<RawConnection>(node.mesh_address()));
        REQUIRE(pending.back()->read_body(3s).has_value());  // its challenge: now pending
    }
    for (int i = 0; i < 40; ++i) {
        RawConnection over(node.mesh_address());
        CHECK(over.closed_by_peer(3s));
    }
    CHECK(logged(node, "16 handshakes from that address are already pending"));
    CHECK(count_of(node.log_text(), "already pending") <= 10);
    pending.clear();  // the flood ends: a member gets in at once
    CHECK(eventually(
        [&] {
            RawConnection member(node.mesh_address());
            return member.handshake("late-peer", "integration", secret) == std::string("target");
        },
        3s));
}
