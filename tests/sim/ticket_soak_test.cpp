// The central test: many tickets on a faulty simulated cluster, then the ticket ledger and the
// invariants. 5 nodes; tickets arrive over virtual time with random ratings, parties of 1-3 and
// MaxMembers 2..10 (rooms of an even size 4 and up are two balanced sides, parties kept whole, and
// half the tickets widen their search after a while); users cancel, leave, kick, broadcast,
// backfill and disconnect; 1% of frames are
// lost, latency jitters, one node crashes, a partition heals, and nodes pause (as under SIGSTOP)
// for longer and shorter than the failure timeout.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>

#include "support/seed.hpp"
#include "ticket/teams.hpp"
#include "ticket_cluster.hpp"

using namespace ticket_sim;

namespace {

struct SoakOptions {
    int tickets = 20000;
    Duration arrivals_over{200000};  // virtual time over which tickets arrive
};

struct Participant {
    UserId user;
    std::size_t node;
    TicketId ticket;  // its participation, once started
    std::vector<UserId> party;
};

class Soak {
public:
    Soak(std::uint64_t seed, SoakOptions options)
        : options_(options),
          random_(seed),
          cluster_(5, seed, LinkModel{Duration(1), Duration(4), 0.01, true},
                   [this] { return callbacks(); }) {
        cluster_.on_node_stop = [this](const NodeId& node) { gone_homes_.insert(node); };
    }

    void run() {
        const Time start = cluster_.world.now();
        const Duration step(50);
        const Duration gap = options_.arrivals_over / options_.tickets;
        Time next_arrival = start;
        int arrived = 0;
        bool crashed = false;
        bool partitioned = false;
        bool healed = false;
        // Pauses of 3x and 4x the failure timeout (declared dead, then meets the others again),
        // one of 1.5x (back while the others' retries from before are still due) and one of
        // half of it (nobody notices), on random nodes that are not crashed.
        struct Pause {
            double at;  // share of the arrival period
            Duration length;
            bool done = false;
        };
        std::vector<Pause> pauses{{0.35, Duration(1800)},
                                  {0.6, Duration(300)},
                                  {0.7, Duration(900)},
                                  {0.8, Duration(2500)}};
        while (arrived < options_.tickets) {
            const Time now = cluster_.world.now();
            while (next_arrival <= now && arrived < options_.tickets) {
                arrive(arrived++);
                next_arrival += gap;
            }
            act();
            const Duration elapsed = now - start;
            if (!crashed && elapsed > options_.arrivals_over / 4) {
                cluster_.world.crash(TicketCluster::name(4));
                crashed = true;
            }
            if (!partitioned && elapsed > options_.arrivals_over / 2) {
                cluster_.world.partition({TicketCluster::name(0), TicketCluster::name(1)},
                                         {TicketCluster::name(2), TicketCluster::name(3)});
                partitioned = true;
            }
            if (partitioned && !healed && elapsed > options_.arrivals_over / 2 + Duration(2000)) {
                cluster_.world.heal();
                healed = true;
            }
            for (Pause& pause : pauses) {
                if (!pause.done && elapsed.count() > pause.at * options_.arrivals_over.count()) {
                    cluster_.world.pause(TicketCluster::name(live_node()), pause.length);
                    pause.done = true;
                }
            }
            cluster_.run(step);
            check_invariants();
        }
        // Let every ticket end (durations are at most 8 s, extensions included), then everyone
        // leaves, and TTLs and memories run out.
        cluster_.run(Duration(20000));
        check_invariants();
        for (auto& [user, node] : homes_) {
            if (cluster_.running(TicketCluster::name(node))) {
                cluster_.at(node).disconnect_user(user);
            }
        }
        cluster_.run(Duration(70000));
    }

    void check_ledger() {
        std::size_t started = 0;
        std::size_t lost = 0;
        std::map<PushKind, std::size_t> outcomes;
        for (const Participant& participant : participants_) {
            for (const UserId& user : participant.party) {
                ++started;
                const auto& counts = cluster_.ledger.terminal[participant.ticket];
                const int terminal = counts.contains(user) ? counts.at(user) : 0;
                if (terminal == 0 && gone_homes_.contains(TicketCluster::name(homes_.at(user)))) {
                    continue;  // its node crashed with its session on it
                }
                if (terminal != 1) {
                    ++lost;
                    std::string history;
                    if (auto pushes = cluster_.ledger.pushes.find(user);
                        pushes != cluster_.ledger.pushes.end()) {
                        for (const Received& received : pushes->second) {
                            history += " " + std::to_string(received.message.cmd) + "@" +
                                       std::to_string(ms_since_epoch(received.at)) + "(" +
                                       received.message.ticket_id.str() + " in " +
                                       received.message.room_id + ")";
                        }
                    }
                    FAIL_CHECK("user ", user.str(), " (home n", homes_.at(user), ") of ticket ",
                               participant.ticket.str(), " got ", terminal,
                               " terminal pushes; received:", history);
                }
            }
            const auto& kinds = cluster_.ledger.terminal_kinds[participant.ticket];
            for (PushKind kind : kinds) {
                ++outcomes[kind];
            }
        }
        // Pushes for tickets nobody started are unexpected. One exception: a party member claimed
        // for a start that failed, when the release could not reach it because one of the two
        // nodes was declared dead (a crash, or a partition): as far as its node knows it is in
        // that ticket, and it is told the ticket ended, once.
        for (const auto& [ticket, users] : cluster_.ledger.terminal) {
            const bool lost_claim = cluster_.ledger.room_gone_cancels.contains(ticket);
            CHECK_MESSAGE((started_tickets_.contains(ticket) || lost_claim),
                          "terminal push for unknown ticket ", ticket.str());
            for (const auto& [user, count] : users) {
                CHECK_MESSAGE(count == 1, "user ", user.str(), " got ", count,
                              " terminal pushes for ", ticket.str());
            }
        }
        std::printf(
            "ticket soak: %zu participations, %zu completed, %zu timed out, %zu canceled, %zu "
            "lost; %zu invariant checks\n",
            started, outcomes[PushKind::success], outcomes[PushKind::timeout],
            outcomes[PushKind::cancel], lost, checks_);
        CHECK(outcomes[PushKind::success] > started / 10);
    }

    void check_empty() {
        for (auto& [node, services] : cluster_.sim.running()) {
            CAPTURE(node.str());
            const auto& service = services->tickets;
            CHECK(service->ticket_count() == 0);
            CHECK(service->room_count() == 0);
            for (const auto& [room_id, room] : service->rooms()) {
                std::string members;
                for (const Member& member : room.members) {
                    members +=
                        " " + member.user->id.str() + " (home " + member.user->home.str() + ")";
                }
                MESSAGE("room left behind: ", room_id.str(), " in state ",
                        static_cast<int>(room.state), ", members", members);
            }
            CHECK(service->participation_count() == 0);
            CHECK(service->courier().pending() == 0);
            CHECK(service->remembered_count() == 0);
            CHECK(services->matching->local_items().size() == 0);
        }
    }

    std::size_t checks() const { return checks_; }

private:
    Callbacks callbacks() {
        Callbacks callbacks;
        callbacks.on_issue_ticket = [this](const User& owner) {
            const auto max =
                static_cast<std::uint8_t>(std::get<std::int64_t>(owner.data.at("max")));
            auto params = ranked_params(rating_of(owner), max, std::chrono::seconds(pick(3, 8)));
            params.tags = {"m" + std::to_string(max)};  // rooms of one size match together
            params.search_interval = std::chrono::milliseconds(pick(100, 300));
            params.search_tries = static_cast<std::uint8_t>(pick(2, 5));
            params.timeout_extension_on_match_join = std::chrono::seconds(pick(0, 1));
            if (pick(0, 1) == 1) {
                const std::int64_t rating = rating_of(owner);
                params.search_steps = {SearchStep{
                    std::chrono::milliseconds(pick(300, 2000)),
                    {{"rank", {rating, rating - 100, rating + 100, rating - 200, rating + 200}}}}};
            }
            return std::optional(params);
        };
        callbacks.allow_party_if = [](const std::vector<Member>& members,
                                      const std::vector<SharedUser>& party) {
            const auto max = std::get<std::int64_t>(members.front().user->data.at("max"));
            if (max < 4 || max % 2 != 0) {
                return true;  // a free-for-all
            }
            TeamRules rules;
            rules.size = static_cast<int>(max / 2);
            rules.rating = "rating";
            rules.party_bonus = {{2, 25}, {3, 50}};
            rules.max_team_difference = 150;
            rules.premade_parity = max >= 6;
            return can_still_form(parties_of(members, party, rules), rules);
        };
        callbacks.on_ticket_complete = [](const TicketProperties&, const User*) {
            return Bytes{'w'};
        };
        callbacks.member_joined_announce = [](const TicketView&, const User*, const User*,
                                              const std::vector<UserId>&) {
            return std::optional(Announcement{2, 100, {}});
        };
        return callbacks;
    }

    std::int64_t pick(std::int64_t low, std::int64_t high) {
        return std::uniform_int_distribution<std::int64_t>(low, high)(random_);
    }

    std::size_t live_node() {
        std::vector<std::size_t> live;
        for (std::size_t i = 0; i < 5; ++i) {
            if (cluster_.running(TicketCluster::name(i))) {
                live.push_back(i);
            }
        }
        return live[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(live.size()) - 1))];
    }

    User new_user(std::int64_t rating, std::int64_t max) {
        const std::size_t node = live_node();
        User user{UserId("u" + std::to_string(next_user_++)),
                  "s",
                  TicketCluster::name(node),
                  {{"rating", rating}, {"max", max}}};
        cluster_.at(node).connect_user(user);
        homes_[user.id] = node;
        return user;
    }

    void arrive(int index) {
        const std::int64_t rating = 1500 + pick(-300, 300);
        const std::int64_t max = pick(2, 10);
        const std::int64_t party_size = std::min<std::int64_t>(pick(1, 3), max - 1);
        const User owner = new_user(rating, max);
        std::vector<UserId> party;
        for (std::int64_t i = 1; i < party_size; ++i) {
            party.push_back(new_user(rating, max).id);
        }
        const std::size_t node = homes_.at(owner.id);
        cluster_.at(node).start_ticket(
            ranked, owner.id, party, [this, owner, party, node](Result<void> started) {
                if (!started || !cluster_.running(TicketCluster::name(node))) {
                    return;
                }
                auto ticket = cluster_.at(node).find_ticket(ranked, owner.id);
                REQUIRE(ticket.has_value());
                Participant participant{owner.id, node, ticket->id, {owner.id}};
                participant.party.insert(participant.party.end(), party.begin(), party.end());
                started_tickets_.insert(ticket->id);
                participants_.push_back(std::move(participant));
            });
        (void)index;
    }

    // Random operations by random users, each a few times per second across the cluster.
    void act() {
        if (participants_.empty()) {
            return;
        }
        for (int i = 0; i < 3; ++i) {
            const Participant& someone = participants_[static_cast<std::size_t>(
                pick(0, static_cast<std::int64_t>(participants_.size()) - 1))];
            const UserId& user = someone.party[static_cast<std::size_t>(
                pick(0, static_cast<std::int64_t>(someone.party.size()) - 1))];
            const std::size_t node = homes_.at(user);
            if (!cluster_.running(TicketCluster::name(node))) {
                continue;
            }
            TicketService& service = cluster_.at(node);
            switch (pick(0, 9)) {
                case 0: (void)service.cancel_ticket(ranked, user); break;
                case 1: service.leave_from_ticket_matchmaking(ranked, user); break;
                case 2: (void)service.ticket_broadcast(ranked, user, 2, 7, {}); break;
                case 3: (void)service.start_ticket_backfill(ranked, user); break;
                case 4:
                    if (auto members = service.get_ticket_member_ids(ranked, user);
                        members && members->size() > 1) {
                        service.kickout_from_ticket(ranked, user, members->back(),
                                                    [](Result<void>) {});
                    }
                    break;
                case 5:
                    if (pick(0, 3) == 0) {
                        service.disconnect_user(user);
                    }
                    break;
                case 6: (void)service.mark_ticket_as_complete(ranked, user); break;
                default: break;  // most of the time, nothing
            }
        }
    }

    void check_invariants() {
        ++checks_;
        for (const std::string& broken : cluster_.broken_invariants()) {
            FAIL_CHECK(broken);
        }
    }

    // Declared before the cluster: its stop hooks write here while it is destroyed.
    std::set<NodeId> gone_homes_;
    SoakOptions options_;
    std::mt19937_64 random_;
    TicketCluster cluster_;
    std::vector<Participant> participants_;
    std::set<TicketId> started_tickets_;
    std::map<UserId, std::size_t> homes_;
    std::uint64_t next_user_ = 1;
    std::size_t checks_ = 0;
};

}  // namespace

TEST_CASE("ticket/soak: 20,000 tickets on a faulty 5-node cluster keep every invariant") {
    SoakOptions options;
    if (const char* tickets = std::getenv("MATCHMESH_SOAK_TICKETS")) {
        options.tickets = std::atoi(tickets);
    }
    for (int round = 0; round < 2; ++round) {
        const std::uint64_t seed = test_support::choose_seed("ticket soak");
        INFO("seed ", seed);
        Soak soak(seed, options);
        soak.run();
        soak.check_ledger();
        soak.check_empty();
        if (std::getenv("MATCHMESH_SEED") != nullptr) {
            break;  // replaying one seed
        }
    }
}
