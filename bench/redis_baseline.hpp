#pragma once
// The Redis baseline: the matchmaker a competent team would build on Redis instead of running
// our cluster, replayed on the same arrival trace so that both are measured alike.
//
// Data, per ticket type, under a per-run key prefix with a hash tag ("{mm:<run>:<type>}:"), so
// that a type's keys share one cluster slot and a run never touches another run's keys:
//   <prefix>q        sorted set: waiting party ID -> rating (the rating-window search)
//   <prefix>t        sorted set: waiting party ID -> time it began waiting, in ms since the run
//                    began (expiry, and the longest-waiting order that picks anchors and members)
//   <prefix>p:<id>   hash per waiting party: rating, size, users (JSON array), at
// A party's ID is its index in the trace.
//
// Matching is two Lua scripts, loaded once (SCRIPT LOAD) and run with EVALSHA, so every
// decision is atomic on the server. Both apply rules.hpp:
// - the arrival script looks at the waiting parties within the window of the newcomer's rating
//   (the `candidates_per_side` nearest on each side), oldest first. Each of them, as an anchor,
//   gets the newcomer plus the parties younger than itself within its own window, oldest first,
//   whole, up to max_members. The first group that is complete (full, or per completeWhen) is
//   claimed: its parties leave the sets and one PUBLISH announces the room. Otherwise the
//   newcomer is enqueued.
// - the sweep script, run every `sweep_interval_ms` for each type by a sweeper thread, expires
//   the parties that have waited `duration_s` (one timeout PUBLISH each) and, for completeWhen
//   types, completes the groups whose anchor has waited `complete_after_s` with at least
//   min_members players.
// Clients learn of matches through Pub/Sub: one subscriber connection on the run's channel
// receives every notification and stamps each party's time to match on arrival of the message.
//
// Threads, all started and joined inside run_redis_baseline: `workers` senders (each with its
// own connection, sending its share of the arrivals at their scheduled times, pipelined when
// several are due at once), the sweeper (its own connection; it also samples the server's RSS),
// and the subscriber. Every network wait has a timeout, and the run ends `grace_s` after the
// last arrival at the latest; its keys are deleted before returning.

#include <cstddef>
#include <expected>
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "bench/outcomes.hpp"
#include "bench/trace.hpp"

namespace matchmesh::bench {

struct RedisBaselineOptions {
    std::string address = "127.0.0.1:6379";  // host:port, or the path of a Unix socket
    int workers = 4;      // connections (and threads) sending arrivals, as a Redis expert would
    double grace_s = 30;  // after the last arrival, how long tickets may still take
    int sweep_interval_ms = 50;
    // Bounds on the work of one script run, since a script blocks the server while it runs.
    int candidates_per_side = 32;  // waiting parties read above and below a rating
    int anchors_tried_max = 8;     // groups the arrival script tries before enqueueing
    int sweep_anchors_max = 256;   // completeWhen anchors one sweep tries, per type
    int sweep_expired_max = 2000;  // parties one sweep expires, per type
    int connect_timeout_ms = 2000;
    int command_timeout_ms = 5000;  // a reply slower than this fails the run
};

struct BaselineRun {
    std::vector<TicketRecord> records;  // one per arrival, same index as `arrivals`
    double server_cpu_s = 0;            // redis-server CPU seconds used during the run (INFO cpu)
    double server_peak_rss_mb = 0;      // highest used_memory_rss sampled during the run
    double server_rss_before_mb = 0;    // used_memory_rss when the run began
    // How late the workers sent arrivals after their scheduled times (client-side lag).
    double send_lag_ms_p99 = 0;
    double send_lag_ms_max = 0;
    std::size_t notifications = 0;  // Pub/Sub messages received
    // Notifications naming a party that already had its result, or no party of this run: a
    // correct matcher sends none.
    std::size_t notification_anomalies = 0;
};

// Replays `arrivals` in real time (arrival.at seconds after start) against a matcher on Redis
// that applies rules_for(types.at(arrival.type)) (see rules.hpp for the exact semantics).
// Parties larger than their type's max_members are refused without being sent. The error names
// the address and the cause (unreachable server, script error, timeout, unknown ticket type).
[[nodiscard]] std::expected<BaselineRun, std::string> run_redis_baseline(
    const std::vector<Arrival>& arrivals, const std::map<int, config::TicketTypeConfig>& types,
    const RedisBaselineOptions& options);

}  // namespace matchmesh::bench
