#pragma once
// TimerQueue: pending timers ordered by deadline, then by the order they were set, so that both
// schedulers (Asio and simulated) run timers in the same, deterministic order.
//
// Owned by a scheduler; single-threaded. Cancelling is O(1) amortized: the entry is skipped when
// reached, and once the cancelled entries outnumber the pending ones the heap is rebuilt without
// them. (Left alone, each would stay until its deadline: a ticket re-arms its timer at every step
// and ends long before its deadline, so a busy node would carry many times its live timers.)
// Tasks live in reused slots, so that setting a timer allocates nothing of the queue's own; a
// timer's ID names its slot and the slot's generation, so an old ID never cancels a new timer.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "mesh/scheduler.hpp"

namespace matchmesh::mesh {

class TimerQueue {
public:
    // `tag` is the owner's own word on the task, handed back when it is due (the simulation
    // records which node's timer ran without wrapping every task in another closure).
    TimerId add(Time deadline, Task task, std::uint32_t tag = 0);
    bool cancel(TimerId timer);

    // The earliest pending deadline.
    [[nodiscard]] std::optional<Time> next_deadline();

    struct Due {
        Task task;
        std::uint32_t tag = 0;
        TimerId id = 0;
    };
    // Removes and returns the earliest task due at or before `now`, if any.
    [[nodiscard]] std::optional<Due> pop_due(Time now);
    // Sets a popped task again for a later deadline under its own ID, so that cancelling it still
    // works (the simulation holds a paused node's timers this way).
    void put_back(Time deadline, Due due);

    [[nodiscard]] std::size_t size() const { return live_; }
    // Entries held, cancelled ones not yet dropped included: at most about twice size().
    [[nodiscard]] std::size_t held() const { return order_.size(); }

private:
    struct Entry {  // 24 bytes: a busy node holds one or two per live timer
        Time deadline;
        std::uint64_t sequence;  // the order timers were set in
        TimerId id;
        bool operator>(const Entry& other) const {
            return deadline != other.deadline ? deadline > other.deadline
                                              : sequence > other.sequence;
        }
    };
    struct Slot {
        Task task;  // set exactly while the timer is pending
        std::uint32_t generation = 0;
        std::uint32_t tag = 0;
    };
    [[nodiscard]] Slot* pending_slot(TimerId id);
    void drop_cancelled();
    void push(Entry entry);

    std::vector<Entry> order_;  // a min-heap by deadline, then sequence (std::greater)
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_;  // slots to reuse (one may be taken again by put_back)
    std::size_t live_ = 0;
    std::uint64_t next_sequence_ = 1;
};

}  // namespace matchmesh::mesh
