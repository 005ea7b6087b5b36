#include "ticket/courier.hpp"

#include <algorithm>

namespace matchmesh::ticket {

struct Courier::Delivery {
    NodeId to;
    mesh::ServiceId service;
    mesh::MethodId method;
    mesh::Payload payload;
    Done done;
    Duration backoff;
};

Courier::Courier(mesh::Network& network, mesh::Scheduler& scheduler, CourierOptions options)
    : network_(network), scheduler_(scheduler), options_(options) {}

Courier::~Courier() {
    *alive_ = false;
}

void Courier::request(const NodeId& to, mesh::ServiceId service, mesh::MethodId method,
                      mesh::Payload payload, Done done) {
    if (pending_ >= options_.pending_max) {
        scheduler_.run_after(Duration(0), [done = std::move(done)] {
            done(std::unexpected(
                mesh::MeshError{mesh::MeshErrc::overloaded, "too many deliveries waiting"}));
        });
        return;
    }
    ++pending_;
    attempt(std::make_shared<Delivery>(
        Delivery{to, service, method, std::move(payload), std::move(done), options_.backoff_min}));
}

void Courier::attempt(const std::shared_ptr<Delivery>& delivery) {
    network_.request(
        delivery->to, delivery->service, delivery->method, delivery->payload,
        options_.attempt_timeout,
        [this, alive = alive_, delivery](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
            if (!*alive) {
                return;
            }
            const bool transient = !reply && (reply.error().code == mesh::MeshErrc::timeout ||
                                              reply.error().code == mesh::MeshErrc::overloaded ||
                                              reply.error().code == mesh::MeshErrc::unreachable);
            if (transient && network_.find_live(delivery->to) != nullptr) {
                ++retries_;
                const Duration pause = delivery->backoff;
                delivery->backoff = std::min(delivery->backoff * 2, options_.backoff_max);
                scheduler_.run_after(pause, [this, alive, delivery] {
                    if (*alive) {
                        attempt(delivery);
                    }
                });
                return;
            }
            --pending_;
            delivery->done(reply);
        });
}

}  // namespace matchmesh::ticket
