#include "config/config.hpp"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "config/json_reader.hpp"

namespace matchmesh::config {
namespace {

constexpr std::size_t name_bytes_max = 64;
constexpr int ticket_duration_max_seconds = 3600;

std::string read_name(const std::string& name, const std::string& path) {
    if (name.empty() || name.size() > name_bytes_max) {
        reject(path, fmt::format("name must be 1..{} bytes long", name_bytes_max));
    }
    if (name.find('\t') != std::string::npos) {
        reject(path, "name must not contain a tab");
    }
    return name;
}

MatchingConfig parse_matching(const nlohmann::json& section, const std::string& path) {
    expect_object(
        section, path,
        {"distributionRate", "maxReplicas", "placementGroup", "targetNodeType", "profiles"});
    MatchingConfig matching;
    if (section.contains("distributionRate")) {
        matching.distribution_rate = static_cast<int>(read_integer(
            section["distributionRate"], child_path(path, "distributionRate"), 1, 100));
    }
    if (section.contains("maxReplicas")) {
        matching.replicas_max = static_cast<int>(
            read_integer(section["maxReplicas"], child_path(path, "maxReplicas"), 1, 1000));
    }
    if (section.contains("placementGroup")) {
        matching.placement_group = static_cast<int>(
            read_integer(section["placementGroup"], child_path(path, "placementGroup"), 1, 4096));
    }
    if (section.contains("targetNodeType")) {
        matching.target_node_type = read_string(
            section["targetNodeType"], child_path(path, "targetNodeType"), 1, name_bytes_max);
    }
    if (section.contains("profiles")) {
        const std::string profiles_path = child_path(path, "profiles");
        expect_any_object(section["profiles"], profiles_path);
        for (const auto& [profile_id, properties] : section["profiles"].items()) {
            const std::string profile_path = child_path(profiles_path, profile_id);
            read_name(profile_id, profile_path);
            expect_any_object(properties, profile_path);
            auto& widths = matching.profiles[profile_id];
            for (const auto& [name, width] : properties.items()) {
                const std::string width_path = child_path(profile_path, name);
                read_name(name, width_path);
                const std::int64_t bucket_width =
                    read_integer(width, width_path, INT64_MIN, INT64_MAX);
                if (bucket_width <= 0) {
                    reject(width_path,
                           fmt::format("bucket width must be > 0, got {}", bucket_width));
                }
                widths[name] = bucket_width;
            }
        }
    }
    return matching;
}

// Reads `key` of `section` into `out` with `read`, when present.
template <typename T, typename Read>
void optional_field(const nlohmann::json& section, const std::string& path, const char* key, T& out,
                    Read&& read) {
    if (section.contains(key)) {
        out = static_cast<T>(read(section[key], child_path(path, key)));
    }
}

auto integer_in(std::int64_t min, std::int64_t max) {
    return [min, max](const nlohmann::json& value, const std::string& path) {
        return read_integer(value, path, min, max);
    };
}

auto address() {
    return [](const nlohmann::json& value, const std::string& path) {
        std::string text = read_string(value, path, 3, 255);
        const auto colon = text.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
            reject(path, fmt::format("'{}' is not host:port", text));
        }
        return text;
    };
}

NodeConfig parse_node(const nlohmann::json& section, const std::string& path) {
    expect_object(section, path,
                  {"id", "nodeType", "meshListen", "meshAdvertise", "clientListen", "adminListen",
                   "logFormat"});
    NodeConfig node;
    auto name = [](const nlohmann::json& value, const std::string& at) {
        return read_name(read_string(value, at, 1, name_bytes_max), at);
    };
    optional_field(section, path, "id", node.id, name);
    optional_field(section, path, "nodeType", node.node_type, name);
    optional_field(section, path, "meshListen", node.mesh_listen, address());
    optional_field(section, path, "meshAdvertise", node.mesh_advertise, address());
    optional_field(section, path, "clientListen", node.client_listen, address());
    if (section.contains("adminListen") && section["adminListen"] == "") {
        node.admin_listen.clear();
    } else {
        optional_field(section, path, "adminListen", node.admin_listen, address());
    }
    optional_field(section, path, "logFormat", node.log_format,
                   [](const nlohmann::json& value, const std::string& at) {
                       auto format = log_format_named(read_string(value, at, 1, 16));
                       if (!format) {
                           reject(at, format.error());
                       }
                       return *format;
                   });
    return node;
}

// At most 4 KiB from a regular file, its final line break dropped; the reason when that fails.
std::string read_secret_file(const nlohmann::json& value, const std::string& path) {
    constexpr std::size_t secret_file_bytes_max = 4096;
    const std::string file = read_string(value, path, 1, 4096);
    std::error_code error;
    const auto status = std::filesystem::status(file, error);
    if (error) {
        reject(path, fmt::format("cannot read secret file '{}': {}", file, error.message()));
    }
    if (!std::filesystem::is_regular_file(status)) {
        reject(path, fmt::format("secret file '{}' is not a regular file", file));
    }
    std::ifstream in(file, std::ios::binary);
    std::string secret(secret_file_bytes_max + 1, '\0');
    in.read(secret.data(), static_cast<std::streamsize>(secret.size()));
    if (in.bad() || (!in && !in.eof())) {
        reject(path, fmt::format("cannot read secret file '{}': {}", file,
                                 std::generic_category().message(errno)));
    }
    secret.resize(static_cast<std::size_t>(in.gcount()));
    if (secret.size() > secret_file_bytes_max) {
        reject(path, fmt::format("secret file '{}' is longer than {} bytes", file,
                                 secret_file_bytes_max));
    }
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) {
        secret.pop_back();
    }
    return secret;
}

// An optional secret given as `key` (inline) or `key`File, of at least secret_bytes_min bytes.
void read_secret(const nlohmann::json& section, const std::string& path, const std::string& key,
                 std::string& secret) {
    const std::string file_key = key + "File";
    if (section.contains(key) && section.contains(file_key)) {
        reject(child_path(path, file_key), fmt::format("give either {} or {}", key, file_key));
    }
    optional_field(section, path, key.c_str(), secret,
                   [](const nlohmann::json& value, const std::string& at) {
                       return read_string(value, at, secret_bytes_min, 4096);
                   });
    optional_field(section, path, file_key.c_str(), secret, read_secret_file);
    if (section.contains(file_key) && secret.size() < secret_bytes_min) {
        reject(child_path(path, file_key),
               fmt::format("the secret must be at least {} bytes", secret_bytes_min));
    }
}

ClusterConfig parse_cluster(const nlohmann::json& section, const std::string& path) {
    expect_object(
        section, path,
        {"name", "secret", "secretFile", "seeds", "heartbeatIntervalMs", "deadAfterMs",
         "requestTimeoutMs", "tokenSecret", "tokenSecretFile", "adminSecret", "adminSecretFile"});
    ClusterConfig cluster;
    optional_field(section, path, "name", cluster.name,
                   [](const nlohmann::json& value, const std::string& at) {
                       return read_name(read_string(value, at, 1, name_bytes_max), at);
                   });
    if (section.contains("secret") && section.contains("secretFile")) {
        reject(child_path(path, "secretFile"), "give either secret or secretFile, not both");
    }
    optional_field(section, path, "secret", cluster.secret,
                   [](const nlohmann::json& value, const std::string& at) {
                       return read_string(value, at, 0, 4096);
                   });
    optional_field(section, path, "secretFile", cluster.secret, read_secret_file);
    const char* secret_key = section.contains("secretFile") ? "secretFile" : "secret";
    if (section.contains(secret_key) && cluster.secret.size() < secret_bytes_min) {
        reject(child_path(path, secret_key),
               fmt::format("the cluster secret must be at least {} bytes", secret_bytes_min));
    }
    if (section.contains("seeds")) {
        const std::string seeds_path = child_path(path, "seeds");
        const auto& seeds = section["seeds"];
        if (!seeds.is_array() || seeds.size() > 256) {
            reject(seeds_path, "must be an array of at most 256 host:port strings");
        }
        for (std::size_t i = 0; i < seeds.size(); ++i) {
            cluster.seeds.push_back(address()(seeds[i], fmt::format("{}[{}]", seeds_path, i)));
        }
    }
    read_secret(section, path, "tokenSecret", cluster.token_secret);
    read_secret(section, path, "adminSecret", cluster.admin_secret);
    if (!cluster.admin_secret.empty() && cluster.admin_secret == cluster.token_secret) {
        reject(child_path(path, "adminSecret"),
               "must differ from tokenSecret (a player's token would open an admin session)");
    }
    optional_field(section, path, "heartbeatIntervalMs", cluster.heartbeat_interval_ms,
                   integer_in(10, 60000));
    optional_field(section, path, "deadAfterMs", cluster.dead_after_ms, integer_in(50, 600000));
    optional_field(section, path, "requestTimeoutMs", cluster.request_timeout_ms,
                   integer_in(1, 60000));
    if (cluster.dead_after_ms < 2 * cluster.heartbeat_interval_ms) {
        reject(child_path(path, "deadAfterMs"),
               fmt::format("must be at least twice heartbeatIntervalMs ({} ms), got {} ms",
                           cluster.heartbeat_interval_ms, cluster.dead_after_ms));
    }
    return cluster;
}

bool read_boolean(const nlohmann::json& value, const std::string& at) {
    if (!value.is_boolean()) {
        reject(at, "must be true or false");
    }
    return value.get<bool>();
}

TlsConfig parse_tls(const nlohmann::json& section, const std::string& path) {
    expect_object(section, path,
                  {"certificateFile", "privateKeyFile", "caFile", "mesh", "clients"});
    TlsConfig tls;
    const auto file = [](const nlohmann::json& value, const std::string& at) {
        return read_string(value, at, 1, 4096);
    };
    optional_field(section, path, "certificateFile", tls.certificate_file, file);
    optional_field(section, path, "privateKeyFile", tls.private_key_file, file);
    optional_field(section, path, "caFile", tls.ca_file, file);
    optional_field(section, path, "mesh", tls.mesh, read_boolean);
    optional_field(section, path, "clients", tls.clients, read_boolean);
    if ((tls.mesh || tls.clients) &&
        (tls.certificate_file.empty() || tls.private_key_file.empty())) {
        reject(path, "TLS needs certificateFile and privateKeyFile");
    }
    if (tls.mesh && tls.ca_file.empty()) {
        reject(child_path(path, "caFile"), "TLS on the mesh needs the CA that signs the nodes");
    }
    return tls;
}

LimitsConfig parse_limits(const nlohmann::json& section, const std::string& path) {
    expect_object(
        section, path,
        {"maxFrameBytes", "traversalLimitWords", "nestingLimit", "sendQueueFrames",
         "sendQueueBytes", "maxMeshConnections", "handshakeTimeoutMs", "maxClientFrameBytes",
         "maxClientConnections", "clientHelloTimeoutMs", "tokenLifetimeMaxSeconds",
         "commandsPerSecond", "rangeValuesMax", "searchCostMax", "ticketDurationMinSeconds",
         "loopLagMaxMs", "roundTripMaxMs", "liveTicketsMax", "requestsInFlightMax",
         "livenessBoundMs"});
    LimitsConfig limits;
    optional_field(section, path, "maxFrameBytes", limits.frame_bytes_max,
                   integer_in(4096, 256 * 1024 * 1024));
    optional_field(section, path, "traversalLimitWords", limits.traversal_words_max,
                   integer_in(1024, 64 * 1024 * 1024));
    optional_field(section, path, "nestingLimit", limits.nesting_max, integer_in(4, 64));
    optional_field(section, path, "sendQueueFrames", limits.send_queue_frames,
                   integer_in(16, 16 * 1024 * 1024));
    optional_field(section, path, "sendQueueBytes", limits.send_queue_bytes,
                   integer_in(64 * 1024, std::int64_t{16} * 1024 * 1024 * 1024));
    optional_field(section, path, "maxMeshConnections", limits.mesh_connections_max,
                   integer_in(2, 65536));
    optional_field(section, path, "handshakeTimeoutMs", limits.handshake_timeout_ms,
                   integer_in(10, 60000));
    optional_field(section, path, "maxClientFrameBytes", limits.client_frame_bytes_max,
                   integer_in(1024, 64 * 1024 * 1024));
    optional_field(section, path, "maxClientConnections", limits.client_connections_max,
                   integer_in(1, 1000000));
    optional_field(section, path, "clientHelloTimeoutMs", limits.client_hello_timeout_ms,
                   integer_in(100, 600000));
    optional_field(section, path, "tokenLifetimeMaxSeconds", limits.token_lifetime_max_seconds,
                   integer_in(60, 366 * 86400));
    optional_field(section, path, "commandsPerSecond", limits.commands_per_second,
                   integer_in(1, 1000000));
    optional_field(section, path, "rangeValuesMax", limits.range_values_max, integer_in(1, 256));
    optional_field(section, path, "searchCostMax", limits.search_cost_max,
                   integer_in(1, std::int64_t{1} << 32));
    optional_field(section, path, "ticketDurationMinSeconds", limits.ticket_duration_min_seconds,
                   integer_in(1, 3600));
    optional_field(section, path, "loopLagMaxMs", limits.loop_lag_max_ms, integer_in(10, 60000));
    optional_field(section, path, "roundTripMaxMs", limits.round_trip_max_ms, integer_in(1, 60000));
    optional_field(section, path, "liveTicketsMax", limits.live_tickets_max,
                   integer_in(1, 100000000));
    optional_field(section, path, "requestsInFlightMax", limits.requests_in_flight_max,
                   integer_in(16, 10000000));
    // The loop stamps its heartbeat every 20 ms: a bound below 100 ms would fail on a hiccup.
    optional_field(section, path, "livenessBoundMs", limits.liveness_bound_ms,
                   integer_in(100, 600000));
    return limits;
}

std::vector<std::string> read_names(const nlohmann::json& value, const std::string& path,
                                    std::size_t count_max, bool allow_empty) {
    if (!value.is_array() || value.size() > count_max) {
        reject(path, fmt::format("must be an array of at most {} names", count_max));
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string at = fmt::format("{}[{}]", path, i);
        std::string name = read_string(value[i], at, allow_empty ? 0 : 1, name_bytes_max);
        if (name.find('\t') != std::string::npos) {
            reject(at, "name must not contain a tab");
        }
        names.push_back(std::move(name));
    }
    return names;
}

std::map<std::string, TicketPropertyRule, std::less<>> parse_ticket_properties(
    const nlohmann::json& section, const std::string& path) {
    expect_any_object(section, path);
    if (section.size() > 2) {
        reject(path, "at most 2 properties");
    }
    std::map<std::string, TicketPropertyRule, std::less<>> properties;
    for (const auto& [name, rule] : section.items()) {
        const std::string rule_path = child_path(path, name);
        read_name(name, rule_path);
        expect_object(rule, rule_path, {"value", "searchSpread"});
        TicketPropertyRule parsed;
        if (!rule.contains("value")) {
            reject(child_path(rule_path, "value"), "is required: which player value fills it");
        }
        parsed.value =
            read_string(rule["value"], child_path(rule_path, "value"), 1, name_bytes_max);
        optional_field(rule, rule_path, "searchSpread", parsed.search_spread,
                       integer_in(0, 1000000000));
        properties[name] = parsed;
    }
    return properties;
}

AllowMatchRule parse_allow_match(const nlohmann::json& section, const std::string& at) {
    expect_object(section, at, {"value", "maxDifference"});
    if (!section.contains("value") || !section.contains("maxDifference")) {
        reject(at, "needs value and maxDifference");
    }
    return AllowMatchRule{
        read_string(section["value"], child_path(at, "value"), 1, name_bytes_max),
        read_integer(section["maxDifference"], child_path(at, "maxDifference"), 0, INT64_MAX)};
}

std::map<std::string, ValueRule, std::less<>> parse_value_rules(const nlohmann::json& section,
                                                                const std::string& path) {
    expect_any_object(section, path);
    if (section.size() > 16) {
        reject(path, "at most 16 values");
    }
    std::map<std::string, ValueRule, std::less<>> rules;
    for (const auto& [name, rule] : section.items()) {
        const std::string at = child_path(path, name);
        read_name(name, at);
        expect_object(rule, at, {"required", "min", "max"});
        ValueRule parsed;
        optional_field(rule, at, "required", parsed.required, read_boolean);
        optional_field(rule, at, "min", parsed.min, integer_in(INT64_MIN, INT64_MAX));
        optional_field(rule, at, "max", parsed.max, integer_in(INT64_MIN, INT64_MAX));
        if (parsed.min > parsed.max) {
            reject(child_path(at, "max"), fmt::format("must not be below min ({})", parsed.min));
        }
        rules[name] = parsed;
    }
    return rules;
}

void parse_party_size(const nlohmann::json& section, const std::string& at,
                      TicketTypeConfig& type) {
    expect_object(section, at, {"min", "max"});
    optional_field(section, at, "min", type.party_min, integer_in(1, 255));
    optional_field(section, at, "max", type.party_max, integer_in(1, 255));
    if (type.party_max > type.max_members) {
        reject(child_path(at, "max"),
               fmt::format("must not exceed maxMembers ({})", type.max_members));
    }
    const int largest = type.party_max == 0 ? type.max_members : type.party_max;
    if (type.party_min > largest) {
        reject(child_path(at, "min"),
               fmt::format("must not exceed the largest party ({})", largest));
    }
}

// Sides replace maxMembers (count x size seats), and no party may be larger than a side.
TeamsRule parse_teams(const nlohmann::json& section, const std::string& at,
                      TicketTypeConfig& type, bool max_members_given) {
    expect_object(section, at,
                  {"count", "size", "rating", "partyBonus", "maxSpread", "maxTeamDifference",
                   "premadeParity"});
    if (!section.contains("size") || !section.contains("rating")) {
        reject(at, "needs size and rating (the player value sides are balanced by)");
    }
    TeamsRule rule;
    optional_field(section, at, "count", rule.count, integer_in(2, 16));
    rule.size = static_cast<int>(read_integer(section["size"], child_path(at, "size"), 1, 127));
    rule.rating = read_string(section["rating"], child_path(at, "rating"), 1, name_bytes_max);
    if (rule.count * rule.size > 255) {
        reject(at, fmt::format("{} sides of {} players are more than the 255 a room seats",
                               rule.count, rule.size));
    }
    if (max_members_given && type.max_members != rule.count * rule.size) {
        reject(child_path(at, "size"),
               fmt::format("{} sides of {} players seat {}, but maxMembers is {}; leave "
                           "maxMembers out of a team type",
                           rule.count, rule.size, rule.count * rule.size, type.max_members));
    }
    type.max_members = rule.count * rule.size;
    if (section.contains("partyBonus")) {
        const std::string bonus_at = child_path(at, "partyBonus");
        expect_any_object(section["partyBonus"], bonus_at);
        for (const auto& [players, bonus] : section["partyBonus"].items()) {
            const std::string entry_at = child_path(bonus_at, players);
            int size = 0;
            const auto [end, error] =
                std::from_chars(players.data(), players.data() + players.size(), size);
            if (error != std::errc() || end != players.data() + players.size() || size < 2 ||
                size > rule.size) {
                reject(entry_at, fmt::format("must be named by a party size from 2 to {}",
                                             rule.size));
            }
            rule.party_bonus[size] = read_integer(bonus, entry_at, -1000000000, 1000000000);
        }
    }
    if (section.contains("maxSpread")) {
        rule.max_spread =
            read_integer(section["maxSpread"], child_path(at, "maxSpread"), 0, INT64_MAX);
    }
    if (section.contains("maxTeamDifference")) {
        rule.max_team_difference = read_integer(section["maxTeamDifference"],
                                                child_path(at, "maxTeamDifference"), 0, INT64_MAX);
    }
    optional_field(section, at, "premadeParity", rule.premade_parity, read_boolean);
    return rule;
}

CompleteWhenRule parse_complete_when(const nlohmann::json& section, const std::string& at,
                                     int max_members) {
    expect_object(section, at, {"minMembers", "afterSeconds"});
    if (!section.contains("minMembers") || !section.contains("afterSeconds")) {
        reject(at, "needs minMembers and afterSeconds");
    }
    const CompleteWhenRule rule{
        static_cast<int>(read_integer(section["minMembers"], child_path(at, "minMembers"), 1, 255)),
        static_cast<int>(
            read_integer(section["afterSeconds"], child_path(at, "afterSeconds"), 0, 3600))};
    if (rule.min_members > max_members) {
        reject(child_path(at, "minMembers"),
               fmt::format("must not exceed maxMembers ({})", max_members));
    }
    return rule;
}

// The numbers that pace a ticket's search, each optional with its range.
void parse_ticket_pacing(const nlohmann::json& section, const std::string& path,
                         TicketTypeConfig& type) {
    optional_field(section, path, "maxMembers", type.max_members, integer_in(2, 255));
    optional_field(section, path, "ticketDurationSeconds", type.ticket_duration_seconds,
                   integer_in(1, ticket_duration_max_seconds));
    optional_field(section, path, "searchIntervalMs", type.search_interval_ms,
                   integer_in(10, 60000));
    optional_field(section, path, "searchTries", type.search_tries, integer_in(0, 255));
    optional_field(section, path, "emptySearches", type.empty_searches, integer_in(0, 255));
    optional_field(section, path, "waitSearches", type.wait_searches, integer_in(0, 255));
    optional_field(section, path, "waitSearchAfterMs", type.wait_search_after_ms,
                   integer_in(10, 3600000));
    optional_field(section, path, "howMany", type.how_many, integer_in(1, 100));
    optional_field(section, path, "timeoutExtensionSeconds", type.timeout_extension_seconds,
                   integer_in(0, 3600));
}

void parse_randomize(const nlohmann::json& randomize, const std::string& at,
                     TicketTypeConfig& type) {
    expect_object(randomize, at, {"searchIntervalMs", "searchTries", "ticketDurationSeconds"});
    optional_field(randomize, at, "searchIntervalMs", type.randomize_search_interval_ms,
                   integer_in(0, 60000));
    optional_field(randomize, at, "searchTries", type.randomize_search_tries, integer_in(0, 255));
    optional_field(randomize, at, "ticketDurationSeconds", type.randomize_ticket_duration_seconds,
                   integer_in(0, 3600));
}

// Each step names a later time than the one before, and only limits the type has.
std::vector<RelaxStep> parse_relax(const nlohmann::json& section, const std::string& path,
                                   const TicketTypeConfig& type) {
    if (!section.is_array() || section.empty() || section.size() > 8) {
        reject(path, "must be an array of 1 to 8 steps");
    }
    std::vector<RelaxStep> steps;
    for (std::size_t i = 0; i < section.size(); ++i) {
        const std::string at = fmt::format("{}[{}]", path, i);
        const nlohmann::json& entry = section[i];
        expect_object(entry, at,
                      {"afterSeconds", "maxDifference", "searchSpread", "maxTeamDifference",
                       "minMembers"});
        if (!entry.contains("afterSeconds")) {
            reject(at, "needs afterSeconds");
        }
        RelaxStep step;
        step.after_seconds = static_cast<int>(read_integer(
            entry["afterSeconds"], child_path(at, "afterSeconds"),
            steps.empty() ? 1 : steps.back().after_seconds + 1, ticket_duration_max_seconds));
        const auto limit = [&](const char* key, const char* needs, bool present) {
            std::optional<std::int64_t> value;
            if (entry.contains(key)) {
                if (!present) {
                    reject(child_path(at, key), fmt::format("needs {} on the ticket type", needs));
                }
                value = read_integer(entry[key], child_path(at, key), 0, 1000000000);
            }
            return value;
        };
        step.max_difference = limit("maxDifference", "allowMatch", type.allow_match.has_value());
        step.search_spread = limit("searchSpread", "properties", !type.properties.empty());
        step.max_team_difference = limit("maxTeamDifference", "teams", type.teams.has_value());
        if (auto members = limit("minMembers", "completeWhen", type.complete_when.has_value())) {
            if (*members < 1 || *members > type.max_members) {
                reject(child_path(at, "minMembers"),
                       fmt::format("must be 1 to maxMembers ({})", type.max_members));
            }
            step.min_members = static_cast<int>(*members);
        }
        if (!step.max_difference && !step.search_spread && !step.max_team_difference &&
            !step.min_members) {
            reject(at, "relaxes nothing: name maxDifference, searchSpread, maxTeamDifference or "
                       "minMembers");
        }
        steps.push_back(step);
    }
    return steps;
}

// Each shared value is written into the ticket's tags ("<tag>/<name>=<value>"), which must
// stay within a tag's length whatever the value.
void check_same_value_fits(const TicketTypeConfig& type, const std::string& at) {
    std::size_t longest_tag = 0;
    for (const std::string& tag : type.tags) {
        longest_tag = std::max(longest_tag, tag.size());
    }
    std::size_t bytes = longest_tag;
    for (const std::string& name : type.same_value) {
        bytes += same_value_tag_bytes(name);
    }
    if (bytes > tag_bytes_max) {
        reject(at, fmt::format("the tags would reach {} bytes with these values, more than the "
                               "{} a tag may have: use shorter names",
                               bytes, tag_bytes_max));
    }
}

TicketTypeConfig parse_ticket_type(const std::string& key, const nlohmann::json& section,
                                   const std::string& path) {
    expect_object(section, path,
                  {"name", "profiles", "tags", "properties", "maxMembers", "ticketDurationSeconds",
                   "searchIntervalMs", "searchTries", "emptySearches", "waitSearches",
                   "waitSearchAfterMs", "howMany", "timeoutExtensionSeconds", "allowMatch",
                   "completeWhen", "randomize", "values", "partySize", "teams", "sameValue",
                   "relax", "prefer", "announceMembers"});
    TicketTypeConfig type;
    type.name = key;
    optional_field(section, path, "name", type.name,
                   [](const nlohmann::json& value, const std::string& at) {
                       return read_string(value, at, 1, name_bytes_max);
                   });
    if (!section.contains("profiles")) {
        reject(child_path(path, "profiles"), "is required: the profiles to add to and search");
    }
    type.profiles = read_names(section["profiles"], child_path(path, "profiles"), 8, false);
    if (type.profiles.empty()) {
        reject(child_path(path, "profiles"), "must name at least one profile");
    }
    if (section.contains("tags")) {
        type.tags = read_names(section["tags"], child_path(path, "tags"), 8, true);
    }
    if (section.contains("properties")) {
        type.properties =
            parse_ticket_properties(section["properties"], child_path(path, "properties"));
    }
    parse_ticket_pacing(section, path, type);
    if (section.contains("teams")) {
        type.teams = parse_teams(section["teams"], child_path(path, "teams"), type,
                                 section.contains("maxMembers"));
    }
    if (section.contains("allowMatch")) {
        type.allow_match = parse_allow_match(section["allowMatch"], child_path(path, "allowMatch"));
    }
    if (section.contains("completeWhen")) {
        type.complete_when = parse_complete_when(
            section["completeWhen"], child_path(path, "completeWhen"), type.max_members);
    }
    if (section.contains("randomize")) {
        parse_randomize(section["randomize"], child_path(path, "randomize"), type);
    }
    if (section.contains("values")) {
        type.values = parse_value_rules(section["values"], child_path(path, "values"));
    }
    if (section.contains("partySize")) {
        parse_party_size(section["partySize"], child_path(path, "partySize"), type);
    }
    if (section.contains("sameValue")) {
        type.same_value = read_names(section["sameValue"], child_path(path, "sameValue"), 4, false);
        check_same_value_fits(type, child_path(path, "sameValue"));
    }
    if (section.contains("prefer")) {
        type.prefer = read_string(section["prefer"], child_path(path, "prefer"), 1, 16);
        if (type.prefer != "closest" && type.prefer != "oldest") {
            reject(child_path(path, "prefer"), "must be \"closest\" or \"oldest\"");
        }
    }
    if (section.contains("relax")) {
        type.relax = parse_relax(section["relax"], child_path(path, "relax"), type);
    }
    optional_field(section, path, "announceMembers", type.announce_members, read_boolean);
    if (type.teams) {
        const int largest = type.party_max == 0 ? type.teams->size : type.party_max;
        if (largest > type.teams->size) {
            reject(child_path(child_path(path, "partySize"), "max"),
                   fmt::format("must not exceed a side's {} players", type.teams->size));
        }
        type.party_max = largest;
    }
    return type;
}

// What the limits make of a ticket type: a duration every start would refuse (with `randomize`,
// a share of them), or a search spread that would be cut short without a word, is an error here.
void check_against_limits(const TicketTypeConfig& type, const LimitsConfig& limits,
                          const decltype(MatchingConfig::profiles)& profiles,
                          const std::string& path) {
    const int shortest = type.ticket_duration_seconds - type.randomize_ticket_duration_seconds;
    if (shortest < limits.ticket_duration_min_seconds) {
        reject(child_path(path, "ticketDurationSeconds"),
               fmt::format("{} s{} is below limits.ticketDurationMinSeconds ({} s): such "
                           "tickets would be refused at start",
                           shortest,
                           type.randomize_ticket_duration_seconds > 0
                               ? " less randomize.ticketDurationSeconds"
                               : "",
                           limits.ticket_duration_min_seconds));
    }
    const int longest = type.ticket_duration_seconds + type.randomize_ticket_duration_seconds;
    if (longest > ticket_duration_max_seconds) {
        reject(child_path(path, "ticketDurationSeconds"),
               fmt::format("{} s with randomize.ticketDurationSeconds is above the {} s a ticket "
                           "may last",
                           longest, ticket_duration_max_seconds));
    }
    // Searched values: the player's own and up to (rangeValuesMax - 1) / 2 widths each side.
    const auto& widths = profiles.at(type.profiles.front());
    const auto check_spread = [&](std::int64_t spread, const std::string& name,
                                  const std::string& at) {
        const std::int64_t width = std::max<std::int64_t>(widths.at(name), 1);
        const std::int64_t steps_max = (limits.range_values_max - 1) / 2;
        if (spread / width > steps_max) {
            reject(at, fmt::format("{} reaches {} buckets of {} each side, but "
                                   "limits.rangeValuesMax ({}) allows {}: at most {}",
                                   spread, spread / width, width, limits.range_values_max,
                                   steps_max, steps_max * width));
        }
    };
    for (const auto& [name, rule] : type.properties) {
        check_spread(rule.search_spread, name,
                     child_path(child_path(child_path(path, "properties"), name), "searchSpread"));
        for (std::size_t i = 0; i < type.relax.size(); ++i) {
            if (type.relax[i].search_spread) {
                check_spread(*type.relax[i].search_spread, name,
                             fmt::format("{}[{}].searchSpread", child_path(path, "relax"), i));
            }
        }
    }
}

Config parse_config(const nlohmann::json& document) {
    expect_object(document, "", {"node", "cluster", "tls", "limits", "matching", "ticketTypes"});
    Config config;
    if (document.contains("node")) {
        config.node = parse_node(document["node"], "node");
    }
    if (document.contains("cluster")) {
        config.cluster = parse_cluster(document["cluster"], "cluster");
    }
    if (document.contains("tls")) {
        config.tls = parse_tls(document["tls"], "tls");
    }
    if (document.contains("limits")) {
        config.limits = parse_limits(document["limits"], "limits");
    }
    if (document.contains("matching")) {
        config.matching = parse_matching(document["matching"], "matching");
    }
    if (document.contains("ticketTypes")) {
        expect_any_object(document["ticketTypes"], "ticketTypes");
        for (const auto& [key, section] : document["ticketTypes"].items()) {
            const std::string path = child_path("ticketTypes", key);
            int number = -1;
            if (!key.empty() && key.size() <= 3 && (key.size() == 1 || key[0] != '0') &&
                std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; })) {
                number = std::stoi(key);
            }
            if (number < 0 || number > 255) {
                reject(path, "a ticket type is a number 0..255");
            }
            TicketTypeConfig type = parse_ticket_type(key, section, path);
            type.type = number;
            // Every profile and property it names must be defined in the matching section.
            for (const std::string& profile : type.profiles) {
                auto found = config.matching.profiles.find(profile);
                if (found == config.matching.profiles.end()) {
                    reject(
                        child_path(path, "profiles"),
                        fmt::format("profile '{}' is not defined in matching.profiles", profile));
                }
                for (const auto& [property, rule] : type.properties) {
                    if (!found->second.contains(property)) {
                        reject(child_path(child_path(path, "properties"), property),
                               fmt::format("profile '{}' has no property '{}'", profile, property));
                    }
                }
                if (found->second.size() != type.properties.size()) {
                    reject(child_path(path, "properties"),
                           fmt::format("must fill every property of profile '{}'", profile));
                }
            }
            check_against_limits(type, config.limits, config.matching.profiles, path);
            config.ticket_types[number] = std::move(type);
        }
    }
    return config;
}

}  // namespace

std::expected<Config, ConfigError> load_string(std::string_view text, std::string_view source) {
    if (text.size() > config_bytes_max) {
        return fail(Errc::unreadable,
                    fmt::format("{}: larger than {} bytes", source, config_bytes_max));
    }
    Errc code = Errc::syntax;
    try {
        nlohmann::json document = parse_strict(text, config_depth_max);
        code = Errc::invalid;
        return parse_config(document);
    } catch (const Rejected& rejected) {
        const std::string path = rejected.path.empty() ? "(top level)" : rejected.path;
        return fail(code, fmt::format("{}: {}: {}", source, path, rejected.reason));
    }
}

std::expected<LogFormat, std::string> log_format_named(std::string_view name) {
    if (name == "text") {
        return LogFormat::text;
    }
    if (name == "json") {
        return LogFormat::json;
    }
    return std::unexpected(fmt::format("'{}' is not a log format: text or json", name));
}

std::expected<void, ConfigError> validate(const Config& config, std::string_view source) {
    auto invalid = [&](std::string_view path, std::string reason) {
        return fail(Errc::invalid, fmt::format("{}: {}: {}", source, path, reason));
    };
    if (config.node.id.empty() || config.node.id.size() > name_bytes_max ||
        config.node.id.find('\t') != std::string::npos) {
        return invalid("node.id", "must be 1..64 bytes without tabs");
    }
    if (config.cluster.secret.empty()) {
        return invalid("cluster.secret",
                       "is required (or cluster.secretFile): nodes authenticate "
                       "each other with it");
    }
    if (config.node.node_type != config.matching.target_node_type && config.cluster.seeds.empty() &&
        !config.ticket_types.empty()) {
        return invalid("matching.targetNodeType",
                       fmt::format("'{}' is not this node's type ('{}') and the node has no "
                                   "seeds: no node would store items, so no ticket could match",
                                   config.matching.target_node_type, config.node.node_type));
    }
    for (const auto* address : {&config.node.mesh_listen, &config.node.client_listen}) {
        if (address->rfind(':') == std::string::npos) {
            return invalid(
                address == &config.node.mesh_listen ? "node.meshListen" : "node.clientListen",
                fmt::format("'{}' is not host:port", *address));
        }
    }
    return {};
}

std::expected<Config, ConfigError> load_file(const std::filesystem::path& path) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) {
        return fail(Errc::unreadable,
                    fmt::format("{}: cannot read config: {}", path.string(), error.message()));
    }
    if (size > config_bytes_max) {
        return fail(Errc::unreadable, fmt::format("{}: config is larger than {} bytes",
                                                  path.string(), config_bytes_max));
    }
    std::ifstream file(path, std::ios::binary);
    std::stringstream contents;
    contents << file.rdbuf();
    if (!file) {
        return fail(Errc::unreadable, fmt::format("{}: cannot read config", path.string()));
    }
    return load_string(contents.str(), path.string());
}

}  // namespace matchmesh::config
