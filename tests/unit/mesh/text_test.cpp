#include <doctest/doctest.h>

#include <string>

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
