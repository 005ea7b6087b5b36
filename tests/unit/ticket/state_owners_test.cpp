// The ticket service's state owners: what it recalls for a while, its local users, their
// participations, records by ID with each owner's current one, and the rooms searchers contend for.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "ticket/by_owner.hpp"
#include "ticket/contended_rooms.hpp"
#include "ticket/local_users.hpp"
#include "ticket/participations.hpp"
#include "ticket/recall.hpp"

using namespace matchmesh;
using namespace matchmesh::ticket;

namespace {

const Time start{};
constexpr Duration memory{60000};

MatchedTicket joined_at(const char* node) {
    return MatchedTicket{1, {}, NodeId(node), {}};
}

}  // namespace

TEST_CASE(
    "ticket/recall: a retried join and a push seen twice meet the first answer until memory ends") {
    Recall recall(memory);
    recall.accepted_join("a1", start);
    CHECK(recall.accepted_join("a1"));
    CHECK_FALSE(recall.accepted_join("a2"));
    CHECK(recall.first_sight("p1", start));
    CHECK_FALSE(recall.first_sight("p1", start + Duration(10)));
    CHECK(recall.size() == 2);

    recall.forget_expired(start + memory - Duration(1));
    CHECK(recall.accepted_join("a1"));
    CHECK_FALSE(recall.first_sight("p1", start + memory - Duration(1)));
    recall.forget_expired(start + memory + Duration(1));
    CHECK_FALSE(recall.accepted_join("a1"));
    CHECK(recall.size() == 0);
    CHECK(recall.first_sight("p1", start + memory + Duration(2)));
}

TEST_CASE("ticket/recall: joined tickets are taken out by the node of their room, and expire") {
    Recall recall(memory);
    recall.joined(TicketId("t1"), joined_at("node-2"), start);
    recall.joined(TicketId("t2"), joined_at("node-3"), start);
    recall.joined(TicketId("t3"), joined_at("node-2"), start);
    const auto taken = recall.take_joined_at(NodeId("node-2"));
    REQUIRE(taken.size() == 2);
    CHECK(taken[0].first == TicketId("t1"));
    CHECK(taken[1].first == TicketId("t3"));
    CHECK(recall.take_joined_at(NodeId("node-2")).empty());
    CHECK(recall.size() == 1);
    recall.forget_expired(start + memory);
    CHECK(recall.size() == 0);
}

TEST_CASE("ticket/local-users: a new snapshot on data changes; consents end with the session") {
    LocalUsers users;
    users.add(User{UserId("ann"), "s1", NodeId("node-1"), {}, 1});
    const SharedUser before = users.shared(UserId("ann"));
    REQUIRE(before != nullptr);
    CHECK(users.update_data(UserId("ann"), {{"level", matching::Value(std::int64_t{7})}}));
    CHECK_FALSE(users.update_data(UserId("bob"), {}));
    CHECK(before->data.empty());  // a room that took the old snapshot keeps it
    CHECK(users.find(UserId("ann"))->data.size() == 1);

    users.consent(1, UserId("ann"), UserId("owner"));
    users.consent(2, UserId("ann"), UserId("other"));
    users.consent(1, UserId("bob"), UserId("owner"));  // not connected here: ignored
    CHECK(users.consents(UserId("ann"), 1, UserId("owner")));
    CHECK_FALSE(users.consents(UserId("ann"), 1, UserId("other")));
    CHECK_FALSE(users.consents(UserId("bob"), 1, UserId("owner")));
    users.consent(2, UserId("ann"), UserId());
    CHECK_FALSE(users.consents(UserId("ann"), 2, UserId("other")));

    users.remove(UserId("ann"));
    CHECK(users.size() == 0);
    users.add(User{UserId("ann"), "s2", NodeId("node-1"), {}, 2});
    CHECK_FALSE(users.consents(UserId("ann"), 1, UserId("owner")));
}

TEST_CASE("ticket/participations: one per user and type; ended only by the ticket it is in") {
    Participations participations;
    const TicketId mine("t1"), other("t2");
    participations.set(UserId("ann"), 1, Participation{mine, mine, NodeId("n0"), false});
    participations.set(UserId("ann"), 2, Participation{other, other, NodeId("n1"), false});
    participations.set(UserId("bob"), 1, Participation{other, other, NodeId("n1"), false});
    CHECK(participations.size() == 3);
    CHECK(participations.types_of(UserId("ann")) == std::vector<TicketType>{1, 2});
    CHECK(participations.of_ticket(UserId("ann"), 1, other) == nullptr);
    REQUIRE(participations.of_ticket(UserId("ann"), 1, mine) != nullptr);

    // The same ticket again (a claimed member whose ticket now exists) replaces the record.
    participations.set(UserId("ann"), 1, Participation{mine, other, NodeId("n1"), false});
    CHECK(participations.find(UserId("ann"), 1)->room_node == NodeId("n1"));
    const auto on_n1 = participations.in_rooms_on(NodeId("n1"));
    CHECK(on_n1.size() == 3);

    CHECK_FALSE(participations.erase_if_ticket(UserId("ann"), 1, other));
    CHECK(participations.erase_if_ticket(UserId("ann"), 1, mine));
    CHECK_FALSE(participations.contains(UserId("ann"), 1));
    participations.erase(UserId("ann"), 2);
    CHECK(participations.types_of(UserId("ann")).empty());
    CHECK(participations.size() == 1);
}

TEST_CASE(
    "ticket/participations: each user's types, among many users, found by any copy of its ID") {
    Participations participations;
    for (int user = 0; user < 1000; ++user) {
        const UserId id(fmt::format("user-{:04}", user));
        for (TicketType type = 3; type > 0; --type) {
            if ((user + type) % 2 == 0 || type == 1) {
                participations.set(id, type,
                                   Participation{TicketId("t"), TicketId("t"), {}, false});
            }
        }
    }
    for (int user = 0; user < 1000; ++user) {
        const UserId id(fmt::format("user-{:04}", user));  // the same text, another object
        const std::vector<TicketType> expected =
            user % 2 == 0 ? std::vector<TicketType>{1, 2} : std::vector<TicketType>{1, 3};
        CHECK(participations.types_of(id) == expected);
        CHECK(participations.contains(id, 1));
    }
    // A user's participations are adjacent when all of them are listed.
    std::vector<UserId> order;
    for (const auto& [key, participation] : participations.all()) {
        if (order.empty() || order.back() != key.first) {
            order.push_back(key.first);
        }
    }
    CHECK(order.size() == 1000);
}

TEST_CASE(
    "ticket/by-owner: each owner's current record per type; a retired one stays until erased") {
    ByOwner<int> records;
    const UserId ann("ann");
    records.add(TicketId("r1"), ann, 1, 10);
    records.add(TicketId("r2"), ann, 2, 20);
    REQUIRE(records.of_owner(ann, 1) != nullptr);
    CHECK(*records.of_owner(ann, 1) == 10);
    CHECK(records.of_owner(UserId("bob"), 1) == nullptr);

    records.retire(TicketId("r1"), ann, 1);
    CHECK(records.of_owner(ann, 1) == nullptr);
    CHECK(records.contains(TicketId("r1")));  // a room that outlives its ticket
    records.add(TicketId("r3"), ann, 1, 30);  // the owner starts again
    records.erase(TicketId("r1"), ann, 1);    // the old one goes; the new one stays current
    CHECK(*records.of_owner(ann, 1) == 30);
    CHECK(records.size() == 2);
    records.erase(TicketId("r3"), ann, 1);
    CHECK(records.of_owner(ann, 1) == nullptr);
    CHECK(records.all().size() == 1);
}

TEST_CASE("ticket/contended-rooms: a room is joined while any join to it is out") {
    ContendedRooms rooms;
    const TicketId room("n1/7");
    CHECK_FALSE(rooms.is_joined("n1/7"));
    rooms.joining(room);
    rooms.joining(room);
    CHECK(rooms.is_joined("n1/7"));
    CHECK_FALSE(rooms.is_joined("n1/8"));
    rooms.answered(room);
    CHECK(rooms.is_joined("n1/7"));
    rooms.answered(room);
    CHECK_FALSE(rooms.is_joined("n1/7"));
    rooms.answered(room);  // an answer with no join out changes nothing
    CHECK_FALSE(rooms.is_joined("n1/7"));
}

TEST_CASE("ticket/contended-rooms: a room found gone is skipped a while, oldest forgotten first") {
    ContendedRooms rooms;
    rooms.gone(TicketId("n1/1"), start);
    rooms.gone(TicketId("n1/1"), start + Duration(10));  // once is enough: held from the first
    CHECK(rooms.is_gone("n1/1"));
    rooms.forget_gone(start + ContendedRooms::gone_hold - Duration(1));
    CHECK(rooms.is_gone("n1/1"));
    rooms.forget_gone(start + ContendedRooms::gone_hold);
    CHECK_FALSE(rooms.is_gone("n1/1"));

    for (std::size_t i = 0; i < ContendedRooms::gone_max + 10; ++i) {
        rooms.gone(TicketId("n2/" + std::to_string(i)), start);
    }
    CHECK_FALSE(rooms.is_gone("n2/0"));
    CHECK_FALSE(rooms.is_gone("n2/9"));
    CHECK(rooms.is_gone("n2/10"));
    CHECK(rooms.is_gone("n2/" + std::to_string(ContendedRooms::gone_max + 9)));
}
