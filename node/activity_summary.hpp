#pragma once
// ActivitySummary: the node's summary line of its tickets, written every second at debug and at
// info only when the picture changes, so that an idle node writes nothing at info and a busy one
// a line a minute rather than 86,400 a day.
//
// Each second is idle (no ticket started, ended or live, no store item added or removed),
// busy, or overloaded (new tickets were refused for capacity). The node's state is the highest
// state of any second in the last `settle` (10 s): it rises at once and falls only after that
// long below, so that a trickle of players, or an overload that comes and goes with the
// admission ramp, does not write a line each time it pauses. An info line is written when the
// state changes (at warn, event "overloaded", when it becomes overloaded) and, while it is not
// idle, once `busy_interval` (a minute) has passed since the last one. An info line's counts cover
// the time since the previous info line (its `seconds`), so the info lines alone add up to the
// node's totals; the debug lines cover one second each. Gauges (searching, waiting, sessions,
// items, members, lag, round trip) are as of the line.
//
// Owned by the node, on its loop thread; pure apart from the logger it is handed.

#include <array>
#include <optional>

#include <spdlog/logger.h>

#include "mesh/base/time.hpp"
#include "node/metrics.hpp"

namespace matchmesh::node {

struct ActivitySummaryOptions {
    Duration settle{10000};         // how long the state stays up after the last such second
    Duration busy_interval{60000};  // at most this long between info lines while not idle
};

class ActivitySummary {
public:
    explicit ActivitySummary(ActivitySummaryOptions options = {}) : options_(options) {}

    // The second that ended at `now`, with the node's totals then: logs its debug line, and its
    // info (or warn) line when one is due.
    void second(Time now, const MetricsSnapshot& totals, spdlog::logger& log);

    enum class State { idle, busy, overloaded };

private:
    [[nodiscard]] State state_of(const MetricsSnapshot& totals) const;
    [[nodiscard]] State state_over_settle(Time now) const;

    ActivitySummaryOptions options_;
    bool started_ = false;
    MetricsSnapshot last_second_;  // the totals at the previous second
    Time last_second_at_{};
    MetricsSnapshot last_report_;  // and at the previous info line
    Time last_report_at_{};
    State reported_ = State::idle;
    // When a second last was at least busy, and overloaded.
    std::array<std::optional<Time>, 2> last_reached_;
};

}  // namespace matchmesh::node
