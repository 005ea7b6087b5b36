// region_match: game logic that embeds a matchmesh node and decides matches with its callbacks.
//
// One node runs in this process (a cluster of one; with seeds in its config the same program
// joins a larger cluster). Ticket type 1 is a duel. Its on_issue_ticket files each player under
// its region (the ticket's tag: a search only sees its own tag) and its rating (the property the
// "Duel" profile buckets by 100); its allow_match_if refuses a candidate more than 100 rating
// points away. Six players start tickets; the pushes say who was matched with whom:
//   ana (EU 1500) + ben (EU 1540)  match
//   cem (US 2000) , dan (EU 2010)  never meet: other regions
//   eva (EU 1000) , fay (EU 1180)  fay finds eva, but eva's allow_match_if refuses her
// The program exits 0 only if exactly that happened.
//
// Usage: region_match [config.json | --version]   (without a file, the config below; it needs
// the "Duel" profile and a ticketDurationMinSeconds of at most 3)

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <matchmesh/matchmesh.hpp>
#include <matchmesh/version.hpp>

namespace {

using namespace matchmesh;
using namespace std::chrono_literals;

constexpr ticket::TicketType duel = 1;
constexpr std::int64_t rating_difference_max = 100;

// Port 0: the system picks a free port. No admin (metrics) port.
constexpr const char* built_in_config = R"({
  "node": {"id": "region-match", "meshListen": "127.0.0.1:0", "clientListen": "127.0.0.1:0",
           "adminListen": ""},
  "cluster": {"name": "region-match", "secret": "region-match-example-secret"},
  "limits": {"ticketDurationMinSeconds": 1},
  "matching": {"profiles": {"Duel": {"rating": 100}}}
})";

struct Player {
    const char* name;
    const char* region;
    std::int64_t rating;
    // Starts a moment after the others, which are waiting to be found by then: a ticket in its
    // search phase only finds tickets in their wait phase.
    bool starts_late;
};

constexpr Player players[] = {
    {"ana", "EU", 1500, false}, {"ben", "EU", 1540, true},  //
    {"cem", "US", 2000, false}, {"dan", "EU", 2010, true},  //
    {"eva", "EU", 1000, false}, {"fay", "EU", 1180, true},
};

std::string region_of(const ticket::User& user) {
    return std::get<std::string>(user.data.at("region"));
}

std::int64_t rating_of(const ticket::User& user) {
    return std::get<std::int64_t>(user.data.at("rating"));
}

ticket::Callbacks duel_callbacks(int& refusals) {
    ticket::Callbacks callbacks;
    // Required: what a new ticket of this player adds and searches.
    callbacks.on_issue_ticket = [](const ticket::User& owner) {
        const std::int64_t rating = rating_of(owner);
        ticket::TicketParams params;
        params.profile_ids = {"Duel"};
        params.tags = {region_of(owner)};
        params.add_properties = {{"rating", rating}};
        // Its own rating bucket first, then the two next to it.
        params.search_properties = {{"rating", {rating, rating - 100, rating + 100}}};
        params.max_members = 2;
        params.ticket_duration = 3s;
        params.search_interval = 100ms;
        params.search_tries = 3;
        return std::optional<ticket::TicketParams>(params);
    };
    // Runs where the waiting ticket lives when a searcher asks to join it: the game decides.
    callbacks.allow_match_if = [&refusals](const ticket::TicketProperties&,
                                           const ticket::User* owner,
                                           const ticket::User* candidate) {
        if (owner == nullptr || candidate == nullptr) {
            return false;  // one of them has disconnected
        }
        const std::int64_t difference = std::abs(rating_of(*owner) - rating_of(*candidate));
        if (region_of(*owner) != region_of(*candidate) || difference > rating_difference_max) {
            std::printf("  %s refuses %s: ratings %lld apart\n", owner->id.str().c_str(),
                        candidate->id.str().c_str(), static_cast<long long>(difference));
            ++refusals;
            return false;
        }
        return true;
    };
    return callbacks;
}

void start_tickets(node::Node& node, bool late) {
    for (const Player& player : players) {
        if (player.starts_late != late) {
            continue;
        }
        if (auto started = node.tickets().start_ticket(duel, UserId(player.name)); !started) {
            std::printf("  %s: cannot start a ticket: %s\n", player.name,
                        started.error().message.c_str());
        }
    }
}

// Prints every player's outcome; whether they are the ones this example is built to show.
bool report(const std::map<std::string, std::uint16_t>& result_codes,
            const std::map<std::string, std::set<std::string>>& rooms, int refusals) {
    for (const auto& [room, members] : rooms) {
        std::string names;
        for (const std::string& name : members) {
            names += (names.empty() ? "" : " + ") + name;
        }
        std::printf("matched: %s (room %s)\n", names.c_str(), room.c_str());
    }
    for (const Player& player : players) {
        const auto found = result_codes.find(player.name);
        const int code = found == result_codes.end() ? 0 : found->second;
        std::printf("%s (%s %lld): %s\n", player.name, player.region,
                    static_cast<long long>(player.rating),
                    code == ticket::push_success   ? "matched"
                    : code == ticket::push_timeout ? "no match (timed out)"
                                                   : "no result");
    }

    const std::map<std::string, std::uint16_t> expected = {
        {"ana", ticket::push_success}, {"ben", ticket::push_success},
        {"cem", ticket::push_timeout}, {"dan", ticket::push_timeout},
        {"eva", ticket::push_timeout}, {"fay", ticket::push_timeout}};
    const bool as_expected = result_codes == expected && rooms.size() == 1 &&
                             rooms.begin()->second == std::set<std::string>{"ana", "ben"} &&
                             refusals > 0;
    std::printf("%s\n", as_expected ? "outcomes as expected" : "UNEXPECTED outcomes");
    return as_expected;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string_view(argv[1]) == "--version") {
        std::printf("%s\n", matchmesh::version_line("region_match").c_str());
        return 0;
    }
    const std::string source = argc > 1 ? argv[1] : "<built-in config>";
    auto config =
        argc > 1 ? config::load_file(argv[1]) : config::load_string(built_in_config, source);
    if (!config) {
        std::fprintf(stderr, "region_match: %s\n", config.error().message.c_str());
        return 1;
    }
    if (auto valid = config::validate(*config, source); !valid) {
        std::fprintf(stderr, "region_match: %s\n", valid.error().message.c_str());
        return 1;
    }
    auto log = std::make_shared<spdlog::logger>("region_match",
                                                std::make_shared<spdlog::sinks::stderr_sink_mt>());
    log->set_level(spdlog::level::warn);
    auto created = node::Node::create(*config, log);
    if (!created) {
        std::fprintf(stderr, "region_match: %s\n", created.error().c_str());
        return 1;
    }
    node::Node& node = **created;

    int refusals = 0;
    node.tickets().set_callbacks(duel, duel_callbacks(refusals));

    // Every player's final push: 220 (matched, with its room), 219 (timed out) or 222 (canceled).
    std::map<std::string, std::uint16_t> result_codes;
    std::map<std::string, std::set<std::string>> rooms;  // room ID -> its players
    node.on_push([&](const UserId& user, const ticket::PushMessage& push) {
        if (!ticket::is_terminal(push.kind)) {
            return;
        }
        result_codes[user.str()] = push.cmd;
        if (push.kind == ticket::PushKind::success) {
            rooms[push.room_id].insert(user.str());
        }
        if (result_codes.size() == std::size(players)) {
            node.post([&node] { node.shutdown(); });  // not from inside the push itself
        }
    });

    // Everything below runs on the loop thread, once run() starts it.
    node.post([&node] {
        for (const Player& player : players) {
            node.tickets().connect_user(ticket::User{
                .id = UserId(player.name),
                .session_id = std::string("session-") + player.name,
                .home = node.network().self().id,
                .data = {{"region", std::string(player.region)}, {"rating", player.rating}},
            });
        }
        start_tickets(node, false);
        node.scheduler().run_after(800ms, [&node] { start_tickets(node, true); });
        node.scheduler().run_after(15s, [&node] { node.shutdown(); });  // never hang
    });
    node.run();

    return report(result_codes, rooms, refusals) ? 0 : 1;
}
