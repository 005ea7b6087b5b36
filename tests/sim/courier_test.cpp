// The courier over the simulated network: a delivery retried across its target's pause never
// reaches the target after the two were declared dead and met again.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "support/sim_cluster.hpp"
#include "ticket/courier.hpp"

using namespace matchmesh;
using namespace matchmesh::mesh;
using namespace matchmesh::mesh::sim;
using namespace matchmesh::ticket;
using namespace std::chrono_literals;

namespace {

constexpr ServiceId post_service = 77;
constexpr MethodId post_method = 1;

// A node's courier, the deliveries its handler took (by number) and when it ended what it
// shared with each peer (a death or a reconciliation).
struct Post {
    std::unique_ptr<Courier> courier;
    std::vector<std::pair<std::uint64_t, Time>> received;
    std::map<NodeId, Time> ended_with;
};

Payload numbered(std::uint64_t number) {
    std::vector<capnp::word> words(1, capnp::word{});
    std::memcpy(static_cast<void*>(words.data()), &number, sizeof number);
    return Payload::copy_of(words);
}

std::uint64_t number_of(PayloadView payload) {
    std::uint64_t number = 0;
    std::memcpy(&number, payload.data(), sizeof number);
    return number;
}

}  // namespace

TEST_CASE("ticket/courier: no delivery crosses its target's death, even when it comes back") {
    for (std::uint64_t seed : {5, 23, 61}) {
        CAPTURE(seed);
        test_support::SimCluster<Post> cluster(
            {.nodes = 3, .seed = seed, .links = LinkModel{Duration(1), Duration(3), 0.0, true}},
            [&](SimNode& node) {
                auto post = std::make_unique<Post>();
                // Short attempts and long pauses between them: most deliveries are between
                // attempts when the target is declared dead, and many are due after it is back.
                post->courier =
                    std::make_unique<Courier>(node.network(), node.scheduler(),
                                              CourierOptions{.attempt_timeout = Duration(100),
                                                             .backoff_min = Duration(400),
                                                             .backoff_max = Duration(1500)},
                                              seed);
                Post* raw = post.get();
                SimWorld* world = &cluster.world;
                node.network().on_request(
                    post_service, post_method,
                    [raw, world](const NodeId&, PayloadView payload, Responder responder) {
                        raw->received.emplace_back(number_of(payload), world->now());
                        responder.reply(Payload::copy_of(payload));
                    });
                node.network().on_membership([raw, world](const MembershipEvent& event) {
                    if (event.kind == MembershipEvent::Kind::died ||
                        event.kind == MembershipEvent::Kind::reconciled) {
                        raw->ended_with[event.member.id] = world->now();
                    }
                });
                return post;
            });
        const NodeId sender("n0");
        const NodeId target("n2");
        Post& from = cluster.at(sender);
        std::map<std::uint64_t, std::vector<std::optional<MeshErrc>>> outcomes;
        auto send = [&](std::uint64_t number) {
            from.courier->request(
                target, post_service, post_method, numbered(number),
                [&outcomes, number](std::expected<PayloadView, MeshError> r) {
                    outcomes[number].push_back(r ? std::nullopt : std::optional(r.error().code));
                });
        };
        // Paused past the failure timeout, as under SIGSTOP: the sender declares it dead and, once
        // it wakes, they meet again. A delivery starts every 20 ms of most of the pause.
        cluster.world.pause(target, 1000ms);
        std::uint64_t sent = 0;
        for (; sent < 45; ++sent) {
            send(sent);
            cluster.run(20ms);
        }
        REQUIRE(cluster.world.run_until_converged(3s));
        cluster.run(3s);  // every retry due has come
        REQUIRE(from.ended_with.contains(target));
        const Time ended_at_target = cluster.at(target).ended_with.at(sender);
        for (const auto& [number, at] : cluster.at(target).received) {
            CAPTURE(number);
            CHECK(at <= ended_at_target);  // only what reached it before it heard of its death
        }
        for (std::uint64_t number = 0; number < sent; ++number) {
            CAPTURE(number);
            REQUIRE(outcomes[number].size() == 1);  // each heard back once
            CHECK(outcomes[number].front() == MeshErrc::unreachable);
        }
        // Met again, the target takes new deliveries.
        send(sent);
        cluster.run(1s);
        REQUIRE(outcomes[sent].size() == 1);
        CHECK_FALSE(outcomes[sent].front().has_value());
        CHECK(from.courier->pending() == 0);
    }
}
