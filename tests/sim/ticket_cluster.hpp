#pragma once
// A simulated cluster with matching and ticket services on every node, a recording push sink
// (the ticket ledger of the test plan), and checks of the ticket invariants.

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "matching/service.hpp"
#include "mesh/sim/sim_world.hpp"
#include "support/sim_cluster.hpp"
#include "ticket/service.hpp"

namespace ticket_sim {

using namespace matchmesh;
using namespace matchmesh::mesh;
using namespace matchmesh::mesh::sim;
using namespace matchmesh::ticket;
using namespace std::chrono_literals;

inline constexpr TicketType ranked = 1;

// Every push a user received, in order.
struct Received {
    PushMessage message;
    Time at;
};

class Ledger final : public PushSink {
public:
    void push(const UserId& user, const PushMessage& message) override {
        pushes[user].push_back(Received{message, world != nullptr ? world->now() : Time{}});
        if (is_terminal(message.kind)) {
            ++terminal[message.ticket_id][user];
            terminal_kinds[message.ticket_id].insert(message.kind);
            const std::string reason(message.payload.begin(), message.payload.end());
            if (message.kind == PushKind::cancel && reason == cancel_reason_room_gone) {
                room_gone_cancels.insert(message.ticket_id);
            }
        }
    }
    // The user's terminal pushes, as 220/219/222 codes.
    std::vector<std::uint16_t> terminal_codes(const UserId& user) const {
        std::vector<std::uint16_t> codes;
        if (auto found = pushes.find(user); found != pushes.end()) {
            for (const Received& received : found->second) {
                if (is_terminal(received.message.kind)) {
                    codes.push_back(received.message.cmd);
                }
            }
        }
        return codes;
    }
    // Why each of the user's tickets ended, in order (the reason of each terminal push).
    std::vector<EndReason> terminal_reasons(const UserId& user) const {
        std::vector<EndReason> reasons;
        if (auto found = pushes.find(user); found != pushes.end()) {
            for (const Received& received : found->second) {
                if (is_terminal(received.message.kind)) {
                    reasons.push_back(received.message.reason);
                }
            }
        }
        return reasons;
    }
    std::vector<std::uint16_t> codes(const UserId& user) const {
        std::vector<std::uint16_t> all;
        if (auto found = pushes.find(user); found != pushes.end()) {
            for (const Received& received : found->second) {
                all.push_back(received.message.cmd);
            }
        }
        return all;
    }

    std::map<UserId, std::vector<Received>> pushes;
    std::map<TicketId, std::map<UserId, int>> terminal;  // per participation, per user
    std::map<TicketId, std::set<PushKind>> terminal_kinds;
    std::set<TicketId>
        room_gone_cancels;            // cancels a home decided because a node was declared dead
    const SimWorld* world = nullptr;  // the clock pushes are stamped with
};

// A node's store and ticket service, with the test's callbacks on ticket type `ranked`.
struct TicketNode {
    std::unique_ptr<matching::MatchingService> matching;
    std::unique_ptr<TicketService> tickets;
};

struct TicketCluster {
    std::function<Callbacks()> make_callbacks;
    std::function<void(const NodeId&)> on_node_stop;
    int distribution_rate = 50;
    std::string target_node_type;  // the nodes that store items (every simulated node is HTTP)
    Ledger ledger;
    test_support::SimCluster<TicketNode> sim;
    SimWorld& world = sim.world;

    TicketCluster(std::size_t count, std::uint64_t seed, LinkModel links,
                  std::function<Callbacks()> callbacks_factory, std::string target_type = "HTTP")
        : make_callbacks(std::move(callbacks_factory)),
          target_node_type(std::move(target_type)),
          sim(
              {.nodes = count, .seed = seed, .links = links},
              [this](SimNode& node) { return build(node); },
              [this](const NodeId& id) {
                  if (on_node_stop) {
                      on_node_stop(id);
                  }
              }) {
        ledger.world = &sim.world;
    }

    std::unique_ptr<TicketNode> build(SimNode& node) {
        matching::ServiceOptions matching_options;
        matching_options.replicas.distribution_rate = distribution_rate;
        matching_options.target_node_type = target_node_type;
        matching_options.search_timeout = Duration(200);
        auto built = std::make_unique<TicketNode>();
        built->matching = std::make_unique<matching::MatchingService>(
            node.network(), node.scheduler(), matching_options);
        REQUIRE(built->matching->profiles().define("Rank", {{"rank", 100}}).has_value());
        TicketServiceOptions options;
        options.limits.ticket_duration_min = std::chrono::seconds(1);
        options.join_timeout = Duration(200);
        options.courier.attempt_timeout = Duration(200);
        built->tickets = std::make_unique<TicketService>(node.network(), node.scheduler(),
                                                         *built->matching, ledger, options);
        built->tickets->set_callbacks(ranked, make_callbacks());
        return built;
    }

    static NodeId name(std::size_t i) { return test_support::SimCluster<TicketNode>::name(i); }
    TicketService& at(std::size_t i) { return *sim.at(i).tickets; }
    TicketService& at(const NodeId& id) { return *sim.at(id).tickets; }
    matching::MatchingService& store(std::size_t i) { return *sim.at(i).matching; }
    [[nodiscard]] bool running(const NodeId& id) const { return sim.running(id); }

    User connect(std::size_t node, const std::string& user, std::int64_t rating) {
        User u{UserId(user), "sid-" + user, name(node), {{"rating", rating}}};
        at(node).connect_user(u);
        return u;
    }

    void run(Duration duration) { world.run_for(duration); }

    // Joins the running nodes' rooms have refused, in all.
    std::uint64_t joins_refused() {
        std::uint64_t refused = 0;
        for (auto& [node, services] : sim.running()) {
            refused += services->tickets->counters().joins_refused;
        }
        return refused;
    }

    // Whether nodes `a` (running) and `b` are each live to the other (a node is to itself).
    bool sees_each_other(const NodeId& a, const NodeId& b) {
        return a == b || (world.node(a).network().find_live(b) && sim.running(b) &&
                          world.node(b).network().find_live(a));
    }

    // Rooms above their size, and users counted in two rooms of one type. A membership counts
    // while the room's node sees the user's home and the party's ticket owner alive and is seen
    // so by them (a party's owner that is gone decides nothing any more), and a searching ticket's
    // own room (its party, which nobody can join) is not a room: while its join's answer is on
    // the way, the party is already in the room it joined.
    std::vector<std::string> broken_invariants() {
        std::vector<std::string> broken;
        std::map<std::pair<UserId, TicketType>, std::vector<std::string>> rooms_of;
        for (auto& [node, services] : sim.running()) {
            for (const auto& [room_id, room] : services->tickets->rooms()) {
                if (room.members.size() > room.max_members) {
                    broken.push_back("room " + room_id.str() + " holds " +
                                     std::to_string(room.members.size()) + " members, more than " +
                                     std::to_string(room.max_members));
                }
                for (const Member& member : room.members) {
                    if (room.state == RoomState::searching) {
                        break;
                    }
                    // A party's place in a room is its home's and its ticket owner's to know:
                    // while one of them and the room's node disagree on whether the other is
                    // alive (one declared the other dead, and the other has not heard yet),
                    // each side goes on as it must; they settle when the other hears.
                    const NodeId owner(node_text_of(member.ticket_id.str()));
                    if (sees_each_other(node, member.user->home) &&
                        (!sim.running(owner) || sees_each_other(node, owner))) {
                        static const char* states[] = {"searching", "waiting", "completed",
                                                       "backfill"};
                        rooms_of[{member.user->id, room.type}].push_back(
                            room_id.str() + " (" + states[static_cast<int>(room.state)] +
                            ", ticket " + member.ticket_id.str() + ")");
                    }
                }
            }
        }
        for (const auto& [key, rooms] : rooms_of) {
            if (rooms.size() > 1) {
                broken.push_back("user " + key.first.str() + " is in " +
                                 std::to_string(rooms.size()) + " rooms: " + rooms[0] + " and " +
                                 rooms[1]);
            }
        }
        for (auto& [node, services] : sim.running()) {
            if (services->tickets->stale_reservations() > 0) {
                broken.push_back("node " + node.str() + " holds expired reservations");
            }
        }
        return broken;
    }
};

// Parameters most tests use: rating buckets of 100, search the own bucket and its neighbours.
inline TicketParams ranked_params(std::int64_t rating, std::uint8_t max_members,
                                  std::chrono::seconds duration = 5s) {
    TicketParams params;
    params.profile_ids = {"Rank"};
    params.add_properties = {{"rank", rating}};
    params.search_properties = {{"rank", {rating, rating - 100, rating + 100}}};
    params.max_members = max_members;
    params.ticket_duration = duration;
    params.search_interval = 200ms;
    params.search_tries = 3;
    params.how_many = 10;
    return params;
}

inline std::int64_t rating_of(const User& user) {
    auto found = user.data.find("rating");
    return found == user.data.end() ? 0 : std::get<std::int64_t>(found->second);
}

}  // namespace ticket_sim
