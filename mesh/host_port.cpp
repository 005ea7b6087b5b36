#include "mesh/host_port.hpp"

#include <charconv>

#include <fmt/format.h>

namespace matchmesh::mesh {

std::expected<HostPort, std::string> split_host_port(std::string_view address) {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
        return std::unexpected(fmt::format("'{}' is not host:port", address));
    }
    const std::string_view port_text = address.substr(colon + 1);
    unsigned port = 0;
    auto [end, error] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
        return std::unexpected(fmt::format("'{}' has no valid port", address));
    }
    std::string host(address.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);  // [::1]:7100
    }
    return HostPort{host, static_cast<std::uint16_t>(port)};
}

std::string join_host_port(std::string_view host, std::uint16_t port) {
    return host.find(':') != std::string_view::npos ? fmt::format("[{}]:{}", host, port)
                                                    : fmt::format("{}:{}", host, port);
}

}  // namespace matchmesh::mesh
