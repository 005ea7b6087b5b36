// Three real matchmesh processes on loopback: membership, distributed items, failure detection,
// purging, authentication, signals and startup errors.
#include <doctest/doctest.h>

#include <csignal>

#include <nlohmann/json.hpp>

#include "node/blocking_client.hpp"
#include "node_process.hpp"
#include "process_cluster.hpp"

using namespace integration;
using namespace matchmesh;
using namespace matchmesh::node;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> member_ids(const std::string& client_address) {
    auto client = BlockingClient::connect(client_address);
    if (!client) {
        return {};
    }
    auto reply = client->call(MembersCommand{});
    std::vector<std::string> ids;
    if (reply) {
        if (auto* members = std::get_if<std::vector<mesh::MemberInfo>>(&reply->body)) {
            for (const auto& member : *members) {
                ids.push_back(member.id.str());
            }
        }
    }
    return ids;
}

std::vector<std::string> search_ids(const std::string& client_address, std::int64_t rank) {
    auto client = BlockingClient::connect(client_address);
    REQUIRE(client.has_value());
    auto reply = client->call(SearchCommand{{"RankMatch"}, "", {{"rank", rank}}, 100});
    REQUIRE(reply.has_value());
    auto* outcome = std::get_if<matching::SearchOutcome>(&reply->body);
    REQUIRE(outcome != nullptr);
    std::vector<std::string> ids;
    for (const auto& item : outcome->items) {
        ids.emplace_back(item.unique_id);
    }
    return ids;
}

// Origins of every item a node stores, from its JSON dump.
std::vector<std::string> stored_origins(const std::string& client_address) {
    auto client = BlockingClient::connect(client_address);
    REQUIRE(client.has_value());
    auto reply = client->call(DumpCommand{});
    REQUIRE(reply.has_value());
    auto* text = std::get_if<std::string>(&reply->body);
    REQUIRE(text != nullptr);
    std::vector<std::string> origins;
    const nlohmann::json dump = nlohmann::json::parse(*text);  // kept: the loop refers into it
    for (const auto& bucket : dump["store"]["buckets"]) {
        for (const auto& item : bucket["items"]) {
            origins.push_back(item["origin"]);
        }
    }
    return origins;
}

struct ThreeNodes {
    Cluster cluster{test_config(), 3};
    NodeProcess& node(std::size_t i) { return cluster.node(i); }
};

}  // namespace

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/cluster: an item added through one node is found "
                  "through every other") {
    CHECK(member_ids(node(1).client_address()) ==
          std::vector<std::string>{"node-a", "node-b", "node-c"});
    for (int rank = 0; rank < 100; rank += 10) {
        auto client = BlockingClient::connect(node(0).client_address());
        REQUIRE(client.has_value());
        auto reply = client->call(AddCommand{"RankMatch",
                                             "item-" + std::to_string(rank),
                                             "",
                                             {{"rank", rank}},
                                             {{"room", std::string("r")}},
                                             30s});
        REQUIRE(reply.has_value());
        CHECK(std::holds_alternative<std::monostate>(reply->body));
    }
    for (std::size_t i = 0; i < 3; ++i) {
        for (int rank = 0; rank < 100; rank += 10) {
            CHECK(eventually(
                [&] {
                    return search_ids(node(i).client_address(), rank + 5) ==
                           std::vector<std::string>{"item-" + std::to_string(rank)};
                },
                2s));
        }
    }
}

TEST_CASE_FIXTURE(ThreeNodes,
                  "integration/cluster: a killed node is declared dead in time and "
                  "its items are purged everywhere") {
    for (int i = 0; i < 20; ++i) {
        auto client = BlockingClient::connect(node(2).client_address());
        REQUIRE(client.has_value());
        REQUIRE(client
                    ->call(AddCommand{
                        "RankMatch", "c-" + std::to_string(i), "", {{"rank", i * 10}}, {}, 60s})
                    .has_value());
    }
    REQUIRE(eventually(
        [&] {
            const auto a = stored_origins(node(0).client_address());
            const auto b = stored_origins(node(1).client_address());
            return std::count(a.begin(), a.end(), "node-c") +
                       std::count(b.begin(), b.end(), "node-c") >
                   0;
        },
        2s));
    const auto killed_at = std::chrono::steady_clock::now();
    node(2).send_signal(SIGKILL);
    REQUIRE(node(2).wait(5s).has_value());
    // deadAfterMs is 800 with 100 ms probe periods: dead within about a second and a half.
    CHECK(eventually([&] { return member_ids(node(0).client_address()).size() == 2; }, 3s));
    CHECK(eventually([&] { return member_ids(node(1).client_address()).size() == 2; }, 3s));
    CHECK(std::chrono::steady_clock::now() - killed_at < 2500ms);
    for (int i : {0, 1}) {
        const auto origins = stored_origins(node(i).client_address());
        CHECK(std::count(origins.begin(), origins.end(), "node-c") == 0);
    }
    CHECK(node(0).log_text().find("node-c declared dead") != std::string::npos);
}

TEST_CASE_FIXTURE(ThreeNodes, "integration/cluster: a node with the wrong secret is refused") {
    const auto wrong =
        cluster.folder().write("wrong.json", test_config("another-secret-9876543210"));
    auto intruder = NodeProcess::start(cluster.folder(), "intruder", wrong,
                                       {"--seeds", node(0).mesh_address()});
    std::this_thread::sleep_for(1500ms);
    CHECK(member_ids(node(0).client_address()).size() == 3);
    CHECK(member_ids(intruder.client_address()) == std::vector<std::string>{"intruder"});
    CHECK(node(0).log_text().find("handshake refused: wrong secret from 'intruder'") !=
          std::string::npos);
}

TEST_CASE_FIXTURE(ThreeNodes, "integration/cluster: SIGUSR1 dumps, SIGTERM leaves and exits 0") {
    node(1).send_signal(SIGUSR1);
    CHECK(eventually([&] { return node(1).stdout_text().find("=== end ===") != std::string::npos; },
                     3s));
    const std::string dump = node(1).stdout_text();
    CHECK(dump.find("=== matchmesh node node-b") != std::string::npos);
    CHECK(dump.find("members (3):") != std::string::npos);
    CHECK(member_ids(node(1).client_address()).size() == 3);  // still serving

    node(1).send_signal(SIGTERM);
    CHECK(node(1).wait(5s) == std::optional<int>(0));
    CHECK(eventually([&] { return member_ids(node(0).client_address()).size() == 2; }, 500ms));
    CHECK(node(0).log_text().find("node-b left the cluster") != std::string::npos);
}

TEST_CASE("integration/node: bad configs and busy ports stop the node with a clear message") {
    TestFolder folder;
    std::string err;
    const auto bad = folder.write("bad.json", R"({"matching": {"distributionRate": 0}})");
    CHECK(NodeProcess::run_to_exit(folder, "bad", {"--config", bad.string()}, err) == 1);
    CHECK(err.find("bad.json: matching.distributionRate: must be in 1..100, got 0") !=
          std::string::npos);

    const auto no_secret = folder.write("nosecret.json", "{}");
    CHECK(NodeProcess::run_to_exit(folder, "nosecret", {"--config", no_secret.string()}, err) == 1);
    CHECK(err.find("cluster.secret: is required") != std::string::npos);

    CHECK(NodeProcess::run_to_exit(folder, "missing", {"--config", "/nonexistent.json"}, err) == 1);
    CHECK(err.find("/nonexistent.json: cannot read config") != std::string::npos);

    const auto good = folder.write("good.json", test_config());
    auto first = NodeProcess::start(folder, "first", good);
    CHECK(NodeProcess::run_to_exit(folder, "second",
                                   {"--config", good.string(), "--mesh-listen",
                                    first.mesh_address(), "--client-listen", "127.0.0.1:0"},
                                   err) == 1);
    CHECK(err.find("cannot listen on " + first.mesh_address()) != std::string::npos);
    CHECK(err.find("in use") != std::string::npos);

    CHECK(NodeProcess::run_to_exit(folder, "usage", {"--no-such-flag"}, err) != 0);
}
