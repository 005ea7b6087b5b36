// Fuzz target: what players send to the client port, against a simulated two-node cluster with
// the stock node's ticket types. The input is a byte stream of client frames, split and decoded
// as the client port does; each request goes to one of four sessions (two on each node, chosen by
// the request's id), and virtual time runs between requests. Each command is applied as the
// node's command handler applies it. Checked: every input is decoded or refused; no room holds
// more than its maximum; no user is in two rooms of one type; nobody hears two terminal pushes
// for one ticket; once every session has closed, the nodes hold no tickets, participations or
// rooms. A broken rule aborts, so the fuzzer keeps the input.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>

#include <fmt/format.h>

#include "config/config.hpp"
#include "matching/service.hpp"
#include "mesh/frame.hpp"
#include "node/client_protocol.hpp"
#include "support/core_cluster.hpp"
#include "ticket/service.hpp"

using namespace matchmesh;
using namespace std::chrono_literals;

namespace {

constexpr const char* cluster_config = R"({
 "cluster": {"secret": "fuzz-secret-0123456789"},
 "matching": {"profiles": {"RankMatch": {"rank": 10}}},
 "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "allowMatch": {"value": "rating", "maxDifference": 300},
        "ticketDurationSeconds": 10, "searchIntervalMs": 100, "searchTries": 3},
  "3": {"name": "trio", "profiles": ["RankMatch"], "tags": ["trio"], "maxMembers": 3,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "completeWhen": {"minMembers": 2, "afterSeconds": 3},
        "ticketDurationSeconds": 15, "searchIntervalMs": 100, "searchTries": 2}}})";

[[noreturn]] void broken(const std::string& rule) {
    std::fprintf(stderr, "broken: %s\n", rule.c_str());
    std::abort();
}

const config::Config& the_config() {
    static const config::Config config = [] {
        auto loaded = config::load_string(cluster_config, "fuzz");
        if (!loaded) {
            broken("the fuzz config does not load: " + loaded.error().message);
        }
        return *loaded;
    }();
    return config;
}

// Terminal pushes per ticket and user.
class Ledger final : public ticket::PushSink {
public:
    void push(const UserId& user, const ticket::PushMessage& message) override {
        ++kinds[static_cast<int>(message.kind)];
        if (ticket::is_terminal(message.kind) && ++terminal_[{message.ticket_id, user}] > 1) {
            broken(fmt::format("user {} heard two terminal pushes for ticket {}", user.str(),
                               message.ticket_id.str()));
        }
    }

    std::map<int, int> kinds;  // pushes by kind, for MATCHMESH_FUZZ_VERBOSE

private:
    std::map<std::pair<TicketId, UserId>, int> terminal_;
};

// Four players, two on each node; one whose connection the node closed connects again.
class Cluster {
public:
    Cluster() : cluster_(the_config(), ledger_, options()) {
        for (std::size_t i = 0; i < players_.size(); ++i) {
            players_[i] = cluster_.connect(i / 2);
        }
    }

    void apply(node::ClientRequest request) {
        const std::size_t index = request.id % players_.size();
        if (cluster_.closed(players_[index])) {
            players_[index] = cluster_.connect(index / 2);
        }
        cluster_.send(players_[index], std::move(request), [](const node::ClientReply&) {});
        cluster_.world().run_for(Duration(static_cast<std::int64_t>((request.id >> 2) % 64) * 10));
        check_rooms();
    }

    // Every session closes; whatever was in progress must end and be forgotten.
    void close_all() {
        cluster_.world().run_for(Duration(20000));
        check_rooms();
        for (const auto& player : players_) {
            cluster_.close(player);
        }
        cluster_.world().run_for(Duration(60000));
        if (std::getenv("MATCHMESH_FUZZ_VERBOSE") != nullptr) {
            std::string kinds;
            for (const auto& [kind, count] : ledger_.kinds) {
                kinds += fmt::format(" {}:{}", kind, count);
            }
            std::fprintf(stderr, "pushes by kind:%s\n", kinds.c_str());
        }
        for (std::size_t i = 0; i < cluster_.size(); ++i) {
            const auto& tickets = cluster_.services(i).tickets();
            if (tickets.ticket_count() + tickets.participation_count() + tickets.room_count() +
                    tickets.user_count() >
                0) {
                broken(
                    fmt::format("node {} still holds {} tickets, {} participations, {} rooms and "
                                "{} users after every session closed",
                                i, tickets.ticket_count(), tickets.participation_count(),
                                tickets.room_count(), tickets.user_count()));
            }
        }
    }

private:
    static test_support::CoreCluster::Options options() {
        test_support::CoreCluster::Options options;
        options.nodes = 2;
        // Nothing fails here: heartbeats are rare, to spend the fuzzer's time on the commands.
        options.mesh.membership.heartbeat_interval = Duration(1000);
        options.mesh.membership.dead_after = Duration(10000);
        return options;
    }

    void check_rooms() {
        std::map<std::pair<UserId, ticket::TicketType>, std::set<TicketId>> rooms_of;
        for (std::size_t i = 0; i < cluster_.size(); ++i) {
            for (const auto& [room_id, room] : cluster_.services(i).tickets().rooms()) {
                if (room.members.size() > room.max_members) {
                    broken(fmt::format("room {} holds {} members, more than {}", room_id.str(),
                                       room.members.size(), room.max_members));
                }
                if (room.state == ticket::RoomState::searching) {
                    continue;  // a searcher's own party, which nobody can join
                }
                for (const ticket::Member& member : room.members) {
                    auto& rooms = rooms_of[{member.user->id, room.type}];
                    rooms.insert(room_id);
                    if (rooms.size() > 1) {
                        broken(fmt::format("user {} is in two rooms of type {}",
                                           member.user->id.str(), room.type));
                    }
                }
            }
        }
    }

    Ledger ledger_;
    test_support::CoreCluster cluster_;
    std::array<std::shared_ptr<node::Session>, 4> players_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    mesh::FrameLimits limits;
    limits.frame_bytes_max = 64 * 1024;  // the client port's default
    const capnp::ReaderOptions options = limits.reader_options();
    Cluster cluster;
    std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data), size);
    std::size_t commands = 0;
    while (rest.size() >= mesh::frame_header_bytes && commands < 256) {
        auto length = mesh::parse_header(rest.first<mesh::frame_header_bytes>(), limits);
        if (!length) {
            break;  // the node closes the connection
        }
        rest = rest.subspan(mesh::frame_header_bytes);
        if (rest.size() < *length) {
            break;
        }
        auto body = kj::heapArray<capnp::word>(*length / sizeof(capnp::word));
        std::memcpy(static_cast<void*>(body.begin()), rest.data(), *length);
        rest = rest.subspan(*length);
        auto request =
            node::decode_request(std::span<const capnp::word>(body.begin(), body.size()), options);
        if (request) {
            cluster.apply(std::move(*request));
            ++commands;
        }
    }
    cluster.close_all();
    return 0;
}
