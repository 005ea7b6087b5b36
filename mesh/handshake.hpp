#pragma once
// The mesh handshake of one connection as a pure state machine: frames in, frames out, and a
// verdict. The node that was dialed sends a challenge (its cluster name and a fresh nonce); the
// dialer answers with a hello (cluster, who it is, its own nonce, and a proof over both nonces
// keyed with the cluster secret); the dialed node checks it and answers with a welcome that
// proves the same in the other direction. A recorded hello is useless on another connection: the
// challenge nonce differs. See envelope.capnp.
//
// The caller supplies the nonces, so that the TCP transport (random ones) and the simulation
// (seeded ones) run the very same checks. No I/O here.

#include <optional>
#include <string>

#include <capnp/message.h>

#include "mesh/control.hpp"
#include "mesh/frame.hpp"
#include "mesh/network.hpp"

namespace matchmesh::mesh {

struct HandshakeOptions {
    std::string cluster;
    std::string secret;
    MemberInfo self;
    capnp::ReaderOptions reader;
};

struct HandshakeStep {
    enum class Verdict {
        more,     // send `reply` (if any) and wait for the peer's next frame
        ready,    // send `reply` (if any): the peer is `peer`, authenticated
        refused,  // the peer failed a check (`reason` says which): close, and count it
        itself,   // the peer is this very node: close quietly
    };
    Verdict verdict = Verdict::more;
    std::optional<Frame> reply;
    MemberInfo peer;     // when ready
    std::string reason;  // when refused or itself
};

// The dialed side: challenge() first, then one hello.
class AcceptingHandshake {
public:
    AcceptingHandshake(HandshakeOptions options, const Nonce& challenge_nonce);
    [[nodiscard]] Frame challenge() const;
    [[nodiscard]] HandshakeStep receive(const Envelope& frame) const;

private:
    HandshakeOptions options_;
    Nonce challenge_nonce_;
};

// The dialing side: a challenge, then a welcome.
class DialingHandshake {
public:
    DialingHandshake(HandshakeOptions options, const Nonce& hello_nonce);
    [[nodiscard]] HandshakeStep receive(const Envelope& frame);

private:
    [[nodiscard]] HandshakeStep on_challenge(const Envelope& frame);
    [[nodiscard]] HandshakeStep on_welcome(const Envelope& frame) const;

    HandshakeOptions options_;
    Nonce hello_nonce_;
    std::optional<Nonce> challenge_nonce_;  // once the challenge came
};

}  // namespace matchmesh::mesh
