#pragma once
// SimWorld: many nodes' MeshCores in one process, on virtual time, deterministically.
//
// One event queue holds every node's timers and every frame in flight, ordered by (time, order
// of scheduling); the same seed therefore gives the same run, and event_log_hash() proves it.
// Frames are encoded and decoded with frame.hpp exactly as on TCP. Links have seeded latency,
// jitter, loss, optional reordering, one-way blocks and partitions; nodes can crash and restart
// (a restart is a new incarnation) and pause (as under SIGSTOP: its timers and the frames sent to
// it wait until it resumes). Two nodes' frames travel on one connection, as over TCP: when either
// forgets the other, what is in flight between them is lost. A node reaches its seeds through
// the mesh handshake (handshake.hpp), frame by frame over the links, as over TCP.
//
// Owned by a test; single-threaded. Code above mesh/ attaches per node through the start and
// stop hooks (services are built on start and destroyed on stop, before the node's core).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mesh/mesh_core.hpp"
#include "mesh/timer_queue.hpp"

namespace matchmesh::mesh::sim {

struct LinkModel {
    Duration latency{1};
    Duration jitter{0};      // added latency, uniform in [0, jitter]
    double drop_rate = 0.0;  // probability that a frame is lost
    bool reorder = false;    // with jitter: may a frame overtake an earlier one on its link?
};

struct SimNodeConfig {
    NodeId id;
    std::string node_type = "HTTP";
    std::vector<NodeId> seeds;
    // What its handshake proves: a node with another cluster name or secret never joins.
    std::string cluster = "sim";
    std::string secret = "sim-cluster-secret";
};

class SimWorld;

// One simulated node: its scheduler, transport and core.
class SimNode {
public:
    [[nodiscard]] const NodeId& id() const { return config_.id; }
    [[nodiscard]] bool running() const { return core_ != nullptr; }
    [[nodiscard]] MeshCore& core() { return *core_; }
    [[nodiscard]] Network& network() { return *core_; }
    [[nodiscard]] Scheduler& scheduler();
    [[nodiscard]] std::size_t index() const { return index_; }

private:
    friend class SimWorld;
    class NodeScheduler;
    class NodeTransport;

    SimNodeConfig config_;
    std::size_t index_ = 0;
    std::uint64_t incarnation_ = 0;
    Time paused_until_{};
    std::unique_ptr<NodeScheduler> scheduler_;
    std::unique_ptr<NodeTransport> transport_;
    std::unique_ptr<MeshCore> core_;
};

class SimWorld {
public:
    SimWorld(std::uint64_t seed, MeshOptions options, LinkModel links = {});
    ~SimWorld();

    SimNode& add_node(SimNodeConfig config);
    [[nodiscard]] SimNode& node(const NodeId& id);
    [[nodiscard]] std::vector<SimNode*> nodes();

    // Called after a node's core starts (to attach services) and before it stops (to detach).
    void on_start(std::function<void(SimNode&)> hook) { start_hooks_.push_back(std::move(hook)); }
    void on_stop(std::function<void(SimNode&)> hook) { stop_hooks_.push_back(std::move(hook)); }

    void crash(const NodeId& id);                      // stops at once, silently
    void restart(const NodeId& id);                    // starts again as a new incarnation
    void stop_gracefully(const NodeId& id);            // leaves, then stops after frames drain
    void pause(const NodeId& id, Duration duration);   // runs nothing for `duration`, then resumes
    void block(const NodeId& from, const NodeId& to);  // frames from -> to are lost
    void unblock(const NodeId& from, const NodeId& to);
    void partition(const std::set<NodeId>& side_a, const std::set<NodeId>& side_b);
    void heal();  // removes every block
    // Frames for which `drop` says so are lost on arrival (one message type, one direction...).
    using DropRule = std::function<bool(const NodeId& from, const NodeId& to, const Envelope&)>;
    void drop_if(DropRule drop) { drop_rule_ = std::move(drop); }
    void set_links(LinkModel links) { links_ = links; }

    [[nodiscard]] Time now() const { return now_; }
    // Runs events until none is due at or before `until`, then sets the clock to `until`.
    void run_until(Time until);
    void run_for(Duration duration) { run_until(now_ + duration); }
    // Runs until every running node sees the same live set of all running nodes, or the time
    // limit passes; returns whether they converged.
    bool run_until_converged(Duration limit);

    [[nodiscard]] std::uint64_t event_log_hash() const { return log_hash_; }
    [[nodiscard]] std::uint64_t frames_delivered() const { return frames_delivered_; }
    // The same frames by (service, method), a request and its reply under the request's method.
    using FramesByMethod = std::map<std::pair<ServiceId, MethodId>, std::uint64_t>;
    [[nodiscard]] const FramesByMethod& frames_delivered_by_method() const {
        return frames_by_method_;
    }
    [[nodiscard]] std::uint64_t bytes_delivered() const { return bytes_delivered_; }
    [[nodiscard]] std::uint64_t frames_dropped() const { return frames_dropped_; }
    [[nodiscard]] std::uint64_t handshakes_refused() const { return handshakes_refused_; }
    [[nodiscard]] std::mt19937_64& random() { return random_; }

private:
    friend class SimNode::NodeScheduler;
    friend class SimNode::NodeTransport;

    void start(SimNode& node);
    void stop(SimNode& node);
    // An event's tag names the node it runs on (none for the world's own): one of its timers, or
    // a frame arriving at it. A paused node's events wait until it resumes.
    static constexpr std::uint32_t arrival_bit = 0x8000'0000U;
    static std::uint32_t timer_tag(std::size_t index) {
        return static_cast<std::uint32_t>(index + 1);
    }
    static std::uint32_t arrival_tag(std::size_t index) { return timer_tag(index) | arrival_bit; }
    TimerId schedule(Time at, Task task, std::uint32_t tag = 0);
    bool cancel(TimerId timer) { return events_.cancel(timer); }
    void transmit(SimNode& from, std::size_t to_index, Frame frame);
    void close_connection(std::size_t a, std::size_t b);
    // `dialer` reaches the seed: challenge, hello and welcome cross the links; on a welcome the
    // dialer's core is connected to the seed.
    void dial_seed(SimNode& dialer, std::size_t seed_index);
    // Carries a handshake frame from -> to (one latency, lost on a blocked link or a stopped
    // node), then hands it to `received`.
    void relay(std::size_t from, std::size_t to, Frame frame,
               std::function<void(const Envelope&)> received);
    [[nodiscard]] static std::uint64_t link(std::size_t from, std::size_t to) {
        return (static_cast<std::uint64_t>(from) << 32U) | static_cast<std::uint64_t>(to);
    }
    // When the connection between two nodes was closed, each time, oldest first (its count is
    // the connection's epoch).
    [[nodiscard]] std::vector<Time>& connection_closes(std::size_t a, std::size_t b);
    void log(std::uint64_t a, std::uint64_t b, std::uint64_t c);
    [[nodiscard]] SimNode* find(const NodeId& id);

    MeshOptions options_;
    LinkModel links_;
    std::mt19937_64 random_;
    Time now_{};
    TimerQueue events_;
    std::vector<std::unique_ptr<SimNode>> nodes_;
    std::unordered_map<NodeId, std::size_t> index_of_;
    // Link state, keyed by link(from, to): hashed, as a frame's send looks up each of them.
    std::unordered_set<std::uint64_t> blocked_;
    std::unordered_map<std::uint64_t, Time> last_arrival_;  // for FIFO links
    // Per pair of nodes (lower index first): when either forgot the other.
    std::unordered_map<std::uint64_t, std::vector<Time>> connection_closes_;
    DropRule drop_rule_;
    std::vector<std::function<void(SimNode&)>> start_hooks_;
    std::vector<std::function<void(SimNode&)>> stop_hooks_;
    std::uint64_t log_hash_ = 0;
    std::uint64_t frames_delivered_ = 0;
    FramesByMethod frames_by_method_;
    std::uint64_t bytes_delivered_ = 0;  // the frames' encoded size
    std::uint64_t frames_dropped_ = 0;
    std::uint64_t handshakes_refused_ = 0;
    std::mt19937_64
        nonces_;  // apart from random_, so that handshakes do not shift the links' draws
};

}  // namespace matchmesh::mesh::sim
