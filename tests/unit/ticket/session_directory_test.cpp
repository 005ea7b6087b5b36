// The session directory: where a user's sessions are registered, and which of two ends.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "ticket/session_directory.hpp"

using namespace matchmesh;
using namespace matchmesh::ticket;

namespace {

std::vector<mesh::MemberInfo> members(int count, int first = 0) {
    std::vector<mesh::MemberInfo> all;
    for (int i = first; i < first + count; ++i) {
        all.push_back({NodeId("node-" + std::to_string(i)), "", "HTTP", 1});
    }
    return all;
}

SessionEntry at(const char* home, std::uint64_t epoch) {
    return SessionEntry{NodeId(home), epoch};
}

}  // namespace

TEST_CASE("ticket/session-directory: every node picks the same directory, spread evenly") {
    auto view = members(12);
    auto reversed = view;
    std::reverse(reversed.begin(), reversed.end());
    const DirectoryPlacement placement(view);
    const DirectoryPlacement reversed_placement(reversed);
    std::map<NodeId, int> load;
    for (int i = 0; i < 12000; ++i) {
        const UserId user("user-" + std::to_string(i));
        const NodeId* directory = placement.owner(user);
        REQUIRE(directory != nullptr);
        REQUIRE(*directory == *reversed_placement.owner(user));
        ++load[*directory];
    }
    CHECK(load.size() == 12);
    for (const auto& [node, users] : load) {
        CHECK(users > 800);  // 1,000 each on average
        CHECK(users < 1200);
    }
    CHECK(DirectoryPlacement(std::span<const mesh::MemberInfo>()).owner(UserId("u")) == nullptr);
}

TEST_CASE("ticket/session-directory: a member joining moves only the users it takes") {
    const DirectoryPlacement before(members(10));
    const DirectoryPlacement after(members(11));
    int moved = 0;
    for (int i = 0; i < 11000; ++i) {
        const UserId user("user-" + std::to_string(i));
        if (!before.same_owner(after, user)) {
            ++moved;
            CHECK(*after.owner(user) == NodeId("node-10"));
        }
    }
    CHECK(moved > 700);  // about 1/11
    CHECK(moved < 1300);
}

TEST_CASE("ticket/session-directory: a member leaving moves only the users it had") {
    auto without_three = members(12);
    without_three.erase(without_three.begin() + 3);
    const DirectoryPlacement before(members(12));
    const DirectoryPlacement after(without_three);
    int moved = 0;
    for (int i = 0; i < 12000; ++i) {
        const UserId user("user-" + std::to_string(i));
        if (!before.same_owner(after, user)) {
            ++moved;
            CHECK(*before.owner(user) == NodeId("node-3"));
        } else {
            CHECK(*before.owner(user) != NodeId("node-3"));
        }
    }
    CHECK(moved > 800);  // about 1/12
    CHECK(moved < 1200);
}

TEST_CASE("ticket/session-directory: the newer of two sessions stays and the older home is told") {
    SessionDirectory directory(100);
    const UserId user("alice");
    CHECK_FALSE(directory.register_session(user, at("node-a", 100)).has_value());

    // A newer session elsewhere: node-a's ends.
    auto told = directory.register_session(user, at("node-b", 200));
    REQUIRE(told.has_value());
    CHECK(told->older_home == NodeId("node-a"));
    CHECK(told->user == user);
    CHECK(told->newer.home == NodeId("node-b"));
    CHECK(told->newer.epoch == 200);
    CHECK(directory.find(user)->home == NodeId("node-b"));

    // An older session registering late (after a partition, say) is the one that ends.
    told = directory.register_session(user, at("node-c", 150));
    REQUIRE(told.has_value());
    CHECK(told->older_home == NodeId("node-c"));
    CHECK(told->newer.home == NodeId("node-b"));
    CHECK(directory.find(user)->home == NodeId("node-b"));

    // The same start on two homes: the higher home ID stays, on every directory alike.
    told = directory.register_session(user, at("node-z", 200));
    REQUIRE(told.has_value());
    CHECK(told->older_home == NodeId("node-b"));
    CHECK(newer_session(200, NodeId("node-z"), 200, NodeId("node-b")));
    CHECK_FALSE(newer_session(200, NodeId("node-b"), 200, NodeId("node-z")));
}

TEST_CASE("ticket/session-directory: the same home again needs no supersede") {
    SessionDirectory directory(100);
    const UserId user("bob");
    CHECK_FALSE(directory.register_session(user, at("node-a", 100)).has_value());
    CHECK_FALSE(directory.register_session(user, at("node-a", 300)).has_value());
    CHECK(directory.find(user)->epoch == 300);
    CHECK_FALSE(directory.register_session(user, at("node-a", 100)).has_value());  // repeated
    CHECK(directory.find(user)->epoch == 300);
}

TEST_CASE("ticket/session-directory: an ended session is forgotten unless a newer one came") {
    SessionDirectory directory(100);
    const UserId user("carol");
    (void)directory.register_session(user, at("node-a", 100));
    (void)directory.register_session(user, at("node-b", 200));
    directory.end_session(user, at("node-a", 100));  // the superseded one's end changes nothing
    REQUIRE(directory.find(user) != nullptr);
    CHECK(directory.find(user)->home == NodeId("node-b"));
    directory.end_session(user, at("node-b", 200));
    CHECK(directory.find(user) == nullptr);
    CHECK(directory.size() == 0);
}

TEST_CASE("ticket/session-directory: a dead home's sessions go, and moved users are dropped") {
    SessionDirectory directory(1000);
    const auto view = members(4);
    for (int i = 0; i < 400; ++i) {
        (void)directory.register_session(UserId("u" + std::to_string(i)),
                                         at(i % 2 == 0 ? "node-0" : "node-1", 1));
    }
    directory.forget_home(NodeId("node-1"));
    CHECK(directory.size() == 200);

    directory.follow(DirectoryPlacement(view), NodeId("node-2"));
    for (int i = 0; i < 400; i += 2) {
        const UserId user("u" + std::to_string(i));
        CHECK((directory.find(user) != nullptr) ==
              (*directory.placement().owner(user) == NodeId("node-2")));
    }
    CHECK(directory.size() > 20);
    CHECK(directory.size() < 80);
}

TEST_CASE("ticket/session-directory: past its maximum, new users are refused and counted") {
    SessionDirectory directory(2);
    (void)directory.register_session(UserId("a"), at("node-a", 1));
    (void)directory.register_session(UserId("b"), at("node-a", 1));
    (void)directory.register_session(UserId("c"), at("node-a", 1));
    CHECK(directory.size() == 2);
    CHECK(directory.refused() == 1);
    CHECK(directory.find(UserId("c")) == nullptr);
    // A user it holds is still updated.
    CHECK(directory.register_session(UserId("a"), at("node-b", 2)).has_value());
}
