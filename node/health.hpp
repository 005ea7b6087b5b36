#pragma once
// Health: what the admin port's probes answer, from facts the node's event loop publishes.
//
// - Live (/livez): the loop stamps a heartbeat on a short timer, and the node is live while the
//   last stamp is at most `liveness_bound` old. A loop stuck in one callback (a deadlock, a
//   blocking call, an endless loop) stops stamping, however well the admin port's own threads
//   still answer.
// - Ready (/readyz): the node should be sent players. It is live, listens on its client port, is
//   not draining, and has joined the cluster (it has seen at least one other live member) unless
//   it is alone by config. A node that joined stays ready when its peers are gone: the last
//   survivors of a cluster keep serving.
//
// Owned by the node, which keeps it alive for as long as its admin server. The loop thread writes,
// the admin server's threads read; each fact is one atomic that stands alone, so a probe never
// waits for the loop (a loop that does not answer is what /livez must report). Pure: callers pass
// the time, on one monotonic clock.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "mesh/base/time.hpp"

namespace matchmesh::node {

struct HealthOptions {
    Duration liveness_bound{2000};
    // A cluster of one by config (no seeds): ready without another member.
    bool alone_by_config = false;
};

// A probe's answer: ok (HTTP 200) or not (503), and one line saying why.
struct HealthVerdict {
    bool ok = false;
    std::string text;
};

class Health {
public:
    explicit Health(HealthOptions options) : options_(options) {}

    // The loop thread's side.
    void beat(Time now) { last_beat_ms_.store(ms_since_epoch(now), std::memory_order_relaxed); }
    void set_listening(bool listening) { listening_.store(listening, std::memory_order_relaxed); }
    void set_other_members(std::size_t count);
    void set_draining() { draining_.store(true, std::memory_order_relaxed); }

    // Any thread's side.
    [[nodiscard]] HealthVerdict liveness(Time now) const;
    [[nodiscard]] HealthVerdict readiness(Time now) const;

private:
    static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::min();

    HealthOptions options_;
    std::atomic<std::int64_t> last_beat_ms_{never};
    std::atomic<bool> listening_{false};
    std::atomic<std::size_t> other_members_{0};
    std::atomic<bool> joined_before_{false};
    std::atomic<bool> draining_{false};
};

}  // namespace matchmesh::node
