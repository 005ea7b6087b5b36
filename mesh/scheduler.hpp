#pragma once
// Scheduler: the clock and timers of one node's loop, as the pure code sees them.
//
// Implemented over Asio (real monotonic time) and by the simulation (virtual time). Tasks run on
// the node's loop thread, never inside the call that scheduled them.

#include <cstdint>
#include <functional>

#include "mesh/base/time.hpp"

namespace matchmesh::mesh {

using TimerId = std::uint64_t;
// What a timer runs. Move-only, so that a task of up to three words (an object and a shared flag,
// say) is held in place rather than in a heap block of its own, as std::function would hold any
// task that is not trivially copyable.
using Task = std::move_only_function<void()>;

class Scheduler {
public:
    virtual ~Scheduler() = default;
    [[nodiscard]] virtual Time now() const = 0;
    // A finer clock for measurements only (round trips); decisions use now().
    [[nodiscard]] virtual std::chrono::nanoseconds precise_now() const {
        return now().time_since_epoch();
    }
    // Runs `task` once, `delay` from now (a zero or negative delay: on the next turn of the loop).
    virtual TimerId run_after(Duration delay, Task task) = 0;
    // Cancels a timer that has not run; returns whether it was pending.
    virtual bool cancel(TimerId timer) = 0;
};

}  // namespace matchmesh::mesh
