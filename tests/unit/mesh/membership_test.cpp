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
    // It is contacted until it answers, and its next word makes it live again.
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
    CHECK_FALSE(self.tell_dead(b, at_ms(5100)));  // once per protocol period
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

TEST_CASE("mesh/membership: a member that hears it is suspected refutes with a higher counter") {
    Membership self(member("a", 1), MembershipOptions{});
    const MemberInfo b = member("b", 7);
    REQUIRE(self.on_sync(b, {}, at_ms(0)) == Membership::Verdict::accepted);
    (void)self.gossip_for(NodeId("b"));  // what was news before
    const std::vector<MemberUpdate> rumour{{member("a", 1), MemberUpdate::Status::suspect, 0}};
    self.on_gossip(rumour, at_ms(10));
    CHECK(self.alive_counter() == 1);
    CHECK(self.self().incarnation == 1);  // a process that lives on: no new incarnation
    const auto news = self.gossip_for(NodeId("b"));
    CHECK(std::count(news.begin(), news.end(),
                     MemberUpdate{member("a", 1), MemberUpdate::Status::alive, 1}) == 1);
    // A suspicion of an older counter says nothing new.
    self.on_gossip(rumour, at_ms(20));
    CHECK(self.alive_counter() == 1);
}

TEST_CASE("mesh/membership: a suspicion ends with a higher counter or with the timeout") {
    MembershipOptions options;
    Membership self(member("a", 1), options);
    const MemberInfo b = member("b", 7);
    const MemberInfo c = member("c", 3);
    REQUIRE(self.on_probe(b, 0, at_ms(0)) == Membership::Verdict::accepted);
    REQUIRE(self.on_probe(c, 0, at_ms(0)) == Membership::Verdict::accepted);
    (void)self.take_events();
    self.suspect(b, at_ms(100));
    self.suspect(c, at_ms(100));
    CHECK(self.is_suspect(NodeId("b")));
    self.on_gossip(std::vector<MemberUpdate>{{b, MemberUpdate::Status::alive, 1}}, at_ms(200));
    CHECK_FALSE(self.is_suspect(NodeId("b")));
    self.tick(at_ms(100) + options.dead_after);
    CHECK(kinds(self) == std::vector{Kind::died});
    CHECK(self.find_live(NodeId("b")) != nullptr);
    CHECK(self.is_dead(c));
    // Buried here, so told so (once a period) when it is called alive.
    CHECK(self.take_to_tell() == std::vector{c});
    CHECK(self.tell_dead(c, at_ms(3100)));
    self.on_gossip(std::vector<MemberUpdate>{{c, MemberUpdate::Status::alive, 4}}, at_ms(3150));
    CHECK(self.take_to_tell() == std::vector{c});
    CHECK_FALSE(self.tell_dead(c, at_ms(3150)));
}

TEST_CASE("mesh/membership: a death verdict heard from others is only a suspicion here") {
    MembershipOptions options;
    Membership self(member("a", 1), options);
    const MemberInfo b = member("b", 7);
    REQUIRE(self.on_probe(b, 2, at_ms(0)) == Membership::Verdict::accepted);
    (void)self.take_events();
    // A stale verdict (an older counter) is nothing; a current one starts a suspicion.
    self.on_gossip(std::vector<MemberUpdate>{{b, MemberUpdate::Status::dead, 1}}, at_ms(10));
    CHECK_FALSE(self.is_suspect(NodeId("b")));
    self.on_gossip(std::vector<MemberUpdate>{{b, MemberUpdate::Status::dead, 2}}, at_ms(20));
    CHECK(self.is_suspect(NodeId("b")));
    CHECK(kinds(self).empty());
    // Heard again while suspect here: agreed at once.
    self.on_gossip(std::vector<MemberUpdate>{{b, MemberUpdate::Status::dead, 2}}, at_ms(30));
    CHECK(kinds(self) == std::vector{Kind::died});
}

TEST_CASE("mesh/membership: probes go round every member before any is probed twice") {
    Membership self(member("a", 1), MembershipOptions{});
    for (const char* id : {"b", "c", "d", "e"}) {
        REQUIRE(self.on_probe(member(id, 1), 0, at_ms(0)) == Membership::Verdict::accepted);
    }
    std::vector<std::string> round;
    for (int i = 0; i < 4; ++i) {
        auto target = self.next_probe_target();
        REQUIRE(target.has_value());
        round.push_back(target->id.str());
    }
    std::sort(round.begin(), round.end());
    CHECK(round == std::vector<std::string>{"b", "c", "d", "e"});
    const auto helpers = self.helpers_for(member("b", 1));
    CHECK(helpers.size() == 3);
    CHECK(std::none_of(helpers.begin(), helpers.end(),
                       [](const MemberInfo& m) { return m.id == NodeId("b"); }));
}

TEST_CASE("mesh/membership: the live list's digest agrees exactly when the lists do") {
    Membership a(member("a", 1), MembershipOptions{});
    Membership b(member("b", 1), MembershipOptions{});
    const auto digest_of_own = a.live_digest();
    REQUIRE(a.on_probe(member("b", 1), 0, at_ms(0)) == Membership::Verdict::accepted);
    REQUIRE(b.on_probe(member("a", 1), 0, at_ms(0)) == Membership::Verdict::accepted);
    CHECK(a.live_digest() != digest_of_own);
    CHECK(a.live_digest() == b.live_digest());  // {a, b} seen from either side
    REQUIRE(a.on_probe(member("c", 1), 0, at_ms(10)) == Membership::Verdict::accepted);
    CHECK(a.live_digest() != b.live_digest());
    REQUIRE(b.on_probe(member("c", 2), 0, at_ms(10)) == Membership::Verdict::accepted);
    CHECK(a.live_digest() != b.live_digest());  // another incarnation of c
    REQUIRE(a.on_probe(member("c", 2), 0, at_ms(20)) == Membership::Verdict::accepted);
    CHECK(a.live_digest() == b.live_digest());
}

TEST_CASE("mesh/membership: a member heard of but never from is pinged, then forgotten") {
    MembershipOptions options;
    Membership self(member("a", 1), options);
    REQUIRE(self.on_probe(member("b", 1), 0, at_ms(0)) == Membership::Verdict::accepted);
    self.on_gossip(std::vector<MemberUpdate>{{member("c", 1), MemberUpdate::Status::alive, 0}},
                   at_ms(0));
    CHECK(self.pending() == std::vector{member("c", 1)});
    self.tick(at_ms(0) + options.forget_unheard_after);
    CHECK(self.pending() == std::vector{member("c", 1)});
    self.tick(at_ms(1) + options.forget_unheard_after);
    CHECK(self.pending().empty());
    // A member that answered in time is live, and is not forgotten.
    self.on_gossip(std::vector<MemberUpdate>{{member("d", 1), MemberUpdate::Status::alive, 0}},
                   at_ms(20000));
    REQUIRE(self.on_probe(member("d", 1), 0, at_ms(20100)) == Membership::Verdict::accepted);
    CHECK(self.pending().empty());
    self.tick(at_ms(40000));
    CHECK(self.find_live(NodeId("d")) != nullptr);
    CHECK(self.find_live(NodeId("b")) != nullptr);
}
