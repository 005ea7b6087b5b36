// Client tokens: what a game's backend signs and a node checks at hello.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "node/token.hpp"

using matchmesh::node::make_token;
using matchmesh::node::verify_token;

namespace {
constexpr const char* secret = "token-secret-0123456789abcdef";
constexpr std::uint64_t now = 1'800'000'000;
}  // namespace

TEST_CASE("token: a token made with the secret is accepted for its user until it expires") {
    const std::string token = make_token(secret, "alice", now + 60);
    CHECK(verify_token(secret, "alice", token, now).has_value());
    CHECK(verify_token(secret, "alice", token, now + 59).has_value());
    auto expired = verify_token(secret, "alice", token, now + 60);
    REQUIRE_FALSE(expired.has_value());
    CHECK(expired.error().find("expired") != std::string::npos);
}

TEST_CASE("token: one valid for longer than the cluster's maximum lifetime is refused") {
    const std::string token = make_token(secret, "alice", now + 100 * 365 * 86400ULL);
    CHECK(verify_token(secret, "alice", token, now).has_value());  // no maximum given
    auto refused = verify_token(secret, "alice", token, now, 86400);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error() ==
          "the token is valid for 3153600000 s more; this cluster takes at most 86400 s "
          "(limits.tokenLifetimeMaxSeconds)");
    CHECK(verify_token(secret, "alice", make_token(secret, "alice", now + 86400), now, 86400)
              .has_value());
}

TEST_CASE("token: another user, another secret or a changed expiry is refused as forged") {
    const std::string token = make_token(secret, "alice", now + 60);
    using Attempt = std::tuple<std::string, std::string, std::string>;  // user, secret, token
    const std::vector<Attempt> attempts{
        {"bob", secret, token},
        {"alice", "another-secret-0123456789", token},
        {"alice", secret, std::to_string(now + 6000) + token.substr(token.find('.'))}};
    for (const auto& [user, key, text] : attempts) {
        CAPTURE(user);
        CAPTURE(text);
        auto refused = verify_token(key, user, text, now);
        REQUIRE_FALSE(refused.has_value());
        CHECK(refused.error().find("signature") != std::string::npos);
    }
}

TEST_CASE("token: malformed tokens are refused with the reason") {
    const std::vector<std::string> malformed{"",
                                             "no-dot",
                                             ".abc",
                                             "123.",
                                             "12x.abcd",
                                             "123.zz",
                                             "123." + std::string(64, 'g'),
                                             "99999999999999999999999.ab"};
    for (const std::string& text : malformed) {
        CAPTURE(text);
        auto refused = verify_token(secret, "alice", text, now);
        REQUIRE_FALSE(refused.has_value());
        CHECK_FALSE(refused.error().empty());
    }
}
