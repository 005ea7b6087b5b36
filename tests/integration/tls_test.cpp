// TLS on the mesh and the client port, over real node processes, with certificates the test makes
// with the openssl tool: a CA for the cluster, and another CA that nobody trusts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "process_cluster.hpp"

using namespace integration;
using namespace matchmesh;
using namespace matchmesh::node;
using namespace std::chrono_literals;
using ticket::PushKind;

namespace {

// A CA and, signed by it, a certificate for 127.0.0.1 that serves and dials (the nodes use one
// for both the mesh and the client port).
struct Authority {
    std::filesystem::path ca;
    std::filesystem::path certificate;
    std::filesystem::path key;
};

void run(const std::string& command) {
    REQUIRE_MESSAGE(std::system((command + " >/dev/null 2>&1").c_str()) == 0, "failed: ", command);
}

Authority make_authority(const TestFolder& folder, const std::string& name) {
    const auto dir = folder.path();
    const auto file = [&](const std::string& suffix) { return dir / (name + suffix); };
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    run(fmt::format("openssl req -x509 {} -keyout {} -out {} -days 2 -subj /CN={}-ca", ec,
                    file("-ca.key").string(), file("-ca.pem").string(), name));
    run(fmt::format("openssl req {} -keyout {} -out {} -subj /CN=127.0.0.1", ec,
                    file(".key").string(), file(".csr").string()));
    const auto extensions = folder.write(
        name + ".ext", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
    run(
        fmt::format("openssl x509 -req -in {} -CA {} -CAkey {} -CAcreateserial -out {} -days 2 "
                    "-extfile {}",
                    file(".csr").string(), file("-ca.pem").string(), file("-ca.key").string(),
                    file(".pem").string(), extensions.string()));
    return {file("-ca.pem"), file(".pem"), file(".key")};
}

std::string tls_config(const Authority& authority) {
    return test_config(
        "integration-secret-0123456789",
        fmt::format(R"(, "tls": {{"certificateFile": "{}", "privateKeyFile": "{}",
 "caFile": "{}", "mesh": true, "clients": true}},
 "ticketTypes": {{"1": {{"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"],
  "maxMembers": 2, "properties": {{"rank": {{"value": "rating", "searchSpread": 100}}}},
  "ticketDurationSeconds": 10, "searchIntervalMs": 100, "searchTries": 3}}}})",
                    authority.certificate.string(), authority.key.string(), authority.ca.string()));
}

BlockingClient tls_session(const std::string& address, const std::string& user,
                           const std::filesystem::path& ca) {
    auto client = BlockingClient::connect(address, 5s, ca.string());
    REQUIRE_MESSAGE(client.has_value(), "TLS connection to ", address, ": ", client.error());
    auto hello = client->call(HelloCommand{UserId(user), "", {}});
    REQUIRE_MESSAGE(describe(hello) == "ok", "hello as ", user, ": ", describe(hello));
    return std::move(*client);
}

}  // namespace

TEST_CASE(
    "integration/tls: three nodes form a cluster over TLS and their clients complete a match, "
    "and a wrong CA is refused on both ports") {
    const TestFolder certificates;
    const Authority cluster_ca = make_authority(certificates, "cluster");
    const Authority rogue_ca = make_authority(certificates, "rogue");
    // Cluster() returns once each node sees all three over TLS mesh connections.
    Cluster cluster(tls_config(cluster_ca), 3, cluster_ca.ca.string());

    auto alice = tls_session(cluster.client_address(0), "alice", cluster_ca.ca);
    auto bob = tls_session(cluster.client_address(1), "bob", cluster_ca.ca);
    REQUIRE(describe(alice.call(StartTicketCommand{1, {{"rating", 1000}}, {}, {}})) == "ok");
    REQUIRE(eventually(
        [&] {
            return rooms_visible(cluster.client_address(1), "duel", 1000, cluster_ca.ca.string()) >
                   0;
        },
        5s));
    REQUIRE(describe(bob.call(StartTicketCommand{1, {{"rating", 1005}}, {}, {}})) == "ok");
    const auto to_alice = alice.next_push(5s);
    const auto to_bob = bob.next_push(5s);
    REQUIRE(to_alice.has_value());
    REQUIRE(to_bob.has_value());
    CHECK(to_alice->kind == PushKind::success);
    CHECK(to_bob->kind == PushKind::success);
    CHECK(to_alice->room_id == to_bob->room_id);

    // A client that trusts another CA refuses the node's certificate.
    auto distrustful = BlockingClient::connect(cluster.client_address(0), 5s, rogue_ca.ca.string());
    REQUIRE_FALSE(distrustful.has_value());
    CHECK(distrustful.error().find("certificate verify failed") != std::string::npos);
    // A client without TLS gets no session: the node closes the connection.
    auto plain = BlockingClient::connect(cluster.client_address(0));
    REQUIRE(plain.has_value());
    CHECK_FALSE(plain->call(HelloCommand{UserId("carol"), "", {}}, 3s).has_value());

    // A node with the cluster's secret but a certificate from another CA is kept out of the mesh.
    const auto rogue_config = cluster.folder().write("rogue.json", tls_config(rogue_ca));
    const NodeProcess rogue = NodeProcess::start(cluster.folder(), "node-rogue", rogue_config,
                                                 {"--seeds", cluster.node(0).mesh_address()});
    CHECK(eventually([&] { return cluster.node(0).log_text().find("TLS") != std::string::npos; },
                     5s));
    std::this_thread::sleep_for(1s);
    CHECK(member_count(cluster.client_address(0), cluster_ca.ca.string()) == 3);
    CHECK(member_count(rogue.client_address(), rogue_ca.ca.string()) == 1);
}
