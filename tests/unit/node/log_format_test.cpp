#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "node/log_format.hpp"
#include "support/log_lines.hpp"

namespace matchmesh::node {
namespace {

using config::LogFormat;

// A logger that writes the node's lines for "node-1" in `format` to a string.
struct CapturedLog {
    explicit CapturedLog(LogFormat format)
        : log("matchmesh", std::make_shared<spdlog::sinks::ostream_sink_st>(out)) {
        log.set_formatter(make_log_formatter(format, "node-1"));
        log.set_level(spdlog::level::trace);
    }

    [[nodiscard]] std::vector<std::string> lines() const {
        std::vector<std::string> result;
        std::istringstream in(out.str());
        for (std::string line; std::getline(in, line);) {
            result.push_back(line);
        }
        return result;
    }

    // Every line as JSON; a line that does not parse fails the test.
    [[nodiscard]] std::vector<nlohmann::json> objects() const {
        std::vector<nlohmann::json> result;
        for (const std::string& line : lines()) {
            CAPTURE(line);
            nlohmann::json object;
            CHECK_NOTHROW(object = nlohmann::json::parse(line));
            REQUIRE(object.is_object());
            result.push_back(std::move(object));
        }
        return result;
    }

    std::ostringstream out;
    spdlog::logger log;
};

}  // namespace

TEST_CASE("node/log-format: the timestamp is UTC to the millisecond with its offset") {
    // A fixed instant prints as itself whatever the machine's time zone.
    using namespace std::chrono;
    const auto instant = sys_days{year{2026} / November / 26} + hours(6) + minutes(10) +
                         seconds(7) + milliseconds(5);
    CHECK(utc_timestamp(time_point_cast<spdlog::log_clock::duration>(instant)) ==
          "2026-11-26T06:10:07.005Z");
    CHECK(utc_timestamp(spdlog::log_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
}

TEST_CASE("node/log-format: json lines parse, carry ts, level, node and msg, and escape text") {
    // Quotes, backslashes, line breaks, control characters and bytes that are not UTF-8 (which
    // peers can put into a message) all leave one line that parses, with the message intact.
    CapturedLog captured(LogFormat::json);
    const std::vector<std::string> messages{
        "plain",
        R"(she said "hi" \ then left)",
        "two\nlines\r\tand a tab",
        std::string("a nul \0 and a bell \a", 20),
        "caf\xc3\xa9 \xe2\x9c\x93",
    };
    for (const auto& message : messages) {
        captured.log.info("{}", message);
    }
    captured.log.warn("bad bytes: {} end", std::string("\xff\xfe"));
    captured.log.debug("a debug line");

    const auto lines = captured.lines();
    REQUIRE(lines.size() == messages.size() + 2);
    const auto objects = captured.objects();
    for (std::size_t i = 0; i < objects.size(); ++i) {
        CAPTURE(lines[i]);
        const auto& object = objects[i];
        REQUIRE(object.contains("ts"));
        CHECK(test_support::is_utc_millis(object["ts"].get<std::string>()));
        CHECK(object["node"] == "node-1");
        CHECK(object.contains("msg"));
        CHECK_FALSE(object.contains("event"));
        if (i < messages.size()) {
            CHECK(object["level"] == "info");
            CHECK(object["msg"] == messages[i]);
        }
    }
    CHECK(objects[messages.size()]["level"] == "warning");
    CHECK(objects[messages.size()]["msg"] == "bad bytes: \xef\xbf\xbd\xef\xbf\xbd end");
    CHECK(objects[messages.size() + 1]["level"] == "debug");
    CHECK(lines[1].find(R"(\"hi\")") != std::string::npos);  // escaped, not raw
    CHECK(lines[2].find(R"(two\nlines)") != std::string::npos);
}

TEST_CASE("node/log-format: an event's name and fields join the json line, and only that line") {
    // Fields keep their order and types; one named like the line's own keys does not replace
    // them; the lines before and after carry no event, and a nested event restores the outer.
    CapturedLog captured(LogFormat::json);
    captured.log.info("before");
    log_event(captured.log, spdlog::level::warn,
              {"member_dead", {{"member", "node-2"}, {"incarnation", 7}, {"msg", "hidden"}}},
              "mesh: {} declared dead", "node-2");
    {
        const LogEvent outer{"outer", {{"depth", 1}}};
        const LogEventScope scope(outer);
        log_event(captured.log, spdlog::level::info, {"inner", {{"depth", 2}}}, "inner");
        captured.log.info("outer again");
    }
    captured.log.info("after");
    log_event(captured.log, spdlog::level::trace, {"quiet", {}}, "below the level");

    const auto objects = captured.objects();
    REQUIRE(objects.size() == 6);
    CHECK_FALSE(objects[0].contains("event"));
    const auto& dead = objects[1];
    CHECK(dead["event"] == "member_dead");
    CHECK(dead["member"] == "node-2");
    CHECK(dead["incarnation"] == 7);
    CHECK(dead["msg"] == "mesh: node-2 declared dead");
    CHECK(dead["level"] == "warning");
    CHECK(captured.lines()[1].starts_with(R"({"ts":")"));
    CHECK(objects[2]["event"] == "inner");
    CHECK(objects[2]["depth"] == 2);
    CHECK(objects[3]["event"] == "outer");
    CHECK_FALSE(objects[4].contains("event"));
    CHECK(objects[5]["event"] == "quiet");

    captured.log.set_level(spdlog::level::info);
    log_event(captured.log, spdlog::level::debug, {"filtered", {}}, "not written");
    CHECK(captured.lines().size() == 6);
}

TEST_CASE("node/log-format: text lines read 'ts level [node] msg' in UTC, events in words only") {
    // The text format keeps the node's old shape ("[node] " after the level, which the tests'
    // error checks look for) with the UTC timestamp, and adds no fields to an event's line.
    CapturedLog captured(LogFormat::text);
    captured.log.error("it broke");
    log_event(captured.log, spdlog::level::info, {"draining", {{"signal", 15}}},
              "node: signal {} received: draining", 15);
    const auto lines = captured.lines();
    REQUIRE(lines.size() == 2);
    const auto first = test_support::text_line(lines[0]);
    REQUIRE(first.has_value());
    CHECK(test_support::is_utc_millis(first->ts));
    CHECK(first->level == "error");
    CHECK(first->node == "node-1");
    CHECK(first->msg == "it broke");
    CHECK(lines[1].ends_with(" info [node-1] node: signal 15 received: draining"));
}

}  // namespace matchmesh::node
