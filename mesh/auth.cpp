#include "mesh/auth.hpp"

#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

Nonce random_nonce() {
    Nonce nonce{};
    MM_ASSERT(RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) == 1);
    return nonce;
}

Proof hmac_sha256(std::string_view secret, std::span<const std::uint8_t> message) {
    Proof proof{};
    unsigned int length = 0;
    const unsigned char* result = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                       message.data(), message.size(), proof.data(), &length);
    MM_ASSERT(result != nullptr && length == proof.size());
    return proof;
}

Proof handshake_proof(std::string_view secret, std::string_view role, std::string_view cluster,
                      const Nonce& challenge_nonce, const Nonce& hello_nonce,
                      std::string_view node_id) {
    std::vector<std::uint8_t> message;
    auto append = [&message](auto begin, auto end) { message.insert(message.end(), begin, end); };
    append(role.begin(), role.end());
    message.push_back(0);
    append(cluster.begin(), cluster.end());
    message.push_back(0);
    append(challenge_nonce.begin(), challenge_nonce.end());
    append(hello_nonce.begin(), hello_nonce.end());
    append(node_id.begin(), node_id.end());
    return hmac_sha256(secret, message);
}

bool same_proof(const Proof& a, const Proof& b) {
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace matchmesh::mesh
