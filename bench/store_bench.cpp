// matchmesh-bench-store: throughput of the local store with a million live items.
//
// Fills a store with --items items spread evenly over --buckets buckets (a two-property
// profile, so that range searches have two range properties), then times each operation in a
// tight loop on one thread and prints operations per second. Memory per item is the growth of
// the process's resident set while the items are added, divided by their number; item values
// are empty, so it counts the store's own bookkeeping only.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>
#include <nlohmann/json.hpp>

#include "matching/store.hpp"

namespace {

using namespace matchmesh;
using namespace matchmesh::matching;
using Clock = std::chrono::steady_clock;

std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages_total = 0;
    std::size_t pages_resident = 0;
    statm >> pages_total >> pages_resident;
    return pages_resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

struct Options {
    std::size_t items = 1'000'000;
    std::size_t buckets = 10'000;
    std::size_t searches = 2'000'000;
    std::string json_path;
};

// Runs `operation(i)` for i in [0, count) and returns operations per second.
template <typename Operation>
double per_second(std::size_t count, Operation&& operation) {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
        operation(i);
    }
    const std::chrono::duration<double> elapsed = Clock::now() - start;
    return static_cast<double>(count) / elapsed.count();
}

void check(const Result<void>& result) {
    if (!result) {
        std::fprintf(stderr, "matchmesh-bench-store: %s\n", result.error().message.c_str());
        std::exit(1);
    }
}

class StoreBench {
public:
    explicit StoreBench(const Options& options)
        : options_(options),
          side_(static_cast<std::int64_t>(
              std::llround(std::sqrt(static_cast<double>(options.buckets))))) {
        std::mt19937_64 random(42);
        std::uniform_int_distribution<std::int64_t> coordinate(0, side_ - 1);
        ids_.reserve(options.items);
        coordinates_.reserve(options.items);
        for (std::size_t i = 0; i < options.items; ++i) {
            ids_.push_back(fmt::format("u{:07}", i));
            coordinates_.emplace_back(coordinate(random), coordinate(random));
        }
        for (std::size_t i = 0; i < 4096; ++i) {
            queries_.emplace_back(coordinate(random), coordinate(random));
        }
    }

    nlohmann::json run() {
        Store store("bench-node");
        check(store.define("Bench", {{"a", 1}, {"b", 1}}));
        nlohmann::json figures{{"items", options_.items}};
        measure_adds(store, figures);
        measure_searches(store, figures);
        measure_removes(store, figures);
        measure_expiry(store, figures);
        return figures;
    }

private:
    void measure_adds(Store& store, nlohmann::json& figures) {
        Properties properties{{"a", 0}, {"b", 0}};
        auto& a = properties.find("a")->second;
        auto& b = properties.find("b")->second;
        const std::size_t rss_before = resident_bytes();
        figures["add_ops_per_s"] = per_second(options_.items, [&](std::size_t i) {
            a = coordinates_[i].first;
            b = coordinates_[i].second;
            check(store.add("Bench", ids_[i], "", properties, {}, std::chrono::seconds(60), now_));
        });
        figures["bytes_per_item"] = static_cast<double>(resident_bytes() - rss_before) /
                                    static_cast<double>(options_.items);
        figures["buckets"] = static_cast<double>(store.items().bucket_count());
    }

    void measure_searches(Store& store, nlohmann::json& figures) {
        const std::vector<std::string> profiles{"Bench"};
        Properties properties{{"a", 0}, {"b", 0}};
        auto& a = properties.find("a")->second;
        auto& b = properties.find("b")->second;
        SearchResults results;
        std::size_t found = 0;
        figures["search_ops_per_s"] = per_second(options_.searches, [&](std::size_t i) {
            const auto& [qa, qb] = queries_[i % queries_.size()];
            a = qa;
            b = qb;
            check(store.search(profiles, "", properties, 20, now_, results));
            found += results.size();
        });
        figures["search_results_per_search"] =
            static_cast<double>(found) / static_cast<double>(options_.searches);

        RangeProperties range{{"a", std::vector<std::int64_t>(5)},
                              {"b", std::vector<std::int64_t>(5)}};
        auto& range_a = range.find("a")->second;
        auto& range_b = range.find("b")->second;
        figures["range_search_ops_per_s"] = per_second(options_.searches / 4, [&](std::size_t i) {
            const auto& [qa, qb] = queries_[i % queries_.size()];
            for (std::int64_t k = 0; k < 5; ++k) {
                range_a[static_cast<std::size_t>(k)] = (qa + k) % side_;
                range_b[static_cast<std::size_t>(k)] = (qb + k) % side_;
            }
            check(store.search_with_range(profiles, "", range, 20, now_, results));
        });
    }

    void measure_removes(Store& store, nlohmann::json& figures) {
        figures["remove_ops_per_s"] = per_second(options_.items, [&](std::size_t i) {
            auto removed = store.remove("Bench", std::span(&ids_[i], 1), now_);
            if (!removed || *removed != 1) {
                std::fprintf(stderr, "matchmesh-bench-store: remove failed\n");
                std::exit(1);
            }
        });
    }

    // A full generation of items, all added at once, expiring at once.
    void measure_expiry(Store& store, nlohmann::json& figures) {
        Properties properties{{"a", 0}, {"b", 0}};
        for (std::size_t i = 0; i < options_.items; ++i) {
            properties.find("a")->second = coordinates_[i].first;
            properties.find("b")->second = coordinates_[i].second;
            check(store.add("Bench", ids_[i], "", properties, {}, std::chrono::seconds(10), now_));
        }
        now_ += std::chrono::seconds(10) + BucketStore::wheel_tick;
        std::size_t expired = 0;
        const double expire_seconds_per_generation =
            1.0 / per_second(1, [&](std::size_t) { expired = store.expire(now_); });
        if (expired != options_.items || store.size() != 0) {
            std::fprintf(stderr, "matchmesh-bench-store: expiry freed %zu of %zu\n", expired,
                         options_.items);
            std::exit(1);
        }
        figures["expire_ops_per_s"] =
            static_cast<double>(options_.items) / expire_seconds_per_generation;
    }

    Options options_;
    std::int64_t side_;
    std::vector<std::string> ids_;
    std::vector<std::pair<std::int64_t, std::int64_t>> coordinates_;
    std::vector<std::pair<std::int64_t, std::int64_t>> queries_;
    Time now_ = time_from_ms(1'000'000);
};

void print_table(const nlohmann::json& figures) {
    std::printf("matchmesh-bench-store: %zu items over %.0f buckets, one thread\n",
                figures["items"].get<std::size_t>(), figures["buckets"].get<double>());
    std::printf("  %-34s %14s\n", "operation", "ops/s");
    const std::pair<const char*, const char*> rows[] = {
        {"add", "add_ops_per_s"},
        {"exact search (limit 20)", "search_ops_per_s"},
        {"range search (2 x 5 values, limit 20)", "range_search_ops_per_s"},
        {"remove", "remove_ops_per_s"},
        {"expire (one TTL generation)", "expire_ops_per_s"},
    };
    for (const auto& [label, key] : rows) {
        std::printf("  %-34s %14.0f\n", label, figures[key].get<double>());
    }
    std::printf("  %-34s %14.1f\n", "bytes per item (RSS, no value)",
                figures["bytes_per_item"].get<double>());
    std::printf("  %-34s %14.1f\n", "results per exact search",
                figures["search_results_per_search"].get<double>());
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    CLI::App app{"Measures the local matchmaking store's throughput and memory per item."};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-bench-store"));
    app.add_option("--items", options.items, "live items")->check(CLI::Range(1000, 50'000'000));
    app.add_option("--buckets", options.buckets, "buckets the items spread over")
        ->check(CLI::Range(1, 100'000'000));
    app.add_option("--searches", options.searches, "exact searches to time")
        ->check(CLI::Range(1000, 100'000'000));
    app.add_option("--json", options.json_path, "also write the figures to this JSON file");
    CLI11_PARSE(app, argc, argv);

    const nlohmann::json figures = StoreBench(options).run();
    print_table(figures);
    if (!options.json_path.empty()) {
        std::ofstream out(options.json_path);
        out << figures.dump(2) << '\n';
        if (!out) {
            std::fprintf(stderr, "matchmesh-bench-store: cannot write %s\n",
                         options.json_path.c_str());
            return 1;
        }
    }
    return 0;
}
