#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.hpp"

using matchmesh::config::Errc;
using matchmesh::config::load_file;
using matchmesh::config::load_string;

namespace {

// Loads `text` expecting a rejection, and checks that the message names source, path and reason.
void expect_rejected(const std::string& text, Errc code, const std::string& path,
                     const std::string& reason) {
    CAPTURE(text);
    auto loaded = load_string(text, "test.json");
    REQUIRE_FALSE(loaded.has_value());
    CHECK(loaded.error().code == code);
    const std::string& message = loaded.error().message;
    CAPTURE(message);
    CHECK(message.starts_with("test.json: " + path + ": "));
    CHECK(message.find(reason) != std::string::npos);
}

std::filesystem::path write_temp(const std::string& name, const std::string& contents) {
    auto path = std::filesystem::temp_directory_path() / name;
    std::ofstream(path) << contents;
    return path;
}

}  // namespace

TEST_CASE("config: an empty object gives every default") {
    auto loaded = load_string("{}", "test.json");
    REQUIRE(loaded.has_value());
    CHECK(loaded->matching.distribution_rate == 30);
    CHECK(loaded->matching.replicas_max == 3);
    CHECK(loaded->matching.target_node_type == "HTTP");
    CHECK(loaded->matching.profiles.empty());
    CHECK(loaded->node.log_format == matchmesh::config::LogFormat::text);
}

TEST_CASE("config: the reference's matching section loads into typed fields") {
    auto loaded = load_string(R"({"matching": {"distributionRate": 50, "targetNodeType": "MATCH",
        "profiles": {"RankMatch": {"rank": 1}, "LevelMatch": {"level": 10, "league": 2}}}})",
                              "test.json");
    REQUIRE(loaded.has_value());
    const auto& matching = loaded->matching;
    CHECK(matching.distribution_rate == 50);
    CHECK(matching.target_node_type == "MATCH");
    REQUIRE(matching.profiles.size() == 2);
    CHECK(matching.profiles.at("RankMatch").at("rank") == 1);
    CHECK(matching.profiles.at("LevelMatch").at("level") == 10);
    CHECK(matching.profiles.at("LevelMatch").at("league") == 2);
}

TEST_CASE("config: distributionRate outside 1..100 or not an integer is rejected") {
    for (const char* bad : {"0", "101", "-5", "30.5", "\"30\"", "true", "null"}) {
        expect_rejected(std::string(R"({"matching": {"distributionRate": )") + bad + "}}",
                        Errc::invalid, "matching.distributionRate", "1..100");
    }
    CHECK(load_string(R"({"matching": {"distributionRate": 1}})", "t").has_value());
    CHECK(load_string(R"({"matching": {"distributionRate": 100}})", "t").has_value());
}

TEST_CASE("config: maxReplicas loads, and outside 1..1000 or not an integer is rejected") {
    auto loaded = load_string(R"({"matching": {"distributionRate": 100, "maxReplicas": 5}})", "t");
    REQUIRE(loaded.has_value());
    CHECK(loaded->matching.replicas_max == 5);
    for (const char* bad : {"0", "1001", "-1", "2.5", "\"3\"", "false", "null"}) {
        expect_rejected(std::string(R"({"matching": {"maxReplicas": )") + bad + "}}", Errc::invalid,
                        "matching.maxReplicas", "1..1000");
    }
}

TEST_CASE("config: placementGroup loads, and outside 1..4096 or not an integer is rejected") {
    auto loaded = load_string(R"({"matching": {"placementGroup": 1}})", "t");
    REQUIRE(loaded.has_value());
    CHECK(loaded->matching.placement_group == 1);
    CHECK(load_string("{}", "t")->matching.placement_group == 8);
    for (const char* bad : {"0", "4097", "-8", "2.5", "\"8\"", "true", "null"}) {
        expect_rejected(std::string(R"({"matching": {"placementGroup": )") + bad + "}}",
                        Errc::invalid, "matching.placementGroup", "1..4096");
    }
}

TEST_CASE("config: a bucket width that is not a positive integer is rejected with its path") {
    expect_rejected(R"({"matching": {"profiles": {"RankMatch": {"rank": 0}}}})", Errc::invalid,
                    "matching.profiles.RankMatch.rank", "bucket width must be > 0, got 0");
    expect_rejected(R"({"matching": {"profiles": {"RankMatch": {"rank": -3}}}})", Errc::invalid,
                    "matching.profiles.RankMatch.rank", "bucket width must be > 0, got -3");
    expect_rejected(R"({"matching": {"profiles": {"RankMatch": {"rank": 1.5}}}})", Errc::invalid,
                    "matching.profiles.RankMatch.rank", "must be an integer");
    expect_rejected(R"({"matching": {"profiles": {"RankMatch": {"rank": "1"}}}})", Errc::invalid,
                    "matching.profiles.RankMatch.rank", "must be an integer");
    expect_rejected(R"({"matching": {"profiles": {"RankMatch": {"rank": 18446744073709551615}}}})",
                    Errc::invalid, "matching.profiles.RankMatch.rank", "must be an integer");
}

TEST_CASE("config: malformed profiles are rejected with their path") {
    expect_rejected(R"({"matching": {"profiles": []}})", Errc::invalid, "matching.profiles",
                    "must be an object, got array");
    expect_rejected(R"({"matching": {"profiles": {"RankMatch": 5}}})", Errc::invalid,
                    "matching.profiles.RankMatch", "must be an object, got number");
    expect_rejected(R"({"matching": {"profiles": {"Rank\tMatch": {"rank": 1}}}})", Errc::invalid,
                    "matching.profiles.Rank\tMatch", "tab");
    expect_rejected(R"({"matching": {"profiles": {"": {"rank": 1}}}})", Errc::invalid,
                    R"(matching.profiles."")", "name must be 1..64 bytes");
    expect_rejected(R"({"matching": {"targetNodeType": ""}})", Errc::invalid,
                    "matching.targetNodeType", "1..64 bytes");
    expect_rejected(R"({"matching": {"targetNodeType": 7}})", Errc::invalid,
                    "matching.targetNodeType", "must be a string");
    expect_rejected(R"({"matching": 3})", Errc::invalid, "matching", "must be an object");
    expect_rejected(R"([1, 2])", Errc::invalid, "(top level)", "must be an object");
}

TEST_CASE("config: unknown keys are errors, not silently ignored") {
    expect_rejected(R"({"matchng": {}})", Errc::invalid, "matchng", "unknown key");
    expect_rejected(R"({"matching": {"distributionrate": 30}})", Errc::invalid,
                    "matching.distributionrate", "unknown key (allowed here: distributionRate");
}

TEST_CASE("config: duplicate keys are errors") {
    expect_rejected(R"({"matching": {"distributionRate": 30, "distributionRate": 40}})",
                    Errc::syntax, "matching.distributionRate", "duplicate key");
    expect_rejected(R"({"matching": {"profiles": {"A": {"x": 1, "x": 2}}}})", Errc::syntax,
                    "matching.profiles.A.x", "duplicate key");
}

TEST_CASE("config: syntax errors name the line and column") {
    expect_rejected("{\n  \"matching\": {\n    \"distributionRate\": 30,\n  }\n}", Errc::syntax,
                    "line 4, column 3", "syntax error");
    expect_rejected("", Errc::syntax, "line 1, column 1", "syntax error");
    // Found by fuzzing: a number no double holds used to escape the loader as an exception.
    expect_rejected(R"({"limits": {"commandsPerSecond": 1e999}})", Errc::syntax, "(top level)",
                    "number overflow parsing '1e999'");
}

TEST_CASE("config: deeply nested input is refused without recursion trouble") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    auto loaded = load_string(deep, "test.json");
    REQUIRE_FALSE(loaded.has_value());
    CHECK(loaded.error().code == Errc::syntax);
    CHECK(loaded.error().message.find("nested deeper than 32 levels") != std::string::npos);
}

TEST_CASE("config: files that cannot be read are named in the error") {
    auto missing = load_file("/nonexistent/matchmesh.json");
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == Errc::unreadable);
    CHECK(missing.error().message.starts_with("/nonexistent/matchmesh.json: cannot read config"));

    auto directory = load_file(std::filesystem::temp_directory_path());
    REQUIRE_FALSE(directory.has_value());
    CHECK(directory.error().code == Errc::unreadable);

    auto too_large = write_temp("matchmesh_config_large.json",
                                std::string(matchmesh::config::config_bytes_max + 1, ' '));
    auto large = load_file(too_large);
    REQUIRE_FALSE(large.has_value());
    CHECK(large.error().message.find("larger than") != std::string::npos);
    std::filesystem::remove(too_large);
}

TEST_CASE("config: a file loads the same as its text, and errors name the file") {
    auto good = write_temp("matchmesh_config_good.json",
                           R"({"matching": {"profiles": {"LevelMatch": {"level": 10}}}})");
    auto loaded = load_file(good);
    REQUIRE(loaded.has_value());
    CHECK(loaded->matching.profiles.at("LevelMatch").at("level") == 10);
    std::filesystem::remove(good);

    auto bad = write_temp("matchmesh_config_bad.json",
                          R"({"matching": {"profiles": {"LevelMatch": {"level": 0}}}})");
    auto rejected = load_file(bad);
    REQUIRE_FALSE(rejected.has_value());
    CHECK(rejected.error().message ==
          bad.string() + ": matching.profiles.LevelMatch.level: bucket width must be > 0, got 0");
    std::filesystem::remove(bad);
}

TEST_CASE("config: node, cluster and limits sections load into typed fields") {
    auto loaded = load_string(R"({
        "node": {"id": "node-7", "nodeType": "MATCH", "meshListen": "0.0.0.0:7100",
                 "meshAdvertise": "node-7.matchmesh:7100", "clientListen": "0.0.0.0:7200",
                 "logFormat": "json"},
        "cluster": {"name": "prod", "secret": "0123456789abcdef", "seeds": ["a:7100", "b:7100"],
                    "heartbeatIntervalMs": 250, "deadAfterMs": 2000, "requestTimeoutMs": 400},
        "limits": {"maxFrameBytes": 65536, "nestingLimit": 8, "sendQueueFrames": 100,
                   "maxClientConnections": 50, "clientHelloTimeoutMs": 2000,
                   "handshakeTimeoutMs": 500, "loopLagMaxMs": 80, "roundTripMaxMs": 20,
                   "liveTicketsMax": 5000, "requestsInFlightMax": 64, "livenessBoundMs": 500}})",
                              "test.json");
    REQUIRE(loaded.has_value());
    CHECK(loaded->node.id == "node-7");
    CHECK(loaded->node.node_type == "MATCH");
    CHECK(loaded->node.mesh_advertise == "node-7.matchmesh:7100");
    CHECK(loaded->node.log_format == matchmesh::config::LogFormat::json);
    CHECK(loaded->cluster.seeds == std::vector<std::string>{"a:7100", "b:7100"});
    CHECK(loaded->cluster.heartbeat_interval_ms == 250);
    CHECK(loaded->cluster.dead_after_ms == 2000);
    CHECK(loaded->limits.frame_bytes_max == 65536);
    CHECK(loaded->limits.nesting_max == 8);
    CHECK(loaded->limits.client_connections_max == 50);
    CHECK(loaded->limits.client_hello_timeout_ms == 2000);
    CHECK(loaded->limits.token_lifetime_max_seconds == 86400);  // the default
    CHECK(loaded->limits.loop_lag_max_ms == 80);
    CHECK(loaded->limits.round_trip_max_ms == 20);
    CHECK(loaded->limits.live_tickets_max == 5000);
    CHECK(loaded->limits.requests_in_flight_max == 64);
    CHECK(loaded->limits.liveness_bound_ms == 500);
    CHECK(matchmesh::config::validate(*loaded, "test.json").has_value());
}

TEST_CASE("config: each invalid node, cluster or limits setting names its path") {
    const std::string secret = R"("secret": "0123456789abcdef")";
    expect_rejected(R"({"node": {"meshListen": "nocolon"}})", Errc::invalid, "node.meshListen",
                    "is not host:port");
    expect_rejected(R"({"node": {"clientListen": 7200}})", Errc::invalid, "node.clientListen",
                    "must be a string");
    expect_rejected(R"({"node": {"id": "a\tb"}})", Errc::invalid, "node.id", "tab");
    expect_rejected(R"({"node": {"port": 1}})", Errc::invalid, "node.port", "unknown key");
    expect_rejected(R"({"node": {"logFormat": "xml"}})", Errc::invalid, "node.logFormat",
                    "'xml' is not a log format: text or json");
    expect_rejected(R"({"node": {"logFormat": 1}})", Errc::invalid, "node.logFormat",
                    "must be a string");
    expect_rejected(R"({"cluster": {"secret": "short"}})", Errc::invalid, "cluster.secret",
                    "at least 16 bytes");
    expect_rejected(R"({"cluster": {"secretFile": "/nonexistent/secret"}})", Errc::invalid,
                    "cluster.secretFile", "cannot read secret file '/nonexistent/secret'");
    expect_rejected(R"({"cluster": {"secret": "0123456789abcdef", "secretFile": "/x"}})",
                    Errc::invalid, "cluster.secretFile", "either secret or secretFile");
    expect_rejected(R"({"cluster": {"adminSecret": "short"}})", Errc::invalid,
                    "cluster.adminSecret", "must be 16..4096 bytes");
    expect_rejected(R"({"cluster": {"adminSecret": "0123456789abcdef", "adminSecretFile": "/x"}})",
                    Errc::invalid, "cluster.adminSecretFile",
                    "either adminSecret or adminSecretFile");
    expect_rejected(
        R"({"cluster": {"tokenSecret": "0123456789abcdef", "adminSecret": "0123456789abcdef"}})",
        Errc::invalid, "cluster.adminSecret", "must differ from tokenSecret");
    expect_rejected(R"({"cluster": {)" + secret + R"(, "seeds": "a:1"}})", Errc::invalid,
                    "cluster.seeds", "must be an array");
    expect_rejected(R"({"cluster": {)" + secret + R"(, "seeds": ["a:1", "bhost"]}})", Errc::invalid,
                    "cluster.seeds[1]", "is not host:port");
    expect_rejected(R"({"cluster": {)" + secret + R"(, "heartbeatIntervalMs": 5}})", Errc::invalid,
                    "cluster.heartbeatIntervalMs", "must be in 10..60000");
    expect_rejected(
        R"({"cluster": {)" + secret + R"(, "heartbeatIntervalMs": 500, "deadAfterMs": 600}})",
        Errc::invalid, "cluster.deadAfterMs", "at least twice heartbeatIntervalMs");
    expect_rejected(R"({"limits": {"maxFrameBytes": 10}})", Errc::invalid, "limits.maxFrameBytes",
                    "must be in 4096..");
    expect_rejected(R"({"limits": {"nestingLimit": 1000}})", Errc::invalid, "limits.nestingLimit",
                    "must be in 4..64");
    expect_rejected(R"({"limits": {"maxClientConnections": 0}})", Errc::invalid,
                    "limits.maxClientConnections", "must be in 1..");
    expect_rejected(R"({"limits": {"tokenLifetimeMaxSeconds": 1}})", Errc::invalid,
                    "limits.tokenLifetimeMaxSeconds", "must be in 60..");
    expect_rejected(R"({"tls": {"clients": true, "certificateFile": "node.pem"}})", Errc::invalid,
                    "tls", "TLS needs certificateFile and privateKeyFile");
    expect_rejected(
        R"({"tls": {"mesh": true, "certificateFile": "node.pem", "privateKeyFile": "node.key"}})",
        Errc::invalid, "tls.caFile", "the CA that signs the nodes");
    expect_rejected(R"({"tls": {"mesh": "yes"}})", Errc::invalid, "tls.mesh", "true or false");
    expect_rejected(R"({"limits": {"searchCostMax": 0}})", Errc::invalid, "limits.searchCostMax",
                    "must be in 1..");
    expect_rejected(R"({"limits": {"clientHelloTimeoutMs": 5}})", Errc::invalid,
                    "limits.clientHelloTimeoutMs", "must be in 100..600000");
    expect_rejected(R"({"limits": {"loopLagMaxMs": 1}})", Errc::invalid, "limits.loopLagMaxMs",
                    "must be in 10..60000");
    expect_rejected(R"({"limits": {"livenessBoundMs": 20}})", Errc::invalid,
                    "limits.livenessBoundMs", "must be in 100..600000");
    expect_rejected(R"({"limits": {"liveTicketsMax": 0}})", Errc::invalid, "limits.liveTicketsMax",
                    "must be in 1..");
    expect_rejected(R"({"limits": {"requestsInFlightMax": "many"}})", Errc::invalid,
                    "limits.requestsInFlightMax", "must be an integer");
}

TEST_CASE("config: the secret may come from a file, and a node needs one") {
    auto secret_file = write_temp("matchmesh_secret.txt", "file-secret-0123456789\n");
    auto loaded = load_string(R"({"cluster": {"secretFile": ")" + secret_file.string() + R"("}})",
                              "test.json");
    REQUIRE(loaded.has_value());
    CHECK(loaded->cluster.secret == "file-secret-0123456789");  // trailing newline dropped
    std::filesystem::remove(secret_file);

    // What is not a small regular file is refused with the reason, and read no further.
    const auto too_long = write_temp("matchmesh_long_secret.txt", std::string(5000, 's'));
    const auto directory = std::filesystem::temp_directory_path();
    const std::vector<std::pair<std::string, std::string>> refused{
        {directory.string(), "is not a regular file"},
        {"/dev/zero", "is not a regular file"},
        {too_long.string(), "is longer than 4096 bytes"}};
    for (const auto& [file, reason] : refused) {
        expect_rejected(R"({"cluster": {"tokenSecretFile": ")" + file + R"("}})", Errc::invalid,
                        "cluster.tokenSecretFile", reason);
    }
    std::filesystem::remove(too_long);

    auto bare = load_string("{}", "test.json");
    REQUIRE(bare.has_value());
    bare->node.id = "n1";
    auto invalid = matchmesh::config::validate(*bare, "test.json");
    REQUIRE_FALSE(invalid.has_value());
    CHECK(invalid.error().message.starts_with("test.json: cluster.secret: is required"));
    bare->cluster.secret = "0123456789abcdef";
    bare->node.id.clear();
    CHECK(matchmesh::config::validate(*bare, "test.json")
              .error()
              .message.starts_with("test.json: node.id:"));
}

TEST_CASE("config: a lone node that is not of matching.targetNodeType is refused") {
    // Its tickets would start and never match: no node would store their items.
    auto loaded = load_string(R"({"cluster": {"secret": "0123456789abcdef"},
        "matching": {"targetNodeType": "STORE", "profiles": {"Duel": {"rank": 100}}},
        "limits": {"ticketDurationMinSeconds": 1},
        "ticketTypes": {"1": {"profiles": ["Duel"], "properties": {"rank": {"value": "rating"}},
                              "ticketDurationSeconds": 5}}})",
                              "test.json");
    REQUIRE(loaded.has_value());
    loaded->node.id = "n1";
    auto lone = matchmesh::config::validate(*loaded, "test.json");
    REQUIRE_FALSE(lone.has_value());
    CHECK(
        lone.error().message.starts_with("test.json: matching.targetNodeType: 'STORE' is not "
                                         "this node's type ('HTTP') and the node has no seeds"));
    loaded->cluster.seeds = {"store-1:7100"};  // other nodes may store them
    CHECK(matchmesh::config::validate(*loaded, "test.json").has_value());
    loaded->cluster.seeds.clear();
    loaded->node.node_type = "STORE";
    CHECK(matchmesh::config::validate(*loaded, "test.json").has_value());
}
