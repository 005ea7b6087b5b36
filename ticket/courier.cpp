#include "ticket/courier.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::ticket {

struct Courier::Delivery {
    NodeId to;
    mesh::ServiceId service;
    mesh::MethodId method;
    mesh::Payload payload;
    Done done;
    Duration backoff;
    Time give_up_at;
    std::shared_ptr<const bool> life;  // the target's life it was made in
};

Courier::Courier(mesh::Network& network, mesh::Scheduler& scheduler, CourierOptions options,
                 std::uint64_t jitter_seed)
    : network_(network), scheduler_(scheduler), options_(options), random_(jitter_seed) {
    MM_ASSERT(options_.backoff_min > Duration(0) && options_.backoff_min <= options_.backoff_max);
    network_.on_membership([this, alive = alive_](const mesh::MembershipEvent& event) {
        if (*alive) {
            on_membership(event);
        }
    });
}

Courier::~Courier() {
    *alive_ = false;
}

void Courier::request(const NodeId& to, mesh::ServiceId service, mesh::MethodId method,
                      mesh::Payload payload, Done done, std::optional<Time> give_up_at) {
    if (pending_ >= options_.pending_max) {
        scheduler_.run_after(Duration(0), [done = std::move(done)] {
            done(std::unexpected(
                mesh::MeshError{mesh::MeshErrc::overloaded, "too many deliveries waiting"}));
        });
        return;
    }
    ++pending_;
    static const auto not_live = std::make_shared<const bool>(false);
    std::shared_ptr<const bool> life = not_live;
    if (network_.find_live(to) != nullptr) {
        auto& current = lives_[to];
        if (!current) {
            current = std::make_shared<bool>(true);
        }
        life = current;
    }
    attempt(std::make_shared<Delivery>(
        Delivery{to, service, method, std::move(payload), std::move(done), options_.backoff_min,
                 give_up_at.value_or(scheduler_.now() + options_.give_up_after), std::move(life)}));
}

void Courier::on_membership(const mesh::MembershipEvent& event) {
    if (event.kind != mesh::MembershipEvent::Kind::died &&
        event.kind != mesh::MembershipEvent::Kind::left) {
        return;
    }
    if (auto found = lives_.find(event.member.id); found != lives_.end()) {
        *found->second = false;
        lives_.erase(found);
    }
}

bool Courier::reachable(const Delivery& delivery) const {
    return *delivery.life && network_.find_live(delivery.to) != nullptr;
}

// Between half and all of the pause: retries that failed together spread out.
Duration Courier::jittered(Duration pause) {
    const auto half = pause.count() / 2;
    return Duration(half +
                    std::uniform_int_distribution<std::int64_t>(0, pause.count() - half)(random_));
}

void Courier::attempt(const std::shared_ptr<Delivery>& delivery) {
    if (!*delivery->life) {
        // Not live, or declared dead since the request: nothing said in an earlier life of the
        // target reaches a later one. (On a later turn, as a failed request's answer comes.)
        scheduler_.run_after(Duration(0), [this, alive = alive_, delivery] {
            if (*alive) {
                --pending_;
                delivery->done(std::unexpected(mesh::MeshError{
                    mesh::MeshErrc::unreachable,
                    delivery->to.str() + " is not a live member, or was declared dead since"}));
            }
        });
        return;
    }
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
            const Duration pause = jittered(delivery->backoff);
            const bool patient = scheduler_.now() + pause < delivery->give_up_at;
            if (transient && patient && reachable(*delivery)) {
                ++retries_;
                delivery->backoff = std::min(delivery->backoff * 2, options_.backoff_max);
                scheduler_.run_after(pause, [this, alive, delivery] {
                    if (*alive) {
                        attempt(delivery);
                    }
                });
                return;
            }
            --pending_;
            if (transient && !patient && reachable(*delivery)) {
                ++abandoned_;
                delivery->done(std::unexpected(mesh::MeshError{
                    mesh::MeshErrc::timeout, "no answer before the delivery gave up (last: " +
                                                 reply.error().message + ")"}));
                return;
            }
            delivery->done(reply);
        });
}

}  // namespace matchmesh::ticket
