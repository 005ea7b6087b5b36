#include <doctest/doctest.h>

#include <string_view>

#include "mesh/host_port.hpp"

namespace matchmesh::mesh {

TEST_CASE("host_port: a host and port read back as written, IPv6 hosts in brackets") {
    struct Case {
        std::string_view text, host;
        std::uint16_t port;
    };
    for (const auto& [text, host, port] :
         {Case{"127.0.0.1:7100", "127.0.0.1", 7100}, Case{"[::1]:0", "::1", 0},
          Case{"node-3.example:65535", "node-3.example", 65535}}) {
        CAPTURE(text);
        auto parts = split_host_port(text);
        REQUIRE(parts);
        CHECK(parts->host == host);
        CHECK(parts->port == port);
        CHECK(join_host_port(parts->host, parts->port) == text);
    }
}

TEST_CASE("host_port: the error names the text and what is wrong") {
    CHECK(split_host_port("7100").error() == "'7100' is not host:port");
    CHECK(split_host_port(":7100").error() == "':7100' is not host:port");
    CHECK(split_host_port("host:70000").error() == "'host:70000' has no valid port");
    CHECK(split_host_port("host:71x").error() == "'host:71x' has no valid port");
    CHECK(split_host_port("host:").error() == "'host:' has no valid port");
}

}  // namespace matchmesh::mesh
