#include "node/log_format.hpp"

#include <ctime>
#include <iterator>

#include <fmt/format.h>

namespace matchmesh::node {
namespace {

// The event of the line being logged on this thread, set by LogEventScope.
thread_local const LogEvent* current_event = nullptr;

std::string_view view(spdlog::string_view_t text) {
    return {text.data(), text.size()};
}

class LineFormatter final : public spdlog::formatter {
public:
    LineFormatter(config::LogFormat format, std::string node_id)
        : format_(format), node_id_(std::move(node_id)) {}

    void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& out) override {
        const std::string ts = utc_timestamp(message.time);
        const std::string_view level = view(spdlog::level::to_string_view(message.level));
        const std::string_view text = view(message.payload);
        if (format_ == config::LogFormat::text) {
            fmt::format_to(std::back_inserter(out), "{} {} [{}] {}\n", ts, level, node_id_, text);
            return;
        }
        nlohmann::ordered_json line{{"ts", ts}, {"level", level}, {"node", node_id_}, {"msg", text}};
        if (current_event != nullptr) {
            line["event"] = current_event->name;
            // An event field never hides one of the line's own.
            for (const auto& [key, value] : current_event->fields.items()) {
                if (!line.contains(key)) {
                    line[key] = value;
                }
            }
        }
        // Messages may quote what peers and clients sent: bytes that are not UTF-8 become U+FFFD
        // rather than failing the line.
        const std::string json =
            line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        out.append(json.data(), json.data() + json.size());
        out.push_back('\n');
    }

    [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<LineFormatter>(format_, node_id_);
    }

private:
    config::LogFormat format_;
    std::string node_id_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_log_formatter(config::LogFormat format,
                                                      std::string node_id) {
    return std::make_unique<LineFormatter>(format, std::move(node_id));
}

std::string utc_timestamp(spdlog::log_clock::time_point time) {
    const auto since_epoch = time.time_since_epoch();
    const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds);
    const std::time_t whole = seconds.count();
    std::tm utc{};
    gmtime_r(&whole, &utc);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                       utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                       ms.count());
}

LogEventScope::LogEventScope(const LogEvent& event) : outer_(current_event) {
    current_event = &event;
}

LogEventScope::~LogEventScope() {
    current_event = outer_;
}

}  // namespace matchmesh::node
