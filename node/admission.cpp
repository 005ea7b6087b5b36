#include "node/admission.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"

namespace matchmesh::node {

Admission::Admission(AdmissionOptions options, std::uint64_t seed)
    : options_(options), random_(seed) {
    MM_ASSERT(options_.loop_lag_max > Duration(0) && options_.round_trip_max_ms > 0);
    MM_ASSERT(options_.live_tickets_max > 0 && options_.requests_in_flight_max > 0 &&
              options_.deliveries_waiting_max > 0);
    MM_ASSERT(options_.standing_window >= Duration(2));
    MM_ASSERT(options_.retry_after_min > Duration(0) &&
              options_.retry_after_min <= options_.retry_after_max);
}

void Admission::observe_lag(Time now, Duration lag) {
    if (now - lag_half_began_ >= options_.standing_window / 2) {
        lag_previous_ = lag_current_;
        lag_current_ = Duration::max();
        lag_half_began_ = now;
    }
    lag_current_ = std::min(lag_current_, lag);
    if (!round_trip_seen_) {
        round_trip_ms_ -= round_trip_ms_ / 8;  // nothing answered lately: nothing to judge by
    }
    round_trip_seen_ = false;
}

void Admission::observe_round_trip(double ms) {
    round_trip_ms_ += (std::max(0.0, ms) - round_trip_ms_) / 32;
    round_trip_seen_ = true;
}

// Before a whole half window was seen (a node just started), nothing stood yet.
Duration Admission::lag() const {
    return lag_previous_ == Duration::max() ? Duration(0) : std::min(lag_previous_, lag_current_);
}

void Admission::pace(Time now) {
    if (now - window_began_ < options_.pace_window) {
        return;
    }
    const auto admitted = static_cast<double>(admitted_ - window_admitted_);
    const auto refused = static_cast<double>(refused_ + turned_away_ - window_refused_);
    window_began_ = now;
    window_admitted_ = admitted_;
    window_refused_ = refused_ + turned_away_;
    if (refused == 0 && crowd_hint_ == Duration(0)) {
        return;
    }
    // Refused players come back at the rate of the refusals; the node serves them at the rate
    // of its admissions. Their ratio is how much longer they should wait (at most fourfold a
    // window, at least half); below the minimum hint there is no crowd.
    const double ratio = std::clamp(refused / std::max(admitted, 1.0), 0.5, 4.0);
    const double hint =
        static_cast<double>(std::max(crowd_hint_, options_.retry_after_min).count()) * ratio;
    crowd_hint_ = hint < static_cast<double>(options_.retry_after_min.count())
                      ? Duration(0)
                      : std::min(options_.retry_after_max, Duration(static_cast<std::int64_t>(hint)));
}

std::optional<Refusal> Admission::admit(const Load& load) {
    struct Gauge {
        const char* what;
        double used;
        double max;
    };
    const std::array gauges{
        Gauge{"event loop lag (ms)", static_cast<double>(lag().count()),
              static_cast<double>(options_.loop_lag_max.count())},
        Gauge{"round trip to other nodes (ms)", round_trip_ms_, options_.round_trip_max_ms},
        Gauge{"live tickets", static_cast<double>(load.live_tickets),
              static_cast<double>(options_.live_tickets_max)},
        Gauge{"requests awaiting other nodes", static_cast<double>(load.requests_in_flight),
              static_cast<double>(options_.requests_in_flight_max)},
        Gauge{"deliveries awaiting a retry", static_cast<double>(load.deliveries_waiting),
              static_cast<double>(options_.deliveries_waiting_max)},
    };
    const Gauge& fullest = *std::max_element(
        gauges.begin(), gauges.end(),
        [](const Gauge& a, const Gauge& b) { return a.used / a.max < b.used / b.max; });
    const double pressure = fullest.used / fullest.max;
    const bool refuse =
        pressure >= 1.0 ||
        (pressure > 0.5 && std::bernoulli_distribution((pressure - 0.5) * 2)(random_));
    if (!refuse) {
        ++admitted_;
        return std::nullopt;
    }
    ++refused_;
    return Refusal{fmt::format("this node is past its capacity: {} at {:.0f} of {:.0f}",
                               fullest.what, fullest.used, fullest.max),
                   retry_after()};
}

Duration Admission::turn_away() {
    ++turned_away_;
    return retry_after();
}

// The minimum plus four times the delay the node is seeing (its lag, or its round trips), or the
// crowd's hint if longer, at most the maximum; then between half and all of it.
Duration Admission::retry_after() {
    const Duration delay = std::max(lag(), Duration(static_cast<std::int64_t>(round_trip_ms_)));
    const Duration base =
        std::clamp(std::max(options_.retry_after_min + delay * 4, crowd_hint_),
                   options_.retry_after_min, options_.retry_after_max);
    const auto half = base.count() / 2;
    return Duration(half +
                    std::uniform_int_distribution<std::int64_t>(0, base.count() - half)(random_));
}

}  // namespace matchmesh::node
