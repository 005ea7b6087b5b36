// What a room's node keeps of the pushes a join's answer carried: for the join's retry, within a
// bound on their bytes, and not past the joining node's death or the attempt's memory.
#include <doctest/doctest.h>

#include "ticket/recall.hpp"

using namespace matchmesh;
using namespace matchmesh::ticket;

namespace {

std::vector<PushEnvelope> a_220(const std::string& id) {
    return {PushEnvelope{id, UserId("bob"), 1, TicketId("2.1@n1"), TicketId("1.1@n0"),
                         UserId("ann"), WireKind::success, push_ver, push_success, Bytes(1000, 7),
                         EndReason::completed}};
}

}  // namespace

TEST_CASE("ticket/recall: pushes kept for a join's retry, within their bound") {
    Recall recall(std::chrono::seconds(60), 4096);
    const Time now{};
    recall.accepted_join("a/1", now);
    CHECK(recall.answer_pushes("a/1") == nullptr);
    auto pushes = a_220("p1");
    const auto* kept_pushes = recall.keep_answer_pushes("a/1", NodeId("n1"), pushes);
    REQUIRE(kept_pushes != nullptr);
    CHECK(recall.answer_pushes("a/1") == kept_pushes);
    CHECK(recall.answer_pushes("a/1")->front().push_id == "p1");
    const std::size_t one = recall.kept_push_bytes();
    CHECK(one >= 1000);

    // Past the bound the pushes are left with the caller, to go on their own.
    std::size_t kept = 1;
    for (int i = 2; i <= 8; ++i) {
        const std::string attempt = "a/" + std::to_string(i);
        recall.accepted_join(attempt, now);
        auto more = a_220("p" + std::to_string(i));
        if (recall.keep_answer_pushes(attempt, NodeId(i % 2 == 0 ? "n2" : "n1"), more) != nullptr) {
            ++kept;
        } else {
            CHECK(more.size() == 1);
            CHECK(recall.answer_pushes(attempt) == nullptr);
        }
    }
    CHECK(kept == 4096 / one);
    CHECK(recall.kept_push_bytes() <= 4096);

    // The joining node's death: its joins' retries are refused, nothing is kept for them.
    recall.forget_answer_pushes_to(NodeId("n1"));
    CHECK(recall.answer_pushes("a/1") == nullptr);
    CHECK(recall.accepted_join("a/1"));  // the attempt is still known
    CHECK(recall.answer_pushes("a/2") != nullptr);

    // Forgotten with the attempt.
    recall.forget_expired(now + std::chrono::seconds(61));
    CHECK(recall.answer_pushes("a/2") == nullptr);
    CHECK(recall.kept_push_bytes() == 0);
    CHECK(recall.size() == 0);
}
