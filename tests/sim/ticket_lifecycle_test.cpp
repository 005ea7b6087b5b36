// The ticket state machine, phase by phase, and every operation's success and error cases, on a
// simulated cluster without faults (virtual time: the timings below are exact).
#include <doctest/doctest.h>

#include "matching/matching.capnp.h"
#include "ticket/ticket.capnp.h"
#include "ticket_cluster.hpp"

using namespace ticket_sim;
using Codes = std::vector<std::uint16_t>;

namespace {

// Callbacks recording what fired; parameters from the user's rating.
struct Recorder {
    std::vector<std::string> events;
    std::uint8_t max_members = 2;
    std::chrono::seconds duration = 5s;
    std::chrono::seconds extension = 0s;
    std::uint8_t search_tries = 3;
    std::uint8_t wait_searches = 1;
    bool one_bucket = false;  // search the owner's own rating's bucket only
    Prefer prefer = Prefer::spread;
    std::function<bool(const std::vector<UserId>&)> complete_when;

    Callbacks make() {
        Callbacks callbacks;
        callbacks.on_issue_ticket = [this](const User& owner) {
            auto params = ranked_params(rating_of(owner), max_members, duration);
            params.timeout_extension_on_match_join = extension;
            params.search_tries = search_tries;
            params.wait_searches = wait_searches;
            params.prefer = prefer;
            if (one_bucket) {
                params.search_properties = {{"rank", {rating_of(owner)}}};
            }
            return std::optional(params);
        };
        callbacks.on_ticket_complete = [this](const TicketProperties&, const User* owner) {
            events.push_back("complete:" + (owner ? owner->id.str() : "-"));
            return Bytes{'o', 'k'};
        };
        callbacks.member_joined = [this](const TicketView&, const User* joined, const User*,
                                         const std::vector<UserId>&) {
            events.push_back("joined:" + joined->id.str());
        };
        callbacks.member_joined_announce = [](const TicketView&, const User* joined, const User*,
                                              const std::vector<UserId>&) {
            return std::optional(
                Announcement{2, 100, Bytes(joined->id.str().begin(), joined->id.str().end())});
        };
        callbacks.member_leave = [this](const TicketView&, const User* left, const User*,
                                        const std::string&, const std::vector<UserId>&) {
            events.push_back("left:" + left->id.str());
        };
        callbacks.member_leave_announce = [](const TicketView&, const User*, const User*,
                                             const std::vector<UserId>&) {
            return std::optional(Announcement{2, 101, {}});
        };
        callbacks.on_ticket_match = [this](const TicketView&, const User*, const User*,
                                           const std::string&, const std::vector<UserId>& members) {
            return complete_when && complete_when(members);
        };
        callbacks.on_ticket_timeout = [this](const User* owner) {
            events.push_back("timeout:" + (owner ? owner->id.str() : "-"));
        };
        callbacks.on_ticket_canceled = [this](const User* owner) {
            events.push_back("canceled:" + (owner ? owner->id.str() : "-"));
        };
        callbacks.on_matched_ticket_timeout = [this](const UserId& owner, const User* user) {
            events.push_back("matched-timeout:" + owner.str() + ">" +
                             (user ? user->id.str() : "-"));
        };
        callbacks.on_matched_ticket_canceled = [this](const UserId& owner, const User* user) {
            events.push_back("matched-canceled:" + owner.str() + ">" +
                             (user ? user->id.str() : "-"));
        };
        return callbacks;
    }

    bool fired(const std::string& event) const {
        return std::find(events.begin(), events.end(), event) != events.end();
    }
};

struct Fixture {
    Recorder recorder;
    TicketCluster cluster{3, 42, LinkModel{Duration(1), Duration(0), 0.0, false},
                          [this] { return recorder.make(); }};

    // ann (on n0) waits in a three-seat room for 10 s; bob (on n1) is connected.
    void ann_waits_with_three_seats() {
        recorder.duration = 10s;
        recorder.max_members = 3;
        cluster.connect(0, "ann", 1500);
        cluster.connect(1, "bob", 1500);
        REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
        cluster.run(700ms);
    }

    // Everything n0's ticket service sends is lost; its heartbeats still arrive.
    void silence_tickets_of_n0() {
        cluster.world.drop_if([](const NodeId& from, const NodeId&, const Envelope& envelope) {
            return from == NodeId("n0") && envelope.service == wire::SERVICE;
        });
    }
};

// Sends `join` from node `from` to n0's rooms, as a node's join goes, and runs the cluster for
// `wait`: n0's answer, if it came by then.
std::optional<JoinReplyMessage> join_by_hand(TicketCluster& cluster, std::size_t from, Payload join,
                                             Duration wait) {
    auto answer = std::make_shared<std::optional<JoinReplyMessage>>();
    Network& network = cluster.world.node(TicketCluster::name(from)).network();
    network.request(TicketCluster::name(0), wire::SERVICE, wire::METHOD_JOIN, std::move(join),
                    500ms, [answer, &network](std::expected<PayloadView, MeshError> reply) {
                        REQUIRE(reply.has_value());
                        auto decoded = decode_join_reply(*reply, network.reader_options());
                        REQUIRE(decoded.has_value());
                        *answer = *decoded;
                    });
    cluster.run(wait);
    return *answer;
}

}  // namespace

TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a searcher finds a waiting ticket on another node and "
                  "both complete with the owner's message") {
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1520);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    // Ann searches, finds nobody, becomes findable and looks again at once (a ticket that
    // searched at the same moment would be visible now), then twice more 200 ms apart, and waits.
    cluster.run(700ms);
    CHECK(cluster.at(0).counters().searches == 4);
    CHECK(cluster.at(0).is_user_in_ticket_matchmaking(ranked, UserId("ann")));
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(100ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
    const auto& pushes = cluster.ledger.pushes.at(UserId("bob"));
    CHECK(pushes.back().message.payload == Bytes{'o', 'k'});
    CHECK(recorder.fired("joined:bob"));
    CHECK(recorder.fired("complete:ann"));
    // Ann got the join announcement (ver 2, cmd 100) before her 220.
    CHECK(cluster.ledger.codes(UserId("ann")) == Codes{100, 220});
    // Both stay in the completed room until they leave.
    CHECK(cluster.at(0).start_ticket(ranked, UserId("ann")).error().code == Errc::in_previous_room);
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann"), UserId("bob")});
    CHECK(cluster.at(1).leave_from_ticket_matchmaking(ranked, UserId("bob")));
    cluster.run(50ms);
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});  // no second terminal push
}

// Two searchers that find the same one waiting room at once: the node that stores its items
// offers it to the first search only, and the second passes it by and waits, rather than spend a
// round trip on a join the room must refuse.
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a room on offer to one searcher is passed by by another") {
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    cluster.connect(1, "cid", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("cid")).has_value());
    cluster.run(20ms);
    const Codes bob = cluster.ledger.terminal_codes(UserId("bob"));
    const Codes cid = cluster.ledger.terminal_codes(UserId("cid"));
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(bob.size() + cid.size() == 1);  // one of them joined ann
    const UserId waiting(bob.empty() ? "bob" : "cid");
    CHECK(cluster.at(1).is_user_in_ticket_matchmaking(ranked, waiting));
    CHECK(cluster.joins_refused() == 0);
    for (const std::string& broken : cluster.broken_invariants()) {
        FAIL_CHECK(broken);
    }
}

// The same over slow links, when the searchers' own node stores the room's items: their searches
// are answered at once, yet a join still takes a round trip to the room's node, and the room's
// removal one more trip back. The offer lasts as long as the joins from this node have taken, so
// a second searcher a few milliseconds later still passes the room by.
TEST_CASE("ticket/lifecycle: an offer outlasts a join's round trip when searches answer at once") {
    Recorder recorder;
    recorder.one_bucket = true;
    TicketCluster cluster{3, 42, LinkModel{Duration(5), Duration(0), 0.0, false},
                          [&recorder] { return recorder.make(); }};
    // n0 owns the rooms; the searchers go to a node that stores the bucket's items, once a
    // waiting room shows which.
    cluster.connect(0, "ann", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    std::size_t searchers = 0;
    for (std::size_t node : {1, 2}) {
        if (cluster.store(node).local_items().size() == 1) {
            searchers = node;
        }
    }
    REQUIRE(searchers != 0);
    // A few matches first, so that the searchers' node knows how long its joins take.
    for (int i = 0; i < 4; ++i) {
        const std::string user = "warm" + std::to_string(i);
        cluster.connect(searchers, user, 1500);
        REQUIRE(cluster.at(searchers).start_ticket(ranked, UserId(user)).has_value());
        cluster.run(100ms);
        const std::string next = "wait" + std::to_string(i);
        cluster.connect(0, next, 1500);
        REQUIRE(cluster.at(0).start_ticket(ranked, UserId(next)).has_value());
        cluster.run(700ms);
    }
    const std::uint64_t refused_before = cluster.joins_refused();
    // One room waits (wait3's); two searchers start 4 ms apart.
    cluster.connect(searchers, "bob", 1500);
    cluster.connect(searchers, "cid", 1500);
    REQUIRE(cluster.at(searchers).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(4ms);
    REQUIRE(cluster.at(searchers).start_ticket(ranked, UserId("cid")).has_value());
    cluster.run(100ms);
    const Codes bob = cluster.ledger.terminal_codes(UserId("bob"));
    const Codes cid = cluster.ledger.terminal_codes(UserId("cid"));
    CHECK(cluster.ledger.terminal_codes(UserId("wait3")) == Codes{220});
    CHECK(bob.size() + cid.size() == 1);
    CHECK(cluster.joins_refused() == refused_before);
    for (const std::string& broken : cluster.broken_invariants()) {
        FAIL_CHECK(broken);
    }
}

// A join whose room was taken on its way is seated in another room waiting on that node that the
// joiner's search finds, rather than refused (a round trip, then a search or a wait). bob's join
// to ann's room is lost until cid has taken ann's room and amy waits beside it. The answer names
// amy's room, and a leave sent to ann's room reaches bob there.
namespace {

// Ann waits on n0 in a room of three seats. Bob's joins to it (from n1) are lost until cid (on
// n2) has taken it and completed it, and amy has begun waiting on n0 beside it: a room bob's
// search finds, which no search of his has seen.
struct TakenRoom {
    Recorder recorder;
    TicketCluster cluster;
    bool hold = true;                   // bob's joins to n0 are lost
    bool lose_answers = false;          // once not held, every answer to bob's node is
    std::optional<Payload> first_join;  // bob's first join, as it went out

    explicit TakenRoom(Prefer bob_prefers, bool lose_answers_after)
        : recorder(make_recorder()),
          cluster(3, 42, LinkModel{Duration(1), Duration(0), 0.0, false},
                  [this] { return recorder.make(); }),
          lose_answers(lose_answers_after) {
        cluster.connect(0, "ann", 1500);
        REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
        cluster.run(700ms);
        cluster.world.drop_if([this](const NodeId& from, const NodeId& to, const Envelope& frame) {
            if (frame.service != wire::SERVICE || frame.method != wire::METHOD_JOIN) {
                return false;
            }
            if (hold && from == NodeId("n1") && to == NodeId("n0") &&
                frame.kind == EnvelopeKind::request) {
                if (!first_join) {
                    first_join = Payload::copy_of(frame.payload);
                }
                return true;
            }
            return lose_answers && from == NodeId("n0") && to == NodeId("n1");
        });
        recorder.prefer = bob_prefers;
        cluster.connect(1, "bob", 1500);
        REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
        cluster.run(30ms);
        REQUIRE(first_join.has_value());
        recorder.prefer = Prefer::spread;
        cluster.connect(2, "cid", 1500);
        REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cid")).has_value());
        cluster.run(250ms);
        CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
        CHECK(cluster.ledger.terminal_codes(UserId("cid")) == Codes{220});
        cluster.connect(0, "amy", 1500);  // at 0.98 s, waiting until 2.98 s
        REQUIRE(cluster.at(0).start_ticket(ranked, UserId("amy")).has_value());
        cluster.run(100ms);
        REQUIRE(cluster.ledger.terminal_codes(UserId("amy")).empty());
    }

    static Recorder make_recorder() {
        Recorder recorder;
        recorder.max_members = 3;  // amy's room stays open with bob in it
        recorder.duration = 2s;
        recorder.complete_when = [](const std::vector<UserId>& members) {
            return members.size() == 2 && members[1] == UserId("cid");
        };
        return recorder;
    }
};

}  // namespace

TEST_CASE(
    "ticket/lifecycle: a join whose room was taken is seated in another waiting room of that "
    "node that its search finds") {
    for (const bool lose_answers : {false, true}) {
        CAPTURE(lose_answers);
        TakenRoom taken(Prefer::spread, lose_answers);
        TicketCluster& cluster = taken.cluster;
        taken.hold = false;
        const std::uint64_t refused_before = cluster.joins_refused();
        cluster.run(800ms);  // bob's join is tried again
        CHECK(cluster.at(0).counters().joins_seated_elsewhere == 1);
        CHECK(cluster.joins_refused() == refused_before);
        const std::vector<UserId> amy_and_bob{UserId("amy"), UserId("bob")};
        CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("amy")) == amy_and_bob);
        // A join never answered gives up (here at 2.49 s), and its leave to ann's room takes bob
        // out of amy's (which his ticket, waiting again, may join later).
        cluster.run(620ms);
        const std::vector<UserId> amy_alone{UserId("amy")};
        CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("amy")) ==
              (lose_answers ? amy_alone : amy_and_bob));
        cluster.run(450ms);  // past bob's deadline (2.7 s), before amy's (2.98 s)
        CHECK(cluster.ledger.terminal_codes(UserId("bob")) ==
              (lose_answers ? Codes{219} : Codes{}));
        for (const std::string& broken : cluster.broken_invariants()) {
            FAIL_CHECK(broken);
        }
    }
}

// Where the party's node would hear of the other room only after its pushes (a sender that
// reads none from the answer), or the join asked for the closest room (which may be on another
// node), the taken room's refusal stands.
TEST_CASE(
    "ticket/lifecycle: a join whose room was taken is refused, not seated elsewhere, for a "
    "ticket preferring the closest or a sender reading no pushes from the answer") {
    SUBCASE("prefer closest") {
        TakenRoom taken(Prefer::closest, false);
        taken.hold = false;
        const std::uint64_t refused_before = taken.cluster.joins_refused();
        taken.cluster.run(800ms);  // bob's join is tried again
        CHECK(taken.cluster.at(0).counters().joins_seated_elsewhere == 0);
        CHECK(taken.cluster.joins_refused() > refused_before);
        CHECK(taken.cluster.broken_invariants().empty());
    }
    SUBCASE("a sender reading no pushes from the answer") {
        TakenRoom taken(Prefer::spread, false);
        TicketCluster& cluster = taken.cluster;
        auto join =
            decode_join(taken.first_join->words(),
                        cluster.world.node(TicketCluster::name(2)).network().reader_options());
        REQUIRE(join.has_value());
        REQUIRE_FALSE(join->search_profiles.empty());
        join->attempt += "-by-hand";
        join->pushes_in_reply = false;
        // Sent from n2, as bob's node's own joins are still lost.
        const auto answer = join_by_hand(cluster, 2, encode(*join), 20ms);
        REQUIRE(answer.has_value());
        CHECK_FALSE(answer->accepted);
        CHECK(answer->taken);
        CHECK(answer->seated_in.empty());
        CHECK(cluster.at(0).counters().joins_seated_elsewhere == 0);
        CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("amy")) ==
              std::vector<UserId>{UserId("amy")});
    }
}

// Ann's and bob's wait searches find each other's rooms and their joins cross; ann's is lost on
// its first try. Her ticket gives way to bob's join, takes him in, and counts on her own join
// being refused. When it arrives again, bob's room is gone and cal waits on bob's node, in a
// room ann's search finds: the join is refused all the same (seated there, ann would be in two
// rooms).
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a join its ticket gave up for a crossed one is not seated "
                  "elsewhere") {
    recorder.search_tries = 0;
    int ann_joins = 0;
    cluster.world.drop_if([&](const NodeId& from, const NodeId& to, const Envelope& frame) {
        return frame.service == wire::SERVICE && frame.method == wire::METHOD_JOIN &&
               frame.kind == EnvelopeKind::request && from == NodeId("n0") && to == NodeId("n1") &&
               ++ann_joins == 1;
    });
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    cluster.connect(1, "cal", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    for (int step = 0; step < 2000 && ann_joins == 0; ++step) {
        cluster.run(1ms);
    }
    REQUIRE(ann_joins == 1);
    cluster.run(5ms);  // bob's join is taken in ann's room, and its answer is back
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("cal")).has_value());
    cluster.run(1s);
    CHECK(ann_joins > 1);
    CHECK(cluster.at(1).counters().joins_seated_elsewhere == 0);
    CHECK(cluster.at(1).get_ticket_member_ids(ranked, UserId("cal")) ==
          std::vector<UserId>{UserId("cal")});
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    for (const std::string& broken : cluster.broken_invariants()) {
        FAIL_CHECK(broken);
    }
}

// The pushes a join makes for users at the node that sent it ride on the join's answer: bob's
// 220 costs no frame of its own. An answer lost on the way is given again, pushes and all, to the
// join's retry, and bob still hears one 220.
TEST_CASE(
    "ticket/lifecycle: a join's answer carries the pushes for its sender's users, again "
    "to a retry") {
    for (const bool lose_first_answer : {false, true}) {
        CAPTURE(lose_first_answer);
        Recorder recorder;
        TicketCluster cluster{3, 42, LinkModel{Duration(1), Duration(0), 0.0, false},
                              [&recorder] { return recorder.make(); }};
        cluster.connect(0, "ann", 1500);
        cluster.connect(1, "bob", 1520);
        REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
        cluster.run(700ms);
        int pushes_to_n1 = 0;
        int answers_lost = 0;
        cluster.world.drop_if([&](const NodeId& from, const NodeId& to, const Envelope& frame) {
            if (from != NodeId("n0") || to != NodeId("n1") || frame.service != wire::SERVICE) {
                return false;
            }
            pushes_to_n1 += frame.method == wire::METHOD_PUSH ? 1 : 0;
            if (lose_first_answer && answers_lost == 0 && frame.method == wire::METHOD_JOIN &&
                frame.kind == EnvelopeKind::response) {
                ++answers_lost;
                return true;
            }
            return false;
        });
        REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
        cluster.run(lose_first_answer ? 1s : 100ms);
        CHECK(answers_lost == (lose_first_answer ? 1 : 0));
        CHECK(pushes_to_n1 == 0);
        CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
        CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
        CHECK(cluster.ledger.pushes.at(UserId("bob")).back().message.payload == Bytes{'o', 'k'});
        CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
              std::vector<UserId>{UserId("ann"), UserId("bob")});
        cluster.run(3s);
        CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});  // and nothing after
        for (const std::string& broken : cluster.broken_invariants()) {
            FAIL_CHECK(broken);
        }
    }
}

// Two tickets that wait from the same moment (as two whose searches ran together and found
// nothing) never meet without a wait search: only searchers join waiting rooms. With one, each
// looks a second later and tries to join the other's room. Where both searches ask another node,
// the two joins cross, each room closed while its own join is out: the lower ID gives way and
// takes the other in. Every pair of nodes of four is tried, so that some cross.
TEST_CASE_FIXTURE(Fixture, "ticket/lifecycle: two tickets that began waiting together meet") {
    recorder.search_tries = 0;
    std::uint64_t crossed = 0;
    for (const std::uint8_t wait_searches : {0, 1}) {
        for (std::size_t a = 0; a < 4; ++a) {
            for (std::size_t b = a + 1; b < 4; ++b) {
                CAPTURE(wait_searches);
                CAPTURE(a);
                CAPTURE(b);
                TicketCluster cluster{4, 42, LinkModel{Duration(1), Duration(0), 0.0, false},
                                      [this] { return recorder.make(); }};
                recorder.wait_searches = wait_searches;
                cluster.connect(a, "ann", 1500);
                cluster.connect(b, "bob", 1500);
                REQUIRE(cluster.at(a).start_ticket(ranked, UserId("ann")).has_value());
                REQUIRE(cluster.at(b).start_ticket(ranked, UserId("bob")).has_value());
                cluster.run(6s);
                const Codes expected = wait_searches == 0 ? Codes{219} : Codes{220};
                CHECK(cluster.ledger.terminal_codes(UserId("ann")) == expected);
                CHECK(cluster.ledger.terminal_codes(UserId("bob")) == expected);
                crossed += cluster.joins_refused();
                for (const std::string& broken : cluster.broken_invariants()) {
                    FAIL_CHECK(broken);
                }
            }
        }
    }
    CHECK(crossed > 0);
}

// Two crossed joins where the room that gives way then refuses the other (the game does not
// allow it, or the room's limits): its own join is still out and the other room opens again once
// its refusal arrives, so that join, retried after its first try was lost, may be taken there.
// The ticket waits for its answer again, its room closed, rather than going on in its own room
// while its party is seated in the other.
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a crossed join refused after giving way takes its own back") {
    recorder.search_tries = 0;
    std::size_t crossed = 0;
    for (std::size_t a = 0; a < 4; ++a) {
        for (std::size_t b = a + 1; b < 4; ++b) {
            CAPTURE(a);
            CAPTURE(b);
            TicketCluster cluster{4, 42, LinkModel{Duration(1), Duration(0), 0.0, false}, [this] {
                                      Callbacks callbacks = recorder.make();
                                      callbacks.allow_match_if = [](const TicketProperties&,
                                                                    const User* owner,
                                                                    const User*) {
                                          return owner == nullptr || owner->id != UserId("ann");
                                      };
                                      return callbacks;
                                  }};
            const NodeId ann_node = cluster.name(a);
            const NodeId bob_node = cluster.name(b);
            // Ann's first join is lost; a join from Bob that arrives before her retry crossed it.
            int ann_joins = 0;
            bool bob_joined_between = false;
            cluster.world.drop_if([&](const NodeId& from, const NodeId& to, const Envelope& frame) {
                if (frame.service != wire::SERVICE || frame.method != wire::METHOD_JOIN ||
                    frame.kind != EnvelopeKind::request) {
                    return false;
                }
                if (from == ann_node && to == bob_node) {
                    return ++ann_joins == 1;
                }
                bob_joined_between |= from == bob_node && to == ann_node && ann_joins == 1;
                return false;
            });
            cluster.connect(a, "ann", 1500);
            cluster.connect(b, "bob", 1500);
            REQUIRE(cluster.at(a).start_ticket(ranked, UserId("ann")).has_value());
            REQUIRE(cluster.at(b).start_ticket(ranked, UserId("bob")).has_value());
            cluster.run(6s);
            crossed += bob_joined_between ? 1 : 0;
            CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
            CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
            for (const std::string& broken : cluster.broken_invariants()) {
                FAIL_CHECK(broken);
            }
        }
    }
    CHECK(crossed > 0);
}

// A ticket that looked and found nobody still meets one that begins waiting later: that one's
// wait search finds it.
TEST_CASE_FIXTURE(Fixture, "ticket/lifecycle: a wait search joins a room that waited longer") {
    recorder.search_tries = 0;
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(1050ms);  // ann looked after a second and found nobody
    CHECK(cluster.at(0).counters().searches == 1);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(1100ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann"), UserId("bob")});
}

TEST_CASE_FIXTURE(Fixture, "ticket/lifecycle: a lone ticket times out at its duration") {
    recorder.duration = 2s;
    cluster.connect(2, "cat", 900);
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(1999ms);
    CHECK(cluster.ledger.terminal_codes(UserId("cat")).empty());
    cluster.run(2ms);
    CHECK(cluster.ledger.terminal_codes(UserId("cat")) == Codes{219});
    CHECK(recorder.fired("timeout:cat"));
    CHECK_FALSE(cluster.at(2).has_ticket(ranked, UserId("cat")));
    CHECK(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());  // free again
}

TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a joining ticket whose join is never answered ends at its "
                  "deadline, and leaves the room it may have entered") {
    // Everything n0's ticket service sends is lost (its heartbeats still arrive, so n0 stays a
    // live member for n1): bob's join into ann's three-seat room is taken but never confirmed.
    // bob's ticket honours its deadline (within one attempt's timeout), hears one 219, and the
    // room lets him go.
    ann_waits_with_three_seats();
    recorder.duration = 2s;  // bob's
    silence_tickets_of_n0();
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(1990ms);
    CHECK(cluster.ledger.terminal_codes(UserId("bob")).empty());  // before its deadline: nothing
    cluster.run(210ms);  // the deadline plus one attempt's timeout (200 ms)
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{219});
    CHECK(cluster.at(1).courier().abandoned() >= 1);
    CHECK_FALSE(cluster.at(1).has_ticket(ranked, UserId("bob")));
    cluster.run(100ms);
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann")});
    cluster.world.drop_if(nullptr);
    cluster.run(3s);
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{219});  // and nothing after it
}

// A join retried after its room let the party go (its home declared dead, as a paused node is)
// is refused: the room remembers the attempt it accepted, but the party is no longer in it.
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a join retried after the room let its party go is refused") {
    ann_waits_with_three_seats();
    std::optional<Payload> join;  // bob's join to ann's room, as it went out
    cluster.world.drop_if([&](const NodeId& from, const NodeId&, const Envelope& frame) {
        if (from == NodeId("n1") && frame.service == wire::SERVICE &&
            frame.kind == EnvelopeKind::request && frame.method == wire::METHOD_JOIN && !join) {
            join = Payload::copy_of(frame.payload);
        }
        return false;
    });
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(300ms);
    REQUIRE(join.has_value());
    const std::vector<UserId> ann_only{UserId("ann")};
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann"), UserId("bob")});
    // Bob's node paused past the failure timeout: ann's node lets bob's party go, and the two
    // nodes meet again.
    cluster.world.pause(TicketCluster::name(1), 1500ms);
    cluster.run(1500ms);
    REQUIRE(cluster.world.run_until_converged(3s));
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) == ann_only);
    // The same join again, as a retry made before the pause would bring it.
    const auto answer = join_by_hand(cluster, 1, *join, 100ms);
    REQUIRE(answer.has_value());
    CHECK_FALSE(answer->accepted);
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) == ann_only);
}

// A searcher's join reaches a room's node paused (as under SIGSTOP) past the failure timeout:
// the searcher's node declares it dead; the room's node wakes, reads the join waiting in its
// buffer and seats the party, then hears it was declared dead and lets the party go. Whatever
// the retries on either side do meanwhile, each player's ticket ends exactly once. Pauses from
// just past the failure timeout to 2.5 times it.
TEST_CASE(
    "ticket/lifecycle: a join read by a room's node waking from a pause: each ticket ends "
    "once") {
    for (int pause_ms = 600; pause_ms <= 1500; pause_ms += 20) {
        CAPTURE(pause_ms);
        Recorder recorder;
        recorder.duration = 8s;
        TicketCluster cluster{3, 42, LinkModel{Duration(1), Duration(0), 0.0, false},
                              [&recorder] { return recorder.make(); }};
        cluster.connect(0, "ann", 1500);
        cluster.connect(1, "bob", 1500);
        REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
        cluster.run(700ms);  // ann waits on n0
        bool paused = false;
        cluster.world.drop_if([&](const NodeId& from, const NodeId&, const Envelope& frame) {
            if (paused || from != NodeId("n1") || frame.service != wire::SERVICE ||
                frame.kind != EnvelopeKind::request || frame.method != wire::METHOD_JOIN) {
                return false;
            }
            // The first try is lost and n0 stops: the retries wait in its buffer.
            paused = true;
            cluster.world.pause(NodeId("n0"), Duration(pause_ms));
            return true;
        });
        REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
        cluster.run(15s);
        REQUIRE(paused);
        CHECK(cluster.ledger.terminal_codes(UserId("ann")).size() == 1);
        CHECK(cluster.ledger.terminal_codes(UserId("bob")).size() == 1);
        CHECK(cluster.broken_invariants().empty());
    }
}

TEST_CASE_FIXTURE(Fixture, "ticket/lifecycle: a join extends the deadline; MaxMembers completes") {
    recorder.max_members = 3;
    recorder.duration = 3s;
    recorder.extension = 2s;
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    cluster.connect(2, "cat", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(2500ms);  // past ann's first deadline (3 s): extended to 5 s by bob's join
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).empty());
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(100ms);
    for (const char* user : {"ann", "bob", "cat"}) {
        CHECK(cluster.ledger.terminal_codes(UserId(user)) == Codes{220});
    }
}

TEST_CASE_FIXTURE(Fixture, "ticket/lifecycle: OnTicketMatch may complete before MaxMembers") {
    recorder.max_members = 4;
    recorder.complete_when = [](const std::vector<UserId>& members) { return members.size() == 2; };
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(100ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
}

TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: complete-when-expire completes instead of timing out") {
    recorder.max_members = 4;
    recorder.duration = 2s;
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(100ms);  // bob joined ann's room: his own ticket is over
    CHECK(cluster.at(0).mark_ticket_as_complete_when_expire(ranked, UserId("ann")));
    CHECK_FALSE(cluster.at(1).mark_ticket_as_complete_when_expire(ranked, UserId("bob")));
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).empty());
    cluster.run(1300ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
}

TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: cancel pushes 222 to everyone; owner and members get "
                  "their own callbacks") {
    recorder.max_members = 3;
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(100ms);
    CHECK(cluster.at(1).cancel_ticket(ranked, UserId("bob")).error().code == Errc::not_active);
    REQUIRE(cluster.at(0).cancel_ticket(ranked, UserId("ann")).has_value());
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{222});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(recorder.fired("canceled:ann"));
    CHECK(recorder.fired("matched-canceled:ann>bob"));
    CHECK_FALSE(recorder.fired("matched-canceled:ann>ann"));
    CHECK(cluster.at(0).cancel_ticket(ranked, UserId("ann")).error().code ==
          Errc::ticket_not_found);
}

TEST_CASE_FIXTURE(Fixture, "ticket/operations: starting errors") {
    cluster.connect(0, "ann", 1500);
    CHECK(cluster.at(0).start_ticket(ranked, UserId("nobody")).error().code ==
          Errc::user_not_found);
    CHECK(cluster.at(0).start_ticket(7, UserId("ann")).error().code == Errc::not_set_up);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    CHECK(cluster.at(0).start_ticket(ranked, UserId("ann")).error().code ==
          Errc::already_has_ticket);
    Callbacks refusing = recorder.make();
    refusing.on_issue_ticket = [](const User&) { return std::optional<TicketParams>(); };
    cluster.at(0).set_callbacks(3, refusing);
    CHECK(cluster.at(0).start_ticket(3, UserId("ann")).error().code == Errc::failed_to_create);
    Callbacks invalid = recorder.make();
    invalid.on_issue_ticket = [](const User&) {
        auto params = ranked_params(1500, 2);
        params.search_properties = {{"rank", {1}}, {"level", {1}}, {"league", {1, 2}}};
        return std::optional(params);
    };
    cluster.at(0).set_callbacks(4, invalid);
    auto error = cluster.at(0).start_ticket(4, UserId("ann")).error();
    CHECK(error.code == Errc::invalid_params);
    CHECK(error.message == "SearchProperties has 3 properties, at most 2 allowed");
    invalid.on_issue_ticket = [](const User&) {
        auto params = ranked_params(1500, 2);
        params.profile_ids = {"Nope"};
        return std::optional(params);
    };
    cluster.at(0).set_callbacks(5, invalid);
    CHECK(cluster.at(0).start_ticket(5, UserId("ann")).error().message ==
          "AddProperties on profile 'Nope': profile 'Nope' is not defined");
    // Search steps must start later one by one, and search what the profiles allow.
    invalid.on_issue_ticket = [](const User&) {
        auto params = ranked_params(1500, 2);
        params.search_steps = {SearchStep{std::chrono::seconds(2), {{"rank", {1500}}}},
                               SearchStep{std::chrono::seconds(2), {{"rank", {1500}}}}};
        return std::optional(params);
    };
    cluster.at(0).set_callbacks(6, invalid);
    CHECK(cluster.at(0).start_ticket(6, UserId("ann")).error().message ==
          "SearchSteps[1] starts after 2000 ms: steps must start later one by one, after 0 and "
          "within 3600 s");
    invalid.on_issue_ticket = [](const User&) {
        auto params = ranked_params(1500, 2);
        params.search_steps = {SearchStep{std::chrono::seconds(1), {{"level", {3}}}}};
        return std::optional(params);
    };
    cluster.at(0).set_callbacks(7, invalid);
    CHECK(cluster.at(0).start_ticket(7, UserId("ann")).error().message.starts_with(
        "SearchSteps[0]: "));
}

// A searcher whose candidates were all taken after its search (here: five rooms canceled while
// the removal of their items is lost) tries three of them, not all, then waits: under a high
// arrival rate a search's later candidates are mostly gone by the time it reaches them.
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a searcher gives up a search after three taken rooms") {
    recorder.search_tries = 0;
    recorder.wait_searches = 0;
    bool gave_up_after_three = false;
    for (std::size_t waiters = 0; waiters < 3; ++waiters) {
        const std::size_t searcher = (waiters + 1) % 3;
        CAPTURE(waiters);
        TicketCluster cluster{3, 42, LinkModel{Duration(1), Duration(0), 0.0, false},
                              [this] { return recorder.make(); }};
        recorder.search_tries = 0;
        for (int i = 0; i < 5; ++i) {
            const UserId user("w" + std::to_string(i));
            cluster.connect(waiters, user.str(), 1500);
            REQUIRE(cluster.at(waiters).start_ticket(ranked, user).has_value());
        }
        cluster.run(100ms);
        cluster.world.drop_if([](const NodeId&, const NodeId&, const Envelope& envelope) {
            return envelope.service == matching::wire::SERVICE &&
                   envelope.method == matching::wire::METHOD_REMOVE;
        });
        for (int i = 0; i < 5; ++i) {
            REQUIRE(cluster.at(waiters)
                        .cancel_ticket(ranked, UserId("w" + std::to_string(i)))
                        .has_value());
        }
        cluster.run(10ms);
        recorder.search_tries = 1;
        cluster.connect(searcher, "sam", 1500);
        REQUIRE(cluster.at(searcher).start_ticket(ranked, UserId("sam")).has_value());
        cluster.run(500ms);
        const std::uint64_t refused = cluster.at(searcher).counters().own_joins_refused;
        CHECK(refused <= 3);
        gave_up_after_three = gave_up_after_three || refused == 3;
        CHECK(cluster.at(searcher).is_user_in_ticket_matchmaking(ranked, UserId("sam")));
        CHECK(cluster.ledger.terminal_codes(UserId("sam")).empty());  // waiting
        cluster.world.drop_if(nullptr);
    }
    CHECK(gave_up_after_three);  // where the searcher's replica still had the five items
}

// A room that completed while the removal of its items is lost answers a later join "complete":
// the first searcher from a node is refused, and that node's searchers pass the room by after it.
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a node whose join found a room complete passes it by") {
    recorder.search_tries = 1;
    recorder.wait_searches = 0;
    cluster.connect(0, "ann", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    cluster.world.drop_if([](const NodeId&, const NodeId&, const Envelope& envelope) {
        return envelope.service == matching::wire::SERVICE &&
               envelope.method == matching::wire::METHOD_REMOVE;
    });
    cluster.connect(1, "bob", 1500);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(100ms);
    REQUIRE(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    // Carl (1400) and Dave (1600) each search ann's bucket, and not each other's.
    cluster.connect(2, "carl", 1400);
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("carl")).has_value());
    cluster.run(100ms);
    CHECK(cluster.at(2).counters().own_joins_refused == 1);
    cluster.connect(2, "dave", 1600);
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("dave")).has_value());
    cluster.run(100ms);
    CHECK(cluster.at(2).counters().own_joins_refused == 1);
    CHECK(cluster.at(2).is_user_in_ticket_matchmaking(ranked, UserId("dave")));
    cluster.world.drop_if(nullptr);
}

// A join whose answers are lost gives up a little before its ticket's deadline (its next retry
// would come too late) and leaves the room in case it was taken in; the ticket carries on in its
// own room. The room did take it, so the leave makes it push the member a 222, which arrives once
// the link heals: that push is not the end of a ticket that still lives in its own room.
TEST_CASE_FIXTURE(Fixture,
                  "ticket/lifecycle: a join given up on and left does not end its ticket") {
    ann_waits_with_three_seats();
    recorder.duration = 5s;  // bob's: one search, then he only waits
    recorder.search_tries = 1;
    recorder.wait_searches = 0;
    silence_tickets_of_n0();
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    for (int step = 0; step < 50 && cluster.at(1).courier().abandoned() == 0; ++step) {
        cluster.run(100ms);
    }
    REQUIRE(cluster.at(1).courier().abandoned() >= 1);
    cluster.world.drop_if(nullptr);
    cluster.run(6s);
    // One end, and not the 222 from the room bob left: his deadline.
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{219});
    for (const std::string& broken : cluster.broken_invariants()) {
        FAIL_CHECK(broken);
    }
}

TEST_CASE("ticket/lifecycle: with no live node of the target type a start is refused, naming it") {
    Recorder recorder;
    TicketCluster cluster{2, 5, LinkModel{Duration(1), Duration(0), 0.0, false},
                          [&recorder] { return recorder.make(); }, "STORE"};
    cluster.connect(0, "ann", 1500);
    auto started = cluster.at(0).start_ticket(ranked, UserId("ann"));
    REQUIRE_FALSE(started.has_value());
    CHECK(started.error().code == Errc::unavailable);
    CHECK(started.error().message ==
          "no live node of type 'STORE' stores items, so no ticket can match");
    CHECK_FALSE(cluster.at(0).has_ticket(ranked, UserId("ann")));
}
