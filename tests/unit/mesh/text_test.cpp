#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "mesh/text.hpp"

namespace matchmesh::mesh {

TEST_CASE("mesh/text: well-formed UTF-8 only, as RFC 3629 defines it") {
    CHECK(valid_utf8(""));
    CHECK(valid_utf8("plain ascii"));
    CHECK(valid_utf8("gr\xc3\xbc\xc3\x9f dich, \xe6\x97\xa5\xe6\x9c\xac, \xf0\x9f\x8e\xae"));
    CHECK(valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF, the last code point
    CHECK_FALSE(valid_utf8("\xff"));
    CHECK_FALSE(valid_utf8("\xc3"));              // cut short
    CHECK_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
    CHECK_FALSE(valid_utf8("\xe0\x80\xaf"));      // overlong, three bytes
    CHECK_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
    CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
    CHECK_FALSE(valid_utf8("\x80"));              // a continuation byte alone
    CHECK_FALSE(valid_utf8("ok\xe2\x82"));        // cut short at the end
}

TEST_CASE("mesh/text: a field's problem names the field, and what it broke") {
    const TextRule id{.bytes_min = 1, .bytes_max = 8};
    CHECK(text_problem("alice", id, "user ID").empty());
    CHECK(text_problem("", id, "user ID") == "user ID must be 1..8 bytes, got 0");
    CHECK(text_problem("123456789", id, "user ID") == "user ID must be 1..8 bytes, got 9");
    CHECK(text_problem("al\xffx", id, "user ID") == "user ID is not valid UTF-8 (at byte 2)");
    CHECK(text_problem("al\nx", id, "user ID") == "user ID holds a control character at byte 2");
    CHECK(text_problem("a\x7f", id, "user ID") == "user ID holds a control character at byte 1");
    const TextRule free_text{.bytes_max = 64, .control_allowed = true};
    CHECK(text_problem("two\nlines\tand a tab", free_text, "note").empty());
    CHECK(text_problem("\xc3(", free_text, "note") == "note is not valid UTF-8 (at byte 0)");
}

TEST_CASE("mesh/text: every byte value is judged the same at every place in a text") {
    // The check reads eight bytes at a time: a byte must be found wherever it sits in a word,
    // next to any neighbour (0x7F and 0x20 sit at the edges of what a word test must tell apart),
    // in texts shorter than a word, of one word, and with a last word that overlaps the one before.
    const TextRule id{.bytes_min = 0, .bytes_max = 64};
    const TextRule free_text{.bytes_max = 64, .control_allowed = true};
    for (const char fill : {'a', ' ', '~', '\x21'}) {
        for (int value = 0; value < 256; ++value) {
            const auto byte = static_cast<char>(value);
            const bool control = value < 0x20 || value == 0x7F;
            for (const std::size_t length : {1UL, 7UL, 8UL, 9UL, 16UL, 19UL}) {
                for (std::size_t at = 0; at < length; ++at) {
                    std::string text(length, fill);
                    text[at] = byte;
                    CAPTURE(value);
                    CAPTURE(length);
                    CAPTURE(at);
                    if (value >= 0x80) {  // a lone lead or continuation byte is never valid UTF-8
                        CHECK(text_problem(text, id, "id") ==
                              fmt::format("id is not valid UTF-8 (at byte {})", at));
                        CHECK_FALSE(text_problem(text, free_text, "note").empty());
                    } else if (control) {
                        CHECK(text_problem(text, id, "id") ==
                              fmt::format("id holds a control character at byte {}", at));
                        CHECK(text_problem(text, free_text, "note").empty());
                    } else {
                        CHECK(text_problem(text, id, "id").empty());
                        CHECK(text_problem(text, free_text, "note").empty());
                    }
                }
            }
        }
    }
    CHECK(text_problem(std::string_view{}, free_text, "note").empty());
    // Valid UTF-8 past the first word, with control characters allowed or not.
    CHECK(text_problem("12345678gr\xc3\xbc\xc3\x9f", id, "id").empty());
    CHECK(text_problem("12345678\tgr\xc3\xbc", free_text, "note").empty());
}

TEST_CASE("mesh/text: what a remote party sent is escaped and cut for a log line") {
    CHECK(printable("alice") == "alice");
    CHECK(printable("eve\ninfo forged line") == "eve\\x0ainfo forged line");
    CHECK(printable("back\\slash") == "back\\x5cslash");
    CHECK(printable("bad\xff") == "bad\\xff");
    CHECK(printable("\xe6\x97\xa5\xe6\x9c\xac") == "\xe6\x97\xa5\xe6\x9c\xac");
    CHECK(printable(std::string(500, 'x'), 10) == std::string(10, 'x') + "...");
    CHECK(printable(std::string(10, 'x'), 10) == std::string(10, 'x'));
}

}  // namespace matchmesh::mesh
