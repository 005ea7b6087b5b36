#pragma once
// Admission: whether this node takes a new ticket now. Past its capacity a node refuses new
// tickets at once (`overloaded`, with a hint of when to try again) rather than accepting work it
// cannot finish: the tickets it already took keep their promises, and refusing costs far less
// than a ticket whose requests time out and are retried.
//
// Capacity shows in five places: how late the event loop runs its timers (this process has more
// work than CPU), how long requests to other nodes take to be answered (work queued anywhere on
// the way: in socket buffers, in the other node, on a shared CPU; this is what rises first when
// a cluster outgrows its machines, long before any one loop lags), how many tickets are live here
// (memory), how many requests await answers, and how many deliveries wait to be retried. Each is
// measured against its maximum;
// the fullest one is the node's pressure. Below half, every ticket is taken; from half to full a
// growing share is refused (a ramp, so that the node settles instead of swinging between taking
// all and refusing all); at or past full, all are.
//
// The loop's lag counts only when it stands: it is the least of its samples over the last fifth
// of a second or so. A loop with more work than CPU runs every timer late; one that was stopped
// (the process paused, the host took the CPU) runs one timer late, then catches up with what
// queued behind the pause. Refusing the players who queued there, as if the node were past its
// capacity, would send them away for nothing, and their retries would come back into the drain.
//
// The hint of when to come back is the longer of two: one that grows with the delay the node sees
// (its lag, its round trips), and one that grows with the crowd it turned away. A refused player
// comes back about once per hint, so a node that refuses more players than it takes in a window
// is being asked again faster than it can serve: it lengthens the hint by that ratio (at most
// fourfold a window), and shortens it again as refusals fall below admissions. The players a
// burst turned away then come back about as fast as the node takes tickets, instead of costing it
// a refusal every fraction of a second each. The hint is jittered, so that they do not all come
// back at once.
//
// Pure: the node feeds it lag samples and its counts. Owned by the node, on its loop thread.

#include <cstddef>
#include <optional>
#include <random>
#include <string>

#include "mesh/base/time.hpp"

namespace matchmesh::node {

struct AdmissionOptions {
    Duration loop_lag_max{150};
    double round_trip_max_ms = 50;
    std::size_t live_tickets_max = 200000;
    std::size_t requests_in_flight_max = 16384;  // to all other nodes together
    std::size_t deliveries_waiting_max = 50000;
    Duration retry_after_min{250};
    Duration retry_after_max{30000};
    Duration pace_window{500};      // how often the crowd's hint is revised
    Duration standing_window{200};  // how long a lag must last to count
};

struct Load {
    std::size_t live_tickets = 0;
    std::size_t requests_in_flight = 0;
    std::size_t deliveries_waiting = 0;
};

struct Refusal {
    std::string reason;  // which limit, with its figures
    Duration retry_after;
};

class Admission {
public:
    Admission(AdmissionOptions options, std::uint64_t seed);

    // One measurement, at `now`, of how late a timer ran.
    void observe_lag(Time now, Duration lag);
    // The lag the node is judged by: the least sample over the last standing window (between
    // half of it and all of it), 0 before there is one.
    [[nodiscard]] Duration lag() const;
    // One answered request's round trip. The node is judged by their moving average, which drifts
    // back to zero while no request is answered (`observe_lag` ticks it down).
    void observe_round_trip(double ms);
    [[nodiscard]] double round_trip_ms() const { return round_trip_ms_; }

    // Revises the crowd's hint once a window has passed since the last revision.
    void pace(Time now);
    [[nodiscard]] Duration crowd_hint() const { return crowd_hint_; }

    // Whether to take one more ticket given the node's counts; a refusal says why and when to
    // try again.
    [[nodiscard]] std::optional<Refusal> admit(const Load& load);
    // A connection refused for the connection limit: counted with the refusals (it is the same
    // crowd), and when to try again.
    [[nodiscard]] Duration turn_away();

    [[nodiscard]] std::uint64_t admitted() const { return admitted_; }
    [[nodiscard]] std::uint64_t refused() const { return refused_; }

private:
    [[nodiscard]] Duration retry_after();

    AdmissionOptions options_;
    std::mt19937_64 random_;
    // The least lag sample of the last half window and of the current one (max: none yet).
    Duration lag_previous_ = Duration::max();
    Duration lag_current_ = Duration::max();
    Time lag_half_began_{};
    double round_trip_ms_ = 0;
    bool round_trip_seen_ = false;  // since the last lag sample
    std::uint64_t admitted_ = 0;
    std::uint64_t refused_ = 0;
    std::uint64_t turned_away_ = 0;  // connections refused for the connection limit
    Time window_began_{};
    std::uint64_t window_admitted_ = 0;  // admitted_ when the window began
    std::uint64_t window_refused_ = 0;   // refused_ + turned_away_ when it began
    Duration crowd_hint_{0};  // 0: no crowd
};

}  // namespace matchmesh::node
