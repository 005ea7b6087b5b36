// Writes the fuzz targets' seed corpora: valid inputs of every kind, for the fuzzer to mutate.
//   fuzz_make_seeds <corpus folder>     (writes <folder>/{mesh_frames,client_session,config}/*)
// The committed corpus in tests/fuzz/corpus/ came from it, plus what fuzzing runs added.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "matching/wire.hpp"
#include "mesh/control.hpp"
#include "mesh/frame.hpp"
#include "node/client_protocol.hpp"
#include "support/sample_messages.hpp"
#include "ticket/wire.hpp"

using namespace matchmesh;

namespace {

using Bytes = std::vector<std::byte>;

void append(Bytes& out, const mesh::Frame& frame) {
    out.insert(out.end(), frame.begin(), frame.end());
}

void write(const std::filesystem::path& file, const Bytes& bytes) {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

void write(const std::filesystem::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary) << text;
}

void mesh_seeds(const std::filesystem::path& folder) {
    Bytes all;
    for (const auto& sample : test_support::peer_samples()) {
        const mesh::Frame frame = sample.frame();
        write(folder / sample.name, Bytes(frame.begin(), frame.end()));
        append(all, frame);
    }
    write(folder / "stream", all);
}

// Request ids choose the session (id % 4: sessions 0 and 1 on one node, 2 and 3 on the other)
// and the virtual time after the request ((id >> 2) % 64 tens of milliseconds).
std::uint64_t on(std::uint64_t session, std::uint64_t tens_of_ms = 1) {
    return session + 4 * tens_of_ms;
}

Bytes script(const std::vector<node::ClientRequest>& requests) {
    Bytes out;
    for (const auto& request : requests) {
        append(out, node::encode_request(request));
    }
    return out;
}

void client_seeds(const std::filesystem::path& folder) {
    using namespace node;
    const auto hello = [](std::uint64_t session, const char* user) {
        return ClientRequest{on(session), HelloCommand{UserId(user), "", {}}};
    };
    const auto start = [](std::uint64_t session, ticket::TicketType type, std::int64_t rating,
                          std::vector<UserId> party = {}, std::uint64_t wait = 20) {
        return ClientRequest{on(session, wait),
                             StartTicketCommand{type, {{"rating", rating}}, std::move(party), {}}};
    };
    const auto act = [](std::uint64_t session, TicketAction action, ticket::TicketType type) {
        return ClientRequest{on(session, 10), TicketCommand{action, type}};
    };
    write(folder / "duel", script({hello(0, "alice"), hello(2, "bob"), start(0, 1, 1000),
                                   start(2, 1, 1010, {}, 63), act(0, TicketAction::members, 1)}));
    write(folder / "party",
          script({hello(0, "alice"), hello(1, "bob"), hello(2, "carol"), hello(3, "dave"),
                  ClientRequest{on(2), AcceptPartyCommand{3, UserId("alice")}},
                  start(0, 3, 1000, {UserId("carol"), UserId("bob")}),
                  ClientRequest{on(1), AcceptPartyCommand{3, UserId("alice")}},
                  start(0, 3, 1000, {UserId("carol")}), start(3, 3, 1020, {}, 63),
                  ClientRequest{on(0), BroadcastCommand{3, 1, 224, {1, 2, 3}}},
                  ClientRequest{on(0), KickCommand{3, UserId("dave")}},
                  act(0, TicketAction::mark_complete, 3), act(0, TicketAction::start_backfill, 3),
                  start(1, 3, 990, {}, 63), act(2, TicketAction::leave, 3)}));
    write(folder / "properties",
          script({hello(0, "alice"), start(0, 3, 1500),
                  ClientRequest{on(0), SetPropertiesCommand{3, {{"map", std::string("dust")}}}},
                  ClientRequest{on(0), GetPropertiesCommand{3, {"map", "mode"}}},
                  act(0, TicketAction::mark_complete_when_expire, 3),
                  act(0, TicketAction::cancel, 3)}));
    write(folder / "reconnect",
          script({hello(0, "alice"), start(0, 1, 1200), hello(2, "alice"), start(2, 1, 1200),
                  hello(1, "alice"), act(1, TicketAction::stop_backfill, 1)}));
    write(
        folder / "store",
        script({ClientRequest{on(0), AddCommand{"RankMatch",
                                                "item-1",
                                                "duel",
                                                {{"rank", 1000}},
                                                {{"room", std::string("r1")}},
                                                std::chrono::seconds(10)}},
                ClientRequest{on(2), SearchCommand{{"RankMatch"}, "duel", {{"rank", 1000}}, 10}},
                ClientRequest{on(1),
                              RangeSearchCommand{
                                  {"RankMatch"}, {"duel", ""}, {{"rank", {1000, 990, 1010}}}, 10}},
                ClientRequest{on(0), RemoveCommand{"RankMatch", {"item-1"}}},
                ClientRequest{on(0), MembersCommand{}}, ClientRequest{on(0), DumpCommand{}}}));
}

void config_seeds(const std::filesystem::path& folder) {
    write(folder / "minimal", std::string(R"({"cluster": {"secret": "0123456789abcdef"}})"));
    write(folder / "full", std::string(R"({
 "node": {"id": "node-1", "meshListen": "127.0.0.1:7100", "clientListen": "127.0.0.1:7200",
          "adminListen": "127.0.0.1:7300", "nodeType": "HTTP", "logLevel": "info"},
 "cluster": {"name": "eu", "secret": "0123456789abcdef", "seeds": ["127.0.0.1:7101"],
             "tokenSecret": "fedcba9876543210", "adminSecret": "another-secret-0123",
             "heartbeatIntervalMs": 500, "deadAfterMs": 3000, "requestTimeoutMs": 500},
 "limits": {"maxFrameBytes": 1048576, "traversalLimitWords": 262144, "nestingLimit": 16,
            "maxClientConnections": 10000, "commandsPerSecond": 100, "rangeValuesMax": 64,
            "searchCostMax": 32768, "ticketDurationMinSeconds": 10},
 "matching": {"distributionRate": 30, "profiles": {"RankMatch": {"rank": 100, "region": 1}}},
 "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 200}},
        "allowMatch": {"value": "rating", "maxDifference": 300},
        "completeWhen": {"minMembers": 2, "afterSeconds": 8},
        "randomize": {"searchIntervalMs": 30, "searchTries": 1},
        "ticketDurationSeconds": 20, "searchIntervalMs": 100, "searchTries": 1}}})"));
    write(folder / "nested", std::string(40, '[') + std::string(40, ']'));
    write(folder / "bad_value", std::string(R"({"limits": {"commandsPerSecond": -1}})"));
    write(folder / "unknown_key",
          std::string(R"({"cluster": {"secret": "0123456789abcdef", "x": 1}})"));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
        return 2;
    }
    const std::filesystem::path root(argv[1]);
    for (const char* name : {"mesh_frames", "client_session", "config"}) {
        std::filesystem::create_directories(root / name);
    }
    mesh_seeds(root / "mesh_frames");
    client_seeds(root / "client_session");
    config_seeds(root / "config");
    return 0;
}
