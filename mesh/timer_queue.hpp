#pragma once
// TimerQueue: pending timers ordered by deadline, then by the order they were set, so that both
// schedulers (Asio and simulated) run timers in the same, deterministic order.
//
// Owned by a scheduler; single-threaded. Cancelling is O(1) (the entry is skipped when reached).

#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "mesh/scheduler.hpp"

namespace matchmesh::mesh {

class TimerQueue {
public:
    TimerId add(Time deadline, std::function<void()> task);
    bool cancel(TimerId timer);

    // The earliest pending deadline.
    [[nodiscard]] std::optional<Time> next_deadline();

    // Removes and returns the earliest task due at or before `now`, if any.
    [[nodiscard]] std::optional<std::function<void()>> pop_due(Time now);

    [[nodiscard]] std::size_t size() const { return tasks_.size(); }

private:
    struct Entry {
        Time deadline;
        TimerId id;
        bool operator>(const Entry& other) const {
            return deadline != other.deadline ? deadline > other.deadline : id > other.id;
        }
    };
    void drop_cancelled();

    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> order_;
    std::unordered_map<TimerId, std::function<void()>> tasks_;
    TimerId next_id_ = 1;
};

}  // namespace matchmesh::mesh
