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

// The snapshot's figures the summary tells, all ticket types together.
struct Totals {
    ticket::TicketTypeCounters tickets;
    std::uint64_t refused_overloaded = 0;
    std::size_t searching = 0;
    std::size_t waiting = 0;
};

Totals totals_of(const MetricsSnapshot& snapshot) {
    Totals totals{snapshot.tickets.total()};
    for (const auto& of_type : snapshot.refused) {
        totals.refused_overloaded += of_type[static_cast<std::size_t>(StartRefusal::overloaded)];
    }
    for (const auto& phases : snapshot.phases) {
        totals.searching += phases[static_cast<std::size_t>(ticket::TicketPhase::searching)];
        totals.waiting += phases[static_cast<std::size_t>(ticket::TicketPhase::waiting)];
    }
    return totals;
}

// One summary line: the counts from `from_snapshot` to `to_snapshot` over `period`, and the
// latter's gauges.
void write(spdlog::logger& log, spdlog::level::level_enum level, std::string_view event,
           State state, Duration period, const MetricsSnapshot& from_snapshot,
           const MetricsSnapshot& to_snapshot) {
    if (!log.should_log(level)) {
        return;
    }
    const Totals from = totals_of(from_snapshot);
    const Totals now = totals_of(to_snapshot);
    const MetricsSnapshot& to = to_snapshot;
    const std::int64_t seconds = (period.count() + 500) / 1000;
    const std::uint64_t started = now.tickets.started - from.tickets.started;
    const std::uint64_t completed = now.tickets.completed() - from.tickets.completed();
    const std::uint64_t timed_out = now.tickets.timed_out() - from.tickets.timed_out();
    const std::uint64_t canceled = now.tickets.canceled() - from.tickets.canceled();
    const std::uint64_t refused = now.refused_overloaded - from.refused_overloaded;
    const double round_trip_ms = std::round(to.round_trip_ms * 10) / 10;
    const LogEvent line{event,
                        {{"state", state_name(state)},
                         {"seconds", seconds},
                         {"tickets_started", started},
                         {"tickets_completed", completed},
                         {"tickets_timed_out", timed_out},
                         {"tickets_canceled", canceled},
                         {"tickets_refused_overloaded", refused},
                         {"tickets_searching", now.searching},
                         {"tickets_waiting", now.waiting},
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
              now.searching, now.waiting, to.sessions, to.store_items,
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

ActivitySummary::State ActivitySummary::state_of(const MetricsSnapshot& snapshot) const {
    const Totals now = totals_of(snapshot);
    const Totals before = totals_of(last_second_);
    if (now.refused_overloaded != before.refused_overloaded) {
        return State::overloaded;
    }
    const bool moved = now.tickets.started != before.tickets.started ||
                       now.tickets.completed() != before.tickets.completed() ||
                       now.tickets.timed_out() != before.tickets.timed_out() ||
                       now.tickets.canceled() != before.tickets.canceled() ||
                       snapshot.store_items != last_second_.store_items;
    const bool live = now.searching + now.waiting > 0;
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
