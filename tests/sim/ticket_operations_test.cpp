// Ticket and room operations across nodes: leave, kick, broadcast, properties, parties, backfill,
// joins by room ID with reservations, disconnects, and the death of a room's node.
#include <algorithm>

#include <doctest/doctest.h>

#include "ticket_cluster.hpp"

using namespace ticket_sim;
using Codes = std::vector<std::uint16_t>;
using Reasons = std::vector<EndReason>;

namespace {

struct RoomFixture {
    std::uint8_t max_members = 3;
    std::vector<std::string> events;
    std::function<bool(const User* owner, const User* candidate)> allow;  // AllowMatchIf, when set
    TicketCluster cluster{
        3, 7, LinkModel{Duration(1), Duration(0), 0.0, false}, [this] {
            Callbacks callbacks;
            callbacks.on_issue_ticket = [this](const User& owner) {
                return std::optional(ranked_params(rating_of(owner), max_members, 5s));
            };
            callbacks.member_leave = [this](const TicketView&, const User* left, const User*,
                                            const std::string&, const std::vector<UserId>&) {
                events.push_back("left:" + left->id.str());
            };
            callbacks.member_leave_announce = [](const TicketView&, const User*, const User*,
                                                 const std::vector<UserId>&) {
                return std::optional(Announcement{2, 101, {}});
            };
            callbacks.allow_match_if = [this](const TicketProperties&, const User* owner,
                                              const User* candidate) {
                return !allow || allow(owner, candidate);
            };
            return callbacks;
        }};

    // `owner` waits on its node; `member` (on another) joins its room.
    void room_with(std::size_t owner_node, const char* owner, std::size_t member_node,
                   const char* member, std::int64_t rating) {
        cluster.connect(owner_node, owner, rating);
        cluster.connect(member_node, member, rating);
        REQUIRE(cluster.at(owner_node).start_ticket(ranked, UserId(owner)).has_value());
        cluster.run(700ms);
        REQUIRE(cluster.at(member_node).start_ticket(ranked, UserId(member)).has_value());
        cluster.run(100ms);
        REQUIRE(cluster.at(owner_node).get_ticket_member_ids(ranked, UserId(owner)) ==
                std::vector<UserId>{UserId(owner), UserId(member)});
    }
    // ann waits on n0; bob (n1) joins her room.
    void ann_and_bob() { room_with(0, "ann", 1, "bob", 1500); }
};

}  // namespace

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: a member leaves; the owner is told and the seat frees") {
    ann_and_bob();
    CHECK(cluster.at(1).is_user_in_ticket_matchmaking(ranked, UserId("bob")));
    CHECK(cluster.at(1).leave_from_ticket_matchmaking(ranked, UserId("bob")));
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(cluster.ledger.terminal_reasons(UserId("bob")) == Reasons{EndReason::left});
    CHECK(cluster.ledger.codes(UserId("ann")) == Codes{101});  // the leave announcement
    CHECK(events == std::vector<std::string>{"left:bob"});
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann")});
    CHECK_FALSE(cluster.at(1).leave_from_ticket_matchmaking(ranked, UserId("bob")));
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());  // free again
}

TEST_CASE_FIXTURE(RoomFixture, "ticket/operations: kick, with its errors") {
    ann_and_bob();
    std::optional<Result<void>> kicked;
    cluster.at(1).kickout_from_ticket(ranked, UserId("bob"), UserId("ann"),
                                      [&](Result<void> r) { kicked = r; });
    CHECK(kicked->error().code == Errc::not_owner);
    cluster.at(0).kickout_from_ticket(ranked, UserId("ann"), UserId("zed"),
                                      [&](Result<void> r) { kicked = r; });
    CHECK(kicked->error().code == Errc::target_not_found);
    cluster.at(0).kickout_from_ticket(ranked, UserId("ann"), UserId("ann"),
                                      [&](Result<void> r) { kicked = r; });
    CHECK(kicked->error().code == Errc::target_not_found);
    cluster.connect(2, "cat", 1500);
    cluster.at(2).kickout_from_ticket(ranked, UserId("cat"), UserId("bob"),
                                      [&](Result<void> r) { kicked = r; });
    CHECK(kicked->error().code == Errc::room_not_found);
    cluster.at(0).kickout_from_ticket(ranked, UserId("ann"), UserId("bob"),
                                      [&](Result<void> r) { kicked = r; });
    REQUIRE(kicked->has_value());
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(cluster.ledger.terminal_reasons(UserId("bob")) == Reasons{EndReason::kicked});
    CHECK(events == std::vector<std::string>{"left:bob"});
}

TEST_CASE_FIXTURE(RoomFixture, "ticket/operations: any member broadcasts 224 to every member") {
    ann_and_bob();
    REQUIRE(
        cluster.at(1).ticket_broadcast(ranked, UserId("bob"), 3, 300, Bytes{'h', 'i'}).has_value());
    cluster.run(50ms);
    for (const char* user : {"ann", "bob"}) {
        const auto& pushes = cluster.ledger.pushes.at(UserId(user));
        REQUIRE_FALSE(pushes.empty());
        CHECK(pushes.back().message.kind == PushKind::broadcast);
        CHECK(pushes.back().message.ver == 3);
        CHECK(pushes.back().message.cmd == 300);
        CHECK(pushes.back().message.payload == Bytes{'h', 'i'});
    }
    cluster.connect(2, "cat", 1500);
    CHECK(cluster.at(2).ticket_broadcast(ranked, UserId("cat"), 3, 300, {}).error().code ==
          Errc::room_not_found);
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: ticket properties and member lists are the owner's") {
    ann_and_bob();
    REQUIRE(cluster.at(0)
                .set_ticket_property(ranked, UserId("ann"), "map", std::string("dust"))
                .has_value());
    CHECK(cluster.at(0).set_ticket_property_if_not_exists(ranked, UserId("ann"), "mode",
                                                          std::int64_t{5}));
    CHECK_FALSE(cluster.at(0).set_ticket_property_if_not_exists(ranked, UserId("ann"), "map",
                                                                std::string("x")));
    auto updated = cluster.at(0).update_ticket_properties(
        ranked, UserId("ann"), {{"mode", std::int64_t{1}}, {"fresh", true}},
        [](bool exists, const matching::Value* stored,
           const matching::Value& proposed) -> matching::Value {
            return exists ? matching::Value(std::get<std::int64_t>(*stored) +
                                            std::get<std::int64_t>(proposed))
                          : proposed;
        });
    REQUIRE(updated.has_value());
    CHECK(std::get<std::int64_t>(
              *cluster.at(0).get_ticket_property(ranked, UserId("ann"), "mode")) == 6);
    CHECK(std::get<bool>(*cluster.at(0).get_ticket_property(ranked, UserId("ann"), "fresh")));
    CHECK(cluster.at(0).get_ticket_properties(ranked, UserId("ann"), {"map", "nope"})->size() == 1);
    CHECK(cluster.at(1).set_ticket_property(ranked, UserId("bob"), "x", true).error().code ==
          Errc::not_owner);
    CHECK_FALSE(cluster.at(1).get_ticket_member_ids(ranked, UserId("bob")).has_value());
    CHECK(*cluster.at(0).get_ticket_member_sids(ranked, UserId("ann")) ==
          std::vector<std::string>{"sid-ann", "sid-bob"});
    auto clients = cluster.at(0).get_ticket_member_clients(ranked, UserId("ann"));
    REQUIRE(clients.has_value());
    CHECK(std::get<std::int64_t>(clients->at(1).data.at("rating")) == 1500);  // bob's data, copied
    CHECK(cluster.at(0).is_ticket_owner(ranked, UserId("ann")));
    CHECK_FALSE(cluster.at(1).is_ticket_owner(ranked, UserId("bob")));
    CHECK(cluster.at(0).find_ticket(ranked, UserId("ann"))->room_id ==
          cluster.at(0).rooms().begin()->first.str());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: a party from two nodes joins and completes as one") {
    cluster.connect(0, "ann", 1500);
    cluster.connect(2, "cat", 1500);
    cluster.connect(1, "bob", 1500);
    std::optional<Result<void>> started;
    cluster.at(0).start_ticket(ranked, UserId("ann"), {UserId("cat")},
                               [&](Result<void> r) { started = r; });
    cluster.run(20ms);
    REQUIRE(started.has_value());
    REQUIRE(started->has_value());
    CHECK(cluster.at(2).start_ticket(ranked, UserId("cat")).error().code == Errc::in_previous_room);
    std::optional<Result<void>> busy;
    cluster.at(1).start_ticket(ranked, UserId("bob"), {UserId("cat")},
                               [&](Result<void> r) { busy = r; });
    cluster.run(20ms);
    CHECK(busy->error().code == Errc::party_unavailable);
    std::optional<Result<void>> absent;
    cluster.at(1).start_ticket(ranked, UserId("bob"), {UserId("ghost")},
                               [&](Result<void> r) { absent = r; });
    cluster.run(200ms);  // its directory is asked a few times: a session may be just begun
    CHECK(absent->error().message == "party member 'ghost' is not connected");
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());  // bob was released
    cluster.run(1s);
    for (const char* user : {"ann", "cat", "bob"}) {
        CHECK(cluster.ledger.terminal_codes(UserId(user)) == Codes{220});
    }
}

TEST_CASE_FIXTURE(RoomFixture, "ticket/operations: a party leaves as one unit") {
    max_members = 4;
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    cluster.connect(2, "cat", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    std::optional<Result<void>> started;
    cluster.at(1).start_ticket(ranked, UserId("bob"), {UserId("cat")},
                               [&](Result<void> r) { started = r; });
    cluster.run(100ms);
    REQUIRE(started->has_value());
    REQUIRE(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"))->size() == 3);
    CHECK(cluster.at(2).leave_from_ticket_matchmaking(ranked, UserId("cat")));
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_codes(UserId("cat")) == Codes{222});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(cluster.ledger.terminal_reasons(UserId("bob")) == Reasons{EndReason::left});
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"))->size() == 1);
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: backfill reopens a completed room for the seats left") {
    max_members = 3;
    ann_and_bob();
    CHECK(cluster.at(0).start_ticket_backfill(ranked, UserId("ann")).error().code ==
          Errc::completed_room_required);
    REQUIRE(cluster.at(0).mark_ticket_as_complete(ranked, UserId("ann")).has_value());
    cluster.run(20ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.at(0).stop_ticket_backfill(ranked, UserId("ann")).error().code ==
          Errc::backfill_not_found);
    REQUIRE(cluster.at(0).start_ticket_backfill(ranked, UserId("ann")).has_value());
    CHECK(cluster.at(0).start_ticket_backfill(ranked, UserId("ann")).error().code ==
          Errc::ticket_exists);
    cluster.connect(2, "cat", 1500);
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(300ms);
    CHECK(cluster.ledger.terminal_codes(UserId("cat")) == Codes{220});  // completes on joining
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) ==
          Codes{220});  // nothing new for the others
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"))->size() == 3);
    CHECK_FALSE(cluster.at(0).has_ticket(ranked, UserId("ann")));  // full: the backfill ended
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: join by room ID uses a reservation; others find the "
                  "seat taken") {
    max_members = 2;
    cluster.connect(0, "ann", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    const std::string room = cluster.at(0).find_ticket(ranked, UserId("ann"))->room_id;
    REQUIRE(cluster.at(0).make_reservation(ranked, UserId("ann"), UserId("dan")).has_value());
    cluster.connect(1, "bob", 1500);
    std::optional<Result<void>> bob_join;
    cluster.at(1).join_room_by_id(ranked, room, UserId("bob"),
                                  [&](Result<void> r) { bob_join = r; });
    cluster.run(20ms);
    CHECK(bob_join->error().code == Errc::join_refused);
    CHECK(bob_join->error().message == "the room is full");
    cluster.connect(2, "dan", 1500);
    std::optional<Result<void>> dan_join;
    cluster.at(2).join_room_by_id(ranked, room, UserId("dan"),
                                  [&](Result<void> r) { dan_join = r; });
    cluster.run(20ms);
    REQUIRE(dan_join->has_value());
    CHECK(cluster.ledger.terminal_codes(UserId("dan")) == Codes{220});
    std::optional<Result<void>> nowhere;
    cluster.at(1).join_room_by_id(ranked, "no-such-room", UserId("bob"),
                                  [&](Result<void> r) { nowhere = r; });
    CHECK(nowhere->error().code == Errc::room_not_found);
}

TEST_CASE_FIXTURE(RoomFixture, "ticket/operations: reservations expire on time") {
    cluster.connect(0, "ann", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(0).make_reservation(ranked, UserId("ann"), UserId("x")).has_value());
    REQUIRE(cluster.at(0).make_reservation(ranked, UserId("ann"), UserId("y")).has_value());
    CHECK(cluster.at(0).make_reservation(ranked, UserId("ann"), UserId("z")).error().code ==
          Errc::join_refused);
    CHECK(cluster.at(0).cancel_reservation(ranked, UserId("ann"), UserId("y")));
    cluster.run(4s);
    CHECK(cluster.broken_invariants().empty());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: the owner's disconnect cancels; a member's is a leave") {
    ann_and_bob();
    cluster.connect(2, "cat", 1500);
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(100ms);
    REQUIRE(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"))->size() == 3);
    cluster.at(0).disconnect_user(UserId("ann"));  // owner
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_codes(UserId("bob")).size() == 1);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).size() == 1);
}

TEST_CASE_FIXTURE(RoomFixture, "ticket/operations: a member's disconnect frees its seat") {
    ann_and_bob();
    cluster.at(1).disconnect_user(UserId("bob"));
    cluster.run(50ms);
    CHECK(events == std::vector<std::string>{"left:bob"});
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"))->size() == 1);
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(cluster.ledger.terminal_reasons(UserId("bob")) == Reasons{EndReason::disconnected});
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).empty());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: when the room's node dies, members elsewhere get 222 "
                  "and can start again at once") {
    ann_and_bob();
    const Time crash = cluster.world.now();
    cluster.world.crash(TicketCluster::name(0));
    cluster.run(800ms);  // failure timeout 600 ms, heartbeats every 100 ms
    REQUIRE(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(cluster.ledger.terminal_reasons(UserId("bob")) == Reasons{EndReason::node_gone});
    CHECK(cluster.ledger.pushes.at(UserId("bob")).back().at - crash <= 800ms);
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: duplicate starts: one live ticket per user and type") {
    // A second start while the first is live, and while still in the room of a completed one.
    max_members = 2;
    ann_and_bob();  // bob's join fills ann's room: both tickets complete
    cluster.run(50ms);
    REQUIRE(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.at(0).start_ticket(ranked, UserId("ann")).error().code == Errc::in_previous_room);
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).error().code == Errc::in_previous_room);
    CHECK(cluster.at(1).leave_from_ticket_matchmaking(ranked, UserId("bob")));
    cluster.run(50ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).error().code ==
          Errc::already_has_ticket);

    // The same user connected to two nodes at once, starting on both: the newer session wins,
    // the older one is disconnected and its ticket canceled.
    auto connect = [&](std::size_t node, std::uint64_t epoch) {
        User user{UserId("cat"),
                  "sid-cat-" + std::to_string(node),
                  TicketCluster::name(node),
                  {{"rating", std::int64_t{3000}}},
                  epoch};
        cluster.at(node).connect_user(user);
    };
    connect(0, 10);
    connect(2, 11);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("cat")).has_value());
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(300ms);
    CHECK_FALSE(cluster.at(0).has_ticket(ranked, UserId("cat")));
    CHECK(cluster.at(0).find_user(UserId("cat")) == nullptr);
    CHECK(cluster.at(2).has_ticket(ranked, UserId("cat")));
    CHECK(cluster.broken_invariants().empty());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: the owner's cancel tells every member canceled") {
    ann_and_bob();
    REQUIRE(cluster.at(0).cancel_ticket(ranked, UserId("ann")).has_value());
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_reasons(UserId("ann")) == Reasons{EndReason::canceled});
    CHECK(cluster.ledger.terminal_reasons(UserId("bob")) == Reasons{EndReason::canceled});
    CHECK(cluster.at(0).counters().by_type[ranked].ended_as(EndReason::canceled) == 1);
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: a drain ends every ticket the node takes part in with one "
                  "222 that says draining") {
    // ann's room is on n0 with bob (n1) in it; cat searches alone on n0; dan (n0) is in eve's
    // room on n1. Draining n0 tells all four, once, and eve's room goes on without dan.
    ann_and_bob();
    cluster.connect(0, "cat", 4000);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("cat")).has_value());
    room_with(1, "eve", 0, "dan", 2500);

    CHECK(cluster.at(0).drain() == 2);  // ann's and cat's: dan's ticket lives in eve's room
    cluster.run(50ms);
    for (const char* user : {"ann", "bob", "cat", "dan"}) {
        CHECK_MESSAGE(cluster.ledger.terminal_reasons(UserId(user)) ==
                          Reasons{EndReason::draining},
                      user);
    }
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{222});
    CHECK(cluster.ledger.terminal_codes(UserId("eve")).empty());
    CHECK(cluster.at(1).get_ticket_member_ids(ranked, UserId("eve")) ==
          std::vector<UserId>{UserId("eve")});
    CHECK(cluster.at(0).ticket_count() == 0);
    // Counted as drained, not as canceled by their owners: ann's and cat's tickets were n0's.
    const TicketTypeCounters& ended = cluster.at(0).counters().by_type[ranked];
    CHECK(ended.ended_as(EndReason::draining) == 2);
    CHECK(ended.ended_as(EndReason::canceled) == 0);
    CHECK(ended.canceled() == 2);
    CHECK(cluster.at(0).start_ticket(ranked, UserId("ann")).error().code == Errc::draining);
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());  // elsewhere: again
    CHECK(cluster.broken_invariants().empty());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: a drain closes a completed room without a second terminal "
                  "push, and frees its members") {
    max_members = 2;
    ann_and_bob();
    cluster.run(50ms);
    REQUIRE(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).error().code == Errc::in_previous_room);
    CHECK(cluster.at(0).drain() == 0);
    cluster.run(50ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")) == Codes{220});
    CHECK(cluster.at(0).rooms().empty());
    CHECK(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: a party start still claiming when its node drains fails as "
                  "draining and frees its members") {
    cluster.connect(0, "ann", 1500);
    cluster.connect(2, "cat", 1500);
    std::optional<Result<void>> started;
    cluster.at(0).start_ticket(ranked, UserId("ann"), {UserId("cat")},
                               [&](Result<void> r) { started = r; });
    REQUIRE_FALSE(started.has_value());  // cat's claim is on its way to n2
    CHECK(cluster.at(0).drain() == 0);
    cluster.run(50ms);
    REQUIRE(started.has_value());
    CHECK(started->error().code == Errc::draining);
    CHECK(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());  // released
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).empty());  // no ticket, no push
}

TEST_CASE_FIXTURE(RoomFixture, "ticket/operations: AllowMatchIf decides who may join a room") {
    max_members = 2;
    std::vector<std::string> asked;
    allow = [&](const User* owner, const User* candidate) {
        asked.push_back(owner->id.str() + "<" + candidate->id.str());
        return std::llabs(rating_of(*owner) - rating_of(*candidate)) <= 50;
    };
    cluster.connect(0, "ann", 1500);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);               // ann waits
    cluster.connect(1, "bob", 1590);  // a bucket away: found, but refused
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    cluster.run(100ms);
    CHECK(std::find(asked.begin(), asked.end(), "ann<bob") != asked.end());
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"))->size() == 1);
    cluster.connect(2, "cat", 1520);
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(100ms);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("cat")) == Codes{220});
    CHECK(cluster.ledger.terminal_codes(UserId("bob")).empty());  // still looking
    CHECK(cluster.broken_invariants().empty());
}

TEST_CASE_FIXTURE(
    RoomFixture, "ticket/operations: room callbacks, leaving with a callback, and failure pushes") {
    ann_and_bob();
    std::vector<std::string> room_events;
    REQUIRE(cluster.at(0).set_on_leave_ticket_room(
        ranked, UserId("ann"), [&](const std::string&, const User* user) {
            room_events.push_back("left:" + (user != nullptr ? user->id.str() : std::string("-")));
        }));
    REQUIRE(cluster.at(0).set_on_delete_ticket_room(
        ranked, UserId("ann"), [&](const std::string&) { room_events.push_back("deleted"); }));
    CHECK_FALSE(cluster.at(1).set_on_delete_ticket_room(
        ranked, UserId("bob"), [](const std::string&) {}));  // not the owner
    CHECK_FALSE(cluster.at(0).set_on_leave_ticket_room(ranked, UserId("nobody"),
                                                       [](const std::string&, const User*) {}));
    std::optional<Result<void>> left;
    cluster.at(1).leave_from_ticket_matchmaking_with_callback(ranked, UserId("bob"),
                                                              [&](Result<void> r) { left = r; });
    cluster.run(50ms);
    REQUIRE(left.has_value());
    CHECK(left->has_value());
    CHECK(room_events == std::vector<std::string>{"left:bob"});
    std::optional<Result<void>> again;
    cluster.at(1).leave_from_ticket_matchmaking_with_callback(ranked, UserId("bob"),
                                                              [&](Result<void> r) { again = r; });
    cluster.run(50ms);
    REQUIRE(again.has_value());
    CHECK_FALSE(again->has_value());
    REQUIRE(cluster.at(0).cancel_ticket(ranked, UserId("ann")).has_value());
    cluster.run(50ms);
    CHECK(std::find(room_events.begin(), room_events.end(), "deleted") != room_events.end());

    cluster.at(0).push_failure(ranked, UserId("ann"), "no game server free", 503);
    const auto& last = cluster.ledger.pushes.at(UserId("ann")).back().message;
    CHECK(last.kind == PushKind::failure);
    auto parsed = parse_failure_payload(last.payload);
    REQUIRE(parsed.has_value());
    CHECK(parsed->message == "no game server free");
    CHECK(parsed->code == 503);
}

TEST_CASE("ticket/failure payload: a message and a code survive the round trip") {
    const Bytes payload = generate_failure_payload("no rooms in your region", 42);
    auto parsed = parse_failure_payload(payload);
    REQUIRE(parsed.has_value());
    CHECK(parsed->message == "no rooms in your region");
    CHECK(parsed->code == 42);
    CHECK_FALSE(parse_failure_payload(Bytes{1, 2, 3}).has_value());
    CHECK_FALSE(parse_failure_payload(Bytes(16, 0xff)).has_value());
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: two nodes that declared each other dead end only what they "
                  "shared, and meet again") {
    // ann's room on n0 holds bob (home n1) and cat (home n2); dan waits alone on n2. n2 is cut
    // off for longer than the failure timeout (from n1 too: a member that others still reach is
    // vouched for by their probes and not declared dead): cat's seat is the only thing n2 shared
    // with anyone, so cat hears 222 once and everything else goes on, no node replaced.
    max_members = 4;
    cluster.connect(0, "ann", 1500);
    cluster.connect(1, "bob", 1500);
    cluster.connect(2, "cat", 1500);
    cluster.connect(2, "dan", 3000);
    REQUIRE(cluster.at(0).start_ticket(ranked, UserId("ann")).has_value());
    cluster.run(700ms);
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("bob")).has_value());
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("dan")).has_value());
    cluster.run(200ms);
    auto members = cluster.at(0).get_ticket_member_ids(ranked, UserId("ann"));
    REQUIRE(members.has_value());
    std::sort(members->begin(), members->end());  // bob and cat join in either order
    REQUIRE(*members == std::vector<UserId>{UserId("ann"), UserId("bob"), UserId("cat")});
    const auto incarnation = [&](std::size_t i) {
        return cluster.world.node(TicketCluster::name(i)).core().self().incarnation;
    };
    const auto before = std::vector{incarnation(0), incarnation(1), incarnation(2)};
    cluster.world.partition({TicketCluster::name(0), TicketCluster::name(1)},
                            {TicketCluster::name(2)});
    cluster.run(1500ms);
    cluster.world.heal();
    cluster.run(1s);
    CHECK(cluster.world.node(TicketCluster::name(2)).network().live_members().size() == 3);
    CHECK(std::vector{incarnation(0), incarnation(1), incarnation(2)} == before);
    CHECK(cluster.ledger.terminal_codes(UserId("cat")) == Codes{222});
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann"), UserId("bob")});
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).empty());
    CHECK(cluster.ledger.terminal_codes(UserId("bob")).empty());
    CHECK(cluster.ledger.terminal_codes(UserId("dan")).empty());
    CHECK(cluster.at(2).is_user_in_ticket_matchmaking(ranked, UserId("dan")));
    // cat is free to start again, and finds ann's room across the healed link.
    REQUIRE(cluster.at(2).start_ticket(ranked, UserId("cat")).has_value());
    cluster.run(1500ms);
    CHECK(cluster.at(0).get_ticket_member_ids(ranked, UserId("ann")) ==
          std::vector<UserId>{UserId("ann"), UserId("bob"), UserId("cat")});
}

TEST_CASE_FIXTURE(RoomFixture,
                  "ticket/operations: a party start whose member here disconnects while the "
                  "party gathers fails") {
    // ann's party: cat on n0 (claimed at once) and dan on n1 (claimed over a slow link). cat
    // disconnects before dan's claim is answered: the ticket must not start with her.
    max_members = 4;
    cluster.connect(0, "ann", 1500);
    cluster.connect(0, "cat", 1500);
    cluster.connect(1, "dan", 1500);
    cluster.world.set_links(LinkModel{Duration(80), Duration(0), 0.0, false});
    std::optional<Result<void>> started;
    cluster.at(0).start_ticket(ranked, UserId("ann"), {UserId("cat"), UserId("dan")},
                               [&](Result<void> r) { started = r; });
    cluster.run(20ms);
    cluster.at(0).disconnect_user(UserId("cat"));
    cluster.run(1s);
    REQUIRE(started.has_value());
    REQUIRE_FALSE(started->has_value());
    CHECK(started->error().code == Errc::party_unavailable);
    CHECK(cluster.ledger.terminal_codes(UserId("ann")).empty());
    CHECK_FALSE(cluster.at(1).is_user_in_ticket_matchmaking(ranked, UserId("dan")));
    REQUIRE(cluster.at(1).start_ticket(ranked, UserId("dan")).has_value());  // released
}
