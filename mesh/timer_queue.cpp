#include "mesh/timer_queue.hpp"

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

TimerId TimerQueue::add(Time deadline, std::function<void()> task, std::uint32_t tag) {
    const TimerId id = next_id_++;
    tasks_.emplace(id, std::move(task));
    order_.push(Entry{deadline, id, tag});
    return id;
}

bool TimerQueue::cancel(TimerId timer) {
    return tasks_.erase(timer) > 0;
}

void TimerQueue::drop_cancelled() {
    while (!order_.empty() && !tasks_.contains(order_.top().id)) {
        order_.pop();
    }
}

std::optional<Time> TimerQueue::next_deadline() {
    drop_cancelled();
    if (order_.empty()) {
        return std::nullopt;
    }
    return order_.top().deadline;
}

std::optional<TimerQueue::Due> TimerQueue::pop_due(Time now) {
    drop_cancelled();
    if (order_.empty() || order_.top().deadline > now) {
        return std::nullopt;
    }
    const Entry entry = order_.top();
    order_.pop();
    auto found = tasks_.find(entry.id);
    Due due{std::move(found->second), entry.tag, entry.id};
    tasks_.erase(found);
    return due;
}

void TimerQueue::put_back(Time deadline, Due due) {
    MM_ASSERT(due.id != 0 && due.id < next_id_ && !tasks_.contains(due.id));
    tasks_.emplace(due.id, std::move(due.task));
    order_.push(Entry{deadline, due.id, due.tag});
}

}  // namespace matchmesh::mesh
