#pragma once
// Text that came over the wire, from a client or a peer: read once at the edge, so that every
// ID and text value past the decoders is bounded, valid UTF-8, and (for IDs) free of control
// characters, which could otherwise forge log lines or break a JSON dump. What a remote party
// sends that is shown in a log goes through `printable`.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include <capnp/blob.h>
#include <capnp/common.h>
#include <capnp/list.h>

namespace matchmesh::mesh {

// What a text field may hold.
struct TextRule {
    std::size_t bytes_min = 0;
    std::size_t bytes_max = 0;
    bool control_allowed = false;  // tabs and newlines in free text; never in an ID
};

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
[[nodiscard]] bool valid_utf8(std::string_view text);

// Why `text` breaks `rule` ("must be 1..128 bytes, got 0", "is not valid UTF-8", "holds a
// control character at byte 3"), naming `field`; empty when it keeps the rule.
[[nodiscard]] std::string text_problem(std::string_view text, const TextRule& rule,
                                       std::string_view field);

// Whether every byte is ASCII and, unless `control_allowed`, none a control character. Most text
// is (every ID the nodes make is), and each item of a search's answer brings several, so it is
// checked eight bytes at a time: a byte's top bit marks non-ASCII; subtracting 0x20 from each
// byte sets the top bit of those below 0x20 (the classic has-less-than test), and a byte equal
// to 0x7F becomes zero after an XOR, which the same test finds. A short text is padded with
// spaces; a longer one's last word overlaps the one before.
[[nodiscard]] inline bool plain_ascii(std::string_view text, bool control_allowed) {
    constexpr std::uint64_t ones = 0x0101'0101'0101'0101ULL;
    constexpr std::uint64_t highs = 0x8080'8080'8080'8080ULL;
    const auto bad = [control_allowed](std::uint64_t word) {
        std::uint64_t found = word & highs;
        if (!control_allowed) {
            const std::uint64_t deletes = word ^ (0x7F * ones);
            found |= ((word - 0x20 * ones) | (deletes - ones)) & ~word & highs;
        }
        return found != 0;
    };
    std::uint64_t word = 0x20 * ones;
    if (text.empty()) {
        return true;  // (its data may be null, which memcpy must not be given)
    }
    if (text.size() < sizeof word) {
        std::memcpy(&word, text.data(), text.size());
        return !bad(word);
    }
    for (std::size_t at = 0; at + sizeof word < text.size(); at += sizeof word) {
        std::memcpy(&word, text.data() + at, sizeof word);
        if (bad(word)) {
            return false;
        }
    }
    std::memcpy(&word, text.data() + text.size() - sizeof word, sizeof word);
    return !bad(word);
}

// read_text_view's slow path: throws the problem, if there is one.
[[nodiscard]] std::string_view read_text_view_checked(std::string_view value, const TextRule& rule,
                                                      std::string_view field);

// The field's text, as a view into the message (valid while the message is), when it keeps
// `rule`; else std::invalid_argument with the problem (the decoders turn that into their error).
[[nodiscard]] inline std::string_view read_text_view(capnp::Text::Reader text, const TextRule& rule,
                                                     std::string_view field) {
    const std::string_view value(text.cStr(), text.size());
    if (value.size() >= rule.bytes_min && value.size() <= rule.bytes_max &&
        plain_ascii(value, rule.control_allowed)) {
        return value;
    }
    return read_text_view_checked(value, rule, field);
}
// The same, as a string of its own.
[[nodiscard]] inline std::string read_text(capnp::Text::Reader text, const TextRule& rule,
                                           std::string_view field) {
    return std::string(read_text_view(text, rule, field));
}

// A view as a field to set; `view` must end where a NUL follows, as every text a message holds
// and every std::string does.
[[nodiscard]] inline capnp::Text::Reader text_field(std::string_view view) {
    return {view.data(), view.size()};
}

// Sets each text of `list`, initialised with `texts.size()` entries.
inline void write_texts(capnp::List<capnp::Text>::Builder list,
                        std::span<const std::string> texts) {
    for (unsigned i = 0; i < texts.size(); ++i) {
        list.set(i, text_field(texts[i]));
    }
}

// `text` for a log line: control characters, backslashes and bytes that are not valid UTF-8 as
// \xNN escapes, cut to `bytes_max` bytes with "..." after.
[[nodiscard]] std::string printable(std::string_view text, std::size_t bytes_max = 160);

}  // namespace matchmesh::mesh
