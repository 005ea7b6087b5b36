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
#include "mesh/sim/sim_world.hpp"
#include "node/client_protocol.hpp"
#include "node/services.hpp"
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

constexpr std::size_t sessions_count = 4;

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

struct Session {
    std::size_t node = 0;
    std::optional<UserId> user;
};

class Cluster {
public:
    Cluster() : world_(1, mesh_options()) {
        world_.on_start([this](mesh::sim::SimNode& node) { wire(node); });
        world_.add_node({name(0), "HTTP", {}});
        world_.add_node({name(1), "HTTP", {name(0)}});
        if (!world_.run_until_converged(5s)) {
            broken("the simulated cluster did not form");
        }
        for (std::size_t i = 0; i < sessions_count; ++i) {
            sessions_[i].node = i / 2;
        }
    }

    void apply(node::ClientRequest request) {
        Session& session = sessions_[request.id % sessions_count];
        node::NodeServices& at = *nodes_.at(name(session.node));
        std::visit([&](auto& command) { apply(session, at, command); }, request.command);
        world_.run_for(Duration(static_cast<std::int64_t>((request.id >> 2) % 64) * 10));
        check_rooms();
    }

    // Every session closes; whatever was in progress must end and be forgotten.
    void close_all() {
        world_.run_for(Duration(20000));
        check_rooms();
        for (Session& session : sessions_) {
            close(session);
        }
        world_.run_for(Duration(60000));
        if (std::getenv("MATCHMESH_FUZZ_VERBOSE") != nullptr) {
            std::string kinds;
            for (const auto& [kind, count] : ledger_.kinds) {
                kinds += fmt::format(" {}:{}", kind, count);
            }
            std::fprintf(stderr, "pushes by kind:%s\n", kinds.c_str());
        }
        for (const auto& [id, services] : nodes_) {
            const auto& tickets = services->tickets();
            if (tickets.ticket_count() + tickets.participation_count() + tickets.room_count() +
                    tickets.user_count() >
                0) {
                broken(
                    fmt::format("{} still holds {} tickets, {} participations, {} rooms and "
                                "{} users after every session closed",
                                id.str(), tickets.ticket_count(), tickets.participation_count(),
                                tickets.room_count(), tickets.user_count()));
            }
        }
    }

private:
    static NodeId name(std::size_t i) { return NodeId(fmt::format("node-{}", i)); }

    static mesh::MeshOptions mesh_options() {
        mesh::MeshOptions options;
        // Nothing fails here: heartbeats are rare, to spend the fuzzer's time on the commands.
        options.membership.heartbeat_interval = Duration(1000);
        options.membership.dead_after = Duration(10000);
        return options;
    }

    // The node's own wiring, with a fixed seed.
    void wire(mesh::sim::SimNode& node) {
        node::ServiceHooks hooks;
        hooks.on_superseded = [this, id = node.id()](const UserId& user) {
            for (Session& session : sessions_) {
                if (name(session.node) == id && session.user == user) {
                    close(session);
                }
            }
        };
        hooks.seed = 1;
        auto services = node::NodeServices::create(the_config(), node.network(), node.scheduler(),
                                                   ledger_, std::move(hooks));
        if (!services) {
            broken("the node's services cannot be built: " + services.error());
        }
        nodes_[node.id()] = std::move(*services);
    }

    void close(Session& session) {
        if (session.user) {
            node::NodeServices& at = *nodes_.at(name(session.node));
            at.tickets().disconnect_user(*session.user);
            at.types().forget(*session.user);
            session.user.reset();
        }
    }

    void check_rooms() {
        std::map<std::pair<UserId, ticket::TicketType>, std::set<TicketId>> rooms_of;
        for (const auto& [id, services] : nodes_) {
            for (const auto& [room_id, room] : services->tickets().rooms()) {
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

    // What the node does with each command, for a player's session (the store commands are
    // open, as on a cluster without tokens).
    void apply(Session& session, node::NodeServices& at, node::HelloCommand& hello) {
        if (hello.user.empty() || session.user) {
            return;
        }
        for (Session& other : sessions_) {
            if (&other != &session && other.node == session.node && other.user == hello.user) {
                close(other);
            }
        }
        session.user = hello.user;
        at.tickets().connect_user(ticket::User{hello.user, "s", name(session.node),
                                               std::move(hello.data),
                                               static_cast<std::uint64_t>(++epoch_)});
    }

    void apply(Session& session, node::NodeServices& at, node::StartTicketCommand& start) {
        if (!session.user || at.types().find(start.ticket_type) == nullptr ||
            !at.types().check_values(start.ticket_type, start.values)) {
            return;
        }
        matching::ValueMap values;
        for (const auto& [name, value] : start.values) {
            values.emplace(name, value);
        }
        at.tickets().set_user_data(*session.user, values);
        at.types().set_application_data(*session.user, start.ticket_type,
                                        std::move(start.application_data));
        at.tickets().start_ticket(start.ticket_type, *session.user, std::move(start.party),
                                  [](ticket::Result<void>) {});
    }

    void apply(Session& session, node::NodeServices& at, node::TicketCommand& command) {
        if (!session.user) {
            return;
        }
        const UserId& user = *session.user;
        auto& tickets = at.tickets();
        switch (command.action) {
            case node::TicketAction::cancel:
                (void)tickets.cancel_ticket(command.ticket_type, user);
                break;
            case node::TicketAction::leave:
                tickets.leave_from_ticket_matchmaking_with_callback(command.ticket_type, user,
                                                                    [](ticket::Result<void>) {});
                break;
            case node::TicketAction::mark_complete:
                (void)tickets.mark_ticket_as_complete(command.ticket_type, user);
                break;
            case node::TicketAction::mark_complete_when_expire:
                (void)tickets.mark_ticket_as_complete_when_expire(command.ticket_type, user);
                break;
            case node::TicketAction::start_backfill:
                (void)tickets.start_ticket_backfill(command.ticket_type, user);
                break;
            case node::TicketAction::stop_backfill:
                (void)tickets.stop_ticket_backfill(command.ticket_type, user);
                break;
            case node::TicketAction::members:
                (void)tickets.get_ticket_member_ids(command.ticket_type, user);
                break;
        }
    }

    void apply(Session& session, node::NodeServices& at, node::KickCommand& kick) {
        if (session.user) {
            at.tickets().kickout_from_ticket(kick.ticket_type, *session.user, kick.target,
                                             [](ticket::Result<void>) {});
        }
    }

    void apply(Session& session, node::NodeServices& at, node::BroadcastCommand& broadcast) {
        if (session.user) {
            (void)at.tickets().ticket_broadcast(broadcast.ticket_type, *session.user, broadcast.ver,
                                                broadcast.cmd, std::move(broadcast.message));
        }
    }

    void apply(Session& session, node::NodeServices& at, node::SetPropertiesCommand& set) {
        if (session.user) {
            (void)at.tickets().set_ticket_properties(set.ticket_type, *session.user, set.values);
        }
    }

    void apply(Session& session, node::NodeServices& at, node::GetPropertiesCommand& get) {
        if (session.user) {
            (void)at.tickets().get_ticket_properties(get.ticket_type, *session.user, get.keys);
        }
    }

    void apply(Session& session, node::NodeServices& at, node::AcceptPartyCommand& accept) {
        if (session.user) {
            at.tickets().accept_party(accept.ticket_type, *session.user, std::move(accept.owner));
        }
    }

    void apply(Session&, node::NodeServices& at, node::AddCommand& add) {
        (void)at.store().add(add.profile_id, add.unique_id, add.tag, add.properties,
                             std::move(add.value), add.ttl);
    }

    void apply(Session&, node::NodeServices& at, node::SearchCommand& search) {
        (void)at.store().search(search.profile_ids, search.tag, search.properties, search.limit,
                                [](matching::SearchOutcome) {});
    }

    void apply(Session&, node::NodeServices& at, node::RangeSearchCommand& search) {
        (void)at.store().search_with_range_with_tags(search.profile_ids, search.tags,
                                                     search.properties, search.limit,
                                                     [](matching::SearchOutcome) {});
    }

    void apply(Session&, node::NodeServices& at, node::RemoveCommand& remove) {
        (void)at.store().remove(remove.profile_id, remove.unique_ids);
    }

    void apply(Session&, node::NodeServices&, node::MembersCommand&) {}
    void apply(Session&, node::NodeServices&, node::DumpCommand&) {}

    mesh::sim::SimWorld world_;
    Ledger ledger_;
    std::map<NodeId, std::unique_ptr<node::NodeServices>> nodes_;
    std::array<Session, sessions_count> sessions_;
    std::int64_t epoch_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    mesh::FrameLimits limits;
    limits.body_bytes_max = 64 * 1024;  // the client port's default
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
