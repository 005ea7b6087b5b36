#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <thread>
#include <unordered_set>
#include <vector>

#include "mesh/base/strong_id.hpp"

namespace matchmesh {

TEST_CASE("mesh/strong_id: copies share one text and compare by value, not by identity") {
    // Proves that sharing the text changed nothing a caller can see: two IDs made apart from
    // the same text are equal, order as their text does, and hash alike.
    const TicketId made("12.1795353069517@node-1");
    const TicketId copy = made;  // NOLINT(performance-unnecessary-copy-initialization)
    const TicketId apart(std::string("12.1795353069517@node-1"));
    CHECK(&copy.str() == &made.str());  // one text
    CHECK(&apart.str() != &made.str());
    CHECK(apart == made);
    CHECK_FALSE(apart < made);
    CHECK(TicketId("a") < TicketId("b"));
    CHECK(TicketId("b") > TicketId("a"));
    CHECK(std::hash<TicketId>{}(apart) == std::hash<TicketId>{}(made));
    CHECK(apart.hash() == made.hash());  // kept with the text, made once
    CHECK(TicketId::hash_of(made.str()) == made.hash());  // so a lookup by text alone finds it
    CHECK(TicketId::hash_of("") == TicketId().hash());
    CHECK(TicketId("a") != TicketId("b"));
    std::map<TicketId, int> by_id{{made, 1}};
    CHECK(by_id.at(apart) == 1);
    std::unordered_set<TicketId> set{made, copy, apart};
    CHECK(set.size() == 1);
}

TEST_CASE("mesh/strong_id: empty IDs, moves and assignments keep each ID's own text") {
    // Proves the handle's bookkeeping: a moved-from ID is empty, assignment replaces the text,
    // self-assignment keeps it, and an ID made from an empty string is empty.
    CHECK(UserId().empty());
    CHECK(UserId("").empty());
    CHECK(UserId() == UserId(""));
    CHECK(UserId().str().empty());
    UserId alice("alice");
    UserId moved = std::move(alice);
    CHECK(alice.empty());  // NOLINT(bugprone-use-after-move)
    CHECK(moved.str() == "alice");
    UserId other("bob");
    other = moved;
    CHECK(other.str() == "alice");
    other = other;  // NOLINT(clang-diagnostic-self-assign-overloaded)
    CHECK(other.str() == "alice");
    other = UserId("carol");
    CHECK(other.str() == "carol");
    CHECK(moved.str() == "alice");
}

TEST_CASE("mesh/strong_id: copies made and dropped on several threads at once stay sound") {
    // Proves the count is safe across threads (the sanitizer build would report a race or a
    // double free otherwise): four threads copy and drop one ID many times.
    const NodeId shared("node-with-a-long-enough-name-to-live-on-the-heap");
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&shared, &wrong] {
            for (int i = 0; i < 20000; ++i) {
                NodeId copy = shared;
                const NodeId again = copy;
                if (again != shared) {
                    ++wrong;
                }
            }
        });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    CHECK(wrong == 0);
    CHECK(shared.str() == "node-with-a-long-enough-name-to-live-on-the-heap");
}

}  // namespace matchmesh
