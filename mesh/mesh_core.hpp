#pragma once
// MeshCore: the mesh protocol of one node — membership by randomized probing and gossip (see
// membership.hpp), requests matched to their responses, timeouts, handler dispatch — over any
// Transport. Pure: it reads time only from its
// Scheduler and touches bytes only through frame.hpp, so the simulation runs the very same code
// as a real node.
//
// Owned by the node (or a simulated node); lives on the node's loop thread. Life cycle:
// construct, register handlers, start(); leave() announces departure; destroy after the
// transport stops delivering.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mesh/frame.hpp"
#include "mesh/membership.hpp"
#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"

namespace matchmesh::mesh {

// How MeshCore reaches other nodes. Implemented by the TCP transport and by the simulation.
class Transport {
public:
    enum class SendResult { queued, overloaded, unreachable };
    using ConnectionId = std::uint64_t;

    virtual ~Transport() = default;
    // Queues a frame to a member, connecting first if needed.
    virtual SendResult send(const MemberInfo& to, Frame frame) = 0;
    // Queues a frame on the connection a request arrived on.
    virtual SendResult reply(ConnectionId via, Frame frame) = 0;
    // The member is gone: drop its connections and queued frames.
    virtual void forget(const NodeId& id) = 0;
};

struct MeshOptions {
    MembershipOptions membership;
    FrameLimits limits;
    // Where MeshCore reports what a peer did wrong (the node logs it; tests may collect it).
    std::function<void(const std::string&)> on_warning;
    // Hears the round trip of every answered request to another node (for metrics).
    std::function<void(std::chrono::nanoseconds)> on_round_trip;
    // Requests awaiting one peer's answers at once; past it a request fails at once with
    // `overloaded` (a slow peer is not sent more work, and its backlog is bounded).
    std::size_t requests_per_peer_max = 16384;
};

struct MeshCounters {
    std::uint64_t requests_sent = 0;
    std::uint64_t requests_failed = 0;  // timeouts, unreachable, overloaded
    std::uint64_t requests_timed_out = 0;
    std::uint64_t requests_over_peer_limit = 0;  // failed at once: too many awaiting that peer
    std::uint64_t late_responses = 0;            // arrived after their timeout
    std::uint64_t sends_dropped = 0;             // one-way messages that could not be queued
    std::uint64_t frames_from_strangers = 0;
    std::uint64_t handler_failures = 0;
};

class MeshCore final : public Network {
public:
    MeshCore(MemberInfo self, MeshOptions options, Scheduler& scheduler, Transport& transport);
    ~MeshCore() override;
    MeshCore(const MeshCore&) = delete;
    MeshCore& operator=(const MeshCore&) = delete;

    void start();
    // Tells every member this node leaves; pending requests fail with `shutdown`.
    void leave();

    // From the transport: a decoded frame from an authenticated peer, on connection `via`.
    void deliver(const MemberInfo& from, Transport::ConnectionId via, const Envelope& envelope);
    // From the transport: an outgoing connection completed its handshake with `peer`.
    void connected(const MemberInfo& peer);

    // Network
    [[nodiscard]] const MemberInfo& self() const override { return membership_.self(); }
    [[nodiscard]] std::span<const MemberInfo> live_members() const override {
        return membership_.live();
    }
    [[nodiscard]] const MemberInfo* find_live(const NodeId& id) const override {
        return membership_.find_live(id);
    }
    void send(const NodeId& to, ServiceId service, MethodId method, Payload payload) override;
    void request(const NodeId& to, ServiceId service, MethodId method, Payload payload,
                 Duration timeout, ReplyHandler on_reply) override;
    void on_request(ServiceId service, MethodId method, RequestHandler handler) override;
    void on_one_way(ServiceId service, MethodId method, OneWayHandler handler) override;
    void on_membership(MembershipListener listener) override;
    [[nodiscard]] const capnp::ReaderOptions& reader_options() const override {
        return reader_options_;
    }

    [[nodiscard]] const MeshCounters& counters() const { return counters_; }
    [[nodiscard]] const Membership& membership() const { return membership_; }
    [[nodiscard]] const FrameLimits& limits() const { return options_.limits; }
    [[nodiscard]] std::size_t pending_requests() const { return pending_.size(); }

private:
    struct Pending {
        NodeId to;
        ReplyHandler on_reply;
        TimerId timer;
        std::chrono::nanoseconds sent;
    };
    using HandlerKey = std::uint32_t;
    static HandlerKey key_of(ServiceId service, MethodId method) {
        return (static_cast<HandlerKey>(service) << 16) | method;
    }

    // The member this period's probe is for, and whether it answered (directly or through a
    // helper) yet.
    struct Probe {
        MemberInfo target;
        std::uint64_t sequence = 0;
        bool answered = false;
    };

    void period();
    void conclude_probe();
    void start_probe();
    void ask_helpers(std::uint64_t sequence);
    void send_probe(const MemberInfo& to, MethodId method, std::uint64_t sequence,
                    const MemberInfo& subject);
    // This node's live list to `to`, or its digest alone (the periodic sync).
    void send_sync(const MemberInfo& to, MethodId method, bool digest_only);
    void tell_buried();
    void handle_control(const MemberInfo& from, const Envelope& envelope);
    void handle_sync(const MemberInfo& from, const Envelope& envelope);
    void handle_probe(const MemberInfo& from, const Envelope& envelope);
    void answer_probe(const MemberInfo& from, MethodId method, const ProbeMessage& probe);
    void answer_verdict(const MemberInfo& from, Membership::Verdict verdict);
    void handle_request(const MemberInfo& from, Transport::ConnectionId via,
                        const Envelope& envelope);
    void handle_reply(const MemberInfo& from, const Envelope& envelope);
    void dispatch_local(ServiceId service, MethodId method, Payload payload,
                        std::function<void(std::expected<Payload, MeshError>)> answer);
    void finish(std::uint64_t correlation, std::expected<PayloadView, MeshError> result);
    void publish_events();
    void fail_later(ReplyHandler on_reply, MeshErrc code, std::string message);
    void warn(std::string message);

    MeshOptions options_;
    capnp::ReaderOptions reader_options_;
    Scheduler& scheduler_;
    Transport& transport_;
    Membership membership_;
    std::unordered_map<HandlerKey, RequestHandler> request_handlers_;
    std::unordered_map<HandlerKey, OneWayHandler> one_way_handlers_;
    std::vector<MembershipListener> listeners_;
    std::unordered_map<std::uint64_t, Pending> pending_;
    std::unordered_map<NodeId, std::size_t> pending_per_peer_;
    std::uint64_t next_correlation_ = 1;
    TimerId period_timer_ = 0;
    TimerId probe_timer_ = 0;
    std::optional<Probe> probe_;
    std::uint64_t next_probe_sequence_ = 1;
    bool started_ = false;
    bool leaving_ = false;
    MeshCounters counters_;
    // Closures handed to the scheduler check this before touching the core.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::mesh
