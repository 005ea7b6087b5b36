#include "node/state_dump.hpp"

#include <algorithm>
#include <ostream>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matching/dump.hpp"

namespace matchmesh::node {
namespace {

const char* phase_name(ticket::RoomState state) {
    switch (state) {
        case ticket::RoomState::searching: return "searching";
        case ticket::RoomState::waiting: return "waiting";
        case ticket::RoomState::completed: return "completed";
        case ticket::RoomState::backfill: return "backfill";
    }
    return "?";
}

// The rooms held here in the order of their IDs, so that a dump reads the same each time.
std::vector<const std::pair<const TicketId, ticket::Room>*> rooms_by_id(
    ticket::TicketService& tickets) {
    std::vector<const std::pair<const TicketId, ticket::Room>*> rooms;
    rooms.reserve(tickets.rooms().size());
    for (const auto& entry : tickets.rooms()) {
        rooms.push_back(&entry);
    }
    std::ranges::sort(rooms, {},
                      [](const auto* entry) -> const std::string& { return entry->first.str(); });
    return rooms;
}

}  // namespace

void dump_text(const mesh::Network& network, NodeServices& services, Time now, std::ostream& out) {
    ticket::TicketService& tickets = services.tickets();
    const matching::MatchingService& store = services.store();
    const auto members = network.live_members();
    out << fmt::format("=== matchmesh node {} (incarnation {}) ===\n", network.self().id.str(),
                       network.self().incarnation);
    out << fmt::format("members ({}):\n", members.size());
    for (const mesh::MemberInfo& member : members) {
        out << fmt::format("  {} {} {} {}\n", member.id.str(), member.address, member.node_type,
                           member.incarnation);
    }
    out << fmt::format("rooms ({}), tickets in progress {}, users connected {}:\n",
                       tickets.room_count(), tickets.ticket_count(), tickets.user_count());
    for (const auto* entry : rooms_by_id(tickets)) {
        const auto& [id, room] = *entry;
        std::string names;
        for (const auto& member : room.members) {
            names += (names.empty() ? "" : ",") + member.user->id.str();
        }
        out << fmt::format("  {} type {} {} {}/{} [{}]\n", id.str(), room.type,
                           phase_name(room.state), room.members.size(), room.max_members, names);
    }
    out << fmt::format("items ({}):\n", store.local_items().size());
    matching::dump_text(store.local_items(), now, out);
    out << "=== end ===\n";
}

nlohmann::json dump_json(const mesh::Network& network, NodeServices& services, Time now) {
    ticket::TicketService& tickets = services.tickets();
    const matching::MatchingService& store = services.store();
    auto members = nlohmann::json::array();
    for (const mesh::MemberInfo& member : network.live_members()) {
        members.push_back({{"id", member.id.str()},
                           {"address", member.address},
                           {"node_type", member.node_type},
                           {"incarnation", member.incarnation}});
    }
    auto rooms = nlohmann::json::array();
    for (const auto* entry : rooms_by_id(tickets)) {
        const auto& [id, room] = *entry;
        auto room_members = nlohmann::json::array();
        for (const auto& member : room.members) {
            room_members.push_back({{"user", member.user->id.str()},
                                    {"home", member.user->home.str()},
                                    {"ticket", member.ticket_id.str()}});
        }
        rooms.push_back({{"id", id.str()},
                         {"type", room.type},
                         {"state", phase_name(room.state)},
                         {"owner", room.owner.str()},
                         {"max_members", room.max_members},
                         {"members", std::move(room_members)}});
    }
    return {{"node", network.self().id.str()},
            {"members", std::move(members)},
            {"tickets",
             {{"in_progress", tickets.ticket_count()},
              {"searching", tickets.ticket_count(ticket::TicketPhase::searching)},
              {"waiting", tickets.ticket_count(ticket::TicketPhase::waiting)},
              {"users", tickets.user_count()}}},
            {"rooms", std::move(rooms)},
            {"store", matching::dump_json(store.local_items(), now)}};
}

}  // namespace matchmesh::node
