// Health: /livez follows the loop's heartbeat against its bound; /readyz says why a node should
// not be sent players, draining first, and is ready alone only by config.
#include <doctest/doctest.h>

#include "node/health.hpp"

using namespace matchmesh;
using namespace matchmesh::node;

namespace {

// A node whose loop beat at 1000 ms and which listens on its client port.
void start(Health& health) {
    health.beat(time_from_ms(1000));
    health.set_listening(true);
}

}  // namespace

TEST_CASE("node/health: live while the last heartbeat is within the bound, and says how old") {
    // Not live before the first beat, live up to the bound inclusive, not live one ms past it.
    Health health(HealthOptions{Duration(500), true});
    CHECK_FALSE(health.liveness(time_from_ms(0)).ok);
    CHECK(health.liveness(time_from_ms(0)).text == "the event loop has not started");
    health.beat(time_from_ms(1000));
    CHECK(health.liveness(time_from_ms(1500)).ok);
    CHECK(health.liveness(time_from_ms(999)).ok);  // a beat newer than the probe's clock
    const HealthVerdict late = health.liveness(time_from_ms(1501));
    CHECK_FALSE(late.ok);
    CHECK(late.text == "the event loop last answered 501 ms ago (bound 500 ms)");
    health.beat(time_from_ms(1600));
    CHECK(health.liveness(time_from_ms(1700)).ok);
    CHECK(health.liveness(time_from_ms(1700)).text == "the event loop answered 100 ms ago");
}

TEST_CASE("node/health: ready only when joined, unless alone by config") {
    // A node with seeds waits for another member, and stays ready once it has seen one (the last
    // survivor of a cluster keeps serving); one alone by config does not wait.
    Health joining(HealthOptions{Duration(500), false});
    start(joining);
    CHECK(joining.readiness(time_from_ms(1000)).text == "not joined: no other member seen yet");
    joining.set_other_members(2);
    CHECK(joining.readiness(time_from_ms(1000)).ok);
    CHECK(joining.readiness(time_from_ms(1000)).text == "ready: 2 other live member(s)");
    joining.set_other_members(0);
    CHECK(joining.readiness(time_from_ms(1000)).ok);
    CHECK(joining.readiness(time_from_ms(1000)).text == "ready: joined, no other member live now");

    Health alone(HealthOptions{Duration(500), true});
    start(alone);
    CHECK(alone.readiness(time_from_ms(1000)).ok);
    CHECK(alone.readiness(time_from_ms(1000)).text ==
          "ready: alone by config (no seeds but itself)");
}

TEST_CASE("node/health: not ready while draining, not live or not listening, in that order") {
    // With several reasons the answer names the first: draining, then liveness, then listening.
    Health health(HealthOptions{Duration(500), true});
    start(health);
    health.set_listening(false);
    CHECK(health.readiness(time_from_ms(1000)).text == "not listening on the client port");
    CHECK(health.readiness(time_from_ms(2000)).text ==
          "not live: the event loop last answered 1000 ms ago (bound 500 ms)");
    health.set_draining();
    CHECK_FALSE(health.readiness(time_from_ms(1000)).ok);
    CHECK(health.readiness(time_from_ms(2000)).text ==
          "draining: refusing new tickets before leaving the cluster");
}
