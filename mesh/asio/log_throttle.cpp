#include "mesh/asio/log_throttle.hpp"

namespace matchmesh::mesh {

bool LogThrottle::allow(std::string_view kind, Clock::time_point now, std::uint64_t& left_out) {
    auto found = kinds_.find(kind);
    if (found == kinds_.end()) {
        found = kinds_.emplace(std::string(kind), Kind{now, 0, 0}).first;
    }
    Kind& state = found->second;
    if (now - state.period_began >= period_) {
        state.period_began = now;
        state.written = 0;
    }
    if (state.written >= burst_) {
        ++state.left_out;
        ++left_out_total_;
        return false;
    }
    ++state.written;
    left_out = std::exchange(state.left_out, 0);
    return true;
}

}  // namespace matchmesh::mesh
