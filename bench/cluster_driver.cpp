#include "bench/cluster_driver.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <unordered_set>

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "bench/team_check.hpp"
#include "mesh/asio/framed_stream.hpp"
#include "mesh/asio/tcp_transport.hpp"
#include "node/client_protocol.hpp"
#include "node/match_result.hpp"
#include "node/token.hpp"

namespace matchmesh::bench {
namespace {

using namespace matchmesh::node;
using Clock = std::chrono::steady_clock;
using StreamPtr = std::shared_ptr<mesh::FramedStream>;
constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);
constexpr std::size_t read_buffer_bytes = 4096;

class Driver {
public:
    Driver(const std::vector<Arrival>& arrivals, const ClusterDriverOptions& options)
        : arrivals_(arrivals), options_(options), random_(options.seed) {
        run_.records.resize(arrivals.size());
    }

    ClusterRun run();

private:
    asio::awaitable<void> arrive();
    // One arrival's party, while it plays.
    struct Party {
        const Arrival& arrival;
        TicketRecord& record;
        asio::steady_timer backoff;
        Clock::time_point patience_ends;
        Clock::time_point sent;  // its last startTicket
        std::vector<StreamPtr> streams;
        int connect_failures = 0;  // in a row
        std::chrono::milliseconds retry_after{0};  // a node's hint with its last refusal
        bool start_sent = false;                   // with the hello, its reply not read yet
    };
    enum class Start { accepted, refused, reconnect };

    asio::awaitable<void> play(std::size_t index);
    asio::awaitable<std::string> connect_party(Party& party);
    asio::awaitable<void> take_connect_turn(TicketRecord& record);
    void end_connect_turn();
    asio::awaitable<Start> start_ticket(Party& party);
    StartTicketCommand start_command(const Party& party) const;
    asio::awaitable<void> await_end(Party& party);
    void check_team_match(const Party& party, const ticket::PushMessage& push);
    asio::awaitable<bool> wait_to_retry(Party& party, std::chrono::milliseconds pause);
    std::chrono::milliseconds backoff(int base_ms, int failures, int hint_ms);
    void hang_up(Party& party);
    asio::awaitable<StreamPtr> open(const std::string& user, Party& party, std::string& error);
    bool bind_source(mesh::FramedStream& stream, const asio::ip::tcp::endpoint& endpoint,
                     std::string& error);
    asio::awaitable<bool> connect_within(const StreamPtr& stream,
                                         const asio::ip::tcp::endpoint& endpoint,
                                         const std::string& address, std::string& error);
    asio::awaitable<bool> say_hello(const StreamPtr& stream, const std::string& user,
                                    std::string& error, std::chrono::milliseconds& retry_after,
                                    mesh::Frame then);
    asio::awaitable<std::expected<ServerMessage, std::string>> receive(const StreamPtr& stream);
    asio::awaitable<std::expected<ClientReply, std::string>> next_reply(const StreamPtr& stream);
    asio::awaitable<std::expected<ClientReply, std::string>> call(const StreamPtr& stream,
                                                                  ClientRequest request);
    asio::awaitable<void> drain_member(StreamPtr stream, int type);
    asio::awaitable<void> sample_lag();
    void close(const StreamPtr& stream);
    void progress() const;

    const std::vector<Arrival>& arrivals_;
    const ClusterDriverOptions& options_;
    asio::io_context context_;
    std::mt19937_64 random_;
    ClusterRun run_;
    std::unordered_set<StreamPtr> open_;
    std::size_t parties_running_ = 0;
    std::size_t backing_off_ = 0;  // connections held by players waiting to try again
    std::size_t connecting_ = 0;   // players connecting now (at most options_.connects_max)
    std::deque<asio::steady_timer*> connect_turns_;  // players waiting to connect, in order
    Clock::time_point began_;
    Clock::time_point last_arrival_;
    bool arrivals_done_ = false;
    bool stopping_ = false;
};

void Driver::close(const StreamPtr& stream) {
    stream->close();
    open_.erase(stream);
}

// A connection to a node picked at random for a player of `party`, said hello to as `user`; null
// with `error` on failure (and the party's `retry_after` if the node said when to try again).
asio::awaitable<StreamPtr> Driver::open(const std::string& user, Party& party,
                                        std::string& error) {
    const std::string& address = options_.nodes[std::uniform_int_distribution<std::size_t>(
        0, options_.nodes.size() - 1)(random_)];
    auto parts = mesh::split_host_port(address);
    if (!parts) {
        error = parts.error();
        co_return nullptr;
    }
    auto stream = std::make_shared<mesh::FramedStream>(context_, read_buffer_bytes);
    open_.insert(stream);
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(parts->host), parts->port);
    co_await take_connect_turn(party.record);
    bool ready = bind_source(*stream, endpoint, error);
    if (ready) {
        ready = co_await connect_within(stream, endpoint, address, error);
    }
    end_connect_turn();
    // A player alone sends its startTicket with its hello, as a client may: one round trip
    // less before its ticket starts. A party's owner waits until its members have said hello.
    mesh::Frame start;
    if (ready && party.arrival.users.size() == 1) {
        start = encode_request(ClientRequest{2, start_command(party)});
        party.sent = Clock::now();
    }
    if (ready) {
        const bool with_start = !start.empty();
        ready = co_await say_hello(stream, user, error, party.retry_after, std::move(start));
        party.start_sent = ready && with_start;
    }
    if (!ready) {
        close(stream);
        co_return nullptr;
    }
    if (party.streams.empty()) {
        party.record.node = address;  // the owner's node
    }
    co_return stream;
}

// Players come from many addresses. From one, a few hundred thousand connections a minute would
// exhaust its ports to the node (each closed one waits a minute), and the kernel would search ever
// longer for a free one: so each comes from its own loopback address.
bool Driver::bind_source(mesh::FramedStream& stream, const asio::ip::tcp::endpoint& endpoint,
                         std::string& error) {
    if (!endpoint.address().is_loopback() || !endpoint.address().is_v4()) {
        return true;
    }
    std::uniform_int_distribution<unsigned> octet(1, 254);
    const asio::ip::address_v4 source(asio::ip::address_v4::bytes_type{
        127, static_cast<unsigned char>(octet(random_)), static_cast<unsigned char>(octet(random_)),
        static_cast<unsigned char>(octet(random_))});
    std::error_code bind_error;
    stream.socket.open(asio::ip::tcp::v4(), bind_error);
    if (!bind_error) {
        stream.socket.bind(asio::ip::tcp::endpoint(source, 0), bind_error);
    }
    if (bind_error) {
        error = "cannot bind a loopback source address: " + bind_error.message();
        return false;
    }
    return true;
}

// A node whose accept queue is full drops the handshake and the kernel retries it for minutes: a
// player gives up after a few seconds instead, and tries again like any failure.
asio::awaitable<bool> Driver::connect_within(const StreamPtr& stream,
                                             const asio::ip::tcp::endpoint& endpoint,
                                             const std::string& address, std::string& error) {
    asio::steady_timer give_up(context_);
    give_up.expires_after(std::chrono::seconds(3));
    give_up.async_wait([stream](std::error_code expired) {
        if (!expired) {
            std::error_code ignored;
            stream->socket.close(ignored);
        }
    });
    auto [connect_error] = co_await stream->socket.async_connect(endpoint, use_nothrow);
    give_up.cancel();
    if (connect_error) {
        error = fmt::format("cannot connect to {}: {}", address, connect_error.message());
        co_return false;
    }
    std::error_code ignored;
    stream->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    co_return true;
}

// Says hello and reads its reply; `then`, if not empty, is written in the same write, so that the
// node reads both at once.
asio::awaitable<bool> Driver::say_hello(const StreamPtr& stream, const std::string& user,
                                        std::string& error, std::chrono::milliseconds& retry_after,
                                        mesh::Frame then) {
    HelloCommand hello{UserId(user), "", {}};
    if (!options_.token_secret.empty()) {
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::system_clock::now().time_since_epoch());
        hello.token =
            make_token(options_.token_secret, user, static_cast<std::uint64_t>(now.count()) + 3600);
    }
    mesh::Frame frames = encode_request(ClientRequest{1, std::move(hello)});
    frames.insert(frames.end(), then.begin(), then.end());
    if (!co_await stream->write_now(std::move(frames))) {
        error = "connection lost";
        co_return false;
    }
    auto reply = co_await next_reply(stream);
    if (!reply) {
        error = reply.error();
        co_return false;
    }
    if (auto* refused = std::get_if<ReplyError>(&reply->body)) {
        error = fmt::format("hello refused: {} ({})", refused->message, refused->category);
        retry_after = std::chrono::milliseconds(refused->retry_after_ms);
        co_return false;
    }
    co_return true;
}

asio::awaitable<std::expected<ServerMessage, std::string>> Driver::receive(
    const StreamPtr& stream) {
    std::vector<capnp::word> body;
    mesh::FrameLimits limits;
    limits.frame_bytes_max = 16 * 1024 * 1024;
    auto read = co_await stream->read_frame(limits, body);
    if (!read) {
        co_return std::unexpected(read.error().reason);
    }
    co_return decode_server_message(body, limits.reader_options());
}

asio::awaitable<std::expected<ClientReply, std::string>> Driver::call(const StreamPtr& stream,
                                                                      ClientRequest request) {
    mesh::Frame frame = encode_request(request);
    if (!co_await stream->write_now(std::move(frame))) {
        co_return std::unexpected("connection lost");
    }
    co_return co_await next_reply(stream);
}

// The next reply on the connection; pushes before it are skipped.
asio::awaitable<std::expected<ClientReply, std::string>> Driver::next_reply(
    const StreamPtr& stream) {
    while (true) {
        auto message = co_await receive(stream);
        if (!message) {
            co_return std::unexpected(message.error());
        }
        if (auto* reply = std::get_if<ClientReply>(&*message)) {
            co_return std::move(*reply);
        }
    }
}

// A party member's connection: read its pushes until its ticket ends, so the node's outbox for
// it never fills, and count them.
asio::awaitable<void> Driver::drain_member(StreamPtr stream, int type) {
    while (!stopping_) {
        auto message = co_await receive(stream);
        if (!message) {
            break;
        }
        if (auto* push = std::get_if<ticket::PushMessage>(&*message)) {
            ++run_.party_member_pushes;
            if (push->ticket_type == type && ticket::is_terminal(push->kind)) {
                break;
            }
        }
    }
    close(stream);
}

// One party: its players connect (each to a node picked at random) and the owner starts the
// ticket. Refused as overloaded, it tries again after the node's hint, as a client SDK would,
// until the retry patience runs out: on the same connections while this process holds fewer
// than `backoff_connections_max` for players backing off, else it hangs up and connects anew
// (possibly to another node), so that one process can stand for tens of thousands of players.
// Accepted, the owner reads pushes until its ticket ends.
asio::awaitable<void> Driver::play(std::size_t index) {
    ++parties_running_;
    Party party{arrivals_[index], run_.records[index], asio::steady_timer(context_), {}, {}, {}, 0, {}};
    TicketRecord& record = party.record;
    record.arrived = true;
    record.type = party.arrival.type;
    record.party_size = static_cast<int>(party.arrival.users.size());
    record.user = party.arrival.users.front();
    record.started_s = std::chrono::duration<double>(Clock::now() - began_).count();
    // Counted from when the player was due, so that a driver running late does not stretch it.
    party.patience_ends =
        began_ + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(party.arrival.at + options_.retry_patience_s));
    while (true) {
        const std::string error = co_await connect_party(party);
        if (!error.empty()) {
            // Could not connect (a node at its connection limit, or this process out of
            // descriptors): try again after 1 s, 2 s, ... or the node's hint, as a client would.
            hang_up(party);
            const std::chrono::milliseconds pause = backoff(
                1000, party.connect_failures++, static_cast<int>(party.retry_after.count()));
            party.retry_after = {};
            if (co_await wait_to_retry(party, pause)) {
                continue;
            }
            record.outcome = Outcome::refused;
            record.refusal = error;
            break;
        }
        if (Clock::now() >= party.patience_ends) {
            // Connecting took the rest of its patience: a player accepted now could still be
            // waiting when the run ends, and be counted lost for the driver's sake.
            hang_up(party);
            record.outcome = Outcome::refused;
            record.refusal = "retry patience ran out while connecting";
            break;
        }
        party.connect_failures = 0;
        for (std::size_t member = 1; member < party.streams.size(); ++member) {
            asio::co_spawn(context_, drain_member(party.streams[member], party.arrival.type),
                           asio::detached);
        }
        const Start started = co_await start_ticket(party);
        if (started == Start::reconnect) {
            continue;
        }
        if (started == Start::accepted) {
            record.accepted = true;
            co_await await_end(party);
        }
        break;
    }
    --parties_running_;
}

// The pause before trying again: `base_ms` doubled for each failure in a row, up to 8 s or the
// node's hint if that is longer, and jittered over its upper half.
std::chrono::milliseconds Driver::backoff(int base_ms, int failures, int hint_ms) {
    const int longest = std::max(hint_ms, std::min(8000, base_ms << std::min(failures, 5)));
    return std::chrono::milliseconds(
        std::uniform_int_distribution<int>(longest / 2, longest)(random_));
}

void Driver::hang_up(Party& party) {
    for (const auto& stream : party.streams) {
        close(stream);
    }
    party.streams.clear();
}

// Waits `pause` unless it would end past the patience or the run stops first.
asio::awaitable<bool> Driver::wait_to_retry(Party& party, std::chrono::milliseconds pause) {
    if (stopping_ || Clock::now() + pause >= party.patience_ends) {
        co_return false;
    }
    ++party.record.retries;
    party.backoff.expires_after(pause);
    co_await party.backoff.async_wait(use_nothrow);
    co_return !stopping_;
}

// Waits until fewer than `connects_max` players of this process are connecting, and counts the
// wait in the player's record.
asio::awaitable<void> Driver::take_connect_turn(TicketRecord& record) {
    if (connecting_ < options_.connects_max) {
        ++connecting_;
        co_return;
    }
    const Clock::time_point queued = Clock::now();
    asio::steady_timer turn(context_, Clock::time_point::max());
    connect_turns_.push_back(&turn);
    co_await turn.async_wait(use_nothrow);  // woken by end_connect_turn, which passes its turn
    record.connect_wait_ms +=
        std::chrono::duration<double, std::milli>(Clock::now() - queued).count();
}

void Driver::end_connect_turn() {
    if (connect_turns_.empty()) {
        --connecting_;
        return;
    }
    connect_turns_.front()->cancel();
    connect_turns_.pop_front();
}

asio::awaitable<void> Driver::sample_lag() {
    asio::steady_timer timer(context_);
    while (!stopping_) {
        const Clock::time_point due = Clock::now() + std::chrono::milliseconds(10);
        timer.expires_at(due);
        co_await timer.async_wait(use_nothrow);
        run_.lag_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - due).count());
    }
}

// Connects every player of the party; a member accepts its owner's party. The error, if any.
asio::awaitable<std::string> Driver::connect_party(Party& party) {
    std::string error;
    for (const std::string& user : party.arrival.users) {
        StreamPtr stream = co_await open(user, party, error);
        if (stream && !party.streams.empty()) {
            ClientRequest accept{
                3, AcceptPartyCommand{static_cast<ticket::TicketType>(party.arrival.type),
                                      UserId(party.arrival.users.front())}};
            auto accepted = co_await call(stream, std::move(accept));
            if (!accepted || std::holds_alternative<ReplyError>(accepted->body)) {
                error = "a party member could not accept the party";
                close(stream);
                stream = nullptr;
            }
        }
        if (!stream) {
            co_return error.empty() ? std::string("cannot connect") : error;
        }
        party.streams.push_back(std::move(stream));
    }
    co_return std::string();
}

// The owner starts the ticket, trying again after each `overloaded` while its patience lasts.
asio::awaitable<Driver::Start> Driver::start_ticket(Party& party) {
    TicketRecord& record = party.record;
    while (true) {
        std::expected<ClientReply, std::string> reply;
        if (party.start_sent) {  // with the hello
            party.start_sent = false;
            reply = co_await next_reply(party.streams.front());
        } else {
            party.sent = Clock::now();
            // Named: GCC 12 may destroy a temporary argument of a co_await twice.
            ClientRequest request{2, start_command(party)};
            reply = co_await call(party.streams.front(), std::move(request));
        }
        const auto* refused = reply ? std::get_if<ReplyError>(&reply->body) : nullptr;
        if (refused != nullptr && refused->category == wire_name(ClientErrc::overloaded)) {
            // The node's hint, doubled for each refusal in a row: the players a node turned
            // away come back spread out, not as one wave, and never sooner than it asked.
            const int hint = refused->retry_after_ms > 0 ? refused->retry_after_ms : 1000;
            const std::chrono::milliseconds pause = backoff(hint, record.retries, hint);
            const bool hold = backing_off_ < options_.backoff_connections_max;
            if (!hold) {
                hang_up(party);
            }
            backing_off_ += hold ? party.streams.size() : 0;
            const bool again = co_await wait_to_retry(party, pause);
            backing_off_ -= hold ? party.streams.size() : 0;
            if (again) {
                if (hold) {
                    continue;
                }
                co_return Start::reconnect;
            }
        }
        if (!reply || refused != nullptr) {
            record.outcome = Outcome::refused;
            record.refusal = reply ? refused->category : reply.error();
            hang_up(party);
            co_return Start::refused;
        }
        record.accepted_s = std::chrono::duration<double>(party.sent - began_).count();
        co_return Start::accepted;
    }
}

StartTicketCommand Driver::start_command(const Party& party) const {
    StartTicketCommand start;
    start.ticket_type = static_cast<ticket::TicketType>(party.arrival.type);
    start.values[options_.value_name] = party.arrival.rating;
    for (std::size_t member = 1; member < party.arrival.users.size(); ++member) {
        start.party.emplace_back(party.arrival.users[member]);
    }
    return start;
}

// The owner reads pushes until its ticket's terminal one, which decides the record's outcome.
asio::awaitable<void> Driver::await_end(Party& party) {
    TicketRecord& record = party.record;
    while (true) {
        auto message = co_await receive(party.streams.front());
        if (!message) {
            break;  // closed: unfinished
        }
        auto* push = std::get_if<ticket::PushMessage>(&*message);
        if (push == nullptr || push->ticket_type != party.arrival.type ||
            !ticket::is_terminal(push->kind)) {
            continue;
        }
        const Clock::time_point ended = Clock::now();
        record.ended_s = std::chrono::duration<double>(ended - began_).count();
        // From when the player was due, or from when it started if that was earlier (players
        // due within the same millisecond start together): never a negative wait.
        record.ttm_ms =
            (record.ended_s - std::min(party.arrival.at, record.started_s)) * 1000;
        record.room = push->room_id;
        record.outcome = outcome_of(push->kind);
        if (record.outcome == Outcome::matched) {
            check_team_match(party, *push);
        }
        break;
    }
    close(party.streams.front());
}

// A team type's match, as its 220 tells every owner: the roster against the type's rules (each
// owner of the room checks the same match, so every match is checked), and the roster names the
// room of the push and every player of this party.
void Driver::check_team_match(const Party& party, const ticket::PushMessage& push) {
    const auto rules = options_.teams.find(party.arrival.type);
    if (rules == options_.teams.end()) {
        return;
    }
    TicketRecord& record = party.record;
    const auto result = decode_match_result(push.payload);
    if (!result) {
        record.violations = {"no_match_result"};
        return;
    }
    const TeamMatchCheck check = bench::check_team_match(*result, rules->second);
    record.side_difference = check.side_difference;
    record.spread = check.spread;
    record.violations = check.violations;
    if (result->room_id != push.room_id) {
        record.violations.emplace_back("other_room");
    }
    for (const std::string& user : party.arrival.users) {
        const bool listed = std::any_of(result->members.begin(), result->members.end(),
                                        [&](const MatchedPlayer& p) { return p.user.str() == user; });
        if (!listed) {
            record.violations.emplace_back("player_missing");
            break;
        }
    }
}

// Players due within a millisecond of each other start together: one timer a millisecond
// rather than one a player, which at thousands of players a second re-armed the kernel's timer
// for each (an eighth of this process's time at 12,000 a second).
asio::awaitable<void> Driver::arrive() {
    constexpr auto batch = std::chrono::milliseconds(1);
    const auto due = [this](std::size_t index) {
        return began_ + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(arrivals_[index].at));
    };
    asio::steady_timer timer(context_);
    std::size_t index = 0;
    while (index < arrivals_.size() && !stopping_) {
        timer.expires_at(due(index));
        co_await timer.async_wait(use_nothrow);
        const auto until = Clock::now() + batch;
        for (; index < arrivals_.size() && due(index) <= until; ++index) {
            asio::co_spawn(context_, play(index), asio::detached);
            last_arrival_ = due(index);
        }
    }
    arrivals_done_ = true;
}

void Driver::progress() const {
    std::size_t matched = 0;
    std::size_t timed_out = 0;
    std::size_t started = 0;
    for (const auto& record : run_.records) {
        started += record.arrived ? 1 : 0;
        matched += record.outcome == Outcome::matched ? 1 : 0;
        timed_out += record.outcome == Outcome::timed_out ? 1 : 0;
    }
    std::fprintf(stderr, "  %5.1fs  started %zu  matched %zu  timed out %zu  in progress %zu\n",
                 std::chrono::duration<double>(Clock::now() - began_).count(), started, matched,
                 timed_out, parties_running_);
}

ClusterRun Driver::run() {
    // One connection per player: make room for many.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    began_ = Clock::now();
    last_arrival_ = began_;
    asio::co_spawn(context_, arrive(), asio::detached);
    asio::co_spawn(context_, sample_lag(), asio::detached);
    const double last = arrivals_.empty() ? 0 : arrivals_.back().at;
    // A player may be accepted as late as its retry patience after arriving; then its ticket
    // has the grace to end. (A run whose parties all ended stops at once.)
    const auto hard_end =
        began_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                     last + options_.retry_patience_s + options_.grace_s));
    auto next_progress = began_ + std::chrono::seconds(5);
    while (Clock::now() < hard_end) {
        context_.run_for(std::chrono::milliseconds(100));
        if (options_.progress && Clock::now() >= next_progress) {
            progress();
            next_progress += std::chrono::seconds(5);
        }
        if (arrivals_done_ && parties_running_ == 0) {
            break;
        }
    }
    // Whatever is still waiting now is reported as unfinished.
    stopping_ = true;
    const auto still_open = open_;
    for (const auto& stream : still_open) {
        close(stream);
    }
    context_.run_for(std::chrono::seconds(2));
    for (TicketRecord& record : run_.records) {
        if (record.arrived && !record.accepted && record.outcome == Outcome::unfinished) {
            // Still connecting or backing off: never accepted, so not lost.
            record.outcome = Outcome::refused;
            record.refusal = "still trying to start when the run ended";
        }
    }
    run_.window_s = std::chrono::duration<double>(last_arrival_ - began_).count();
    return std::move(run_);
}

}  // namespace

ClusterRun drive_cluster(const std::vector<Arrival>& arrivals,
                         const ClusterDriverOptions& options) {
    Driver driver(arrivals, options);
    return driver.run();
}

ClusterRun drive_cluster_in_processes(const std::vector<Arrival>& arrivals,
                                      const ClusterDriverOptions& options, int processes) {
    if (processes <= 1) {
        return drive_cluster(arrivals, options);
    }
    const auto folder = std::filesystem::temp_directory_path();
    std::vector<std::pair<pid_t, std::filesystem::path>> children;
    for (int k = 0; k < processes; ++k) {
        const auto path = folder / fmt::format("matchmesh-bench-{}-{}.jsonl", getpid(), k);
        const pid_t child = fork();
        if (child < 0) {
            std::perror("matchmesh-bench: fork");
            std::exit(3);
        }
        if (child == 0) {
            std::vector<Arrival> mine;
            for (std::size_t i = static_cast<std::size_t>(k); i < arrivals.size();
                 i += static_cast<std::size_t>(processes)) {
                mine.push_back(arrivals[i]);
            }
            ClusterDriverOptions own = options;
            own.progress = options.progress && k == 0;
            own.seed = options.seed + static_cast<std::uint64_t>(k);
            const ClusterRun run = drive_cluster(mine, own);
            std::ofstream out(path);
            out << nlohmann::json{{"party_member_pushes", run.party_member_pushes},
                                  {"window_s", run.window_s},
                                  {"lag_ms", run.lag_ms}}
                       .dump()
                << "\n";
            for (const TicketRecord& record : run.records) {
                out << record_json(record).dump() << "\n";
            }
            out.close();
            std::_Exit(out ? 0 : 3);
        }
        children.emplace_back(child, path);
    }
    ClusterRun merged;
    merged.records.resize(arrivals.size());
    for (std::size_t k = 0; k < children.size(); ++k) {
        int status = 0;
        waitpid(children[k].first, &status, 0);
        std::ifstream in(children[k].second);
        std::string line;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !std::getline(in, line)) {
            std::fprintf(stderr, "matchmesh-bench: player process %zu failed\n", k);
            std::exit(3);
        }
        const auto head = nlohmann::json::parse(line);
        merged.party_member_pushes += head.at("party_member_pushes").get<std::size_t>();
        merged.window_s = std::max(merged.window_s, head.at("window_s").get<double>());
        const auto lag = head.at("lag_ms").get<std::vector<double>>();
        merged.lag_ms.insert(merged.lag_ms.end(), lag.begin(), lag.end());
        for (std::size_t i = k; std::getline(in, line); i += children.size()) {
            merged.records[i] = record_of(nlohmann::json::parse(line));
        }
        std::filesystem::remove(children[k].second);
    }
    return merged;
}

}  // namespace matchmesh::bench
