// The node's client command semantics in virtual time: the refusals a client can meet, each
// with its category, on simulated nodes wired as the binary wires them.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "config/config.hpp"
#include "node/client_protocol.hpp"
#include "node/token.hpp"
#include "support/core_cluster.hpp"

using namespace matchmesh;
using namespace matchmesh::node;

namespace {

constexpr const char* open_config = R"({
 "cluster": {"secret": "commands-secret-0123456789"},
 "matching": {"profiles": {"RankMatch": {"rank": 10}}},
 "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "ticketDurationSeconds": 10}}})";

constexpr const char* token_config = R"({
 "cluster": {"secret": "commands-secret-0123456789", "tokenSecret": "players-0123456789abcdef",
             "adminSecret": "operators-0123456789abcdef"},
 "matching": {"profiles": {"RankMatch": {"rank": 10}}},
 "ticketTypes": {
  "1": {"name": "duel", "profiles": ["RankMatch"], "tags": ["duel"], "maxMembers": 2,
        "properties": {"rank": {"value": "rating", "searchSpread": 100}},
        "ticketDurationSeconds": 10}}})";

config::Config load(const char* text) {
    auto loaded = config::load_string(text, "test");
    REQUIRE(loaded);
    return *loaded;
}

class Pushes final : public ticket::PushSink {
public:
    void push(const UserId& user, const ticket::PushMessage& message) override {
        heard.emplace_back(user, message.kind);
    }
    std::vector<std::pair<UserId, ticket::PushKind>> heard;
};

// The category of a reply's refusal ("" when it succeeded).
std::string category(const std::optional<ClientReply>& reply) {
    REQUIRE(reply.has_value());
    const auto* error = std::get_if<ReplyError>(&reply->body);
    return error == nullptr ? "" : error->category;
}

StartTicketCommand duel(int rating) {
    StartTicketCommand start;
    start.ticket_type = 1;
    start.values["rating"] = std::int64_t{rating};
    return start;
}

}  // namespace

TEST_CASE("node/client-commands: every start refusal has its own short label") {
    // The labels of matchmesh_tickets_refused_total: a fixed set of snake_case words.
    std::set<std::string> labels;
    for (std::size_t i = 0; i < start_refusals_count; ++i) {
        const std::string label(label_of(static_cast<StartRefusal>(i)));
        CHECK(label.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos);
        CHECK(labels.insert(label).second);
    }
    CHECK(label_of(StartRefusal::overloaded) == "overloaded");
}

TEST_CASE("node/client-commands: every refusal category has one stable wire name") {
    std::set<std::string> names;
    for (auto code = static_cast<int>(ClientErrc::invalid_argument);
         code <= static_cast<int>(ClientErrc::too_many_connections); ++code) {
        const std::string name(wire_name(static_cast<ClientErrc>(code)));
        CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos);
        CHECK(names.insert(name).second);
    }
    CHECK(wire_name(ClientErrc::overloaded) == "overloaded");
    CHECK(wire_name(matching::Errc::unknown_profile) == "unknown_profile");
    CHECK(wire_name(ticket::Errc::already_has_ticket) == "already_has_ticket");
}

TEST_CASE("node/client-commands: a player's session, in virtual time") {
    const config::Config config = load(open_config);
    Pushes pushes;
    test_support::CoreCluster cluster(config, pushes, {});
    auto session = cluster.connect(0);

    SUBCASE("ticket commands need a hello, and a hello needs a user") {
        CHECK(category(cluster.call(session, duel(1500))) == "unauthenticated");
        CHECK(category(cluster.call(session, HelloCommand{UserId(""), "", {}})) ==
              "invalid_argument");
        CHECK(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
        CHECK(category(cluster.call(session, HelloCommand{UserId("bob"), "", {}})) ==
              "invalid_argument");
    }
    SUBCASE("startTicket checks the type and the values before anything starts") {
        REQUIRE(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
        StartTicketCommand unknown = duel(1500);
        unknown.ticket_type = 9;
        CHECK(category(cluster.call(session, unknown)) == "unknown_ticket_type");
        StartTicketCommand no_rating = duel(1500);
        no_rating.values.clear();
        CHECK(category(cluster.call(session, no_rating)) == "invalid_params");
        CHECK(cluster.services(0).tickets().ticket_count() == 0);
        CHECK(category(cluster.call(session, TicketCommand{TicketAction::cancel, 1})) ==
              "ticket_not_found");
        // Counted by type and reason, for the metrics.
        const StartRefusals& refused = cluster.commands(0).refusals();
        CHECK(refused[9][static_cast<std::size_t>(StartRefusal::unknown_type)] == 1);
        CHECK(refused[1][static_cast<std::size_t>(StartRefusal::invalid)] == 1);
        CHECK(refused[1][static_cast<std::size_t>(StartRefusal::unknown_type)] == 0);
    }
    SUBCASE("a start the ticket service refuses is counted under its reason") {
        REQUIRE(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
        REQUIRE(category(cluster.call(session, duel(1500))).empty());
        CHECK(category(cluster.call(session, duel(1500))) == "already_has_ticket");
        CHECK(cluster.commands(0).refusals()[1][static_cast<std::size_t>(
                  StartRefusal::duplicate)] == 1);
    }
    SUBCASE("two players on two nodes are matched, and each hears its 220") {
        auto other = cluster.connect(1);
        REQUIRE(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
        REQUIRE(category(cluster.call(other, HelloCommand{UserId("bob"), "", {}})).empty());
        CHECK(category(cluster.call(session, duel(1500))).empty());
        CHECK(category(cluster.call(other, duel(1520))).empty());
        cluster.world().run_for(Duration(5000));
        std::set<std::string> matched;
        for (const auto& [user, kind] : pushes.heard) {
            if (kind == ticket::PushKind::success) {
                matched.insert(user.str());
            }
        }
        CHECK(matched == std::set<std::string>{"ann", "bob"});
    }
    SUBCASE("a second session of a user closes the first, whose ticket ends") {
        REQUIRE(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
        REQUIRE(category(cluster.call(session, duel(1500))).empty());
        auto again = cluster.connect(1);
        REQUIRE(category(cluster.call(again, HelloCommand{UserId("ann"), "", {}})).empty());
        cluster.world().run_for(Duration(1000));
        CHECK(cluster.closed(session));
        CHECK(cluster.services(0).tickets().ticket_count() == 0);
        CHECK(cluster.commands(1).session_of(UserId("ann")) == again);
    }
    SUBCASE("a draining node refuses hellos and new tickets") {
        REQUIRE(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
        cluster.commands(0).drain();
        CHECK(category(cluster.call(session, duel(1500))) == "draining");
        CHECK(cluster.commands(0).refusals()[1][static_cast<std::size_t>(
                  StartRefusal::draining)] == 1);
        CHECK(category(cluster.call(cluster.connect(0), HelloCommand{UserId("bob"), "", {}})) ==
              "draining");
    }
}

TEST_CASE("node/client-commands: past capacity a ticket is refused with a retry-after") {
    const config::Config config = load(open_config);
    Pushes pushes;
    test_support::CoreCluster::Options options;
    options.admit = [] { return Refusal{"live tickets at 10 of 10", Duration(750)}; };
    test_support::CoreCluster cluster(config, pushes, options);
    auto session = cluster.connect(0);
    REQUIRE(category(cluster.call(session, HelloCommand{UserId("ann"), "", {}})).empty());
    auto reply = cluster.call(session, duel(1500));
    REQUIRE(category(reply) == "overloaded");
    const auto& error = std::get<ReplyError>(reply->body);
    CHECK(error.retry_after_ms == 750);
    CHECK(error.message.find("live tickets at 10 of 10") != std::string::npos);
    CHECK(cluster.services(0).tickets().ticket_count() == 0);
}

TEST_CASE(
    "node/client-commands: with tokens, players prove who they are and only operators "
    "use the store") {
    const config::Config config = load(token_config);
    Pushes pushes;
    test_support::CoreCluster cluster(config, pushes, {});
    // The virtual clock starts near the epoch: tokens expire a minute after it.
    const std::uint64_t expires = 60;
    auto player = cluster.connect(0);
    CHECK(category(cluster.call(player, HelloCommand{UserId("ann"), "forged", {}})) ==
          "invalid_token");
    const std::string token = make_token(config.cluster.token_secret, "ann", expires);
    CHECK(category(cluster.call(player, HelloCommand{UserId("ann"), token, {}})).empty());
    CHECK(category(cluster.call(player, MembersCommand{})) == "forbidden");

    auto operator_session = cluster.connect(1);
    const std::string admin = make_token(config.cluster.admin_secret, "ops", expires);
    CHECK(category(cluster.call(operator_session, HelloCommand{UserId("ops"), admin, {}})).empty());
    auto members = cluster.call(operator_session, MembersCommand{});
    REQUIRE(category(members).empty());
    CHECK(std::get<std::vector<mesh::MemberInfo>>(members->body).size() == 2);
    CHECK(category(cluster.call(operator_session, duel(1500))) == "unauthenticated");
}
