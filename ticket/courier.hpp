#pragma once
// Courier: requests that must arrive. Each is retried, with growing, jittered pauses, until the
// target answers, leaves the cluster (as this node sees it), or the delivery's patience runs out.
// A delivery never outlives the target's life it was made in: a target declared dead (or gone)
// ends its deliveries, even if it comes back as a member before a retry was due (a node paused or
// cut off, declared dead, then met again). Both ended what they shared then, so what was said
// before must not arrive after.
// Receivers make these requests idempotent, so a retry after a lost answer does no harm. The
// jitter keeps the retries of many deliveries that failed together (a peer paused, a burst)
// from arriving together again.
//
// Owned by the ticket service; lives on the node's loop. At most `pending_max` deliveries wait at
// once; past that a new one fails at once with `overloaded` (never silent growth).

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>

#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"

namespace matchmesh::ticket {

struct CourierOptions {
    Duration attempt_timeout{500};
    Duration backoff_min{50};
    Duration backoff_max{2000};
    // A delivery unanswered for this long gives up with `timeout`: no request is retried forever,
    // whatever its target does (a live target answers well within it).
    Duration give_up_after{30000};
    std::size_t pending_max = 100000;
};

class Courier {
public:
    using Done = std::function<void(std::expected<mesh::PayloadView, mesh::MeshError>)>;

    // `jitter_seed` makes the pauses' jitter reproducible (the simulation's runs repeat).
    Courier(mesh::Network& network, mesh::Scheduler& scheduler, CourierOptions options,
            std::uint64_t jitter_seed);
    ~Courier();
    Courier(const Courier&) = delete;
    Courier& operator=(const Courier&) = delete;

    // `done` runs once: with the answer, with a failure the target itself gave, with
    // `unreachable` once the target is not, or was not since the request, a live member (a
    // request to a node not live now fails so at once), or with `timeout` when no
    // attempt was answered by `give_up_at` (by default `give_up_after` from now; an attempt
    // already out is still waited for).
    void request(const NodeId& to, mesh::ServiceId service, mesh::MethodId method,
                 mesh::Payload payload, Done done, std::optional<Time> give_up_at = {});

    [[nodiscard]] std::size_t pending() const { return pending_; }
    [[nodiscard]] std::uint64_t retries() const { return retries_; }
    [[nodiscard]] std::uint64_t abandoned() const { return abandoned_; }

private:
    struct Delivery;
    void attempt(const std::shared_ptr<Delivery>& delivery);
    void on_membership(const mesh::MembershipEvent& event);
    // Whether the delivery's target is live, and has been since the delivery was made.
    [[nodiscard]] bool reachable(const Delivery& delivery) const;
    [[nodiscard]] Duration jittered(Duration pause);

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    CourierOptions options_;
    std::mt19937_64 random_;
    std::size_t pending_ = 0;
    std::uint64_t retries_ = 0;
    std::uint64_t abandoned_ = 0;
    // Each target's current life, shared by the deliveries made to it in that life, and ended
    // (set false, dropped) when it dies or leaves. Entries only for live members.
    std::unordered_map<NodeId, std::shared_ptr<bool>> lives_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::ticket
