// Membership's verdicts, driven directly: deaths, tombstones and reconciling with a member that
// declared this node dead.
#include <doctest/doctest.h>

#include <algorithm>

#include "mesh/membership.hpp"

using namespace matchmesh;
using namespace matchmesh::mesh;

namespace {

MemberInfo member(const char* id, std::uint64_t incarnation) {
    return MemberInfo{NodeId(id), std::string(id) + ":7100", "HTTP", incarnation};
}

Time at_ms(std::int64_t ms) {
    return Time(Duration(ms));
}

std::vector<MembershipEvent::Kind> kinds(Membership& membership) {
    std::vector<MembershipEvent::Kind> all;
    for (const auto& event : membership.take_events()) {
        all.push_back(event.kind);
    }
    return all;
}

using Kind = MembershipEvent::Kind;

}  // namespace

TEST_CASE("mesh/membership: a live member that declared this node dead is buried, then met anew") {
    Membership self(member("a", 1), MembershipOptions{});
    const MemberInfo b = member("b", 7);
    REQUIRE(self.on_sync(b, {}, at_ms(0)) == Membership::Verdict::accepted);
    REQUIRE(kinds(self) == std::vector{Kind::joined});
    // b says a is dead: a ends what it shared with b (died) and reconciles.
    CHECK(self.on_rejected(b, at_ms(100)));
    CHECK(kinds(self) == std::vector{Kind::died, Kind::reconciled});
    CHECK(self.find_live(NodeId("b")) == nullptr);
    CHECK_FALSE(self.is_dead(b));  // no tombstone: b may come back as it is
    // It is contacted until it answers, and its next heartbeat makes it live again.
    const auto contacts = self.contacts();
    CHECK(std::count(contacts.begin(), contacts.end(), b) == 1);
    CHECK(self.on_sync(b, {}, at_ms(200)) == Membership::Verdict::accepted);
    CHECK(kinds(self) == std::vector{Kind::joined});
    CHECK(self.find_live(NodeId("b")) != nullptr);
    CHECK(self.self().incarnation == 1);  // nobody changed incarnation
}

TEST_CASE("mesh/membership: a member this node buried is lifted when it says the same of us") {
    MembershipOptions options;
    Membership self(member("a", 1), options);
    const MemberInfo b = member("b", 7);
    REQUIRE(self.on_sync(b, {}, at_ms(0)) == Membership::Verdict::accepted);
    self.suspect(b, at_ms(100));  // its probe went unanswered
    self.tick(at_ms(100) + options.dead_after - Duration(1));
    REQUIRE(kinds(self) == std::vector{Kind::joined});  // a suspect may still refute
    self.tick(at_ms(100) + options.dead_after);
    REQUIRE(kinds(self) == std::vector{Kind::died});
    CHECK(self.on_sync(b, {}, at_ms(5000)) == Membership::Verdict::rejected);
    CHECK(self.tell_dead(b, at_ms(5000)));
    CHECK_FALSE(self.tell_dead(b, at_ms(5100)));  // once per heartbeat interval
    // Mutual: nothing more to end here; the tombstone goes and b is met anew.
    CHECK(self.on_rejected(b, at_ms(5200)));
    CHECK(kinds(self) == std::vector{Kind::reconciled});
    CHECK(self.on_sync(b, {}, at_ms(5300)) == Membership::Verdict::accepted);
    CHECK(kinds(self) == std::vector{Kind::joined});
}

TEST_CASE("mesh/membership: rejections that say nothing new change nothing") {
    MembershipOptions options;
    Membership self(member("a", 1), options);
    const MemberInfo b = member("b", 7);
    REQUIRE(self.on_sync(b, {}, at_ms(0)) == Membership::Verdict::accepted);
    REQUIRE(self.on_rejected(b, at_ms(10)));
    REQUIRE(self.on_sync(b, {}, at_ms(20)) == Membership::Verdict::accepted);
    (void)self.take_events();
    // A second Rejected from the same reconciliation, still in flight: ignored.
    CHECK_FALSE(self.on_rejected(b, at_ms(30)));
    // From an older incarnation than the one we know, or from ourselves: ignored.
    CHECK_FALSE(self.on_rejected(member("b", 6), at_ms(40)));
    CHECK_FALSE(self.on_rejected(member("a", 1), at_ms(40)));
    CHECK(kinds(self).empty());
    CHECK(self.find_live(NodeId("b")) != nullptr);
    // Once the window has passed, a new verdict from b is a new reconciliation.
    CHECK(self.on_rejected(b, at_ms(30) + options.dead_after + Duration(1)));
    CHECK(kinds(self) == std::vector{Kind::died, Kind::reconciled});
}
