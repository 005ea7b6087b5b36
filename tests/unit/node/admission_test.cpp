// Admission: a node takes every ticket below half its capacity, refuses all at or past it, a
// growing share in between, and hints when to come back.
#include <doctest/doctest.h>

#include <vector>

#include "node/admission.hpp"

using namespace matchmesh;
using namespace matchmesh::node;

namespace {

AdmissionOptions small() {
    AdmissionOptions options;
    options.loop_lag_max = Duration(100);
    options.live_tickets_max = 1000;
    options.requests_in_flight_max = 100;
    options.deliveries_waiting_max = 100;
    options.retry_after_min = Duration(200);
    options.retry_after_max = Duration(4000);
    return options;
}

// Lag samples every 20 ms for `how_long`, as the node's probe takes them; `now` moves on.
void lag_for(Admission& admission, Time& now, Duration lag, Duration how_long) {
    for (const Time end = now + how_long; now < end; now += Duration(20)) {
        admission.observe_lag(now, lag);
    }
}

int refusals(Admission& admission, const Load& load, int tries) {
    int refused = 0;
    for (int i = 0; i < tries; ++i) {
        refused += admission.admit(load).has_value();
    }
    return refused;
}

}  // namespace

TEST_CASE("node/admission: below half of every limit every ticket is taken") {
    Admission admission(small(), 1);
    Time now = time_from_ms(1000);
    lag_for(admission, now, Duration(49), Duration(400));
    CHECK(admission.lag() == Duration(49));
    CHECK(refusals(admission, Load{499, 49, 49}, 1000) == 0);
    CHECK(admission.admitted() == 1000);
    CHECK(admission.refused() == 0);
}

TEST_CASE("node/admission: at any limit every ticket is refused, naming the limit") {
    for (const Load& load : {Load{1000, 0, 0}, Load{0, 100, 0}, Load{0, 0, 250}}) {
        Admission admission(small(), 2);
        CHECK(refusals(admission, load, 100) == 100);
    }
    Admission admission(small(), 3);
    auto refused = admission.admit(Load{1200, 10, 0});
    REQUIRE(refused.has_value());
    CHECK(refused->reason == "this node is past its capacity: live tickets at 1200 of 1000");
    Time now = time_from_ms(1000);
    lag_for(admission, now, Duration(300), Duration(200));
    refused = admission.admit(Load{});
    REQUIRE(refused.has_value());
    CHECK(refused->reason == "this node is past its capacity: event loop lag (ms) at 300 of 100");
}

TEST_CASE("node/admission: between half and full, the refused share grows with the pressure") {
    Admission admission(small(), 4);
    const int at_60 = refusals(admission, Load{600, 0, 0}, 2000);  // 20% expected
    const int at_90 = refusals(admission, Load{900, 0, 0}, 2000);  // 80% expected
    CHECK(at_60 > 250);
    CHECK(at_60 < 550);
    CHECK(at_90 > 1450);
    CHECK(at_90 < 1750);
}

TEST_CASE("node/admission: a lag counts once it stands, not for the late timer of a pause") {
    Admission admission(small(), 5);  // lag max 100 ms, standing window 200 ms
    Time now = time_from_ms(1000);
    lag_for(admission, now, Duration(1), Duration(300));
    CHECK(admission.lag() == Duration(1));
    // A pause of 400 ms: the loop runs one timer that late, then keeps time again. The players
    // who queued behind it are taken.
    now += Duration(400);
    admission.observe_lag(now, Duration(400));
    CHECK(admission.lag() == Duration(1));
    CHECK(refusals(admission, Load{}, 100) == 0);
    lag_for(admission, now, Duration(2), Duration(300));
    CHECK(admission.lag() == Duration(2));
    // More work than CPU: every timer runs late. Within half the window it counts.
    lag_for(admission, now, Duration(120), Duration(60));
    CHECK(admission.lag() == Duration(2));
    lag_for(admission, now, Duration(120), Duration(200));
    CHECK(admission.lag() == Duration(120));
    CHECK(refusals(admission, Load{}, 100) == 100);
    // Timers slower still, one late sample each (the loop's rounds outlast half the window):
    // the lesser of the last two.
    for (const int lag : {300, 400, 350}) {
        now += Duration(lag);
        admission.observe_lag(now, Duration(lag));
    }
    CHECK(admission.lag() == Duration(350));
    // One timer on time says the backlog is gone: the lag falls with it.
    now += Duration(20);
    admission.observe_lag(now, Duration(10));
    CHECK(admission.lag() == Duration(10));
    CHECK(refusals(admission, Load{}, 100) == 0);
}

TEST_CASE("node/admission: the retry hint grows with the lag, jittered within its bounds") {
    Admission admission(small(), 6);
    Duration low_max{0};
    for (int i = 0; i < 200; ++i) {
        auto refused = admission.admit(Load{1000, 0, 0});  // no lag: the minimum, jittered
        REQUIRE(refused.has_value());
        CHECK(refused->retry_after >= Duration(100));
        CHECK(refused->retry_after <= Duration(200));
        low_max = std::max(low_max, refused->retry_after);
    }
    Time now = time_from_ms(1000);
    lag_for(admission, now, Duration(2000), Duration(200));
    Duration high_min{1000000};
    for (int i = 0; i < 200; ++i) {
        auto refused = admission.admit(Load{});
        REQUIRE(refused.has_value());
        CHECK(refused->retry_after >= Duration(2000));  // half the 4 s cap
        CHECK(refused->retry_after <= Duration(4000));
        high_min = std::min(high_min, refused->retry_after);
    }
    CHECK(high_min > low_max);
}

TEST_CASE("node/admission: slow answers from other nodes refuse tickets; the average drifts back") {
    AdmissionOptions options = small();
    options.round_trip_max_ms = 50;
    Admission admission(options, 7);
    for (int i = 0; i < 200; ++i) {
        admission.observe_round_trip(200);  // queued somewhere between the nodes
    }
    CHECK(admission.round_trip_ms() > 190);
    auto refused = admission.admit(Load{});
    REQUIRE(refused.has_value());
    CHECK(refused->reason.find("round trip to other nodes (ms)") != std::string::npos);
    CHECK(refused->retry_after >= Duration(400));  // grows with the delay seen
    // No answers for a while (the load is gone): the average falls back and tickets are taken.
    Time now = time_from_ms(1000);
    lag_for(admission, now, Duration(0), Duration(800));
    CHECK(admission.round_trip_ms() < 10);
    CHECK_FALSE(admission.admit(Load{}).has_value());
}

TEST_CASE("node/admission: a crowd refused faster than the node admits is asked to wait longer") {
    AdmissionOptions options = small();
    options.pace_window = Duration(500);
    Admission admission(options, 8);
    Time now = time_from_ms(1000);
    admission.pace(now);
    CHECK(admission.crowd_hint() == Duration(0));
    // Each window: 10 tickets taken, 80 refused. The hint grows fourfold a window to the cap.
    std::vector<Duration> hints;
    for (int window = 0; window < 4; ++window) {
        refusals(admission, Load{}, 10);
        refusals(admission, Load{1000, 0, 0}, 80);
        now += Duration(500);
        admission.pace(now);
        hints.push_back(admission.crowd_hint());
    }
    CHECK(hints == std::vector<Duration>{Duration(800), Duration(3200), Duration(4000),
                                         Duration(4000)});
    auto refused = admission.admit(Load{1000, 0, 0});
    REQUIRE(refused.has_value());
    CHECK(refused->retry_after >= Duration(2000));  // half the crowd's hint, at least
    // A window revised early changes nothing.
    admission.pace(now + Duration(100));
    CHECK(admission.crowd_hint() == Duration(4000));
    // Refusals as many as admissions hold the hint; fewer halve it until there is no crowd.
    refusals(admission, Load{}, 40);
    refusals(admission, Load{1000, 0, 0}, 40);
    now += Duration(500);
    admission.pace(now);
    CHECK(admission.crowd_hint() == Duration(4000));
    for (int window = 0; window < 6; ++window) {
        refusals(admission, Load{}, 40);
        now += Duration(500);
        admission.pace(now);
    }
    CHECK(admission.crowd_hint() == Duration(0));
}
