#pragma once
// Network: what the modules above mesh/ see of the cluster — who is a member, and sending
// messages and requests to members. Payloads are opaque serialized Cap'n Proto messages.
//
// Implemented once (MeshCore) over two transports: TCP between processes, and the deterministic
// simulation. Every callback runs on the node's loop thread.

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <capnp/common.h>
#include <capnp/message.h>
#include <kj/array.h>

#include "mesh/base/error.hpp"
#include "mesh/base/strong_id.hpp"
#include "mesh/base/time.hpp"

namespace matchmesh::mesh {

using ServiceId = std::uint16_t;
using MethodId = std::uint16_t;

inline constexpr ServiceId mesh_service = 0;  // membership and handshake; see envelope.capnp

struct MemberInfo {
    NodeId id;
    std::string address;  // host:port of its mesh listener (the node ID in the simulation)
    std::string node_type;
    std::uint64_t incarnation = 0;
    friend bool operator==(const MemberInfo&, const MemberInfo&) = default;
};

enum class MeshErrc : std::uint16_t {
    timeout = 1,      // no answer within the request's timeout
    unreachable = 2,  // not a live member, or the connection to it failed
    overloaded = 3,   // the queue towards that member is full
    no_handler = 4,   // the member has nothing registered for that service and method
    remote = 5,       // the member's handler failed; the message says why
    malformed = 6,    // a payload could not be decoded
    shutdown = 7,     // this node is leaving
};

[[nodiscard]] std::string_view to_string(MeshErrc code);

using MeshError = Error<MeshErrc>;

// Writes a message as one flat array (segment table, then segments) into `into`, which is exactly
// capnp::computeSerializedSizeInWords(message) words long.
void write_flat(capnp::MessageBuilder& message, std::span<std::byte> into);

// A serialized message (flat array with segment table). Immutable and cheap to copy, so that one
// encoding can be sent to many members.
class Payload {
public:
    Payload() = default;
    [[nodiscard]] static Payload encode(capnp::MessageBuilder& message);
    [[nodiscard]] static Payload copy_of(std::span<const capnp::word> words);
    [[nodiscard]] std::span<const capnp::word> words() const;

private:
    std::shared_ptr<const capnp::word[]> words_;  // one allocation, shared by every copy
    std::size_t size_ = 0;                        // words
};

// A received payload; valid only during the callback that receives it.
using PayloadView = std::span<const capnp::word>;

// Answers one request, once. Destroying it unanswered answers with a failure, so a request never
// waits for its timeout because a handler forgot it.
class Responder {
public:
    using Send = std::function<void(std::expected<Payload, MeshError>)>;
    Responder() = default;
    explicit Responder(Send send) : send_(std::move(send)) {}
    Responder(Responder&& other) noexcept : send_(std::exchange(other.send_, nullptr)) {}
    Responder& operator=(Responder&&) noexcept;
    Responder(const Responder&) = delete;
    Responder& operator=(const Responder&) = delete;
    ~Responder();

    void reply(Payload payload);
    void fail(MeshErrc code, std::string message);
    [[nodiscard]] bool answered() const { return !send_; }

private:
    Send send_;
};

struct MembershipEvent {
    // `reconciled` follows the member's `died` (when it was still live here): it had declared
    // this node dead, so both ended what they shared; it is contacted again as a new member.
    enum class Kind { joined, died, left, reconciled };
    Kind kind;
    MemberInfo member;
};

using RequestHandler = std::function<void(const NodeId& from, PayloadView, Responder)>;
using OneWayHandler = std::function<void(const NodeId& from, PayloadView)>;
using ReplyHandler = std::function<void(std::expected<PayloadView, MeshError>)>;
using MembershipListener = std::function<void(const MembershipEvent&)>;

class Network {
public:
    virtual ~Network() = default;

    [[nodiscard]] virtual const MemberInfo& self() const = 0;
    // Live members including this node, sorted by ID.
    [[nodiscard]] virtual std::span<const MemberInfo> live_members() const = 0;
    [[nodiscard]] virtual const MemberInfo* find_live(const NodeId& id) const = 0;

    // Fire and forget; silently dropped if the member is not reachable (counted).
    virtual void send(const NodeId& to, ServiceId service, MethodId method, Payload payload) = 0;
    // `on_reply` runs exactly once: with the response, or with an error (timeout, unreachable,
    // ...).
    virtual void request(const NodeId& to, ServiceId service, MethodId method, Payload payload,
                         Duration timeout, ReplyHandler on_reply) = 0;

    virtual void on_request(ServiceId service, MethodId method, RequestHandler handler) = 0;
    virtual void on_one_way(ServiceId service, MethodId method, OneWayHandler handler) = 0;
    virtual void on_membership(MembershipListener listener) = 0;

    // Limits every decoder of peer payloads must use.
    [[nodiscard]] virtual const capnp::ReaderOptions& reader_options() const = 0;
};

}  // namespace matchmesh::mesh
