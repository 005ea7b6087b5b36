#include "node/token.hpp"

#include <charconv>

#include <fmt/format.h>
#include <openssl/crypto.h>

#include "mesh/auth.hpp"

namespace matchmesh::node {
namespace {

std::string signature(std::string_view secret, std::string_view user, std::uint64_t expires) {
    const std::string message = fmt::format("{}\n{}", user, expires);
    const auto mac = mesh::hmac_sha256(
        secret, std::span(reinterpret_cast<const std::uint8_t*>(message.data()), message.size()));
    std::string hex;
    for (std::uint8_t byte : mac) {
        hex += fmt::format("{:02x}", byte);
    }
    return hex;
}

}  // namespace

std::string make_token(std::string_view secret, std::string_view user,
                       std::uint64_t expires_unix_seconds) {
    return fmt::format("{}.{}", expires_unix_seconds,
                       signature(secret, user, expires_unix_seconds));
}

std::expected<void, std::string> verify_token(std::string_view secret, std::string_view user,
                                              std::string_view token,
                                              std::uint64_t now_unix_seconds,
                                              std::uint64_t lifetime_max_seconds) {
    if (token.empty()) {
        return std::unexpected("a token is required");
    }
    const auto dot = token.find('.');
    std::uint64_t expires = 0;
    if (dot == std::string_view::npos) {
        return std::unexpected("the token is malformed (no '.' between expiry and signature)");
    }
    const auto [end, error] = std::from_chars(token.data(), token.data() + dot, expires);
    if (dot == 0 || error != std::errc() || end != token.data() + dot) {
        return std::unexpected("the token is malformed (its expiry is not a number of seconds)");
    }
    const std::string expected = signature(secret, user, expires);
    const std::string_view given = token.substr(dot + 1);
    if (given.size() != expected.size() ||
        CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
        return std::unexpected(
            "the token's signature does not match (forged, or for another user)");
    }
    if (expires <= now_unix_seconds) {
        return std::unexpected(
            fmt::format("the token expired {} s ago", now_unix_seconds - expires));
    }
    if (expires - now_unix_seconds > lifetime_max_seconds) {
        return std::unexpected(
            fmt::format("the token is valid for {} s more; this cluster takes at most {} s "
                        "(limits.tokenLifetimeMaxSeconds)",
                        expires - now_unix_seconds, lifetime_max_seconds));
    }
    return {};
}

}  // namespace matchmesh::node
