#pragma once
// The node's log lines, as text for people or as one JSON object a line for log collectors
// (node.logFormat, --log-format). Both stamp each line in UTC with an explicit offset
// (2026-11-26T06:10:00.123Z), so that lines from nodes in different time zones sort together.
//
//   text: 2026-11-26T06:10:00.123Z info [node-1] mesh: node-2 joined (...)
//   json: {"ts":"2026-11-26T06:10:00.123Z","level":"info","node":"node-1",
//          "msg":"mesh: node-2 joined (...)","event":"member_joined","member":"node-2",...}
//
// The few lines operators act on (members joining and dying, draining, overload, the summary)
// are logged with log_event(), which hands the formatter an event name and its figures as JSON
// fields; the text format shows the message alone, which says the same in words. Every other
// line is an ordinary spdlog call and carries ts, level, node and msg.
//
// The formatter is installed on the node's logger by main; spdlog calls it on the logging
// thread, under the sink's lock. The event reaches it through a thread-local pointer that
// log_event() sets for the duration of one synchronous call, so the logger must not be an async
// one (the node's is not): a line formatted on another thread would lose its fields, nothing
// worse.

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <spdlog/formatter.h>
#include <spdlog/logger.h>
#include <nlohmann/json.hpp>

#include "config/config.hpp"

namespace matchmesh::node {

// An event name and its fields, in the order they are written.
struct LogEvent {
    std::string_view name;
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();
};

// The formatter of the node's lines in `format`, each naming `node_id`.
[[nodiscard]] std::unique_ptr<spdlog::formatter> make_log_formatter(config::LogFormat format,
                                                                    std::string node_id);

// "2026-11-26T06:10:00.123Z": the UTC time of a log line, to the millisecond.
[[nodiscard]] std::string utc_timestamp(spdlog::log_clock::time_point time);

// While it lives, lines logged on this thread carry `event` (nested scopes restore the outer one).
class LogEventScope {
public:
    explicit LogEventScope(const LogEvent& event);
    ~LogEventScope();
    LogEventScope(const LogEventScope&) = delete;
    LogEventScope& operator=(const LogEventScope&) = delete;

private:
    const LogEvent* outer_;
};

// Logs one line at `level` that carries `event` in the JSON format.
template <typename... Args>
void log_event(spdlog::logger& log, spdlog::level::level_enum level, const LogEvent& event,
               fmt::format_string<Args...> format, Args&&... args) {
    if (!log.should_log(level)) {
        return;
    }
    const LogEventScope scope(event);
    log.log(level, format, std::forward<Args>(args)...);
}

}  // namespace matchmesh::node
