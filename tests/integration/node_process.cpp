#include "node_process.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <spawn.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/metrics.hpp"

extern char** environ;

namespace integration {
namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& out,
            const std::filesystem::path& err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (const auto& arg : args) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int result = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE_MESSAGE(result == 0, "cannot start ", args[0]);
    return pid;
}

}  // namespace

TestFolder::TestFolder() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "matchmesh-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
}

TestFolder::~TestFolder() {
    if (std::getenv("MATCHMESH_KEEP_TEST_FILES") != nullptr) {
        std::fprintf(stderr, "test files kept in %s\n", path_.c_str());
        return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path TestFolder::write(const std::string& name,
                                        const std::string& contents) const {
    const auto file = path_ / name;
    std::ofstream(file) << contents;
    return file;
}

std::string test_config(const std::string& secret, const std::string& extra_sections) {
    return R"({"cluster": {"name": "integration", "secret": ")" + secret +
           R"(", "heartbeatIntervalMs": 100, "deadAfterMs": 800, "requestTimeoutMs": 300},
 "matching": {"distributionRate": 50, "profiles": {"RankMatch": {"rank": 10}}})" +
           extra_sections + "}";
}

NodeProcess NodeProcess::start(const TestFolder& folder, const std::string& id,
                               const std::filesystem::path& config,
                               const std::vector<std::string>& extra_args) {
    NodeProcess process;
    process.id_ = id;
    process.stdout_path_ = folder.path() / (id + ".out");
    process.log_path_ = folder.path() / (id + ".log");
    std::vector<std::string> args{MATCHMESH_NODE_BINARY,
                                  "--config",
                                  config.string(),
                                  "--id",
                                  id,
                                  "--mesh-listen",
                                  "127.0.0.1:0",
                                  "--client-listen",
                                  "127.0.0.1:0",
                                  "--admin-listen",
                                  "127.0.0.1:0",
                                  "--log-level",
                                  "debug"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    process.pid_ = spawn(args, process.stdout_path_, process.log_path_);
    const bool started = eventually(
        [&] {
            // The ready line reads "matchmesh node ID ready: mesh M client C admin A cluster N".
            std::istringstream out(read_file(process.stdout_path_));
            std::string line;
            while (std::getline(out, line)) {
                const auto at = line.find("ready: ");
                if (at == std::string::npos) {
                    continue;
                }
                std::istringstream words(line.substr(at));
                std::string ready, mesh, client, admin;
                words >> ready >> mesh >> process.mesh_address_ >> client >>
                    process.client_address_ >> admin >> process.admin_address_;
                if (ready == "ready:" && mesh == "mesh" && client == "client" && admin == "admin" &&
                    words) {
                    return true;
                }
            }
            return false;
        },
        std::chrono::seconds(20));
    REQUIRE_MESSAGE(started, "node ", id, " did not get ready; log:\n", process.log_text());
    return process;
}

int NodeProcess::run_to_exit(const TestFolder& folder, const std::string& name,
                             const std::vector<std::string>& args, std::string& stderr_text) {
    std::vector<std::string> full{MATCHMESH_NODE_BINARY};
    full.insert(full.end(), args.begin(), args.end());
    const auto err = folder.path() / (name + ".err");
    const pid_t pid = spawn(full, folder.path() / (name + ".out"), err);
    int status = 0;
    const bool exited =
        eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(20));
    if (!exited) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL("node did not exit on its own: ", name);
    }
    stderr_text = read_file(err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

NodeProcess::NodeProcess(NodeProcess&& other) noexcept
    : id_(std::move(other.id_)),
      pid_(std::exchange(other.pid_, -1)),
      frozen_(std::exchange(other.frozen_, false)),
      stdout_path_(std::move(other.stdout_path_)),
      log_path_(std::move(other.log_path_)),
      mesh_address_(std::move(other.mesh_address_)),
      client_address_(std::move(other.client_address_)),
      admin_address_(std::move(other.admin_address_)) {}

NodeProcess::~NodeProcess() {
    if (pid_ > 0) {
        if (frozen_) {
            ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
        }
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
}

void NodeProcess::send_signal(int signal) const {
    REQUIRE(pid_ > 0);
    kill(pid_, signal);
}

bool NodeProcess::freeze_loop() {
    REQUIRE(pid_ > 0);
    REQUIRE_FALSE(frozen_);
    // The main thread's ID is the process's: seizing it traces that thread alone.
    if (ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) != 0) {
        return false;
    }
    REQUIRE(ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr) == 0);
    int status = 0;
    REQUIRE(waitpid(pid_, &status, __WALL) == pid_);
    REQUIRE(WIFSTOPPED(status));
    frozen_ = true;
    return true;
}

void NodeProcess::thaw_loop() {
    REQUIRE(frozen_);
    REQUIRE(ptrace(PTRACE_DETACH, pid_, nullptr, nullptr) == 0);
    frozen_ = false;
}

std::optional<int> NodeProcess::wait(std::chrono::milliseconds timeout) {
    int status = 0;
    const bool exited =
        eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!exited) {
        return std::nullopt;
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string NodeProcess::stdout_text() const {
    return read_file(stdout_path_);
}

std::string NodeProcess::log_text() const {
    return read_file(log_path_);
}

bool metric_becomes(const NodeProcess& node, const std::string& sample, double value) {
    double last = -1;
    const bool reached = eventually(
        [&] {
            last = matchmesh::node::read_metric(node.admin_address(), sample);
            return last == value;
        },
        std::chrono::seconds(3));
    if (!reached) {
        MESSAGE(sample, " is ", last, ", not ", value);
    }
    return reached;
}

}  // namespace integration
