// The node's logs over real node processes: --log-format json makes every line on stderr and
// stdout one JSON object with ts, level, node and msg (and the events operators act on); an idle
// node writes its summary at debug only; node.logFormat in the config is overridden by the flag;
// an unknown format is refused at startup, naming it.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <sstream>

#include "process_cluster.hpp"
#include "support/log_lines.hpp"

using namespace integration;
using namespace matchmesh;
using namespace std::chrono_literals;
using ticket::PushKind;

namespace {

constexpr ticket::TicketType duel = 1;

std::string duel_config(const std::string& node_section = "") {
    return test_config("integration-secret-0123456789", node_section + R"(, "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "ticketDurationSeconds": 10, "searchIntervalMs": 100, "searchTries": 3}})");
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

// Each line of `text` as JSON (a discarded value where a line does not parse).
std::vector<nlohmann::json> json_lines(const std::string& text) {
    std::vector<nlohmann::json> objects;
    for (const auto& line : lines_of(text)) {
        objects.push_back(nlohmann::json::parse(line, nullptr, false));
    }
    return objects;
}

// The line's `key`, or null where it has none.
nlohmann::json field(const nlohmann::json& line, const char* key) {
    return line.value(key, nlohmann::json());
}

// Checks that every line of `text` is a JSON object with the fields every line carries.
void check_every_line_is_json(const std::string& text, const std::string& node_id) {
    const auto lines = lines_of(text);
    CHECK_FALSE(lines.empty());
    for (const auto& line : lines) {
        CAPTURE(line);
        const auto object = nlohmann::json::parse(line, nullptr, false);
        REQUIRE(object.is_object());
        REQUIRE(object.contains("ts"));
        CHECK(test_support::is_utc_millis(object["ts"].get<std::string>()));
        CHECK(field(object, "level").is_string());
        CHECK(field(object, "node") == node_id);
        CHECK(field(object, "msg").is_string());
    }
}

bool any_line(const std::string& text, const std::function<bool(const nlohmann::json&)>& match) {
    const auto objects = json_lines(text);
    return std::ranges::any_of(objects, [&](const auto& object) {
        return object.is_object() && match(object);
    });
}

}  // namespace

TEST_CASE("integration/logs: with --log-format json every line of a node's output is JSON") {
    // Two players (one with quotes and a backslash in its ID, which the debug lines quote) match
    // on one node, which then drains; its stderr and its ready line on stdout parse line by line,
    // and the ready, summary and drain lines carry their events and figures.
    TestFolder folder;
    auto node = NodeProcess::start(folder, "solo", folder.write("solo.json", duel_config()),
                                   {"--log-format", "json"});
    const std::string player = R"(bob "the builder" \ o/)";
    auto alice = session(node.client_address(), "alice");
    auto bob = session(node.client_address(), player);
    REQUIRE(describe(start_ticket(alice, duel, 1000)) == "ok");
    wait_for_rooms(node.client_address(), "duel", 1000);
    REQUIRE(describe(start_ticket(bob, duel, 1005)) == "ok");
    expect_push(alice, PushKind::success, 5s);
    expect_push(bob, PushKind::success, 5s);
    const auto busy_at_info = [](const nlohmann::json& line) {
        return field(line, "event") == "summary" && field(line, "level") == "info" &&
               field(line, "state") == "busy" && field(line, "tickets_started") >= 1;
    };
    CHECK(eventually([&] { return any_line(node.log_text(), busy_at_info); }, 5s));
    node.send_signal(SIGTERM);
    REQUIRE(node.wait(10s) == 0);

    const std::string log = node.log_text();
    check_every_line_is_json(log, "solo");
    check_every_line_is_json(node.stdout_text(), "solo");
    CHECK(any_line(node.stdout_text(), [&](const nlohmann::json& line) {
        return field(line, "event") == "ready" && field(line, "client") == node.client_address() &&
               field(line, "cluster") == "integration";
    }));
    CHECK(any_line(log, [&](const nlohmann::json& line) {
        const auto msg = field(line, "msg");
        return msg.is_string() &&
               msg.get<std::string>().starts_with("session: user " + player + " connected from ");
    }));
    CHECK(any_line(log, [](const nlohmann::json& line) {
        return field(line, "event") == "draining" && field(line, "signal") == SIGTERM;
    }));
    CHECK(any_line(log, [](const nlohmann::json& line) {
        return field(line, "event") == "leaving" && field(line, "tickets_canceled") == 0;
    }));
    CHECK_FALSE(
        any_line(log, [](const nlohmann::json& line) { return field(line, "level") == "error"; }));
}

TEST_CASE("integration/logs: an idle node writes its summary at debug only") {
    // Three seconds without a player: a summary line each second at debug, none at info.
    TestFolder folder;
    auto node = NodeProcess::start(folder, "idle", folder.write("idle.json", duel_config()),
                                   {"--log-format", "json"});
    const auto summary_at = [](const std::string& level) {
        return [level](const nlohmann::json& line) {
            return field(line, "event") == "summary" && field(line, "level") == level;
        };
    };
    REQUIRE(eventually(
        [&] {
            const auto objects = json_lines(node.log_text());
            return std::ranges::count_if(objects, summary_at("debug")) >= 3;
        },
        10s));
    CHECK_FALSE(any_line(node.log_text(), summary_at("info")));
}

TEST_CASE("integration/logs: node.logFormat sets the format and --log-format overrides it") {
    // The config asks for JSON: the ready line is JSON; with --log-format text it is text, and
    // so is the log.
    TestFolder folder;
    const auto config = folder.write("json.json", duel_config(R"(, "node": {"logFormat": "json"})"));
    auto from_config = NodeProcess::start(folder, "from-config", config);
    CHECK(from_config.stdout_text().starts_with(R"({"ts":")"));
    auto overridden = NodeProcess::start(folder, "overridden", config, {"--log-format", "text"});
    const auto is_text_line = [](std::string_view line) {
        const auto parts = test_support::text_line(line);
        return parts && test_support::is_utc_millis(parts->ts) && parts->node == "overridden" &&
               (parts->level == "debug" || parts->level == "info" || parts->level == "warning");
    };
    CAPTURE(overridden.stdout_text());
    CHECK(is_text_line(lines_of(overridden.stdout_text()).at(0)));
    for (const auto& line : lines_of(overridden.log_text())) {
        CAPTURE(line);
        CHECK(is_text_line(line));
    }
}

TEST_CASE("integration/logs: an unknown --log-format is refused at startup, naming it") {
    // CLI11 runs the config's own check on the flag: the node exits before it binds a port.
    TestFolder folder;
    const auto config = folder.write("node.json", duel_config());
    std::string err;
    CHECK(NodeProcess::run_to_exit(folder, "xml", {"--config", config.string(), "--log-format", "xml"},
                                   err) != 0);
    CAPTURE(err);
    CHECK(err.find("'xml' is not a log format: text or json") != std::string::npos);
    CHECK(err.find("--log-format") != std::string::npos);
}
