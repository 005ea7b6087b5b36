#include "mesh/text.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace matchmesh::mesh {
namespace {

// The length of the well-formed UTF-8 sequence at `at`, or 0 when there is none (RFC 3629).
std::size_t sequence_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(at);
    if (lead < 0x80) {
        return 1;
    }
    std::size_t length = 0;
    unsigned char low = 0x80;  // the range the second byte must fall in
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        low = lead == 0xE0 ? 0xA0 : 0x80;   // no overlong forms
        high = lead == 0xED ? 0x9F : 0xBF;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        low = lead == 0xF0 ? 0x90 : 0x80;   // no overlong forms
        high = lead == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    } else {
        return 0;
    }
    if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) {
        return 0;
    }
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) {
            return 0;
        }
    }
    return length;
}

bool is_control(unsigned char c) {
    return c < 0x20 || c == 0x7F;
}

}  // namespace

bool valid_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = sequence_length(text, at);
        if (length == 0) {
            return false;
        }
        at += length;
    }
    return true;
}

std::string text_problem(std::string_view text, const TextRule& rule, std::string_view field) {
    if (text.size() < rule.bytes_min || text.size() > rule.bytes_max) {
        return fmt::format("{} must be {}..{} bytes, got {}", field, rule.bytes_min, rule.bytes_max,
                           text.size());
    }
    if (plain_ascii(text, rule.control_allowed)) {
        return {};
    }
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = sequence_length(text, at);
        if (length == 0) {
            return fmt::format("{} is not valid UTF-8 (at byte {})", field, at);
        }
        if (!rule.control_allowed && is_control(static_cast<unsigned char>(text[at]))) {
            return fmt::format("{} holds a control character at byte {}", field, at);
        }
        at += length;
    }
    return {};
}

std::string_view read_text_view_checked(std::string_view value, const TextRule& rule,
                                        std::string_view field) {
    if (std::string problem = text_problem(value, rule, field); !problem.empty()) {
        throw std::invalid_argument(problem);
    }
    return value;
}

std::string printable(std::string_view text, std::size_t bytes_max) {
    std::string out;
    for (std::size_t at = 0; at < text.size() && out.size() < bytes_max;) {
        const std::size_t length = sequence_length(text, at);
        const auto lead = static_cast<unsigned char>(text[at]);
        if (length == 0 || is_control(lead) || lead == '\\') {
            out += fmt::format("\\x{:02x}", lead);
            ++at;
        } else {
            out.append(text.substr(at, length));
            at += length;
        }
        if (at < text.size() && out.size() >= bytes_max) {
            out += "...";
        }
    }
    return out;
}

}  // namespace matchmesh::mesh
