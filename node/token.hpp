#pragma once
// Client tokens: "<expiry unix seconds>.<hex HMAC-SHA256(secret, user ID '\n' expiry)>". A game's
// backend signs one per player; a node configured with the same secret checks it at hello.

#include <cstdint>
#include <expected>
#include <limits>
#include <string>
#include <string_view>

namespace matchmesh::node {

[[nodiscard]] std::string make_token(std::string_view secret, std::string_view user,
                                     std::uint64_t expires_unix_seconds);

// The error says why (expired, forged, malformed, or valid for longer than
// `lifetime_max_seconds` from now: a token that leaks should not open sessions for years).
[[nodiscard]] std::expected<void, std::string> verify_token(
    std::string_view secret, std::string_view user, std::string_view token,
    std::uint64_t now_unix_seconds,
    std::uint64_t lifetime_max_seconds = std::numeric_limits<std::uint64_t>::max());

}  // namespace matchmesh::node
