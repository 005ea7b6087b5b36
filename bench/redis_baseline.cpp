#include "bench/redis_baseline.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <nlohmann/json.hpp>

#include "bench/rules.hpp"
#include "mesh/base/assert.hpp"

namespace matchmesh::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Shared by both scripts. KEYS: the rating set, the waiting-time set. ARGV 1..8: key prefix,
// channel, now (ms since the run began), window, max_members, min_members (0: no completeWhen),
// complete_after (ms), candidates per side. Parties are tables {id, at, size, users, rating,
// waiting}; `waiting` marks those stored on the server (the newcomer is not, yet).
constexpr std::string_view lua_common = R"lua(
local queue, waiting = KEYS[1], KEYS[2]
local prefix, channel = ARGV[1], ARGV[2]
local now, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local max_members, min_members = tonumber(ARGV[5]), tonumber(ARGV[6])
local complete_after, per_side = tonumber(ARGV[7]), tonumber(ARGV[8])

local function older(a, b)
  if a.at ~= b.at then return a.at < b.at end
  return tonumber(a.id) < tonumber(b.id)
end

local function party(id)
  local fields = redis.call('HMGET', prefix .. 'p:' .. id, 'at', 'size', 'users', 'rating')
  if not fields[1] then error('waiting party ' .. id .. ' has no hash') end
  return {id = id, at = tonumber(fields[1]), size = tonumber(fields[2]), users = fields[3],
          rating = tonumber(fields[4]), waiting = true}
end

-- The waiting parties within the window of `rating`, the nearest per_side on each side, oldest
-- first.
local function nearby(rating)
  local found = {}
  local above = redis.call('ZRANGEBYSCORE', queue, rating, rating + window, 'LIMIT', 0, per_side)
  local below = redis.call('ZREVRANGEBYSCORE', queue, '(' .. rating, rating - window,
                           'LIMIT', 0, per_side)
  for _, id in ipairs(above) do found[#found + 1] = party(id) end
  for _, id in ipairs(below) do found[#found + 1] = party(id) end
  table.sort(found, older)
  return found
end

-- Adds to `group` the parties younger than its anchor (so the anchor stays the longest-waiting)
-- within the anchor's window, oldest first, whole, while they fit. Returns the players count.
local function fill(anchor, group, total)
  if total >= max_members then return total end
  for _, candidate in ipairs(nearby(anchor.rating)) do
    if older(anchor, candidate) and total + candidate.size <= max_members then
      group[#group + 1] = candidate
      total = total + candidate.size
      if total == max_members then break end
    end
  end
  return total
end

local function complete(anchor, total)
  return total == max_members or
    (min_members > 0 and total >= min_members and now - anchor.at >= complete_after)
end

-- Removes the group's waiting parties and announces the room in one message.
local function claim(group, room)
  local ids, users = {}, {}
  for i, member in ipairs(group) do
    if member.waiting then
      redis.call('ZREM', queue, member.id)
      redis.call('ZREM', waiting, member.id)
      redis.call('DEL', prefix .. 'p:' .. member.id)
    end
    ids[i] = member.id
    users[i] = member.users
  end
  redis.call('PUBLISH', channel, '{"kind":"matched","room":"' .. room .. '","parties":[' ..
    table.concat(ids, ',') .. '],"users":[' .. table.concat(users, ',') .. ']}')
end
)lua";

// ARGV 9..13: party ID, rating, size, users (JSON array), anchors to try. Returns 1 when the
// newcomer was matched at once, 0 when it waits.
constexpr std::string_view lua_arrival = R"lua(
local newcomer = {id = ARGV[9], rating = tonumber(ARGV[10]), size = tonumber(ARGV[11]),
                  users = ARGV[12], at = now, waiting = false}
local anchors_max = tonumber(ARGV[13])
if complete(newcomer, newcomer.size) then
  claim({newcomer}, 'room-' .. newcomer.id)
  return 1
end
local tried = 0
for _, anchor in ipairs(nearby(newcomer.rating)) do
  if tried >= anchors_max then break end
  if anchor.size + newcomer.size <= max_members then
    tried = tried + 1
    local group = {anchor, newcomer}
    if complete(anchor, fill(anchor, group, anchor.size + newcomer.size)) then
      claim(group, 'room-' .. anchor.id)
      return 1
    end
  end
end
redis.call('ZADD', queue, newcomer.rating, newcomer.id)
redis.call('ZADD', waiting, now, newcomer.id)
redis.call('HSET', prefix .. 'p:' .. newcomer.id, 'at', ARGV[3], 'size', newcomer.size,
           'users', newcomer.users, 'rating', newcomer.rating)
return 0
)lua";

// ARGV 9..11: duration (ms), completeWhen anchors to try, parties to expire at most. Returns
// {parties expired, groups completed}.
constexpr std::string_view lua_sweep = R"lua(
local duration, anchors_max = tonumber(ARGV[9]), tonumber(ARGV[10])
local expired = redis.call('ZRANGEBYSCORE', waiting, '-inf', now - duration,
                           'LIMIT', 0, tonumber(ARGV[11]))
for _, id in ipairs(expired) do
  local users = redis.call('HGET', prefix .. 'p:' .. id, 'users')
  redis.call('ZREM', queue, id)
  redis.call('ZREM', waiting, id)
  redis.call('DEL', prefix .. 'p:' .. id)
  redis.call('PUBLISH', channel, '{"kind":"timed_out","parties":[' .. id .. '],"users":[' ..
    users .. ']}')
end
local groups = 0
if min_members > 0 then
  local due = redis.call('ZRANGEBYSCORE', waiting, '-inf', now - complete_after,
                         'LIMIT', 0, anchors_max)
  for _, id in ipairs(due) do
    if redis.call('ZSCORE', waiting, id) then
      local anchor = party(id)
      local group = {anchor}
      if complete(anchor, fill(anchor, group, anchor.size)) then
        claim(group, 'room-' .. id)
        groups = groups + 1
      end
    end
  end
end
return {#expired, groups}
)lua";

struct ReplyFree {
    void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// A blocking hiredis connection, owned by one thread at a time. Commands wait at most the
// command timeout; any failure is an error value naming the address.
class Connection {
public:
    [[nodiscard]] static std::expected<Connection, std::string> open(
        const RedisBaselineOptions& options) {
        const auto timeval_of = [](int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; };
        const std::string& address = options.address;
        redisContext* raw = nullptr;
        if (address.starts_with('/')) {
            raw = redisConnectUnixWithTimeout(address.c_str(),
                                              timeval_of(options.connect_timeout_ms));
        } else {
            const auto colon = address.rfind(':');
            int port = 0;
            const char* end = address.data() + address.size();
            if (colon == std::string::npos ||
                std::from_chars(address.data() + colon + 1, end, port).ptr != end || port <= 0 ||
                port > 65535) {
                return std::unexpected(fmt::format(
                    "redis baseline: address '{}' is neither host:port nor a socket path",
                    address));
            }
            raw = redisConnectWithTimeout(address.substr(0, colon).c_str(), port,
                                          timeval_of(options.connect_timeout_ms));
        }
        Connection connection(raw, address);
        if (raw == nullptr || raw->err != 0) {
            return std::unexpected(fmt::format("redis baseline: cannot connect to {}: {}", address,
                                               raw == nullptr ? "out of memory" : raw->errstr));
        }
        if (redisSetTimeout(raw, timeval_of(options.command_timeout_ms)) != REDIS_OK) {
            return std::unexpected(
                fmt::format("redis baseline: {}: cannot set a timeout", address));
        }
        return connection;
    }

    void append(const std::vector<std::string>& args) {
        std::vector<const char*> pointers;
        std::vector<std::size_t> lengths;
        for (const auto& arg : args) {
            pointers.push_back(arg.data());
            lengths.push_back(arg.size());
        }
        const int appended = redisAppendCommandArgv(context_.get(), static_cast<int>(args.size()),
                                                    pointers.data(), lengths.data());
        MM_ASSERT(appended == REDIS_OK);  // fails only when out of memory
    }

    // The next reply; an error reply from Redis is an error too. `what` names the command.
    [[nodiscard]] std::expected<Reply, std::string> read(std::string_view what) {
        void* raw = nullptr;
        if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
            return std::unexpected(
                fmt::format("redis baseline: {}: {}: {}", address_, what,
                            context_->errstr[0] != '\0' ? context_->errstr : "no reply in time"));
        }
        Reply reply(static_cast<redisReply*>(raw));
        if (reply->type == REDIS_REPLY_ERROR) {
            return std::unexpected(
                fmt::format("redis baseline: {}: {} failed: {}", address_, what, reply->str));
        }
        return reply;
    }

    [[nodiscard]] std::expected<Reply, std::string> command(const std::vector<std::string>& args) {
        append(args);
        return read(args.front());
    }

    [[nodiscard]] redisContext* context() { return context_.get(); }
    [[nodiscard]] const std::string& address() const { return address_; }

private:
    struct ContextFree {
        void operator()(redisContext* context) const { redisFree(context); }
    };
    Connection(redisContext* context, std::string address)
        : context_(context), address_(std::move(address)) {}

    std::unique_ptr<redisContext, ContextFree> context_;
    std::string address_;
};

// A field of an INFO reply ("name:value" lines), 0 when absent.
double info_field(std::string_view info, std::string_view name) {
    for (std::size_t start = 0; start < info.size();) {
        const std::size_t end = std::min(info.find('\n', start), info.size());
        const std::string_view line = info.substr(start, end - start);
        if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':') {
            double value = 0;
            const std::string_view text = line.substr(name.size() + 1);
            std::from_chars(text.data(), text.data() + text.size(), value);
            return value;
        }
        start = end + 1;
    }
    return 0;
}

[[nodiscard]] std::expected<std::string, std::string> info(Connection& connection,
                                                           const char* section) {
    auto reply = connection.command({"INFO", section});
    if (!reply) {
        return std::unexpected(reply.error());
    }
    return std::string((*reply)->str, (*reply)->len);
}

// One ticket type's keys and the script arguments that do not change during the run.
struct TypePlan {
    MatchRules rules;
    std::vector<std::string> keys_and_common;  // "2", KEYS, ARGV 1..8 except now (index 5)
};
constexpr std::size_t now_argument = 5;

// Everything the threads of one run share, owned by run_redis_baseline's stack frame. The
// workers own disjoint entries of `sent` and `send_lag_ms`; the subscriber owns the outcomes in
// `records` and its counters; the sweeper owns `peak_rss_bytes`. The run's own thread reads them
// only after joining the others.
struct RunState {
    RunState(const std::vector<Arrival>& arrivals_in, const RedisBaselineOptions& options_in)
        : arrivals(arrivals_in), options(options_in) {}

    const std::vector<Arrival>& arrivals;
    const RedisBaselineOptions& options;
    std::map<int, TypePlan> plans;
    std::string run_id;
    std::string channel;
    std::string arrival_sha;
    std::string sweep_sha;
    std::vector<std::string> users_json;  // per arrival
    std::vector<unsigned char> refused;   // per arrival: never sent
    Clock::time_point epoch;

    std::vector<TicketRecord> records;
    std::vector<unsigned char> sent;
    std::vector<double> send_lag_ms;
    std::atomic<std::size_t> finished{0};  // terminal notifications received
    std::size_t notifications = 0;
    std::size_t anomalies = 0;
    double peak_rss_bytes = 0;

    std::atomic<bool> stop{false};
    std::mutex error_mutex;
    std::string error;

    void fail(std::string message) {
        const std::lock_guard lock(error_mutex);
        if (error.empty()) {
            error = std::move(message);
        }
        stop = true;
    }
    [[nodiscard]] bool failed() {
        const std::lock_guard lock(error_mutex);
        return !error.empty();
    }
    [[nodiscard]] double now_ms() const {
        return std::chrono::duration<double, std::milli>(Clock::now() - epoch).count();
    }
    [[nodiscard]] Clock::time_point due(std::size_t index) const {
        return epoch + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(arrivals[index].at));
    }
    [[nodiscard]] std::vector<std::string> script_args(const std::string& sha, const TypePlan& plan,
                                                       double now) const {
        std::vector<std::string> args{"EVALSHA", sha};
        args.insert(args.end(), plan.keys_and_common.begin(), plan.keys_and_common.end());
        args[2 + now_argument] = fmt::format("{:.3f}", now);
        return args;
    }
};

// Sends this worker's share of the arrivals (every `workers`-th) at their scheduled times; the
// arrivals already due when it wakes go in one pipeline.
void send_arrivals(RunState& run, Connection connection, std::size_t worker) {
    const auto step = static_cast<std::size_t>(run.options.workers);
    std::size_t next = worker;
    std::vector<std::size_t> batch;
    while (next < run.arrivals.size() && !run.stop) {
        const auto now = Clock::now();
        if (now < run.due(next)) {
            std::this_thread::sleep_until(
                std::min(run.due(next), now + std::chrono::milliseconds(50)));
            continue;
        }
        batch.clear();
        const double now_ms = run.now_ms();
        for (; next < run.arrivals.size() && run.due(next) <= now; next += step) {
            if (run.refused[next] != 0) {
                continue;
            }
            const Arrival& arrival = run.arrivals[next];
            auto args = run.script_args(run.arrival_sha, run.plans.at(arrival.type), now_ms);
            args.insert(args.end(), {std::to_string(next), std::to_string(arrival.rating),
                                     std::to_string(arrival.users.size()), run.users_json[next],
                                     std::to_string(run.options.anchors_tried_max)});
            connection.append(args);
            batch.push_back(next);
        }
        for (const std::size_t index : batch) {
            if (auto reply = connection.read("the arrival script"); !reply) {
                run.fail(reply.error());
                return;
            }
            run.sent[index] = 1;
            run.send_lag_ms[index] = now_ms - run.arrivals[index].at * 1000.0;
        }
    }
}

// Records the outcome a notification carries for each party it names.
void on_notification(RunState& run, const redisReply& reply, double now_ms) {
    if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 3 ||
        reply.element[2]->type != REDIS_REPLY_STRING) {
        return;  // a subscription confirmation
    }
    ++run.notifications;
    const auto message = nlohmann::json::parse(
        std::string_view(reply.element[2]->str, reply.element[2]->len), nullptr, false);
    if (!message.is_object() || !message.contains("parties") || !message["parties"].is_array()) {
        ++run.anomalies;
        return;
    }
    const bool matched = message.value("kind", "") == "matched";
    for (const auto& party : message["parties"]) {
        const auto index =
            party.is_number_unsigned() ? party.get<std::size_t>() : run.records.size();
        if (index >= run.records.size() || run.records[index].outcome != Outcome::unfinished) {
            ++run.anomalies;
            continue;
        }
        TicketRecord& record = run.records[index];
        record.outcome = matched ? Outcome::matched : Outcome::timed_out;
        record.ended_s = now_ms / 1000.0;  // on the arrivals' clock, like the cluster's records
        record.ttm_ms = now_ms - run.arrivals[index].at * 1000.0;
        record.room = matched ? message.value("room", "") : "";
        ++run.finished;
    }
}

// The subscriber: reads notifications as they come, polling so that it notices the end.
void receive_notifications(RunState& run, Connection connection) {
    redisContext* context = connection.context();
    while (true) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(context, &raw) != REDIS_OK) {
            run.fail(fmt::format("redis baseline: {}: bad notification: {}", connection.address(),
                                 context->errstr));
            return;
        }
        if (raw != nullptr) {
            const Reply reply(static_cast<redisReply*>(raw));
            on_notification(run, *reply, run.now_ms());
            continue;
        }
        if (run.stop) {
            return;
        }
        pollfd ready{context->fd, POLLIN, 0};
        const int count = poll(&ready, 1, 20);
        if ((count < 0 && errno != EINTR) || (count > 0 && redisBufferRead(context) != REDIS_OK)) {
            run.fail(fmt::format("redis baseline: {}: the subscriber connection failed: {}",
                                 connection.address(), context->errstr));
            return;
        }
    }
}

// The sweeper: every interval, one sweep script run per ticket type (pipelined), and now and
// then a sample of the server's RSS.
void sweep(RunState& run, Connection connection) {
    const auto interval = std::chrono::milliseconds(run.options.sweep_interval_ms);
    auto next = Clock::now();
    for (std::size_t tick = 0; !run.stop; ++tick) {
        next = std::max(next + interval, Clock::now());
        std::this_thread::sleep_until(next);
        const double now_ms = run.now_ms();
        for (const auto& [type, plan] : run.plans) {
            auto args = run.script_args(run.sweep_sha, plan, now_ms);
            args.insert(args.end(), {fmt::format("{:.3f}", plan.rules.duration_s * 1000.0),
                                     std::to_string(run.options.sweep_anchors_max),
                                     std::to_string(run.options.sweep_expired_max)});
            connection.append(args);
        }
        for (std::size_t count = 0; count < run.plans.size(); ++count) {
            if (auto reply = connection.read("the sweep script"); !reply) {
                run.fail(reply.error());
                return;
            }
        }
        if (tick % 5 == 0) {
            auto memory = info(connection, "memory");
            if (!memory) {
                run.fail(memory.error());
                return;
            }
            run.peak_rss_bytes =
                std::max(run.peak_rss_bytes, info_field(*memory, "used_memory_rss"));
        }
    }
}

[[nodiscard]] std::expected<std::string, std::string> load_script(Connection& connection,
                                                                  std::string_view body) {
    auto reply = connection.command({"SCRIPT", "LOAD", fmt::format("{}{}", lua_common, body)});
    if (!reply) {
        return std::unexpected(reply.error());
    }
    return std::string((*reply)->str, (*reply)->len);
}

[[nodiscard]] std::expected<double, std::string> server_cpu_s(Connection& connection) {
    auto cpu = info(connection, "cpu");
    if (!cpu) {
        return std::unexpected(cpu.error());
    }
    return info_field(*cpu, "used_cpu_sys") + info_field(*cpu, "used_cpu_user");
}

// Deletes every key of the run (best effort: the run's result does not depend on it).
void delete_run_keys(Connection& connection, const std::string& run_id) {
    const std::string pattern = fmt::format("{{mm:{}:*", run_id);
    std::string cursor = "0";
    do {
        auto reply = connection.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
        if (!reply || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) {
            return;
        }
        const redisReply& keys = *(*reply)->element[1];
        cursor.assign((*reply)->element[0]->str, (*reply)->element[0]->len);
        if (keys.elements > 0) {
            std::vector<std::string> args{"UNLINK"};
            for (std::size_t index = 0; index < keys.elements; ++index) {
                args.emplace_back(keys.element[index]->str, keys.element[index]->len);
            }
            if (!connection.command(args)) {
                return;
            }
        }
    } while (cursor != "0");
}

// Checks the arrivals' types and prepares the per-run state (keys, records, refusals).
[[nodiscard]] std::expected<void, std::string> prepare(
    RunState& run, const std::map<int, config::TicketTypeConfig>& types) {
    std::random_device random;
    run.run_id = fmt::format("{:08x}{:08x}", random(), random());
    run.channel = fmt::format("mm:{}:events", run.run_id);
    run.records.resize(run.arrivals.size());
    run.sent.assign(run.arrivals.size(), 0);
    run.refused.assign(run.arrivals.size(), 0);
    run.send_lag_ms.assign(run.arrivals.size(), 0);
    for (std::size_t index = 0; index < run.arrivals.size(); ++index) {
        const Arrival& arrival = run.arrivals[index];
        const auto type = types.find(arrival.type);
        if (type == types.end()) {
            return std::unexpected(fmt::format(
                "redis baseline: arrival {} has ticket type {}, which is not configured", index,
                arrival.type));
        }
        if (!run.plans.contains(arrival.type)) {
            TypePlan plan{rules_for(type->second), {}};
            const std::string prefix = fmt::format("{{mm:{}:{}}}:", run.run_id, arrival.type);
            plan.keys_and_common = {"2",
                                    prefix + "q",
                                    prefix + "t",
                                    prefix,
                                    run.channel,
                                    "now",
                                    std::to_string(plan.rules.window),
                                    std::to_string(plan.rules.max_members),
                                    std::to_string(plan.rules.min_members.value_or(0)),
                                    fmt::format("{:.3f}", plan.rules.complete_after_s * 1000.0),
                                    std::to_string(run.options.candidates_per_side)};
            MM_ASSERT(plan.keys_and_common[now_argument] == "now");
            run.plans.emplace(arrival.type, std::move(plan));
        }
        TicketRecord& record = run.records[index];
        record.type = arrival.type;
        record.party_size = static_cast<int>(arrival.users.size());
        record.started_s = arrival.at;
        if (record.party_size > run.plans.at(arrival.type).rules.max_members) {
            record.outcome = Outcome::refused;
            record.refusal = "party_larger_than_max_members";
            run.refused[index] = 1;
            run.sent[index] = 1;
        }
        run.users_json.push_back(nlohmann::json(arrival.users).dump());
    }
    return {};
}

// Opens the connections, starts the threads, waits for every result or the deadline, and joins.
[[nodiscard]] std::expected<void, std::string> drive(RunState& run, Connection subscriber) {
    std::vector<Connection> senders;
    for (int worker = 0; worker < run.options.workers; ++worker) {
        auto connection = Connection::open(run.options);
        if (!connection) {
            return std::unexpected(connection.error());
        }
        senders.push_back(std::move(*connection));
    }
    auto sweeper = Connection::open(run.options);
    if (!sweeper) {
        return std::unexpected(sweeper.error());
    }
    run.epoch = Clock::now();
    std::jthread receiver(receive_notifications, std::ref(run), std::move(subscriber));
    std::jthread sweeping(sweep, std::ref(run), std::move(*sweeper));
    std::vector<std::jthread> workers;
    for (std::size_t worker = 0; worker < senders.size(); ++worker) {
        workers.emplace_back(send_arrivals, std::ref(run), std::move(senders[worker]), worker);
    }
    for (auto& worker : workers) {
        worker.join();
    }
    std::size_t expected = 0;
    for (std::size_t index = 0; index < run.arrivals.size(); ++index) {
        expected += run.sent[index] != 0 && run.refused[index] == 0 ? 1 : 0;
    }
    const double last_s = run.arrivals.empty() ? 0.0 : run.arrivals.back().at;
    const auto deadline =
        run.epoch + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(last_s + run.options.grace_s));
    while (!run.stop && run.finished < expected && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    run.stop = true;
    return {};
}

[[nodiscard]] BaselineRun collect(RunState& run, double cpu_s, double rss_before_bytes) {
    constexpr double mebibyte = 1024.0 * 1024.0;
    BaselineRun result;
    result.server_cpu_s = cpu_s;
    result.server_rss_before_mb = rss_before_bytes / mebibyte;
    result.server_peak_rss_mb = std::max(run.peak_rss_bytes, rss_before_bytes) / mebibyte;
    result.notifications = run.notifications;
    result.notification_anomalies = run.anomalies;
    std::vector<double> lags;
    for (std::size_t index = 0; index < run.arrivals.size(); ++index) {
        run.records[index].arrived = run.sent[index] != 0;
        run.records[index].started_s += run.send_lag_ms[index] / 1000;  // when it was sent
        if (run.sent[index] != 0 && run.refused[index] == 0) {
            lags.push_back(run.send_lag_ms[index]);
        }
    }
    std::sort(lags.begin(), lags.end());
    if (!lags.empty()) {
        const auto rank =
            static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(lags.size())));
        result.send_lag_ms_p99 = lags[std::clamp<std::size_t>(rank, 1, lags.size()) - 1];
        result.send_lag_ms_max = lags.back();
    }
    result.records = std::move(run.records);
    return result;
}

}  // namespace

std::expected<BaselineRun, std::string> run_redis_baseline(
    const std::vector<Arrival>& arrivals, const std::map<int, config::TicketTypeConfig>& types,
    const RedisBaselineOptions& options) {
    if (options.workers < 1 || options.sweep_interval_ms < 1 || options.candidates_per_side < 1 ||
        options.anchors_tried_max < 1 || options.sweep_anchors_max < 1 ||
        options.sweep_expired_max < 1) {
        return std::unexpected(
            std::string("redis baseline: workers, the sweep interval and the script "
                        "bounds must be at least 1"));
    }
    RunState run(arrivals, options);
    if (auto prepared = prepare(run, types); !prepared) {
        return std::unexpected(prepared.error());
    }
    auto control = Connection::open(options);
    if (!control) {
        return std::unexpected(control.error());
    }
    auto arrival_sha = load_script(*control, lua_arrival);
    auto sweep_sha = load_script(*control, lua_sweep);
    auto subscriber = Connection::open(options);
    if (!arrival_sha || !sweep_sha || !subscriber) {
        return std::unexpected(!arrival_sha ? arrival_sha.error()
                               : !sweep_sha ? sweep_sha.error()
                                            : subscriber.error());
    }
    run.arrival_sha = *arrival_sha;
    run.sweep_sha = *sweep_sha;
    if (auto subscribed = subscriber->command({"SUBSCRIBE", run.channel}); !subscribed) {
        return std::unexpected(subscribed.error());
    }
    auto cpu_before = server_cpu_s(*control);
    auto memory_before = info(*control, "memory");
    if (!cpu_before || !memory_before) {
        return std::unexpected(!cpu_before ? cpu_before.error() : memory_before.error());
    }
    auto driven = drive(run, std::move(*subscriber));
    auto cpu_after = server_cpu_s(*control);
    delete_run_keys(*control, run.run_id);
    if (!driven || run.failed() || !cpu_after) {
        return std::unexpected(!driven              ? driven.error()
                               : !run.error.empty() ? run.error
                                                    : cpu_after.error());
    }
    return collect(run, *cpu_after - *cpu_before, info_field(*memory_before, "used_memory_rss"));
}

}  // namespace matchmesh::bench
