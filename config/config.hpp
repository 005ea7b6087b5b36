#pragma once
// The node's configuration: a JSON file loaded into validated, typed structs.
//
// Every rejection names the file, the JSON path and the reason, e.g.
//   "cluster.json: matching.profiles.RankMatch.rank: bucket width must be > 0, got 0".
// Unknown and duplicate keys are errors. A load either yields a complete Config or an error;
// nothing half-loaded is ever returned.

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mesh/base/error.hpp"

namespace matchmesh::config {

// The matching section, in the shape the reference documents:
//   {"distributionRate": 30, "maxReplicas": 3, "placementGroup": 8, "targetNodeType": "HTTP",
//    "profiles": {"RankMatch": {"rank": 1}, "LevelMatch": {"level": 10}}}
struct MatchingConfig {
    int distribution_rate = 30;  // percent of the nodes holding each key, 1..100
    int replicas_max = 3;        // and never more nodes than this, 1..1000
    int placement_group = 8;     // neighbouring buckets kept on the same nodes, 1..4096
    std::string target_node_type = "HTTP";
    std::map<std::string, std::map<std::string, std::int64_t, std::less<>>, std::less<>> profiles;
};

// How the node writes its log lines: text for people, one JSON object a line for collectors.
enum class LogFormat { text, json };

// This node: who it is, where it listens and how it logs.
struct NodeConfig {
    std::string id;  // unique in the cluster; default: the host name
    std::string node_type = "HTTP";
    std::string mesh_listen = "127.0.0.1:7100";
    std::string mesh_advertise;  // where peers reach the mesh port; default: mesh_listen
    std::string client_listen = "127.0.0.1:7200";
    std::string admin_listen = "127.0.0.1:7300";  // metrics and health probes; empty: none
    LogFormat log_format = LogFormat::text;
};

// The cluster this node joins.
struct ClusterConfig {
    std::string name = "matchmesh";
    std::string secret;              // shared by every node; from "secret" or "secretFile"
    std::vector<std::string> seeds;  // host:port; a host may resolve to several nodes
    int heartbeat_interval_ms = 500;
    int dead_after_ms = 3000;
    int request_timeout_ms = 500;
    std::string token_secret;  // signs client tokens; empty: clients are not authenticated
    // Signs operators' tokens: a hello with one opens an admin session, the only kind that may
    // use the store commands, `members` and `dump` once tokens are checked.
    std::string admin_secret;
};

// TLS on the mesh (both sides show a certificate the CA signed) and on the client port (the
// node shows its certificate), from PEM files. Off unless `mesh` or `clients` is true.
struct TlsConfig {
    std::string certificate_file;
    std::string private_key_file;
    std::string ca_file;  // the CA that signed the peers' certificates (needed for the mesh)
    bool mesh = false;
    bool clients = false;
};

// Bounds on what peers and clients may make this node hold or parse.
struct LimitsConfig {
    std::size_t frame_bytes_max = 1024 * 1024;  // mesh frames
    std::uint64_t traversal_words_max = 256 * 1024;
    int nesting_max = 16;
    std::size_t send_queue_frames = 65536;
    std::size_t send_queue_bytes = 64 * 1024 * 1024;
    std::size_t mesh_connections_max = 1024;
    int handshake_timeout_ms = 3000;
    std::size_t client_frame_bytes_max = 64 * 1024;
    std::size_t client_connections_max = 10000;
    // A client connection that has not said hello by then is closed.
    int client_hello_timeout_ms = 10000;
    int token_lifetime_max_seconds = 86400;  // a client token valid for longer is refused
    int commands_per_second = 100;           // per client session
    std::size_t range_values_max = 64;       // values per range property in a client's search
    // A client's search may ask for at most this many buckets × results (its limit); wide
    // searches also count against commandsPerSecond, one command more per 64 buckets.
    std::size_t search_cost_max = 32768;
    int ticket_duration_min_seconds = 10;
    // Overload: past any of these a node refuses new tickets (`overloaded`, with a retry-after).
    int loop_lag_max_ms = 150;                   // how late its event loop may run timers
    int round_trip_max_ms = 50;                  // how long other nodes take to answer, on average
    std::size_t live_tickets_max = 200000;       // tickets live on one node
    std::size_t requests_in_flight_max = 16384;  // requests awaiting other nodes; also per peer
    // The admin port's /livez fails once the event loop has not answered for this long.
    int liveness_bound_ms = 2000;
};

// How a player's submitted value fills one of the profile's properties.
struct TicketPropertyRule {
    std::string value;               // the name of the player's value (e.g. "rating")
    std::int64_t search_spread = 0;  // search value +- spread, a bucket width apart, nearest first
};

// What a player must submit in one named value to start a ticket of the type.
struct ValueRule {
    bool required = true;
    std::int64_t min = INT64_MIN;
    std::int64_t max = INT64_MAX;
    bool operator==(const ValueRule&) const = default;
};

// Allow a match only if the two players' `value`s differ by at most max_difference.
struct AllowMatchRule {
    std::string value;
    std::int64_t max_difference = 0;
    bool operator==(const AllowMatchRule&) const = default;
};

// Complete with at least min_members once the ticket has waited after_seconds.
struct CompleteWhenRule {
    int min_members = 0;
    int after_seconds = 0;
    bool operator==(const CompleteWhenRule&) const = default;
};

// Sides for a team type: `count` sides of `size` players, balanced by the player value `rating`.
struct TeamsRule {
    int count = 2;
    int size = 1;
    std::string rating;
    std::map<int, std::int64_t> party_bonus;  // by party size
    std::optional<std::int64_t> max_spread;
    std::optional<std::int64_t> max_team_difference;
    bool premade_parity = false;
    bool operator==(const TeamsRule&) const = default;
};

// Limits a ticket relaxes once it has waited `after_seconds`: each step changes the limits it
// names, the others stay as the steps before left them.
struct RelaxStep {
    int after_seconds = 0;
    std::optional<std::int64_t> max_difference;       // allowMatch.maxDifference
    std::optional<std::int64_t> search_spread;        // every property's searchSpread
    std::optional<std::int64_t> max_team_difference;  // teams.maxTeamDifference
    std::optional<int> min_members;                   // completeWhen.minMembers
    bool operator==(const RelaxStep&) const = default;
};

// The longest tag a key may carry (the store's limit; node/ checks that the two agree).
inline constexpr std::size_t tag_bytes_max = 64;

// A shared value's part of a ticket's tag, "/<name>=<value>": at most this many bytes for any
// 64-bit value.
[[nodiscard]] inline std::size_t same_value_tag_bytes(const std::string& name) {
    return name.size() + 2 + 20;
}

// A ticket type the stock node runs, with the built-in policies for its callbacks.
struct TicketTypeConfig {
    int type = 0;
    std::string name;
    std::vector<std::string> profiles;
    std::vector<std::string> tags;
    std::map<std::string, TicketPropertyRule, std::less<>> properties;
    std::map<std::string, ValueRule, std::less<>> values;  // checked at start
    int party_min = 1;                                     // players in a party, its owner included
    int party_max = 0;                                     // 0: up to maxMembers
    int max_members = 2;
    int ticket_duration_seconds = 20;
    int search_interval_ms = 300;
    int search_tries = 4;
    int empty_searches = 0;
    int wait_searches = 1;
    int wait_search_after_ms = 1000;
    int how_many = 20;
    int timeout_extension_seconds = 0;
    std::optional<AllowMatchRule> allow_match;
    std::optional<CompleteWhenRule> complete_when;
    std::optional<TeamsRule> teams;  // sets maxMembers to count x size
    // Player values every member of a match shares (e.g. a region): each becomes part of the
    // ticket's tags, so a search never meets a room with another value.
    std::vector<std::string> same_value;
    std::vector<RelaxStep> relax;  // in order of after_seconds
    // Which rooms a search tries first: "closest" or "oldest" strictly; empty: the nearest few,
    // drawn at random (searchers spread over the rooms under load).
    std::string prefer;
    // Whether every member hears of each player who joins (push 221) or leaves (223) its room.
    bool announce_members = false;
    // Per-ticket random spread (+-) of the interval, tries and duration, so tickets interleave.
    int randomize_search_interval_ms = 0;
    int randomize_search_tries = 0;
    int randomize_ticket_duration_seconds = 0;
};

struct Config {
    NodeConfig node;
    ClusterConfig cluster;
    TlsConfig tls;
    LimitsConfig limits;
    MatchingConfig matching;
    std::map<int, TicketTypeConfig> ticket_types;
};

inline constexpr std::size_t secret_bytes_min = 16;

enum class Errc {
    unreadable,  // the file cannot be opened or is too large
    syntax,      // not JSON, or nested too deeply
    invalid,     // JSON that does not describe a valid configuration
};

using ConfigError = Error<Errc>;

inline constexpr std::size_t config_bytes_max = 4 * 1024 * 1024;
inline constexpr std::size_t config_depth_max = 32;

[[nodiscard]] std::expected<Config, ConfigError> load_file(const std::filesystem::path& path);

// `source` names the text in error messages (a file name, or "<inline>").
[[nodiscard]] std::expected<Config, ConfigError> load_string(std::string_view text,
                                                             std::string_view source);

// The log format called `name` ("text" or "json"), or the reason naming what was given; for
// node.logFormat and the node's --log-format alike.
[[nodiscard]] std::expected<LogFormat, std::string> log_format_named(std::string_view name);

// Checks a config after command-line overrides; the error names the setting.
[[nodiscard]] std::expected<void, ConfigError> validate(const Config& config,
                                                        std::string_view source);

}  // namespace matchmesh::config
