#pragma once
// Plays an arrival trace against a running cluster over the client protocol: one connection per
// player, hello, the owner's startTicket naming its party, and the pushes until the ticket ends.
// Each record's time to match runs from the player's arrival (when the trace has it set out to
// connect) to the terminal push (220/219/222), as the other backends measure it: a connection
// the node is slow to take, or a refusal and its wait, is part of the player's wait. The record
// also keeps when the accepted start was sent, for the time to match of accepted tickets, and for
// a team type the match the 220 carries, checked against the type's rules.

#include <map>
#include <string>
#include <vector>

#include "bench/outcomes.hpp"
#include "bench/trace.hpp"
#include "config/config.hpp"

namespace matchmesh::bench {

struct ClusterDriverOptions {
    std::vector<std::string> nodes;  // client ports, host:port; each player picks one at random
    std::string value_name = "rating";
    std::string token_secret;      // signs hello tokens when the cluster checks them
    double grace_s = 40;           // after the last arrival, how long tickets may still take
    double retry_patience_s = 60;  // how long a player refused as overloaded keeps trying
    // Players backing off keep their connections up to this many per process; past it they hang
    // up and connect again to retry (a node holds at most `maxClientConnections`).
    std::size_t backoff_connections_max = 5000;
    // Players connecting at once, per process; the others wait their turn in arrival order. A
    // process offered more new players than its CPU can connect then falls behind on arrivals
    // (the report gives how long they waited, connect_wait_ms) instead of on reading the players
    // it already connected, whose time to match it would stretch.
    std::size_t connects_max = 1000;
    std::uint64_t seed = 1;
    bool progress = true;  // a line on stderr every 5 s
    // Team types' rules, by ticket type: every owner's 220 of such a type has its MatchResult
    // checked against them (bench/team_check.hpp), its side difference and spread kept in the
    // record.
    std::map<int, config::TeamsRule> teams;
};

struct ClusterRun {
    std::vector<TicketRecord> records;  // one per arrival, same index
    std::size_t party_member_pushes = 0;
    double window_s = 0;  // from the start to the last arrival
    // How late a 10 ms timer of the player process ran, sampled through the run: what the
    // process's own load added to the times it measured.
    std::vector<double> lag_ms;
};

[[nodiscard]] ClusterRun drive_cluster(const std::vector<Arrival>& arrivals,
                                       const ClusterDriverOptions& options);

// The same with the parties shared among `processes` forked processes, each playing every
// processes-th party on the common timeline (a process may hold only so many connections);
// their records come back in arrival order.
[[nodiscard]] ClusterRun drive_cluster_in_processes(const std::vector<Arrival>& arrivals,
                                                    const ClusterDriverOptions& options,
                                                    int processes);

}  // namespace matchmesh::bench
