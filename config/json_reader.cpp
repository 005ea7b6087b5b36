#include "config/json_reader.hpp"

#include <set>
#include <vector>

#include <fmt/format.h>

namespace matchmesh::config {
namespace {

std::string type_name(const nlohmann::json& value) {
    return value.type_name();
}

// The path of the parser's current position, kept up to date from its callbacks.
class PathTracker {
public:
    explicit PathTracker(std::size_t depth_max) : depth_max_(depth_max) {}

    bool on_event(int depth, nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (static_cast<std::size_t>(depth) > depth_max_) {
            reject(path(), fmt::format("nested deeper than {} levels", depth_max_));
        }
        switch (event) {
            case Event::object_start:
                next_element();
                frames_.push_back(Frame{false, {}, {}, 0});
                break;
            case Event::array_start:
                next_element();
                frames_.push_back(Frame{true, {}, {}, 0});
                break;
            case Event::object_end:
            case Event::array_end: frames_.pop_back(); break;
            case Event::key: {
                Frame& frame = frames_.back();
                std::string key = parsed.get<std::string>();
                frame.current = key;
                if (!frame.keys.insert(std::move(key)).second) {
                    reject(path(), "duplicate key");
                }
                break;
            }
            case Event::value: next_element(); break;
        }
        return true;
    }

private:
    struct Frame {
        bool is_array;
        std::set<std::string> keys;
        std::string current;
        std::size_t next_index;
    };

    void next_element() {
        if (!frames_.empty() && frames_.back().is_array) {
            frames_.back().current = std::to_string(frames_.back().next_index++);
        }
    }

    std::string path() const {
        std::string text;
        for (const Frame& frame : frames_) {
            if (frame.is_array) {
                text += "[" + frame.current + "]";
            } else if (!frame.current.empty() || !frame.keys.empty()) {
                text = child_path(text, frame.current);
            }
        }
        return text.empty() ? "(top level)" : text;
    }

    std::size_t depth_max_;
    std::vector<Frame> frames_;
};

}  // namespace

void reject(std::string path, std::string reason) {
    throw Rejected{std::move(path), std::move(reason)};
}

std::string child_path(std::string_view parent, std::string_view key) {
    const std::string_view shown = key.empty() ? std::string_view(R"("")") : key;
    return parent.empty() ? std::string(shown) : fmt::format("{}.{}", parent, shown);
}

void expect_any_object(const nlohmann::json& value, std::string_view path) {
    if (!value.is_object()) {
        reject(std::string(path), fmt::format("must be an object, got {}", type_name(value)));
    }
}

void expect_object(const nlohmann::json& value, std::string_view path,
                   std::initializer_list<std::string_view> allowed) {
    expect_any_object(value, path);
    for (const auto& [key, member] : value.items()) {
        bool known = false;
        for (std::string_view name : allowed) {
            known = known || name == key;
        }
        if (!known) {
            reject(child_path(path, key),
                   fmt::format("unknown key (allowed here: {})", fmt::join(allowed, ", ")));
        }
    }
}

std::int64_t read_integer(const nlohmann::json& value, std::string_view path, std::int64_t min,
                          std::int64_t max) {
    const bool fits = value.is_number_integer() &&
                      !(value.is_number_unsigned() &&
                        value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX));
    if (!fits) {
        reject(std::string(path),
               fmt::format("must be an integer in {}..{}, got {}", min, max, value.dump()));
    }
    const auto number = value.get<std::int64_t>();
    if (number < min || number > max) {
        reject(std::string(path), fmt::format("must be in {}..{}, got {}", min, max, number));
    }
    return number;
}

std::string read_string(const nlohmann::json& value, std::string_view path, std::size_t bytes_min,
                        std::size_t bytes_max) {
    if (!value.is_string()) {
        reject(std::string(path), fmt::format("must be a string, got {}", type_name(value)));
    }
    auto text = value.get<std::string>();
    if (text.size() < bytes_min || text.size() > bytes_max) {
        reject(std::string(path),
               fmt::format("must be {}..{} bytes long, got {}", bytes_min, bytes_max, text.size()));
    }
    return text;
}

nlohmann::json parse_strict(std::string_view text, std::size_t depth_max) {
    PathTracker tracker(depth_max);
    try {
        return nlohmann::json::parse(
            text.begin(), text.end(),
            [&tracker](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                return tracker.on_event(depth, event, parsed);
            });
    } catch (const nlohmann::json::parse_error& error) {
        // Turn the byte offset into a line and column a human can find.
        std::size_t line = 1;
        std::size_t column = 1;
        const std::size_t end = std::min(error.byte == 0 ? 0 : error.byte - 1, text.size());
        for (std::size_t i = 0; i < end; ++i) {
            if (text[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        std::string reason = error.what();
        if (auto colon = reason.rfind(": "); colon != std::string::npos) {
            reason = reason.substr(colon + 2);
        }
        reject(fmt::format("line {}, column {}", line, column), "syntax error: " + reason);
    } catch (const nlohmann::json::out_of_range& error) {
        // A number JSON allows but a double cannot hold, such as 1e999.
        std::string reason = error.what();
        if (auto overflow = reason.find("number overflow"); overflow != std::string::npos) {
            reason = reason.substr(overflow);
        }
        reject("(top level)", "syntax error: " + reason);
    }
}

}  // namespace matchmesh::config
