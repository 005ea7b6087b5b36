// The mesh handshake as a state machine, with fixed nonces: who may join, and what a recorded
// handshake is worth on another connection.
#include <doctest/doctest.h>

#include "mesh/handshake.hpp"

using namespace matchmesh;
using namespace matchmesh::mesh;
using Verdict = HandshakeStep::Verdict;

namespace {

Nonce nonce(std::uint8_t fill) {
    Nonce n{};
    n.fill(fill);
    return n;
}

HandshakeOptions options(const std::string& id, const std::string& cluster = "blue",
                         const std::string& secret = "secret-0123456789abcdef") {
    return HandshakeOptions{cluster, secret, MemberInfo{NodeId(id), id + ":7100", "HTTP", 1}, {}};
}

// The frame as its receiver reads it (the frame owns the bytes the envelope points into).
struct Received {
    explicit Received(Frame sent) : frame(std::move(sent)) {
        auto decoded = decode_frame(frame, FrameLimits{});
        REQUIRE(decoded);
        envelope = *decoded;
    }
    Frame frame;
    Envelope envelope;
};

}  // namespace

TEST_CASE("mesh/handshake: two members of one cluster learn who the other is") {
    const AcceptingHandshake dialed(options("node-a"), nonce(1));
    DialingHandshake dialer(options("node-b"), nonce(2));
    const HandshakeStep hello = dialer.receive(Received(dialed.challenge()).envelope);
    REQUIRE(hello.verdict == Verdict::more);
    REQUIRE(hello.reply);
    const HandshakeStep welcome = dialed.receive(Received(*hello.reply).envelope);
    REQUIRE(welcome.verdict == Verdict::ready);
    CHECK(welcome.peer.id == NodeId("node-b"));
    REQUIRE(welcome.reply);
    const HandshakeStep done = dialer.receive(Received(*welcome.reply).envelope);
    CHECK(done.verdict == Verdict::ready);
    CHECK(done.peer.id == NodeId("node-a"));
}

TEST_CASE("mesh/handshake: a wrong secret, a wrong cluster or a replayed hello is refused") {
    SUBCASE("the dialer does not know the secret") {
        const AcceptingHandshake dialed(options("node-a"), nonce(1));
        DialingHandshake dialer(options("node-b", "blue", "guessed-secret-0123456789"), nonce(2));
        const HandshakeStep hello = dialer.receive(Received(dialed.challenge()).envelope);
        const HandshakeStep verdict = dialed.receive(Received(*hello.reply).envelope);
        CHECK(verdict.verdict == Verdict::refused);
        CHECK(verdict.reason == "wrong secret from 'node-b'");
        CHECK_FALSE(verdict.reply);
    }
    SUBCASE("the dialed node does not know the secret") {
        const AcceptingHandshake dialed(options("node-a", "blue", "guessed-secret-0123456789"),
                                        nonce(1));
        DialingHandshake dialer(options("node-b"), nonce(2));
        const HandshakeStep hello = dialer.receive(Received(dialed.challenge()).envelope);
        // It cannot check the hello (it refuses it), and it could not prove itself either.
        CHECK(dialed.receive(Received(*hello.reply).envelope).verdict == Verdict::refused);
    }
    SUBCASE("another cluster") {
        const AcceptingHandshake dialed(options("node-a", "green"), nonce(1));
        DialingHandshake dialer(options("node-b"), nonce(2));
        const HandshakeStep verdict = dialer.receive(Received(dialed.challenge()).envelope);
        CHECK(verdict.verdict == Verdict::refused);
        CHECK(verdict.reason == "the peer belongs to cluster 'green'");
    }
    SUBCASE("a hello recorded on one connection, replayed on another") {
        const AcceptingHandshake first(options("node-a"), nonce(1));
        DialingHandshake dialer(options("node-b"), nonce(2));
        const HandshakeStep hello = dialer.receive(Received(first.challenge()).envelope);
        REQUIRE(first.receive(Received(*hello.reply).envelope).verdict == Verdict::ready);
        const AcceptingHandshake second(options("node-a"), nonce(3));  // a fresh challenge
        const HandshakeStep replayed = second.receive(Received(*hello.reply).envelope);
        CHECK(replayed.verdict == Verdict::refused);
    }
    SUBCASE("a frame other than a hello first") {
        const AcceptingHandshake dialed(options("node-a"), nonce(1));
        CHECK(dialed.receive(Received(dialed.challenge()).envelope).reason ==
              "a frame before authentication");
    }
    SUBCASE("a dialer that hears a hello where a challenge belongs") {
        const AcceptingHandshake dialed(options("node-a"), nonce(1));
        DialingHandshake dialer(options("node-b"), nonce(2));
        DialingHandshake other(options("node-c"), nonce(3));
        const HandshakeStep hello = other.receive(Received(dialed.challenge()).envelope);
        CHECK(dialer.receive(Received(*hello.reply).envelope).reason == "expected a challenge");
    }
}

TEST_CASE("mesh/handshake: a node that reaches itself closes quietly") {
    const AcceptingHandshake dialed(options("node-a"), nonce(1));
    DialingHandshake dialer(options("node-a"), nonce(2));
    const HandshakeStep hello = dialer.receive(Received(dialed.challenge()).envelope);
    CHECK(dialed.receive(Received(*hello.reply).envelope).verdict == Verdict::itself);
}
