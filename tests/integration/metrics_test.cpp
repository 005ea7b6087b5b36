// The admin port's /metrics over real nodes that served tickets, so that the labelled families
// have series: Prometheus's own checker (promtool, which scripts/setup.sh --with-tests puts in
// build/tools) finds nothing to say about it, and the process figures are there.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "node/admin_server.hpp"
#include "node/metrics.hpp"
#include "process_cluster.hpp"

using namespace integration;
using namespace matchmesh;
using namespace std::chrono_literals;

namespace {

constexpr ticket::TicketType duel = 1;
constexpr ticket::TicketType pairs = 4;

// A duel and a two-sided team type, each under its own tag.
std::string config_text() {
    return test_config("integration-secret-0123456789", R"(, "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "ticketDurationSeconds": 10, "searchIntervalMs": 100, "searchTries": 3},
  "4": {"name": "2v2", "profiles": ["RankMatch"], "tags": ["2v2"],
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "teams": {"size": 2, "rating": "rating", "maxTeamDifference": 100},
        "ticketDurationSeconds": 10, "searchIntervalMs": 100, "searchTries": 3}})");
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Runs `promtool check metrics` over `metrics`: its exit code, and what it printed in `said`.
int promtool_check(const TestFolder& folder, const std::string& metrics, std::string& said) {
    const std::filesystem::path promtool = MATCHMESH_PROMTOOL;
    const auto input = folder.write("metrics.txt", metrics);
    const auto output = folder.path() / "promtool.txt";
    const std::string command = fmt::format("'{}' check metrics < '{}' > '{}' 2>&1",
                                            promtool.string(), input.string(), output.string());
    const int status = std::system(command.c_str());
    said = read_text(output);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("integration/metrics: promtool finds nothing to say about a busy node's /metrics") {
    // Two duels' players, four for a team match, a cancel and refusals: every family the node
    // labels has series. promtool must print nothing and exit 0.
    const std::filesystem::path promtool = MATCHMESH_PROMTOOL;
    REQUIRE_MESSAGE(std::filesystem::exists(promtool), "promtool is not at ", promtool,
                    ": run scripts/setup.sh --with-tests");
    Cluster cluster(config_text(), 2);
    const std::string& a = cluster.client_address(0);
    const std::string& b = cluster.client_address(1);
    auto alice = session(a, "alice");
    auto bob = session(b, "bob");
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    wait_for_rooms(b, "duel", 1000);
    REQUIRE(describe(start_ticket(bob, duel, 1010)) == "ok");
    (void)expect_push(alice, ticket::PushKind::success, 5s);
    (void)expect_push(bob, ticket::PushKind::success, 5s);

    std::vector<node::BlockingClient> team;
    for (const char* name : {"p1", "p2", "p3", "p4"}) {
        team.push_back(session(a, name));
        REQUIRE(describe(start_ticket(team.back(), pairs, 1000)) == "ok");
        if (team.size() < 4) {  // the fourth completes the room, which then is no longer listed
            wait_for_rooms(a, "2v2", 1000);
        }
    }
    for (auto& player : team) {
        (void)expect_push(player, ticket::PushKind::success, 5s);
    }
    auto carol = session(a, "carol");
    REQUIRE(describe(start_ticket(carol, duel, 3000)) == "ok");
    REQUIRE(describe(ticket_command(carol, node::TicketAction::cancel, duel)) == "ok");
    (void)expect_push(carol, ticket::PushKind::cancel, 5s);
    CHECK(category(start_ticket(carol, 9, 1000)) == "unknown_ticket_type");

    const NodeProcess& owner = cluster.node(0);
    CHECK(metric_becomes(owner, R"(matchmesh_tickets_ended_total{outcome="canceled",ticket_type="1"})",
                         1));
    CHECK(metric_becomes(owner, R"(matchmesh_tickets_started_total{ticket_type="4"})", 4));
    CHECK(metric_becomes(
        owner, R"(matchmesh_tickets_refused_total{reason="unknown_type",ticket_type="9"})", 1));
    CHECK(node::read_metric(owner.admin_address(),
                            R"(matchmesh_match_side_difference_count{ticket_type="4"})") == 1);
    // Each player who started a ticket and heard its 220, on the node it started on; not carol,
    // who canceled.
    CHECK(node::read_metric(owner.admin_address(),
                            R"(matchmesh_time_to_match_seconds_count{ticket_type="4"})") == 4);
    CHECK(node::read_metric(owner.admin_address(),
                            R"(matchmesh_time_to_match_seconds_count{ticket_type="1"})") == 1);
    CHECK(node::read_metric(cluster.node(1).admin_address(),
                            R"(matchmesh_time_to_match_seconds_count{ticket_type="1"})") == 1);
    CHECK(node::read_metric(owner.admin_address(), "process_cpu_seconds_total") > 0);
    CHECK(node::read_metric(owner.admin_address(), "process_open_fds") > 0);
    CHECK(node::read_metric(owner.admin_address(), "process_start_time_seconds") > 1.7e9);
    CHECK(node::read_metric(owner.admin_address(), "matchmesh_resident_bytes_peak") >=
          node::read_metric(owner.admin_address(), "process_resident_memory_bytes") / 2);

    for (std::size_t i = 0; i < 2; ++i) {
        CAPTURE(i);
        auto page = node::http_get(cluster.node(i).admin_address(), "/metrics");
        REQUIRE(page.has_value());
        REQUIRE(page->status == 200);
        std::string said;
        CHECK(promtool_check(cluster.folder(), page->body, said) == 0);
        CHECK_MESSAGE(said.empty(), "promtool says:\n", said);
    }
}
