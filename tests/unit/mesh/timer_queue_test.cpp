// TimerQueue: timers run by deadline, then in the order they were set; cancelled ones never run,
// and the queue does not carry them until their deadlines.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "mesh/timer_queue.hpp"

using namespace matchmesh;
using namespace matchmesh::mesh;

namespace {

std::vector<int> run_all(TimerQueue& queue, Time now) {
    std::vector<int> ran;
    while (auto due = queue.pop_due(now)) {
        due->task();
        ran.push_back(static_cast<int>(due->tag));
    }
    return ran;
}

}  // namespace

TEST_CASE("mesh/timer_queue: by deadline, then by the order set; cancelled timers never run") {
    TimerQueue queue;
    queue.add(time_from_ms(30), [] {}, 1);
    const TimerId cancelled = queue.add(time_from_ms(10), [] {}, 2);
    queue.add(time_from_ms(10), [] {}, 3);
    queue.add(time_from_ms(20), [] {}, 4);
    CHECK(queue.cancel(cancelled));
    CHECK_FALSE(queue.cancel(cancelled));
    CHECK(queue.next_deadline() == time_from_ms(10));
    CHECK(run_all(queue, time_from_ms(20)) == std::vector<int>{3, 4});
    CHECK(run_all(queue, time_from_ms(100)) == std::vector<int>{1});
    CHECK_FALSE(queue.next_deadline().has_value());
}

TEST_CASE("mesh/timer_queue: timers re-armed over and over hold at most about twice the live ones") {
    // A thousand tickets, each re-arming its far deadline timer fifty times: the cancelled
    // entries are dropped long before their deadlines, and the order of what runs is unchanged.
    TimerQueue queue;
    std::vector<TimerId> armed(1000, 0);
    for (int round = 0; round < 50; ++round) {
        for (std::size_t ticket = 0; ticket < armed.size(); ++ticket) {
            if (armed[ticket] != 0) {
                CHECK(queue.cancel(armed[ticket]));
            }
            armed[ticket] = queue.add(time_from_ms(1'000'000 + static_cast<std::int64_t>(ticket)),
                                      [] {}, static_cast<std::uint32_t>(ticket));
            CHECK(queue.held() <= 2 * queue.size() + 65);
        }
    }
    CHECK(queue.size() == 1000);
    const std::vector<int> ran = run_all(queue, time_from_ms(2'000'000));
    REQUIRE(ran.size() == 1000);
    for (std::size_t i = 0; i < ran.size(); ++i) {
        CHECK(ran[i] == static_cast<int>(i));
    }
    CHECK(queue.held() == 0);
}

TEST_CASE("mesh/timer_queue: a cancelled task that sets timers as it is destroyed, and old IDs") {
    TimerQueue queue;
    // Its destructor sets many timers: the queue must be whole again by then.
    struct SetsTimers {
        TimerQueue* queue;
        ~SetsTimers() {
            if (queue != nullptr) {
                for (int i = 0; i < 1000; ++i) {
                    queue->add(time_from_ms(50), [] {}, 7);
                }
            }
        }
    };
    auto holder = std::make_shared<SetsTimers>(SetsTimers{nullptr});
    holder->queue = &queue;
    const TimerId id = queue.add(time_from_ms(10), [holder] {}, 1);
    holder.reset();
    CHECK(queue.cancel(id));
    CHECK(queue.size() == 1000);
    CHECK_FALSE(queue.cancel(id));  // its slot is reused now: the old ID names nothing
    const std::vector<int> ran = run_all(queue, time_from_ms(100));
    CHECK(ran.size() == 1000);
    CHECK(queue.size() == 0);
}
