#pragma once
// NodeProcess: a real `matchmesh` process for multi-process tests. Listens on loopback ports the
// OS picks (port 0), which it reads back from the node's ready line; its stdout and stderr go to
// files in the test's folder. The destructor kills it if it still runs, so a failing test never
// leaves a node behind.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace integration {

// A fresh folder for one test's files; removed afterwards unless MATCHMESH_KEEP_TEST_FILES is set.
class TestFolder {
public:
    TestFolder();
    ~TestFolder();
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    std::filesystem::path write(const std::string& name, const std::string& contents) const;

private:
    std::filesystem::path path_;
};

// A cluster config with fast failure detection, for tests.
std::string test_config(const std::string& secret = "integration-secret-0123456789",
                        const std::string& extra_sections = "");

class NodeProcess {
public:
    // Starts `matchmesh --config <config> --id <id> ...` and waits for its ready line.
    static NodeProcess start(const TestFolder& folder, const std::string& id,
                             const std::filesystem::path& config,
                             const std::vector<std::string>& extra_args = {});
    // Starts and returns the exit code, for configurations that must be refused.
    static int run_to_exit(const TestFolder& folder, const std::string& name,
                           const std::vector<std::string>& args, std::string& stderr_text);

    NodeProcess(NodeProcess&& other) noexcept;
    NodeProcess& operator=(NodeProcess&&) = delete;
    ~NodeProcess();

    [[nodiscard]] const std::string& id() const { return id_; }
    [[nodiscard]] const std::string& mesh_address() const { return mesh_address_; }
    [[nodiscard]] const std::string& client_address() const { return client_address_; }
    [[nodiscard]] const std::string& admin_address() const { return admin_address_; }
    [[nodiscard]] pid_t pid() const { return pid_; }

    void send_signal(int signal) const;
    // Stops the node's event loop (its main thread) and nothing else, as a callback that never
    // returns would: the admin port's threads go on answering, where SIGSTOP would stop them too.
    // Through ptrace, which false says this process may not use on its child; thaw_loop() resumes
    // the loop, and so does the end of the test process.
    [[nodiscard]] bool freeze_loop();
    void thaw_loop();
    // Waits for the process to exit; its exit code, or nullopt on timeout.
    std::optional<int> wait(std::chrono::milliseconds timeout);
    [[nodiscard]] std::string stdout_text() const;
    [[nodiscard]] std::string log_text() const;

private:
    NodeProcess() = default;
    std::string id_;
    pid_t pid_ = -1;
    bool frozen_ = false;
    std::filesystem::path stdout_path_;
    std::filesystem::path log_path_;
    std::string mesh_address_;
    std::string client_address_;
    std::string admin_address_;
};

// Polls `condition` every 20 ms until it holds or `timeout` passes.
template <typename Condition>
bool eventually(Condition&& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return condition();
}

// Whether the node's metrics show `sample` (a name with its labels) at `value` within three
// seconds: they follow the node's counters once a second. If not, the test's log says what it was.
bool metric_becomes(const NodeProcess& node, const std::string& sample, double value);

// Whether the node's log shows `text` within two seconds.
inline bool logged(const NodeProcess& node, const std::string& text) {
    return eventually([&] { return node.log_text().find(text) != std::string::npos; },
                      std::chrono::seconds(2));
}

}  // namespace integration
