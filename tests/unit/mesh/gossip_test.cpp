// GossipQueue: which news rides on a frame, how often, and what a full queue gives up.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "mesh/gossip.hpp"

using namespace matchmesh;
using namespace matchmesh::mesh;

namespace {

MemberUpdate news(const std::string& id, std::uint64_t alive_counter = 0) {
    return MemberUpdate{MemberInfo{NodeId(id), "127.0.0.1:1", "HTTP", 1},
                        MemberUpdate::Status::alive, alive_counter};
}

std::vector<std::string> ids(const std::vector<MemberUpdate>& updates) {
    std::vector<std::string> out;
    for (const MemberUpdate& update : updates) {
        out.push_back(update.member.id.str());
    }
    return out;
}

}  // namespace

TEST_CASE("mesh/gossip: news about the receiver first, then the least sent, the newest first") {
    GossipQueue queue(16);
    queue.push(news("a"), 3);
    queue.push(news("b"), 3);
    queue.push(news("c"), 2);
    CHECK(ids(queue.take(NodeId("c"), 2)) == std::vector<std::string>{"c", "b"});
    // Sends left: a 3, b 2, c 1.
    CHECK(ids(queue.take(NodeId("x"), 2)) == std::vector<std::string>{"a", "b"});
    // a 2, b 1, c 1: among equals the newer news (c) goes first.
    CHECK(ids(queue.take(NodeId("x"), 8)) == std::vector<std::string>{"a", "c", "b"});
    CHECK(queue.size() == 1);  // b and c are spent
    CHECK(ids(queue.take(NodeId("x"), 8)) == std::vector<std::string>{"a"});
    CHECK(queue.size() == 0);
    CHECK(queue.take(NodeId("x"), 8).empty());
}

TEST_CASE(
    "mesh/gossip: newer news about a member replaces older, and a full queue gives up the "
    "most spread") {
    GossipQueue queue(2);
    queue.push(news("a", 1), 5);
    queue.push(news("a", 2), 5);
    CHECK(queue.size() == 1);
    auto taken = queue.take(NodeId("x"), 8);
    REQUIRE(taken.size() == 1);
    CHECK(taken[0].alive_counter == 2);
    queue.push(news("b"), 5);
    queue.push(news("c"), 5);  // a, sent once already, is the one given up
    CHECK(queue.size() == 2);
    CHECK(ids(queue.take(NodeId("x"), 8)) == std::vector<std::string>{"c", "b"});
    queue.push(news("d"), 0);  // nothing to send
    CHECK(queue.size() == 2);
}
