// One session per user in the whole cluster: a newer session on any node ends the older one,
// through the user's directory node, also when that node dies and once a partition heals.
#include <doctest/doctest.h>

#include "ticket/session_directory.hpp"
#include "ticket/ticket.capnp.h"
#include "ticket_cluster.hpp"

using namespace ticket_sim;

namespace {

struct SessionCluster {
    TicketCluster cluster;

    explicit SessionCluster(std::size_t nodes, std::uint8_t max_members = 2)
        : cluster(nodes, 11, LinkModel{Duration(1), Duration(0), 0.0, false}, [max_members] {
              Callbacks callbacks;
              callbacks.on_issue_ticket = [max_members](const User& owner) {
                  return std::optional(ranked_params(rating_of(owner), max_members, 30s));
              };
              return callbacks;
          }) {}

    // `user`'s session on `node`, begun at `epoch` (a later epoch is a newer session).
    void connect(std::size_t node, const std::string& user, std::uint64_t epoch) {
        User session{UserId(user), "sid-" + user, TicketCluster::name(node), {{"rating", 1500}}};
        session.epoch = epoch;
        cluster.at(node).connect_user(session);
    }
    [[nodiscard]] bool connected(std::size_t node, const std::string& user) {
        return cluster.at(node).find_user(UserId(user)) != nullptr;
    }
    // The node that keeps `user`'s directory entry, as `seen_from` sees the cluster.
    [[nodiscard]] NodeId directory(const std::string& user, std::size_t seen_from) {
        const NodeId from = TicketCluster::name(seen_from);
        const ticket::DirectoryPlacement placement(
            cluster.world.node(from).network().live_members());
        return *placement.owner(UserId(user));
    }
    [[nodiscard]] std::size_t index_of(const NodeId& node) const {
        for (std::size_t i = 0; i < 64; ++i) {
            if (TicketCluster::name(i) == node) {
                return i;
            }
        }
        FAIL("no such node");
        return 0;
    }
};

}  // namespace

TEST_CASE("ticket/sessions: a newer session on another of 12 nodes ends the older one") {
    // Proves the supersede rule through the directory: the older session ends, with its ticket
    // (222 to its user), whichever nodes the two sessions and the directory are on.
    SessionCluster sessions(12);
    for (std::size_t i = 0; i < 12; ++i) {
        const std::string user = "player-" + std::to_string(i);
        const std::size_t first = i;
        const std::size_t second = (i + 5) % 12;
        sessions.connect(first, user, 1000);
        REQUIRE(sessions.cluster.at(first).start_ticket(ranked, UserId(user)).has_value());
        sessions.cluster.run(50ms);
        sessions.connect(second, user, 2000);
        sessions.cluster.run(100ms);
        CAPTURE(user);
        CHECK_FALSE(sessions.connected(first, user));
        CHECK(sessions.connected(second, user));
        CHECK(sessions.cluster.ledger.terminal_codes(UserId(user)) ==
              std::vector<std::uint16_t>{push_cancel});
    }
    // An older session that registers late is the one that ends.
    sessions.connect(3, "late", 2000);
    sessions.cluster.run(50ms);
    sessions.connect(8, "late", 1000);
    sessions.cluster.run(100ms);
    CHECK(sessions.connected(3, "late"));
    CHECK_FALSE(sessions.connected(8, "late"));
}

TEST_CASE("ticket/sessions: a reconnect on the same node keeps the new session registered") {
    // The old session's end and the new one's registration reach the directory together, even in
    // the same millisecond (one epoch): a newer session elsewhere still ends the new one.
    SessionCluster sessions(6);
    std::string user;
    for (int i = 0; user.empty(); ++i) {
        const std::string candidate = "r" + std::to_string(i);
        if (sessions.directory(candidate, 0) != TicketCluster::name(0)) {
            user = candidate;
        }
    }
    sessions.connect(0, user, 1000);
    sessions.cluster.run(50ms);
    sessions.connect(0, user, 1000);  // the same node and millisecond: a reconnect
    sessions.cluster.run(50ms);
    REQUIRE(sessions.connected(0, user));
    sessions.connect(4, user, 2000);
    sessions.cluster.run(100ms);
    CHECK_FALSE(sessions.connected(0, user));
    CHECK(sessions.connected(4, user));
}

TEST_CASE("ticket/sessions: the directory node's death loses no session for long") {
    // The homes register their sessions again with the user's next directory node.
    SessionCluster sessions(6);
    // A user whose directory is neither of its two homes (0 and 1).
    std::string user;
    for (int i = 0; user.empty(); ++i) {
        const std::string candidate = "u" + std::to_string(i);
        const NodeId directory = sessions.directory(candidate, 0);
        if (directory != TicketCluster::name(0) && directory != TicketCluster::name(1)) {
            user = candidate;
        }
    }
    const NodeId directory = sessions.directory(user, 0);
    sessions.connect(0, user, 1000);
    sessions.cluster.run(50ms);
    sessions.cluster.world.crash(directory);
    sessions.cluster.run(1500ms);  // declared dead by every survivor
    REQUIRE(sessions.directory(user, 0) != directory);
    sessions.connect(1, user, 2000);
    sessions.cluster.run(100ms);
    CHECK_FALSE(sessions.connected(0, user));
    CHECK(sessions.connected(1, user));
}

TEST_CASE("ticket/sessions: after a partition heals, a user's two sessions become one") {
    // During the partition each side has directories of its own, so a user may have a session on
    // each side; once the sides meet again, the older session ends.
    SessionCluster sessions(6);
    const std::set<NodeId> left{TicketCluster::name(0), TicketCluster::name(1),
                                TicketCluster::name(2)};
    const std::set<NodeId> right{TicketCluster::name(3), TicketCluster::name(4),
                                 TicketCluster::name(5)};
    sessions.cluster.world.partition(left, right);
    sessions.cluster.run(1500ms);  // each side has declared the other dead
    for (int i = 0; i < 8; ++i) {
        const std::string user = "split-" + std::to_string(i);
        sessions.connect(static_cast<std::size_t>(i % 3), user, 1000);      // left, older
        sessions.connect(3 + static_cast<std::size_t>(i % 3), user, 2000);  // right, newer
    }
    sessions.cluster.run(500ms);
    for (int i = 0; i < 8; ++i) {
        const std::string user = "split-" + std::to_string(i);
        CHECK(sessions.connected(static_cast<std::size_t>(i % 3), user));
        CHECK(sessions.connected(3 + static_cast<std::size_t>(i % 3), user));
    }
    sessions.cluster.world.heal();
    sessions.cluster.run(3000ms);
    for (int i = 0; i < 8; ++i) {
        const std::string user = "split-" + std::to_string(i);
        CAPTURE(user);
        CHECK_FALSE(sessions.connected(static_cast<std::size_t>(i % 3), user));
        CHECK(sessions.connected(3 + static_cast<std::size_t>(i % 3), user));
    }
}

TEST_CASE(
    "ticket/sessions: a party start among 12 nodes asks only its members' directories and homes") {
    // Finding a party member costs a question to its directory node and a claim at its home,
    // however many nodes there are; a member who is connected nowhere is refused, and asking
    // for it stays as cheap.
    SessionCluster sessions(12, 4);
    std::map<NodeId, int> asked;  // nodes that received a claim or a question of where a user is
    sessions.cluster.world.drop_if([&](const NodeId&, const NodeId& to, const Envelope& frame) {
        if (frame.service == ticket::wire::SERVICE && frame.kind == EnvelopeKind::request &&
            (frame.method == ticket::wire::METHOD_CLAIM ||
             frame.method == ticket::wire::METHOD_LOCATE)) {
            ++asked[to];
        }
        return false;
    });
    sessions.connect(0, "owner", 1000);
    sessions.connect(7, "friend", 1000);
    std::optional<Result<void>> started;
    sessions.cluster.at(0).start_ticket(ranked, UserId("owner"), {UserId("friend")},
                                        [&](Result<void> r) { started = r; });
    sessions.cluster.run(200ms);
    REQUIRE(started.has_value());
    CHECK(started->has_value());
    std::set<NodeId> expected{TicketCluster::name(7)};
    if (sessions.directory("friend", 0) != TicketCluster::name(0)) {
        expected.insert(sessions.directory("friend", 0));
    }
    std::set<NodeId> got;
    for (const auto& [node, count] : asked) {
        got.insert(node);
    }
    CHECK(got == expected);

    asked.clear();
    sessions.connect(3, "loner", 1000);
    std::optional<Result<void>> absent;
    sessions.cluster.at(3).start_ticket(ranked, UserId("loner"), {UserId("ghost")},
                                        [&](Result<void> r) { absent = r; });
    sessions.cluster.run(500ms);
    REQUIRE(absent.has_value());
    CHECK(absent->error().code == Errc::party_unavailable);
    int questions = 0;
    for (const auto& [node, count] : asked) {
        CHECK(node == sessions.directory("ghost", 3));
        questions += count;
    }
    CHECK(questions <= 4);
}
