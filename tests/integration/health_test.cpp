// The admin port's probes over real node processes: /livez follows the event loop (frozen alone
// through ptrace: SIGSTOP would freeze the admin port's threads too), /readyz waits for the node
// to join its cluster and fails while it drains, and the metrics name the build.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <matchmesh/version.hpp>

#include "node/admin_server.hpp"
#include "node/metrics.hpp"
#include "process_cluster.hpp"

using namespace integration;
using namespace matchmesh;
using namespace std::chrono_literals;

namespace {

constexpr ticket::TicketType trio = 3;

// "<status> <body>" (without the body's line break), or why there is none.
std::string probe(const NodeProcess& node, const std::string& path) {
    auto reply = node::http_get(node.admin_address(), path);
    if (!reply) {
        return "no answer: " + reply.error();
    }
    std::string body = reply->body;
    if (body.ends_with('\n')) {
        body.pop_back();
    }
    return fmt::format("{} {}", reply->status, body);
}

// Whether `path` answers with a line that starts with `prefix` within `timeout`.
bool answers(const NodeProcess& node, const std::string& path, const std::string& prefix,
             std::chrono::milliseconds timeout) {
    return eventually([&] { return probe(node, path).starts_with(prefix); }, timeout);
}

// A loopback address nothing listens on (a port bound, read and released).
std::string unused_address() {
    asio::io_context context;
    asio::ip::tcp::acceptor acceptor(context, {asio::ip::make_address("127.0.0.1"), 0});
    return fmt::format("127.0.0.1:{}", acceptor.local_endpoint().port());
}

// Whether this process may ptrace its children (a container's policy may forbid it).
bool may_trace_children() {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    const bool traced = ptrace(PTRACE_SEIZE, child, nullptr, nullptr) == 0;
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, __WALL);
    return traced;
}

}  // namespace

TEST_CASE("integration/health: a node alone by config is live and ready, and names its build") {
    // No seeds: ready at once; matchmesh_build_info carries this build's version and commit.
    TestFolder folder;
    auto solo = NodeProcess::start(folder, "solo", folder.write("solo.json", test_config()));
    CHECK(probe(solo, "/livez").starts_with("200 the event loop answered "));
    CHECK(probe(solo, "/readyz") == "200 ready: alone by config (no seeds but itself)");
    const std::string build_info = fmt::format(
        R"(matchmesh_build_info{{commit="{}",version="{}"}})", build_commit, build_version);
    CHECK(node::read_metric(solo.admin_address(), build_info) == 1);
}

TEST_CASE("integration/health: /readyz is 503 until the node sees another member, then 200") {
    // A node whose only seed is down is live but not ready; once another node joins through its
    // mesh port both are ready, and when that one dies the first stays ready (it serves alone).
    TestFolder folder;
    const auto config = folder.write("cluster.json", test_config());
    auto first = NodeProcess::start(folder, "node-a", config, {"--seeds", unused_address()});
    CHECK(probe(first, "/livez").starts_with("200 "));
    CHECK(probe(first, "/readyz") == "503 not joined: no other member seen yet");

    auto second = NodeProcess::start(folder, "node-b", config, {"--seeds", first.mesh_address()});
    CHECK(answers(first, "/readyz", "200 ready: 1 other live member(s)", 5s));
    CHECK(answers(second, "/readyz", "200 ready: 1 other live member(s)", 5s));

    second.send_signal(SIGKILL);
    CHECK(answers(first, "/readyz", "200 ready: joined, no other member live now", 5s));
}

TEST_CASE("integration/health: /readyz is 503 while a node drains, and /livez stays 200") {
    // SIGTERM with a room in flight whose other member's node is paused: the drain waits for
    // that member's 222 until its node is declared dead, and readiness fails from the start.
    Cluster cluster(test_config("integration-secret-0123456789", R"(, "ticketTypes": {
  "3": {"name": "trio", "profiles": ["RankMatch"], "tags": ["trio"], "maxMembers": 3,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "ticketDurationSeconds": 15, "searchIntervalMs": 100, "searchTries": 3}})"),
                    2);
    NodeProcess& owner = cluster.node(0);
    NodeProcess& other = cluster.node(1);
    REQUIRE(answers(owner, "/readyz", "200 ", 5s));
    auto alice = session(owner.client_address(), "alice");
    auto bob = session(other.client_address(), "bob");
    REQUIRE(describe(start_ticket(alice, trio, 1000)) == "ok");
    wait_for_rooms(other.client_address(), "trio", 1000);
    REQUIRE(describe(start_ticket(bob, trio, 1000)) == "ok");
    REQUIRE(eventually([&] { return room_members(alice, trio).size() == 2; }, 5s));

    other.send_signal(SIGSTOP);
    owner.send_signal(SIGTERM);
    CHECK(answers(owner, "/readyz", "503 draining: ", 2s));
    CHECK(probe(owner, "/livez").starts_with("200 "));  // the loop runs the drain
    CHECK(owner.wait(10s) == std::optional<int>(0));
    CHECK(logged(owner, "node: canceled 1 live tickets"));
}

TEST_CASE("integration/health: /livez is 503 within its bound while the event loop is stuck") {
    // Only the loop thread stops, so the admin port answers: /livez must say so once the last
    // heartbeat is older than limits.livenessBoundMs (and not before), /readyz with it, and both
    // recover when the loop runs again.
    if (!may_trace_children()) {
        std::fprintf(stderr, "skipped: this process may not ptrace its children\n");
        std::exit(77);  // before any node exists: nothing is left behind
    }
    TestFolder folder;
    auto node = NodeProcess::start(
        folder, "stuck",
        folder.write("stuck.json", test_config("integration-secret-0123456789",
                                               R"(, "limits": {"livenessBoundMs": 500})")));
    REQUIRE(answers(node, "/livez", "200 ", 2s));

    REQUIRE(node.freeze_loop());
    const auto frozen_at = std::chrono::steady_clock::now();
    CHECK(answers(node, "/livez", "503 the event loop last answered ", 3s));
    const auto noticed = std::chrono::steady_clock::now() - frozen_at;
    CHECK(noticed >= 400ms);  // the bound, less the age of the last beat when the loop stopped
    CHECK(noticed < 1000ms);  // the bound, plus the probes' pace on a busy machine
    CHECK(probe(node, "/readyz").starts_with("503 not live: the event loop last answered "));
    CHECK(node::read_metric(node.admin_address(), "matchmesh_members_alive") == 1);

    node.thaw_loop();
    CHECK(answers(node, "/livez", "200 ", 2s));
    CHECK(answers(node, "/readyz", "200 ", 2s));
}
