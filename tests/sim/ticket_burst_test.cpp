// A burst: a thousand 1v1 tickets on one rating bucket within 200 ms, on three nodes with a few
// milliseconds between them. Most search while nobody waits yet, then wait at about the same
// moment; their wait searches pair them up. Every ticket ends exactly once, no invariant breaks,
// and nearly all are matched (the simulation is deterministic: this is behaviour, not timing).
#include <doctest/doctest.h>

#include <cstdio>

#include "ticket_cluster.hpp"

using namespace ticket_sim;

TEST_CASE("ticket/burst: a thousand tickets on one bucket within 200 ms all end once") {
    TicketCluster cluster(3, 11, LinkModel{Duration(3), Duration(2), 0.0, true}, [] {
        Callbacks callbacks;
        callbacks.on_issue_ticket = [](const User& owner) {
            return std::optional(ranked_params(rating_of(owner), 2, 5s));
        };
        return callbacks;
    });
    constexpr int players = 1000;
    for (int i = 0; i < players; ++i) {
        const auto node = static_cast<std::size_t>(i % 3);
        const User user = cluster.connect(node, "p" + std::to_string(i), 1500);
        REQUIRE(cluster.at(node).start_ticket(ranked, user.id).has_value());
        cluster.run(Duration(i % 5 == 0 ? 1 : 0));  // 200 ms for all of them
    }
    cluster.run(8s);
    int matched = 0;
    for (int i = 0; i < players; ++i) {
        const auto codes = cluster.ledger.terminal_codes(UserId("p" + std::to_string(i)));
        REQUIRE_MESSAGE(codes.size() == 1, "player p", i, " got ", codes.size(),
                        " terminal pushes");
        matched += codes.front() == 220 ? 1 : 0;
    }
    std::uint64_t accepted = 0;
    std::uint64_t refused = 0;
    for (std::size_t node = 0; node < 3; ++node) {
        accepted += cluster.at(node).counters().joins_accepted;
        refused += cluster.at(node).counters().joins_refused;
    }
    std::printf("ticket burst: %d of %d matched; %llu joins refused for %llu accepted\n", matched,
                players, static_cast<unsigned long long>(refused),
                static_cast<unsigned long long>(accepted));
    CHECK(matched >= players * 95 / 100);  // without wait searches: about a third
    for (const std::string& broken : cluster.broken_invariants()) {
        FAIL_CHECK(broken);
    }
}
