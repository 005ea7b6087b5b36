#pragma once
// The shapes of a node's log lines, for the tests that read them. Checked by hand rather than with
// std::regex, whose GCC 12 headers trip -Wmaybe-uninitialized in the sanitized build.

#include <cctype>
#include <cstddef>
#include <optional>
#include <string_view>

namespace test_support {

// "2026-11-26T06:10:00.123Z": UTC to the millisecond, with its offset.
[[nodiscard]] inline bool is_utc_millis(std::string_view text) {
    constexpr std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (text.size() != shape.size()) {
        return false;
    }
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool fits = shape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(text[i])) != 0
                                          : text[i] == shape[i];
        if (!fits) {
            return false;
        }
    }
    return true;
}

// A text line, "<ts> <level> [<node>] <msg>", in its parts; nothing if it has another shape.
struct TextLine {
    std::string_view ts;
    std::string_view level;
    std::string_view node;
    std::string_view msg;
};

[[nodiscard]] inline std::optional<TextLine> text_line(std::string_view line) {
    const std::size_t ts_end = line.find(' ');
    if (ts_end == std::string_view::npos) {
        return std::nullopt;
    }
    const std::size_t level_end = line.find(' ', ts_end + 1);
    if (level_end == std::string_view::npos || line.substr(level_end + 1, 1) != "[") {
        return std::nullopt;
    }
    const std::size_t node_end = line.find("] ", level_end + 2);
    if (node_end == std::string_view::npos) {
        return std::nullopt;
    }
    return TextLine{line.substr(0, ts_end), line.substr(ts_end + 1, level_end - ts_end - 1),
                    line.substr(level_end + 2, node_end - level_end - 2),
                    line.substr(node_end + 2)};
}

}  // namespace test_support
