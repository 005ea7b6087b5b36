#include "mesh/timer_queue.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

namespace {
// Cancelled entries tolerated beyond the pending ones before the heap is rebuilt.
constexpr std::size_t stale_slack = 64;
}  // namespace

void TimerQueue::push(Entry entry) {
    order_.push_back(entry);
    std::push_heap(order_.begin(), order_.end(), std::greater<>{});
}

TimerId TimerQueue::add(Time deadline, std::function<void()> task, std::uint32_t tag) {
    const TimerId id = next_id_++;
    tasks_.emplace(id, std::move(task));
    push(Entry{deadline, id, tag});
    return id;
}

bool TimerQueue::cancel(TimerId timer) {
    if (tasks_.erase(timer) == 0) {
        return false;
    }
    if (order_.size() > 2 * tasks_.size() + stale_slack) {
        std::erase_if(order_, [this](const Entry& entry) { return !tasks_.contains(entry.id); });
        std::make_heap(order_.begin(), order_.end(), std::greater<>{});
        if (order_.capacity() > 4 * order_.size() + stale_slack) {
            order_.shrink_to_fit();
        }
    }
    return true;
}

void TimerQueue::drop_cancelled() {
    while (!order_.empty() && !tasks_.contains(order_.front().id)) {
        std::pop_heap(order_.begin(), order_.end(), std::greater<>{});
        order_.pop_back();
    }
}

std::optional<Time> TimerQueue::next_deadline() {
    drop_cancelled();
    if (order_.empty()) {
        return std::nullopt;
    }
    return order_.front().deadline;
}

std::optional<TimerQueue::Due> TimerQueue::pop_due(Time now) {
    drop_cancelled();
    if (order_.empty() || order_.front().deadline > now) {
        return std::nullopt;
    }
    const Entry entry = order_.front();
    std::pop_heap(order_.begin(), order_.end(), std::greater<>{});
    order_.pop_back();
    auto found = tasks_.find(entry.id);
    Due due{std::move(found->second), entry.tag, entry.id};
    tasks_.erase(found);
    return due;
}

void TimerQueue::put_back(Time deadline, Due due) {
    MM_ASSERT(due.id != 0 && due.id < next_id_ && !tasks_.contains(due.id));
    tasks_.emplace(due.id, std::move(due.task));
    push(Entry{deadline, due.id, due.tag});
}

}  // namespace matchmesh::mesh
