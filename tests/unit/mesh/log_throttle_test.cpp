#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "mesh/asio/log_throttle.hpp"

namespace matchmesh::mesh {

using namespace std::chrono_literals;

TEST_CASE("mesh/log-throttle: a few lines of each kind per period, then a count of the rest") {
    LogThrottle throttle(2, 10s);
    const LogThrottle::Clock::time_point start{};
    std::uint64_t left_out = 99;
    CHECK(throttle.allow("handshake", start, left_out));
    CHECK(left_out == 0);
    CHECK(throttle.allow("handshake", start + 1s, left_out));
    CHECK_FALSE(throttle.allow("handshake", start + 2s, left_out));
    CHECK_FALSE(throttle.allow("handshake", start + 3s, left_out));
    CHECK(throttle.allow("limit", start + 3s, left_out));  // another kind has its own lines
    CHECK(left_out == 0);
    CHECK(throttle.allow("handshake", start + 10s, left_out));  // a new period
    CHECK(left_out == 2);
    CHECK(throttle.left_out_total() == 2);
}

TEST_CASE("mesh/log-throttle: the line after a quiet spell says how many were left out") {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger log("test", sink);
    log.set_pattern("%v");
    LogThrottle throttle(1, 1h);
    for (int i = 0; i < 1000; ++i) {
        throttle.warn(log, "bad", "closed connection {}", i);
    }
    CHECK(out.str() == "closed connection 0\n");
    CHECK(throttle.left_out_total() == 999);
}

}  // namespace matchmesh::mesh
