#pragma once
// Courier: requests that must arrive. Each is retried, with growing pauses, until the target
// answers or leaves the cluster (as this node sees it). Receivers make these requests idempotent,
// so a retry after a lost answer does no harm.
//
// Owned by the ticket service; lives on the node's loop. At most `pending_max` deliveries wait at
// once; past that a new one fails at once with `overloaded` (never silent growth).

#include <cstddef>
#include <functional>
#include <memory>

#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"

namespace matchmesh::ticket {

struct CourierOptions {
    Duration attempt_timeout{500};
    Duration backoff_min{50};
    Duration backoff_max{2000};
    std::size_t pending_max = 100000;
};

class Courier {
public:
    using Done = std::function<void(std::expected<mesh::PayloadView, mesh::MeshError>)>;

    Courier(mesh::Network& network, mesh::Scheduler& scheduler, CourierOptions options);
    ~Courier();
    Courier(const Courier&) = delete;
    Courier& operator=(const Courier&) = delete;

    // `done` runs once: with the answer, with a failure the target itself gave, or with
    // `unreachable` once the target is no longer a live member.
    void request(const NodeId& to, mesh::ServiceId service, mesh::MethodId method,
                 mesh::Payload payload, Done done);

    [[nodiscard]] std::size_t pending() const { return pending_; }
    [[nodiscard]] std::uint64_t retries() const { return retries_; }

private:
    struct Delivery;
    void attempt(const std::shared_ptr<Delivery>& delivery);

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    CourierOptions options_;
    std::size_t pending_ = 0;
    std::uint64_t retries_ = 0;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::ticket
