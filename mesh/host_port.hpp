#pragma once
// "host:port" addresses as configs, command lines and logs write them, IPv6 hosts in brackets.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace matchmesh::mesh {

struct HostPort {
    std::string host;  // without the brackets of an IPv6 address
    std::uint16_t port = 0;
};

// Reads "host:port" or "[v6 host]:port"; the error names the text and what is wrong with it.
[[nodiscard]] std::expected<HostPort, std::string> split_host_port(std::string_view address);

// "host:port", with brackets around an IPv6 host: what split_host_port reads back.
[[nodiscard]] std::string join_host_port(std::string_view host, std::uint16_t port);

}  // namespace matchmesh::mesh
