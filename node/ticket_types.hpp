#pragma once
// The stock node's ticket types: each `ticketTypes` entry of the config becomes the callbacks of
// one ticket type, with built-in policies:
// - the player's values (sent with its start command) fill the add properties, and the search
//   properties with value +- searchSpread, one bucket width apart, nearest first;
// - allowMatch: a match only if the two players' values differ by at most maxDifference;
// - completeWhen: complete with at least minMembers once the ticket has waited afterSeconds (and
//   always when full);
// - randomize: each ticket's interval, tries and duration spread by up to +- the given amounts;
// - sameValue: the named values become part of the ticket's tags, so that only players who
//   share them meet;
// - relax: steps that widen the search and relax allowMatch, maxTeamDifference and completeWhen's
//   minMembers as the ticket waits (node/relaxed_limits.hpp);
// - teams: parties join a room only while it can still be split into sides within the limits
//   (ticket/teams.hpp);
// and every member's 220 carries the match: the roster, the sides and the quality
// (node/match_result.hpp).
//
// Owned by the node; lives on its loop thread.

#include <map>
#include <random>

#include "config/config.hpp"
#include "matching/profile.hpp"
#include "mesh/scheduler.hpp"
#include "node/match_result.hpp"
#include "node/relaxed_limits.hpp"
#include "ticket/service.hpp"
#include "ticket/teams.hpp"

namespace matchmesh::node {

class ConfiguredTicketTypes {
public:
    ConfiguredTicketTypes(const std::map<int, config::TicketTypeConfig>& types,
                          const matching::ProfileRegistry& profiles, mesh::Scheduler& scheduler,
                          std::size_t range_values_max, std::uint64_t seed);
    ~ConfiguredTicketTypes();
    ConfiguredTicketTypes(const ConfiguredTicketTypes&) = delete;
    ConfiguredTicketTypes& operator=(const ConfiguredTicketTypes&) = delete;

    // Registers every configured type's callbacks with the ticket service.
    void install(ticket::TicketService& tickets);

    [[nodiscard]] const config::TicketTypeConfig* find(ticket::TicketType type) const;
    // Checks a start command's values and party size (the owner included) against the type's
    // rules; the message names the value or the size that does not fit.
    [[nodiscard]] std::expected<void, std::string> check_start(ticket::TicketType type,
                                                               const matching::Properties& values,
                                                               std::size_t party_size) const;
    // The application data the next ticket of this user carries.
    void set_application_data(const UserId& user, ticket::TicketType type, ticket::Bytes data);
    // Drops what is kept for a user's ticket of a type (it ended), or for all its types (it left).
    void forget(const UserId& user, ticket::TicketType type);
    void forget(const UserId& user);

    // Hears every match a room held here completes, with its quality (for metrics).
    void set_match_observer(std::function<void(const MatchResult&)> observer) {
        match_observer_ = std::move(observer);
    }

    // The parameters a player with these values gets (exposed for tests).
    [[nodiscard]] ticket::TicketParams params_for(const config::TicketTypeConfig& type,
                                                  const ticket::User& owner);

    // A team type's rules, with the reach of the searches that can find one of its rooms
    // (exposed for tests). `type.teams` must be set.
    [[nodiscard]] ticket::TeamRules team_rules_for(const config::TicketTypeConfig& type) const;

private:
    [[nodiscard]] std::int64_t bucket_width(const std::string& profile,
                                            const std::string& property) const;
    ticket::Callbacks callbacks_for(const config::TicketTypeConfig& type,
                                    ticket::TicketService& tickets);
    [[nodiscard]] std::int64_t spread(int amount);
    [[nodiscard]] std::vector<std::int64_t> search_values(std::int64_t value,
                                                          std::int64_t spread,
                                                          std::int64_t width) const;
    void remember_issue(const UserId& owner, const config::TicketTypeConfig& type,
                        ticket::TicketService& tickets);
    void check_completion_after(const UserId& owner, const config::TicketTypeConfig& type,
                                Duration waited, ticket::TicketService& tickets);
    // Whether completeWhen completes the owner's ticket with this many members now.
    [[nodiscard]] bool completes(const config::TicketTypeConfig& type, const UserId& owner,
                                 std::size_t members) const;
    // The limits in force for the owner's ticket of this type, by how long it has waited.
    [[nodiscard]] RelaxedLimits in_force(const config::TicketTypeConfig& type,
                                         const UserId& owner) const;

    // A ticket issued under completeWhen or relax: when, and its completion check.
    struct Issued {
        Time at{};
        std::uint64_t serial = 0;  // which issue of the user's tickets of this type
        mesh::TimerId complete_timer = 0;
    };

    std::map<int, config::TicketTypeConfig> types_;
    const matching::ProfileRegistry& profiles_;
    mesh::Scheduler& scheduler_;
    std::size_t range_values_max_;
    std::map<std::pair<UserId, ticket::TicketType>, ticket::Bytes> application_data_;
    std::map<std::pair<UserId, ticket::TicketType>, Issued> issued_;
    std::uint64_t issued_count_ = 0;
    std::mt19937_64 random_;  // the randomize policy's spreads
    std::function<void(const MatchResult&)> match_observer_;
};

}  // namespace matchmesh::node
