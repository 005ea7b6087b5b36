#include <doctest/doctest.h>

#include <vector>

#include "matching/node_lists.hpp"

using namespace matchmesh;
using matchmesh::matching::NodeLists;

TEST_CASE("matching/node_lists: one number per list, kept while it has users") {
    NodeLists lists;
    const std::vector<NodeId> ab{NodeId("a"), NodeId("b")};
    const std::vector<NodeId> ba{NodeId("b"), NodeId("a")};
    const std::vector<NodeId> abc{NodeId("a"), NodeId("b"), NodeId("c")};

    const auto first = lists.acquire(ab);
    CHECK(lists.acquire(std::vector<NodeId>{NodeId("a"), NodeId("b")}) == first);  // equal text
    const auto reversed = lists.acquire(ba);  // the order is part of the list
    const auto longer = lists.acquire(abc);
    CHECK(reversed != first);
    CHECK(longer != first);
    CHECK(lists.size() == 3);
    CHECK(std::vector<NodeId>(lists.nodes(reversed).begin(), lists.nodes(reversed).end()) == ba);

    lists.release(first);
    CHECK(lists.size() == 3);  // one user left
    lists.release(first);
    CHECK(lists.size() == 2);

    // A forgotten list's number serves the next new one; the others are untouched.
    const std::vector<NodeId> c{NodeId("c")};
    CHECK(lists.acquire(c) == first);
    CHECK(std::vector<NodeId>(lists.nodes(first).begin(), lists.nodes(first).end()) == c);
    CHECK(std::vector<NodeId>(lists.nodes(longer).begin(), lists.nodes(longer).end()) == abc);
    CHECK(lists.acquire(ab) != first);
}
