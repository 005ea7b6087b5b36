#include "ticket/contended_rooms.hpp"

namespace matchmesh::ticket {

void ContendedRooms::joining(const TicketId& room) {
    ++joins_in_flight_[room];
}

void ContendedRooms::answered(const TicketId& room) {
    auto found = joins_in_flight_.find(room);
    if (found != joins_in_flight_.end() && --found->second == 0) {
        joins_in_flight_.erase(found);
    }
}

void ContendedRooms::gone(const TicketId& room, Time now) {
    forget_gone(now);
    if (gone_.contains(room)) {
        return;
    }
    if (gone_order_.size() == gone_max) {
        forget_oldest();
    }
    gone_.insert(room);
    gone_order_.emplace_back(now, room);
}

void ContendedRooms::forget_gone(Time now) {
    while (!gone_order_.empty() && gone_order_.front().first + gone_hold <= now) {
        forget_oldest();
    }
}

void ContendedRooms::forget_oldest() {
    gone_.erase(gone_order_.front().second);
    gone_order_.pop_front();
}

}  // namespace matchmesh::ticket
