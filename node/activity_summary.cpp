#include "node/activity_summary.hpp"

#include <cmath>

#include "mesh/base/assert.hpp"
#include "node/log_format.hpp"

namespace matchmesh::node {
namespace {

using State = ActivitySummary::State;

const char* state_name(State state) {
    switch (state) {
        case State::idle: return "idle";
        case State::busy: return "busy";
        case State::overloaded: return "overloaded";
    }
    return "?";
}

// One summary line: the counts from `from` to `to` over `period`, and `to`'s gauges.
void write(spdlog::logger& log, spdlog::level::level_enum level, std::string_view event,
           State state, Duration period, const MetricsSnapshot& from, const MetricsSnapshot& to) {
    if (!log.should_log(level)) {
        return;
    }
    const std::int64_t seconds = (period.count() + 500) / 1000;
    const std::uint64_t started = to.tickets_started - from.tickets_started;
    const std::uint64_t completed = to.tickets_completed - from.tickets_completed;
    const std::uint64_t timed_out = to.tickets_timed_out - from.tickets_timed_out;
    const std::uint64_t canceled = to.tickets_canceled - from.tickets_canceled;
    const std::uint64_t refused = to.tickets_refused_overloaded - from.tickets_refused_overloaded;
    const double round_trip_ms = std::round(to.round_trip_ms * 10) / 10;
    const LogEvent line{event,
                        {{"state", state_name(state)},
                         {"seconds", seconds},
                         {"tickets_started", started},
                         {"tickets_completed", completed},
                         {"tickets_timed_out", timed_out},
                         {"tickets_canceled", canceled},
                         {"tickets_refused_overloaded", refused},
                         {"tickets_searching", to.tickets_searching},
                         {"tickets_waiting", to.tickets_waiting},
                         {"sessions", to.sessions},
                         {"store_items", to.store_items},
                         {"members", to.members_alive},
                         {"loop_lag_ms", to.loop_lag_ms},
                         {"round_trip_ms", round_trip_ms}}};
    log_event(log, level, line,
              "summary: {} over {} s: tickets started {} completed {} timed out {} canceled {} "
              "refused as overloaded {}; searching {} waiting {}; sessions {}; items {}; members "
              "{}; loop lag {} ms; round trip {:.1f} ms",
              state_name(state), seconds, started, completed, timed_out, canceled, refused,
              to.tickets_searching, to.tickets_waiting, to.sessions, to.store_items,
              to.members_alive, to.loop_lag_ms, round_trip_ms);
}

}  // namespace

void ActivitySummary::second(Time now, const MetricsSnapshot& totals, spdlog::logger& log) {
    if (!started_) {
        started_ = true;
        last_second_at_ = now - Duration(1000);
        last_report_at_ = last_second_at_;
    }
    MM_ASSERT(now >= last_second_at_);
    const State state = state_of(totals);
    for (State reached : {State::busy, State::overloaded}) {
        if (state >= reached) {
            last_reached_[static_cast<std::size_t>(reached) - 1] = now;
        }
    }
    write(log, spdlog::level::debug, "summary", state, now - last_second_at_, last_second_, totals);
    const State node_state = state_over_settle(now);
    const bool changed = node_state != reported_;
    const bool busy_interval_passed =
        node_state != State::idle && now - last_report_at_ >= options_.busy_interval;
    if (changed || busy_interval_passed) {
        const bool overload_began = changed && node_state == State::overloaded;
        write(log, overload_began ? spdlog::level::warn : spdlog::level::info,
              overload_began ? "overloaded" : "summary", node_state, now - last_report_at_,
              last_report_, totals);
        reported_ = node_state;
        last_report_ = totals;
        last_report_at_ = now;
    }
    last_second_ = totals;
    last_second_at_ = now;
}

ActivitySummary::State ActivitySummary::state_of(const MetricsSnapshot& totals) const {
    const MetricsSnapshot& before = last_second_;
    if (totals.tickets_refused_overloaded != before.tickets_refused_overloaded) {
        return State::overloaded;
    }
    const bool moved = totals.tickets_started != before.tickets_started ||
                       totals.tickets_completed != before.tickets_completed ||
                       totals.tickets_timed_out != before.tickets_timed_out ||
                       totals.tickets_canceled != before.tickets_canceled ||
                       totals.store_items != before.store_items;
    const bool live = totals.tickets_searching + totals.tickets_waiting > 0;
    return moved || live ? State::busy : State::idle;
}

// The highest state a second reached within the last `settle`.
ActivitySummary::State ActivitySummary::state_over_settle(Time now) const {
    for (State state : {State::overloaded, State::busy}) {
        const auto& reached = last_reached_[static_cast<std::size_t>(state) - 1];
        if (reached && now - *reached < options_.settle) {
            return state;
        }
    }
    return State::idle;
}

}  // namespace matchmesh::node
