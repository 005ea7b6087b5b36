#pragma once
// What happened to each ticket of a benchmark run, and the summary every backend reports:
// started, completed, timed out, canceled, fill rate, matches per second, time to match.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ticket/types.hpp"

namespace matchmesh::bench {

enum class Outcome { matched, timed_out, canceled, refused, unfinished };

// A ticket's terminal push as its outcome: success, timeout, or else canceled.
[[nodiscard]] Outcome outcome_of(ticket::PushKind terminal);

struct TicketRecord {
    bool arrived = false;
    bool accepted = false;  // its start was accepted
    int type = 0;
    int party_size = 1;
    double started_s = 0;  // since the run began: its first try
    double ttm_ms = 0;     // from its arrival (when it was due) to its terminal result
    double accepted_s = 0; // since the run began: the start the cluster accepted (cluster only)
    double ended_s = 0;    // since the run began: its terminal result
    int retries = 0;       // starts refused as overloaded before one was accepted (or it gave up)
    double connect_wait_ms = 0;  // waiting for a turn to connect in its player process (cluster)
    Outcome outcome = Outcome::unfinished;
    std::string room;     // tickets with the same room matched together
    std::string user;     // the party's owner, who started the ticket
    std::string node;     // the node (host:port) the owner's accepted start went to
    std::string refusal;  // why, when refused
    // Team types, on a matched record: the match's difference between sides and rating spread
    // (as the cluster's MatchResult gives them, or as the ideal split the room), and the
    // configured limits the match broke, by name (none: it kept them all).
    std::optional<double> side_difference;
    std::int64_t spread = 0;
    std::vector<std::string> violations;
};

// Summary keys: tickets_started (accepted), completed, timed_out, canceled, unfinished (accepted,
// no terminal push: lost), refused (never accepted), fill_rate (of accepted tickets), matches,
// matches_per_s (over `window_s`), arrivals_per_s (players' first tries per second, as the
// generator managed to make them), goodput_per_s (matches made between the first and the last
// arrival, per second of that span), retries (refusals as overloaded that were tried again),
// players_retried, ttm_ms {p50, p90, p99, max} of matched tickets, from their arrival (a wait to
// be accepted, or a connection the node was slow to take, is part of a player's wait), and where
// the backend tells when a start was accepted, accepted_ttm_ms the same from that start; by_type
// holds the same per ticket type. Where matches carry a side difference (team types), `teams`
// gives, per match (room): matches, side_difference and spread {p50, p90, p99, max}, violations
// (matches that broke a configured limit) and violation_kinds (matches per limit broken).
// connect_wait_ms {p50, ...}: how long players waited for a turn to connect in their player
// process (cluster runs whose processes had more players connecting than they let at once).
// A record as one JSON object and back (player processes hand their records over as JSON
// lines); record_of throws nlohmann's errors on an object record_json did not write.
[[nodiscard]] nlohmann::json record_json(const TicketRecord& record);
[[nodiscard]] TicketRecord record_of(const nlohmann::json& json);

[[nodiscard]] nlohmann::json summarize(const std::vector<TicketRecord>& records, double window_s);

// {p50, p90, p99, max} of the values, rounded to a tenth.
[[nodiscard]] nlohmann::json percentiles(std::vector<double> values);

}  // namespace matchmesh::bench
