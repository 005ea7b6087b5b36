// matchmesh-bench-mesh: remote Search round trips between two nodes in one process, next to the
// loopback TCP round trip measured the same way (our floor).
//
// Each node runs its own io_context on its own thread, pinned to the CPUs given with --cpus
// (default 0,1), and the loopback floor uses the same pinning. Node A searches a bucket that
// only node B holds (distributionRate 50 over two nodes: one replica per key), so every search
// is a request over the mesh, answered with --items items.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/sinks/null_sink.h>
#include <CLI/CLI.hpp>
#include <asio/connect.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <matchmesh/version.hpp>
#include <nlohmann/json.hpp>

#include "matching/service.hpp"
#include "mesh/asio/asio_scheduler.hpp"
#include "mesh/asio/tcp_transport.hpp"
#include "mesh/mesh_core.hpp"

namespace {

using namespace matchmesh;
using Clock = std::chrono::steady_clock;

void pin_to(int cpu) {
    if (cpu < 0) {
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

double percentile(std::vector<double> samples, double fraction) {
    std::sort(samples.begin(), samples.end());
    const auto index = static_cast<std::size_t>(fraction * static_cast<double>(samples.size() - 1));
    return samples[index];
}

// The floor: an 8-byte ping-pong over one loopback TCP connection between two pinned threads.
std::vector<double> loopback_rtts(int cpu_a, int cpu_b, int rounds) {
    asio::io_context context;
    asio::ip::tcp::acceptor acceptor(context, {asio::ip::make_address("127.0.0.1"), 0});
    const auto endpoint = acceptor.local_endpoint();
    std::thread echo([&] {
        pin_to(cpu_b);
        asio::ip::tcp::socket socket = acceptor.accept();
        socket.set_option(asio::ip::tcp::no_delay(true));
        std::array<char, 8> buffer{};
        for (int i = 0; i < rounds; ++i) {
            asio::read(socket, asio::buffer(buffer));
            asio::write(socket, asio::buffer(buffer));
        }
    });
    pin_to(cpu_a);
    asio::ip::tcp::socket socket(context);
    socket.connect(endpoint);
    socket.set_option(asio::ip::tcp::no_delay(true));
    std::array<char, 8> buffer{};
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(rounds));
    for (int i = 0; i < rounds; ++i) {
        const auto start = Clock::now();
        asio::write(socket, asio::buffer(buffer));
        asio::read(socket, asio::buffer(buffer));
        samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    echo.join();
    return samples;
}

// One node: mesh over TCP and the matching service, on its own thread.
struct BenchNode {
    asio::io_context context;
    mesh::AsioScheduler scheduler{context};
    std::unique_ptr<mesh::TcpTransport> transport;
    std::unique_ptr<mesh::MeshCore> core;
    std::unique_ptr<matching::MatchingService> matching;
    std::thread thread;

    BenchNode(const std::string& id, const std::string& seed) {
        mesh::TcpOptions options;
        options.listen = "127.0.0.1:0";
        options.cluster = "bench";
        options.secret = "bench-secret-0123456789";
        transport = std::make_unique<mesh::TcpTransport>(
            context, options,
            std::make_shared<spdlog::logger>("bench",
                                             std::make_shared<spdlog::sinks::null_sink_mt>()));
        auto endpoint = transport->listen();
        if (!endpoint) {
            std::fprintf(stderr, "matchmesh-bench-mesh: %s\n", endpoint.error().c_str());
            std::exit(1);
        }
        const mesh::MemberInfo self{NodeId(id), fmt::format("127.0.0.1:{}", endpoint->port()),
                                    "HTTP", 1};
        core = std::make_unique<mesh::MeshCore>(self, mesh::MeshOptions{}, scheduler, *transport);
        matching::ServiceOptions service;
        service.replicas.distribution_rate = 50;
        matching = std::make_unique<matching::MatchingService>(*core, scheduler, service);
        (void)matching->profiles().define("Bench", {{"rank", 1}});
        core->start();
        transport->start(
            *core, seed.empty() ? std::vector<std::string>{} : std::vector<std::string>{seed});
    }

    void run_on(int cpu) {
        thread = std::thread([this, cpu] {
            pin_to(cpu);
            auto guard = asio::make_work_guard(context);
            context.run();
        });
    }

    // Runs `task` on the node's thread and waits for its result.
    template <typename Task>
    auto call(Task&& task) {
        std::packaged_task<decltype(task())()> packaged(std::forward<Task>(task));
        auto result = packaged.get_future();
        asio::post(context, [&packaged] { packaged(); });
        return result.get();
    }

    void stop() {
        call([this] {
            matching.reset();
            core->leave();
            transport->stop();
            scheduler.clear();
            return 0;
        });
        context.stop();
        thread.join();
    }
};

struct Options {
    std::vector<int> cpus{0, 1};
    int rounds = 20000;
    int in_flight = 256;
    double pipelined_seconds = 3.0;
    int items = 20;
    std::string json_path;
};

// A rank whose bucket only node B holds, with `items` items in it added on B.
std::int64_t rank_held_by_b(BenchNode& a, BenchNode& b, int items) {
    const std::int64_t rank = a.call([&a] {
        std::vector<NodeId> replicas;
        matching::SearchKey key;
        for (std::int64_t candidate = 0;; ++candidate) {
            (void)a.matching->profiles().item_key("Bench", "", {{"rank", candidate}}, key);
            a.matching->placement().replicas(key.place, replicas);
            if (replicas.size() == 1 && replicas[0] == NodeId("node-b")) {
                return candidate;
            }
        }
    });
    b.call([&] {
        for (int i = 0; i < items; ++i) {
            (void)b.matching->add("Bench", fmt::format("ticket-{:04}", i), "", {{"rank", rank}},
                                  {{"room", std::string("room-0001")}}, std::chrono::seconds(60));
        }
        return 0;
    });
    return rank;
}

// One search at a time from node A's loop: each one's round trip in microseconds.
std::vector<double> sequential_searches(BenchNode& a, std::int64_t rank, int rounds,
                                        std::size_t& results_seen) {
    // One search at a time, from node A's loop.
    std::promise<std::vector<double>> sequential_done;
    a.call([&] {
        auto samples = std::make_shared<std::vector<double>>();
        auto step = std::make_shared<std::function<void()>>();
        *step = [&, samples, step] {
            if (static_cast<int>(samples->size()) == rounds) {
                sequential_done.set_value(*samples);
                *step = nullptr;
                return;
            }
            const auto start = Clock::now();
            const std::vector<std::string> profiles{"Bench"};
            (void)a.matching->search(
                profiles, "", {{"rank", rank}}, 20,
                [&, samples, step, start](matching::SearchOutcome outcome) {
                    samples->push_back(
                        std::chrono::duration<double, std::micro>(Clock::now() - start).count());
                    results_seen = outcome.items.size();
                    (*step)();
                });
        };
        (*step)();
        return 0;
    });
    const auto search_rtts = sequential_done.get_future().get();

    return search_rtts;
}

struct Pipelined {
    double per_second = 0;
    std::uint64_t completed = 0;
};

// Many searches in flight from node A for a fixed time: searches answered per second.
Pipelined pipelined_searches(BenchNode& a, std::int64_t rank, int in_flight, double seconds) {
    // Many searches in flight for a fixed time.
    std::atomic<std::uint64_t> completed{0};
    std::promise<double> pipelined_done;
    a.call([&] {
        auto stop_at = std::make_shared<Clock::time_point>(
            Clock::now() +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
        auto started = std::make_shared<Clock::time_point>(Clock::now());
        auto outstanding = std::make_shared<int>(0);
        auto issue = std::make_shared<std::function<void()>>();
        *issue = [&, stop_at, started, outstanding, issue] {
            ++*outstanding;
            const std::vector<std::string> profiles{"Bench"};
            (void)a.matching->search(
                profiles, "", {{"rank", rank}}, 20,
                [&, stop_at, started, outstanding, issue](matching::SearchOutcome) {
                    --*outstanding;
                    ++completed;
                    if (Clock::now() < *stop_at) {
                        (*issue)();
                    } else if (*outstanding == 0) {
                        const std::chrono::duration<double> took = Clock::now() - *started;
                        pipelined_done.set_value(static_cast<double>(completed) / took.count());
                        *issue = nullptr;
                    }
                });
        };
        for (int i = 0; i < in_flight; ++i) {
            (*issue)();
        }
        return 0;
    });
    const double pipelined = pipelined_done.get_future().get();
    return {pipelined, completed.load()};
}

// The CPU time the calling thread has used.
double thread_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

nlohmann::json run(const Options& options) {
    const auto floor = loopback_rtts(options.cpus[0], options.cpus[1], options.rounds);
    BenchNode b("node-b", "");
    b.run_on(options.cpus[1]);
    const std::string b_address = b.call([&b] { return b.core->self().address; });
    BenchNode a("node-a", b_address);
    a.run_on(options.cpus[0]);
    const auto joined_by = Clock::now() + std::chrono::seconds(10);
    while (a.call([&a] { return a.core->live_members().size(); }) < 2) {
        if (Clock::now() > joined_by) {
            std::fprintf(stderr, "matchmesh-bench-mesh: the nodes did not join\n");
            std::exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::int64_t rank = rank_held_by_b(a, b, options.items);
    std::size_t results_seen = 0;
    const auto search_rtts = sequential_searches(a, rank, options.rounds, results_seen);
    // What each node's thread spends per search says which node caps the rate: the busier
    // thread's time per search is about one over the rate.
    const double a_cpu = a.call(thread_cpu_seconds);
    const double b_cpu = b.call(thread_cpu_seconds);
    const Pipelined pipelined =
        pipelined_searches(a, rank, options.in_flight, options.pipelined_seconds);
    const auto per_search_us = [&](double seconds) {
        return pipelined.completed == 0 ? 0.0
                                        : 1e6 * seconds / static_cast<double>(pipelined.completed);
    };
    const double searcher_us = per_search_us(a.call(thread_cpu_seconds) - a_cpu);
    const double answerer_us = per_search_us(b.call(thread_cpu_seconds) - b_cpu);
    a.stop();
    b.stop();

    return {{"cpus", options.cpus},
            {"loopback_rtt_us_p50", percentile(floor, 0.5)},
            {"loopback_rtt_us_p99", percentile(floor, 0.99)},
            {"search_rtt_us_p50", percentile(search_rtts, 0.5)},
            {"search_rtt_us_p99", percentile(search_rtts, 0.99)},
            {"search_results", results_seen},
            {"pipelined_in_flight", options.in_flight},
            {"pipelined_searches_per_s", pipelined.per_second},
            {"pipelined_cpu_us_per_search_searcher", searcher_us},
            {"pipelined_cpu_us_per_search_answerer", answerer_us}};
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    CLI::App app{"Measures remote search round trips between two matchmesh nodes."};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-bench-mesh"));
    app.add_option("--cpus", options.cpus, "CPU for node A and node B (-1: no pinning)")
        ->delimiter(',')
        ->expected(2);
    app.add_option("--rounds", options.rounds, "sequential round trips to time")
        ->check(CLI::Range(100, 10'000'000));
    app.add_option("--in-flight", options.in_flight, "searches in flight when pipelined")
        ->check(CLI::Range(1, 100000));
    app.add_option("--seconds", options.pipelined_seconds, "duration of the pipelined run")
        ->check(CLI::Range(0.1, 600.0));
    app.add_option("--items", options.items, "items each search returns")
        ->check(CLI::Range(0, 1000));
    app.add_option("--json", options.json_path, "also write the figures to this JSON file");
    CLI11_PARSE(app, argc, argv);

    const nlohmann::json figures = run(options);
    std::printf("matchmesh-bench-mesh: two nodes, threads on CPUs %d and %d, %d items per answer\n",
                options.cpus[0], options.cpus[1], options.items);
    std::printf("  %-40s %10.1f us (p99 %.1f)\n", "loopback TCP round trip p50 (floor)",
                figures["loopback_rtt_us_p50"].get<double>(),
                figures["loopback_rtt_us_p99"].get<double>());
    std::printf("  %-40s %10.1f us\n", "remote search round trip p50",
                figures["search_rtt_us_p50"].get<double>());
    std::printf("  %-40s %10.1f us\n", "remote search round trip p99",
                figures["search_rtt_us_p99"].get<double>());
    std::printf("  %-40s %10.0f /s (%d in flight)\n", "pipelined remote searches",
                figures["pipelined_searches_per_s"].get<double>(), options.in_flight);
    std::printf("  %-40s %10.2f us searching, %.2f us answering\n",
                "CPU per pipelined search (node threads)",
                figures["pipelined_cpu_us_per_search_searcher"].get<double>(),
                figures["pipelined_cpu_us_per_search_answerer"].get<double>());
    if (!options.json_path.empty()) {
        std::ofstream out(options.json_path);
        out << figures.dump(2) << '\n';
    }
    return 0;
}
