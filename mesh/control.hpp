#pragma once
// The mesh's own messages (service 0): encoding and strict decoding into plain structs.
// Decoders never throw: a malformed payload is an error value.

#include <array>
#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "mesh/frame.hpp"
#include "mesh/network.hpp"

namespace matchmesh::mesh {

inline constexpr std::size_t nonce_bytes = 32;
inline constexpr std::size_t proof_bytes = 32;  // HMAC-SHA256
inline constexpr std::size_t member_text_bytes_max = 256;
inline constexpr std::size_t sync_members_max = 1024;
inline constexpr std::size_t probe_updates_max = 64;

using Nonce = std::array<std::uint8_t, nonce_bytes>;
using Proof = std::array<std::uint8_t, proof_bytes>;

struct SyncMessage {
    MemberInfo sender;
    std::vector<MemberInfo> members;  // empty when digest_only
    std::uint64_t digest = 0;         // of the sender's live list (Membership::live_digest)
    bool digest_only = false;
};

// One piece of membership news, spread by gossip on probe frames.
struct MemberUpdate {
    enum class Status : std::uint8_t { alive, suspect, dead, left };
    MemberInfo member;
    Status status = Status::alive;
    std::uint64_t alive_counter = 0;
    friend bool operator==(const MemberUpdate&, const MemberUpdate&) = default;
};

// Ping, Ack, PingRequest and IndirectAck (envelope.capnp says which field means what in each).
struct ProbeMessage {
    MemberInfo sender;
    std::uint64_t alive_counter = 0;
    std::uint64_t sequence = 0;
    MemberInfo subject;  // id empty when unset
    std::vector<MemberUpdate> updates;
};

struct ChallengeMessage {
    std::string cluster;
    Nonce nonce{};
};

struct HelloMessage {
    std::string cluster;
    MemberInfo member;
    Nonce nonce{};
    Proof proof{};
};

struct WelcomeMessage {
    MemberInfo member;
    Proof proof{};
};

struct LeaveMessage {
    NodeId id;
    std::uint64_t incarnation = 0;
};

using ControlError = Error<MeshErrc>;

[[nodiscard]] Payload encode(const SyncMessage& message);
[[nodiscard]] Payload encode(const ProbeMessage& message);
[[nodiscard]] Payload encode(const ChallengeMessage& message);
[[nodiscard]] Payload encode(const HelloMessage& message);
[[nodiscard]] Payload encode(const WelcomeMessage& message);
[[nodiscard]] Payload encode(const LeaveMessage& message);
[[nodiscard]] Payload encode_rejected(std::uint64_t incarnation);

[[nodiscard]] std::expected<SyncMessage, ControlError> decode_sync(
    PayloadView payload, const capnp::ReaderOptions& options);
[[nodiscard]] std::expected<ProbeMessage, ControlError> decode_probe(
    PayloadView payload, const capnp::ReaderOptions& options);
[[nodiscard]] std::expected<ChallengeMessage, ControlError> decode_challenge(
    PayloadView payload, const capnp::ReaderOptions& options);
[[nodiscard]] std::expected<HelloMessage, ControlError> decode_hello(
    PayloadView payload, const capnp::ReaderOptions& options);
[[nodiscard]] std::expected<WelcomeMessage, ControlError> decode_welcome(
    PayloadView payload, const capnp::ReaderOptions& options);
[[nodiscard]] std::expected<LeaveMessage, ControlError> decode_leave(
    PayloadView payload, const capnp::ReaderOptions& options);
[[nodiscard]] std::expected<std::uint64_t, ControlError> decode_rejected(
    PayloadView payload, const capnp::ReaderOptions& options);

// A frame carrying one of the messages above.
[[nodiscard]] Frame control_frame(MethodId method, const Payload& payload);

}  // namespace matchmesh::mesh
