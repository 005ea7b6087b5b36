#pragma once
// TLS for the mesh and the client port (OpenSSL through Asio): contexts built from PEM files.
// A node's context serves and dials with its own certificate; peers' and clients' certificates
// are checked against the CA file. Errors name the file and OpenSSL's reason.

#include <expected>
#include <memory>
#include <string>

#include <asio/ssl/context.hpp>

namespace matchmesh::mesh {

struct TlsFiles {
    std::string certificate_file;  // PEM: this node's certificate (and its chain)
    std::string private_key_file;  // PEM: its key
    std::string ca_file;           // PEM: the CAs whose certificates this side accepts
};

enum class TlsRole {
    peer,    // the mesh: shows its certificate and requires one the CA signed, both ways
    server,  // the client port: shows its certificate and asks none (players have none)
    client,  // a client: shows none and requires the server's to be signed by the CA
};

using TlsContext = std::shared_ptr<asio::ssl::context>;

// A context for `role`: the certificate and key are read for peer and server, the CA file for
// peer and client.
[[nodiscard]] std::expected<TlsContext, std::string> make_tls_context(const TlsFiles& files,
                                                                      TlsRole role);

}  // namespace matchmesh::mesh
