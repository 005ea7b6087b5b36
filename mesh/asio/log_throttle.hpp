#pragma once
// LogThrottle: warnings that a remote party can cause (bad frames, failed handshakes, refused
// connections) are written at most `burst` times per `period` for each kind; the others are
// counted, and the next line of that kind says how many were left out. A flood of bad
// connections then costs a few lines a minute, not a line per connection.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

namespace matchmesh::mesh {

class LogThrottle {
public:
    using Clock = std::chrono::steady_clock;

    explicit LogThrottle(std::size_t burst = 10, Clock::duration period = std::chrono::seconds(10))
        : burst_(burst), period_(period) {}

    // Writes the warning unless `kind` has used up its lines for this period.
    template <typename... Args>
    void warn(spdlog::logger& log, std::string_view kind, fmt::format_string<Args...> format,
              Args&&... args) {
        std::uint64_t left_out = 0;
        if (!allow(kind, Clock::now(), left_out)) {
            return;
        }
        std::string line = fmt::format(format, std::forward<Args>(args)...);
        if (left_out > 0) {
            line += fmt::format(" ({} more like this left out)", left_out);
        }
        log.warn("{}", line);
    }

    // Whether a line of `kind` may be written at `now`; if so, `left_out` says how many of that
    // kind were not written since the last one that was.
    [[nodiscard]] bool allow(std::string_view kind, Clock::time_point now, std::uint64_t& left_out);

    [[nodiscard]] std::uint64_t left_out_total() const { return left_out_total_; }

private:
    struct Kind {
        Clock::time_point period_began;
        std::size_t written = 0;
        std::uint64_t left_out = 0;
    };

    std::size_t burst_;
    Clock::duration period_;
    std::map<std::string, Kind, std::less<>> kinds_;
    std::uint64_t left_out_total_ = 0;
};

}  // namespace matchmesh::mesh
