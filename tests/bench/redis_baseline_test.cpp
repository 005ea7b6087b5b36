// The Redis baseline against a real redis-server started on a loopback port: a small trace
// matches the way rules.hpp says, and an unreachable server is a prompt error.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "bench/redis_baseline.hpp"

extern char** environ;

using namespace matchmesh::bench;
using namespace std::chrono_literals;

namespace {

std::optional<std::filesystem::path> find_on_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    std::string folders = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0; start <= folders.size();) {
        const std::size_t end = std::min(folders.find(':', start), folders.size());
        const std::filesystem::path candidate =
            std::filesystem::path(folders.substr(start, end - start)) / program;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        start = end + 1;
    }
    return std::nullopt;
}

// A loopback port that was free a moment ago: the OS picks it for a socket we then close.
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    ::close(fd);
    REQUIRE(bound);
    return ntohs(address.sin_port);
}

bool accepts_connections(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool connected =
        fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    if (fd >= 0) {
        ::close(fd);
    }
    return connected;
}

// A redis-server child process without persistence on a loopback port; killed by the destructor,
// so a failing test never leaves one behind.
class RedisServer {
public:
    RedisServer(const std::filesystem::path& binary, int port) : port_(port) {
        const std::string port_text = std::to_string(port);
        std::vector<std::string> args{
            binary.string(), "--port", port_text,     "--bind", "127.0.0.1", "--save", "",
            "--appendonly",  "no",     "--daemonize", "no"};
        std::vector<char*> argv;
        for (auto& arg : args) {
            argv.push_back(arg.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        const int spawned =
            posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0) {
            pid_ = -1;
        }
    }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;
    ~RedisServer() {
        if (pid_ <= 0) {
            return;
        }
        ::kill(pid_, SIGTERM);
        for (int waited_ms = 0; waited_ms < 3000; waited_ms += 10) {
            if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
                return;
            }
            std::this_thread::sleep_for(10ms);
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }

    // Waits up to 5 s for the server to accept connections.
    [[nodiscard]] bool ready() const {
        for (int waited_ms = 0; pid_ > 0 && waited_ms < 5000; waited_ms += 20) {
            if (accepts_connections(port_)) {
                return true;
            }
            std::this_thread::sleep_for(20ms);
        }
        return false;
    }

private:
    int port_;
    pid_t pid_ = -1;
};

std::map<int, matchmesh::config::TicketTypeConfig> test_types() {
    matchmesh::config::TicketTypeConfig duel;
    duel.type = 1;
    duel.max_members = 2;
    duel.allow_match = matchmesh::config::AllowMatchRule{"rating", 100};
    duel.ticket_duration_seconds = 3;
    matchmesh::config::TicketTypeConfig trio = duel;
    trio.type = 2;
    trio.max_members = 3;
    trio.complete_when = matchmesh::config::CompleteWhenRule{2, 1};
    return {{1, duel}, {2, trio}};
}

struct Room {
    int type = 0;
    int players = 0;
    std::vector<std::int64_t> ratings;
    double longest_wait_ms = 0;
};

}  // namespace

TEST_CASE(
    "bench/redis_baseline: a small trace matches in compatible rooms and the outlier times out") {
    const auto binary = find_on_path("redis-server");
    if (!binary) {
        std::fprintf(stderr,
                     "skipped: redis-server is not on PATH (Debian package redis-server; "
                     "scripts/setup.sh --with-bench installs it)\n");
        std::fflush(stderr);
        std::_Exit(77);  // SKIP_RETURN_CODE: CTest reports the test as skipped
    }
    const int port = free_port();
    const RedisServer server(*binary, port);
    REQUIRE_MESSAGE(server.ready(), "redis-server did not accept connections on port " << port);

    TraceShape shape;
    shape.rate = 20;
    shape.duration = 2;
    shape.types = {{1, 0.7}, {2, 0.3}};
    shape.party_sizes = {{2, {{1, 0.7}, {2, 0.3}}}};
    shape.rating_sd = 40;
    shape.seed = 7;
    auto arrivals = generate_trace(shape);
    REQUIRE(arrivals.size() >= 30);
    const std::size_t outlier = arrivals.size();  // nobody is within 100 of its rating
    arrivals.push_back(Arrival{arrivals.back().at + 0.05, 1, 9000, {"outlier"}});

    RedisBaselineOptions options;
    options.address = fmt::format("127.0.0.1:{}", port);
    options.grace_s = 5;
    const auto run = run_redis_baseline(arrivals, test_types(), options);
    REQUIRE_MESSAGE(run.has_value(), run.error());

    REQUIRE(run->records.size() == arrivals.size());
    CHECK(run->notification_anomalies == 0);
    CHECK(run->server_cpu_s > 0);
    CHECK(run->server_peak_rss_mb > 0);
    std::size_t matched = 0;
    std::map<std::string, Room> rooms;
    for (std::size_t index = 0; index < arrivals.size(); ++index) {
        const TicketRecord& record = run->records[index];
        CHECK(record.arrived);
        REQUIRE(record.outcome != Outcome::unfinished);
        CHECK(record.type == arrivals[index].type);
        if (record.outcome == Outcome::matched) {
            ++matched;
            Room& room = rooms[record.room];
            CHECK((room.type == 0 || room.type == record.type));
            room.type = record.type;
            room.players += record.party_size;
            room.ratings.push_back(arrivals[index].rating);
            room.longest_wait_ms = std::max(room.longest_wait_ms, record.ttm_ms);
        }
    }
    CHECK(run->records[outlier].outcome == Outcome::timed_out);
    CHECK(run->records[outlier].ttm_ms >= 3000 - 1);
    CHECK(run->records[outlier].ttm_ms < 3600);
    CHECK(static_cast<double>(matched) >= 0.8 * static_cast<double>(arrivals.size() - 1));

    for (const auto& [name, room] : rooms) {
        CAPTURE(name);
        // Someone in the room (the anchor) is within the window of everyone.
        const bool anchored =
            std::any_of(room.ratings.begin(), room.ratings.end(), [&](std::int64_t anchor) {
                return std::all_of(
                    room.ratings.begin(), room.ratings.end(),
                    [&](std::int64_t other) { return std::llabs(other - anchor) <= 100; });
            });
        CHECK(anchored);
        if (room.type == 1) {
            CHECK(room.players == 2);
        } else {
            CHECK((room.players == 2 || room.players == 3));
            if (room.players == 2) {
                // Only completeWhen closes a room short of max_members: its anchor waited 1 s.
                CHECK(room.longest_wait_ms >= 1000);
            }
        }
    }
}

TEST_CASE("bench/redis_baseline: an unreachable server is a prompt error naming the address") {
    RedisBaselineOptions options;
    options.address = fmt::format("127.0.0.1:{}", free_port());
    const auto began = std::chrono::steady_clock::now();
    const auto run = run_redis_baseline({Arrival{0.0, 1, 1500, {"alone"}}}, test_types(), options);
    REQUIRE_FALSE(run.has_value());
    CHECK(run.error().find(options.address) != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - began < 5s);

    options.address = "no-port-here";
    const auto malformed = run_redis_baseline({}, test_types(), options);
    REQUIRE_FALSE(malformed.has_value());
    CHECK(malformed.error().find("no-port-here") != std::string::npos);
}
