#include "mesh/handshake.hpp"

#include <fmt/format.h>

#include "mesh/auth.hpp"
#include "mesh/envelope.capnp.h"

namespace matchmesh::mesh {
namespace {

HandshakeStep refuse(std::string reason) {
    return HandshakeStep{HandshakeStep::Verdict::refused, std::nullopt, {}, std::move(reason)};
}

bool is(const Envelope& frame, MethodId method) {
    return frame.service == mesh_service && frame.method == method;
}

}  // namespace

AcceptingHandshake::AcceptingHandshake(HandshakeOptions options, const Nonce& challenge_nonce)
    : options_(std::move(options)), challenge_nonce_(challenge_nonce) {}

Frame AcceptingHandshake::challenge() const {
    return control_frame(wire::METHOD_CHALLENGE,
                         encode(ChallengeMessage{options_.cluster, challenge_nonce_}));
}

HandshakeStep AcceptingHandshake::receive(const Envelope& frame) const {
    if (!is(frame, wire::METHOD_HELLO)) {
        return refuse("a frame before authentication");
    }
    auto hello = decode_hello(frame.payload, options_.reader);
    if (!hello) {
        return refuse(fmt::format("garbled hello: {}", hello.error().message));
    }
    if (hello->cluster != options_.cluster) {
        return refuse(fmt::format("wrong cluster name '{}'", hello->cluster));
    }
    const Proof expected = handshake_proof(options_.secret, role_hello, options_.cluster,
                                           challenge_nonce_, hello->nonce, hello->member.id.str());
    if (!same_proof(expected, hello->proof)) {
        return refuse(fmt::format("wrong secret from '{}'", hello->member.id.str()));
    }
    if (hello->member.id == options_.self.id) {
        return HandshakeStep{
            HandshakeStep::Verdict::itself, std::nullopt, {}, "connected to itself"};
    }
    const Proof proof = handshake_proof(options_.secret, role_welcome, options_.cluster,
                                        challenge_nonce_, hello->nonce, options_.self.id.str());
    return HandshakeStep{
        HandshakeStep::Verdict::ready,
        control_frame(wire::METHOD_WELCOME, encode(WelcomeMessage{options_.self, proof})),
        hello->member,
        {}};
}

DialingHandshake::DialingHandshake(HandshakeOptions options, const Nonce& hello_nonce)
    : options_(std::move(options)), hello_nonce_(hello_nonce) {}

HandshakeStep DialingHandshake::receive(const Envelope& frame) {
    return challenge_nonce_ ? on_welcome(frame) : on_challenge(frame);
}

HandshakeStep DialingHandshake::on_challenge(const Envelope& frame) {
    if (!is(frame, wire::METHOD_CHALLENGE)) {
        return refuse("expected a challenge");
    }
    auto challenge = decode_challenge(frame.payload, options_.reader);
    if (!challenge) {
        return refuse(fmt::format("garbled challenge: {}", challenge.error().message));
    }
    if (challenge->cluster != options_.cluster) {
        return refuse(fmt::format("the peer belongs to cluster '{}'", challenge->cluster));
    }
    challenge_nonce_ = challenge->nonce;
    const Proof proof = handshake_proof(options_.secret, role_hello, options_.cluster,
                                        challenge->nonce, hello_nonce_, options_.self.id.str());
    return HandshakeStep{
        HandshakeStep::Verdict::more,
        control_frame(wire::METHOD_HELLO,
                      encode(HelloMessage{options_.cluster, options_.self, hello_nonce_, proof})),
        {},
        {}};
}

HandshakeStep DialingHandshake::on_welcome(const Envelope& frame) const {
    if (!is(frame, wire::METHOD_WELCOME)) {
        return refuse("expected a welcome");
    }
    auto welcome = decode_welcome(frame.payload, options_.reader);
    if (!welcome) {
        return refuse(fmt::format("garbled welcome: {}", welcome.error().message));
    }
    const Proof expected =
        handshake_proof(options_.secret, role_welcome, options_.cluster, *challenge_nonce_,
                        hello_nonce_, welcome->member.id.str());
    if (!same_proof(expected, welcome->proof)) {
        return refuse("the peer could not prove it knows the cluster secret");
    }
    if (welcome->member.id == options_.self.id) {
        return HandshakeStep{HandshakeStep::Verdict::itself, std::nullopt, {}, "dialed itself"};
    }
    return HandshakeStep{HandshakeStep::Verdict::ready, std::nullopt, welcome->member, {}};
}

}  // namespace matchmesh::mesh
