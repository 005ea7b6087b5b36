#pragma once
// AsioScheduler: the Scheduler of a real node — monotonic milliseconds from steady_clock, timers
// kept in a TimerQueue and driven by one asio::steady_timer on the node's io_context.
//
// Owned by the node; lives on its loop thread (not thread-safe). Tasks due now are run from a
// posted handler, not by arming the timer, so that a burst of them costs no timer syscalls.

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "mesh/scheduler.hpp"
#include "mesh/timer_queue.hpp"

namespace matchmesh::mesh {

[[nodiscard]] Time steady_now();

class AsioScheduler final : public Scheduler {
public:
    explicit AsioScheduler(asio::io_context& context);
    ~AsioScheduler() override;

    [[nodiscard]] Time now() const override { return steady_now(); }
    [[nodiscard]] std::chrono::nanoseconds precise_now() const override {
        return std::chrono::steady_clock::now().time_since_epoch();
    }
    TimerId run_after(Duration delay, Task task) override;
    bool cancel(TimerId timer) override { return queue_.cancel(timer); }
    // Drops every pending task (at shutdown, before what they reference is destroyed).
    void clear();

private:
    void arm();
    void run_due();

    asio::io_context& context_;
    asio::steady_timer timer_;
    TimerQueue queue_;
    std::optional<Time> armed_for_;
    bool drain_posted_ = false;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::mesh
