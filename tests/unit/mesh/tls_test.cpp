// TLS contexts: what is wrong with their files is said with the file's name and the reason.
#include <doctest/doctest.h>

#include "mesh/asio/tls.hpp"

using namespace matchmesh;

TEST_CASE("mesh/tls: a context names the file it cannot use, and why") {
    auto missing = mesh::make_tls_context({"/nonexistent/node.pem", "/nonexistent/node.key", ""},
                                          mesh::TlsRole::server);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().starts_with("cannot use the TLS certificate '/nonexistent/node.pem': "));

    auto no_ca = mesh::make_tls_context({"", "", "/nonexistent/ca.pem"}, mesh::TlsRole::client);
    REQUIRE_FALSE(no_ca.has_value());
    CHECK(no_ca.error().starts_with("cannot read the TLS CA file '/nonexistent/ca.pem': "));
}
