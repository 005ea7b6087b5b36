#include "mesh/asio/asio_scheduler.hpp"

#include <asio/post.hpp>

namespace matchmesh::mesh {

Time steady_now() {
    const auto since_boot = std::chrono::steady_clock::now().time_since_epoch();
    return Time(std::chrono::duration_cast<Duration>(since_boot));
}

AsioScheduler::AsioScheduler(asio::io_context& context) : context_(context), timer_(context) {}

AsioScheduler::~AsioScheduler() {
    *alive_ = false;
}

void AsioScheduler::clear() {
    queue_ = TimerQueue{};
    timer_.cancel();
    armed_for_.reset();
}

TimerId AsioScheduler::run_after(Duration delay, Task task) {
    const Time now = steady_now();
    const Time deadline = now + std::max(delay, Duration(0));
    const TimerId id = queue_.add(deadline, std::move(task));
    if (deadline <= now) {
        if (!drain_posted_) {
            drain_posted_ = true;
            asio::post(context_, [this, alive = alive_] {
                if (*alive) {
                    drain_posted_ = false;
                    run_due();
                }
            });
        }
    } else if (!armed_for_ || deadline < *armed_for_) {
        arm();
    }
    return id;
}

void AsioScheduler::arm() {
    auto next = queue_.next_deadline();
    if (!next) {
        armed_for_.reset();
        return;
    }
    armed_for_ = *next;
    timer_.expires_at(std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(next->time_since_epoch())));
    timer_.async_wait([this, alive = alive_](const std::error_code& error) {
        if (*alive && !error) {
            armed_for_.reset();
            run_due();
        }
    });
}

void AsioScheduler::run_due() {
    const Time now = steady_now();
    // Only what is due now: tasks scheduled by these tasks run on a later turn of the loop.
    std::size_t budget = queue_.size();
    while (budget-- > 0) {
        auto due = queue_.pop_due(now);
        if (!due) {
            break;
        }
        due->task();
    }
    if (!armed_for_) {
        arm();
    } else if (auto next = queue_.next_deadline(); next && *next < *armed_for_) {
        arm();
    }
}

}  // namespace matchmesh::mesh
