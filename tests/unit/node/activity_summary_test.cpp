#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "node/activity_summary.hpp"
#include "node/log_format.hpp"

namespace matchmesh::node {
namespace {

// An ActivitySummary fed one snapshot a second from t = 100 s, its lines kept as JSON.
class SummaryRun {
public:
    SummaryRun() : log_("matchmesh", std::make_shared<spdlog::sinks::ostream_sink_st>(out_)) {
        log_.set_formatter(make_log_formatter(config::LogFormat::json, "node-1"));
        log_.set_level(spdlog::level::debug);
    }

    // `count` seconds in which `change` is applied to the totals each second.
    template <typename Change>
    void seconds(int count, Change change) {
        for (int i = 0; i < count; ++i) {
            change(totals);
            now_ += Duration(1000);
            summary_.second(now_, totals, log_);
        }
    }
    void idle_seconds(int count) {
        seconds(count, [](MetricsSnapshot&) {});
    }

    // The lines written since the last take().
    std::vector<nlohmann::json> take() {
        std::vector<nlohmann::json> lines;
        std::istringstream in(out_.str());
        for (std::string line; std::getline(in, line);) {
            lines.push_back(nlohmann::json::parse(line));
        }
        out_.str("");
        return lines;
    }

    // The lines written since the last take() at info or above.
    std::vector<nlohmann::json> take_info() {
        auto lines = take();
        std::erase_if(lines, [](const nlohmann::json& line) { return line["level"] == "debug"; });
        return lines;
    }

    MetricsSnapshot totals;

private:
    std::ostringstream out_;
    spdlog::logger log_;
    ActivitySummary summary_;
    Time now_ = time_from_ms(100000);
};

void start_one(MetricsSnapshot& totals) {
    ++totals.tickets.by_type[1].started;
}

}  // namespace

TEST_CASE("node/activity-summary: an idle node writes a debug line a second and nothing at info") {
    // Five minutes without a ticket: 300 debug lines, and not one at info.
    SummaryRun run;
    run.totals.members_alive = 3;
    run.totals.sessions = 2;  // connected players who start nothing are no activity
    run.idle_seconds(300);
    const auto lines = run.take();
    REQUIRE(lines.size() == 300);
    for (const auto& line : lines) {
        CHECK(line["level"] == "debug");
    }
    CHECK(lines[0]["event"] == "summary");
    CHECK(lines[0]["state"] == "idle");
    CHECK(lines[0]["seconds"] == 1);
    CHECK(lines[0]["members"] == 3);
}

TEST_CASE("node/activity-summary: info when activity starts, once a minute while busy, and when "
          "it stops, with counts that add up") {
    // The info lines mark the start, each busy minute and the return to idle, and their counts
    // cover the seconds since the line before.
    SummaryRun run;
    run.idle_seconds(3);
    run.seconds(1, start_one);
    auto info = run.take_info();
    REQUIRE(info.size() == 1);
    CHECK(info[0]["level"] == "info");
    CHECK(info[0]["state"] == "busy");
    CHECK(info[0]["tickets_started"] == 1);
    CHECK(info[0]["seconds"] == 4);  // since the summary began

    run.seconds(59, start_one);
    CHECK(run.take_info().empty());
    run.seconds(1, start_one);  // a minute since the last info line: one more
    info = run.take_info();
    REQUIRE(info.size() == 1);
    CHECK(info[0]["seconds"] == 60);
    CHECK(info[0]["tickets_started"] == 60);
    CHECK(info[0]["msg"].get<std::string>().starts_with(
        "summary: busy over 60 s: tickets started 60 completed 0"));

    run.seconds(30, [](MetricsSnapshot& totals) {
        ++totals.tickets.by_type[1].started;
        ++totals.tickets.by_type[1].ended_as(ticket::EndReason::completed);
    });
    CHECK(run.take_info().empty());
    run.idle_seconds(9);  // not yet settled
    CHECK(run.take_info().empty());
    run.idle_seconds(1);
    info = run.take_info();
    REQUIRE(info.size() == 1);
    CHECK(info[0]["state"] == "idle");
    CHECK(info[0]["seconds"] == 40);
    CHECK(info[0]["tickets_started"] == 30);
    CHECK(info[0]["tickets_completed"] == 30);
    run.idle_seconds(200);
    CHECK(run.take_info().empty());
}

TEST_CASE("node/activity-summary: live tickets keep a node busy, and short pauses write nothing") {
    // A waiting ticket is activity without any counter moving; gaps under 10 s are not an end.
    SummaryRun run;
    run.seconds(1, [](MetricsSnapshot& totals) {
        totals.tickets.by_type[1].started = 1;
        totals.phases[1][1] = 1;
    });
    CHECK(run.take_info().size() == 1);
    run.idle_seconds(20);  // the ticket waits: busy, but nothing new to say before the minute
    CHECK(run.take_info().empty());
    run.seconds(1, [](MetricsSnapshot& totals) {
        totals.phases[1][1] = 0;
        totals.tickets.by_type[1].ended_as(ticket::EndReason::completed) = 1;
    });
    for (int pause = 0; pause < 3; ++pause) {  // a trickle: 9 idle seconds between tickets
        run.idle_seconds(9);
        run.seconds(1, start_one);
    }
    CHECK(run.take_info().empty());
}

TEST_CASE("node/activity-summary: refusals write one warning 'overloaded', then settle") {
    // Overload is a warning when it begins, and an info line when 10 s pass without a refusal.
    SummaryRun run;
    run.seconds(2, start_one);
    CHECK(run.take_info().size() == 1);
    // Refusals on and off, as the admission ramp refuses a share: one warning, not one each.
    for (int i = 0; i < 4; ++i) {
        run.seconds(1, [](MetricsSnapshot& totals) { totals.refused[1][static_cast<std::size_t>(StartRefusal::overloaded)] += 5; });
        run.seconds(2, start_one);
    }
    auto info = run.take_info();
    REQUIRE(info.size() == 1);
    CHECK(info[0]["level"] == "warning");
    CHECK(info[0]["event"] == "overloaded");
    CHECK(info[0]["state"] == "overloaded");
    CHECK(info[0]["tickets_refused_overloaded"] == 5);
    run.seconds(10, start_one);  // ten seconds without a refusal: back to busy
    info = run.take_info();
    REQUIRE(info.size() == 1);
    CHECK(info[0]["level"] == "info");
    CHECK(info[0]["event"] == "summary");
    CHECK(info[0]["state"] == "busy");
    CHECK(info[0]["tickets_refused_overloaded"] == 15);
}

}  // namespace matchmesh::node
