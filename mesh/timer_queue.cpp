#include "mesh/timer_queue.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

namespace {
// Cancelled entries tolerated beyond the pending ones before the heap is rebuilt.
constexpr std::size_t stale_slack = 64;
}  // namespace

namespace {
TimerId make_id(std::uint32_t index, std::uint32_t generation) {
    return (static_cast<TimerId>(generation) << 32) | index;
}
}  // namespace

void TimerQueue::push(Entry entry) {
    order_.push_back(entry);
    std::push_heap(order_.begin(), order_.end(), std::greater<>{});
}

TimerQueue::Slot* TimerQueue::pending_slot(TimerId id) {
    const auto index = static_cast<std::uint32_t>(id);
    if (index >= slots_.size()) {
        return nullptr;
    }
    Slot& slot = slots_[index];
    return slot.task && slot.generation == static_cast<std::uint32_t>(id >> 32) ? &slot : nullptr;
}

TimerId TimerQueue::add(Time deadline, Task task, std::uint32_t tag) {
    MM_ASSERT(task);  // an empty task would read as no timer at all
    while (!free_.empty() && slots_[free_.back()].task) {
        free_.pop_back();  // taken again by put_back since it was freed
    }
    std::uint32_t index = 0;
    if (free_.empty()) {
        MM_ASSERT(slots_.size() < UINT32_MAX);
        index = static_cast<std::uint32_t>(slots_.size());
        slots_.emplace_back();
    } else {
        index = free_.back();
        free_.pop_back();
    }
    Slot& slot = slots_[index];
    if (++slot.generation == 0) {
        slot.generation = 1;  // no ID is 0
    }
    slot.task = std::move(task);
    slot.tag = tag;
    ++live_;
    const TimerId id = make_id(index, slot.generation);
    push(Entry{deadline, next_sequence_++, id});
    return id;
}

bool TimerQueue::cancel(TimerId timer) {
    Slot* slot = pending_slot(timer);
    if (slot == nullptr) {
        return false;
    }
    // Destroyed last: what the task holds may set or cancel timers as it goes, growing the slots.
    const Task dropped = std::move(slot->task);
    slot->task = nullptr;
    --live_;
    free_.push_back(static_cast<std::uint32_t>(timer));
    if (order_.size() > 2 * live_ + stale_slack) {
        std::erase_if(order_, [this](const Entry& entry) { return !pending_slot(entry.id); });
        std::make_heap(order_.begin(), order_.end(), std::greater<>{});
        if (order_.capacity() > 4 * order_.size() + stale_slack) {
            order_.shrink_to_fit();
        }
    }
    return true;
}

void TimerQueue::drop_cancelled() {
    while (!order_.empty() && !pending_slot(order_.front().id)) {
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
    Slot& slot = *pending_slot(entry.id);
    Due due{std::move(slot.task), slot.tag, entry.id};
    slot.task = nullptr;
    --live_;
    free_.push_back(static_cast<std::uint32_t>(entry.id));
    return due;
}

void TimerQueue::put_back(Time deadline, Due due) {
    const auto index = static_cast<std::uint32_t>(due.id);
    MM_ASSERT(index < slots_.size());
    Slot& slot = slots_[index];
    // Its slot is still free under the same generation: nothing was set since it was popped.
    MM_ASSERT(!slot.task && slot.generation == static_cast<std::uint32_t>(due.id >> 32));
    MM_ASSERT(due.task);
    slot.task = std::move(due.task);
    slot.tag = due.tag;
    ++live_;
    push(Entry{deadline, next_sequence_++, due.id});
}

}  // namespace matchmesh::mesh
