#pragma once
// Monotonic time as every pure part of matchmesh sees it: milliseconds since an arbitrary epoch,
// passed in by the caller. The real implementation reads std::chrono::steady_clock; the
// simulation advances it by hand. Wall-clock time never enters matching decisions.

#include <chrono>
#include <cstdint>

namespace matchmesh {

struct MonotonicClock {
    using rep = std::int64_t;
    using period = std::milli;
    using duration = std::chrono::duration<rep, period>;
    using time_point = std::chrono::time_point<MonotonicClock>;
    static constexpr bool is_steady = true;
};

using Time = MonotonicClock::time_point;
using Duration = MonotonicClock::duration;

[[nodiscard]] constexpr Time time_from_ms(std::int64_t ms) {
    return Time(Duration(ms));
}
[[nodiscard]] constexpr std::int64_t ms_since_epoch(Time t) {
    return t.time_since_epoch().count();
}

}  // namespace matchmesh
