#pragma once
// The cryptography of mesh authentication: random nonces and HMAC-SHA256 proofs (OpenSSL).
// See envelope.capnp for the handshake these serve.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mesh/control.hpp"

namespace matchmesh::mesh {

[[nodiscard]] Nonce random_nonce();

[[nodiscard]] Proof hmac_sha256(std::string_view secret, std::span<const std::uint8_t> message);

// proof = HMAC-SHA256(secret, role | 0 | cluster | 0 | challenge nonce | hello nonce | node ID).
[[nodiscard]] Proof handshake_proof(std::string_view secret, std::string_view role,
                                    std::string_view cluster, const Nonce& challenge_nonce,
                                    const Nonce& hello_nonce, std::string_view node_id);

// Compares in constant time.
[[nodiscard]] bool same_proof(const Proof& a, const Proof& b);

inline constexpr std::string_view role_hello = "hello";
inline constexpr std::string_view role_welcome = "welcome";

}  // namespace matchmesh::mesh
