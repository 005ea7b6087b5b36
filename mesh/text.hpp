#pragma once
// Text that came over the wire, from a client or a peer: read once at the edge, so that every
// ID and text value past the decoders is bounded, valid UTF-8, and (for IDs) free of control
// characters, which could otherwise forge log lines or break a JSON dump. What a remote party
// sends that is shown in a log goes through `printable`.

#include <cstddef>
#include <string>
#include <string_view>

#include <capnp/blob.h>
#include <capnp/common.h>

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

// The field's text when it keeps `rule`; else std::invalid_argument with the problem (the
// decoders turn that into their error).
[[nodiscard]] std::string read_text(capnp::Text::Reader text, const TextRule& rule,
                                    std::string_view field);
// The same, as a view into the message (valid while the message is).
[[nodiscard]] std::string_view read_text_view(capnp::Text::Reader text, const TextRule& rule,
                                              std::string_view field);

// `text` for a log line: control characters, backslashes and bytes that are not valid UTF-8 as
// \xNN escapes, cut to `bytes_max` bytes with "..." after.
[[nodiscard]] std::string printable(std::string_view text, std::size_t bytes_max = 160);

}  // namespace matchmesh::mesh
