#include "mesh/asio/tls.hpp"

#include <fmt/format.h>

namespace matchmesh::mesh {

std::expected<TlsContext, std::string> make_tls_context(const TlsFiles& files, TlsRole role) {
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls);
    context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    std::error_code error;
    const auto failed = [&](const std::string& what, const std::string& file) {
        return std::unexpected(fmt::format("{} '{}': {}", what, file, error.message()));
    };
    if (role != TlsRole::client) {
        context->use_certificate_chain_file(files.certificate_file, error);
        if (error) {
            return failed("cannot use the TLS certificate", files.certificate_file);
        }
        context->use_private_key_file(files.private_key_file, asio::ssl::context::pem, error);
        if (error) {
            return failed("cannot use the TLS private key", files.private_key_file);
        }
    }
    if (role == TlsRole::server) {
        context->set_verify_mode(asio::ssl::verify_none, error);
        return context;
    }
    context->load_verify_file(files.ca_file, error);
    if (error) {
        return failed("cannot read the TLS CA file", files.ca_file);
    }
    context->set_verify_mode(role == TlsRole::peer
                                 ? asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert
                                 : asio::ssl::verify_peer,
                             error);
    return context;
}

}  // namespace matchmesh::mesh
