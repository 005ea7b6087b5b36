#include "bench/trace.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace matchmesh::bench {
namespace {

template <typename T>
T draw(const std::map<T, double>& weights, std::mt19937_64& random) {
    double total = 0;
    for (const auto& [value, weight] : weights) {
        total += weight;
    }
    double pick = std::uniform_real_distribution<double>(0, total)(random);
    for (const auto& [value, weight] : weights) {
        if (pick < weight) {
            return value;
        }
        pick -= weight;
    }
    return weights.rbegin()->first;
}

}  // namespace

std::vector<Arrival> generate_trace(const TraceShape& shape) {
    std::mt19937_64 random(shape.seed);
    std::exponential_distribution<double> gap(shape.rate);
    std::normal_distribution<double> rating(shape.rating_mean, shape.rating_sd);
    const auto count = static_cast<std::size_t>(shape.rate * shape.duration);
    std::vector<Arrival> arrivals;
    arrivals.reserve(count);
    double at = 0;
    for (std::size_t index = 0; index < count; ++index) {
        at += gap(random);
        Arrival arrival;
        arrival.at = at;
        arrival.type = draw(shape.types, random);
        arrival.rating = std::clamp<std::int64_t>(std::llround(rating(random)), 0, 1'000'000);
        auto sizes = shape.party_sizes.find(arrival.type);
        if (sizes == shape.party_sizes.end()) {
            sizes = shape.party_sizes.find(-1);
        }
        const int size = sizes == shape.party_sizes.end() ? 1 : draw(sizes->second, random);
        for (int member = 0; member < size; ++member) {
            arrival.users.push_back(fmt::format("{}-{}-{}", shape.user_prefix, index, member));
        }
        arrivals.push_back(std::move(arrival));
    }
    return arrivals;
}

std::expected<void, std::string> write_trace(const std::string& path,
                                             const std::vector<Arrival>& arrivals) {
    std::ofstream file(path);
    if (!file) {
        return std::unexpected(fmt::format("{}: cannot write the trace", path));
    }
    for (const Arrival& arrival : arrivals) {
        file << nlohmann::json{{"at", arrival.at},
                               {"type", arrival.type},
                               {"rating", arrival.rating},
                               {"users", arrival.users}}
                    .dump()
             << "\n";
    }
    if (!file.flush()) {
        return std::unexpected(fmt::format("{}: cannot write the trace", path));
    }
    return {};
}

std::expected<std::vector<Arrival>, std::string> read_trace(const std::string& path) {
    std::ifstream file(path);
    if (!file) {
        return std::unexpected(fmt::format("{}: cannot read the trace", path));
    }
    std::vector<Arrival> arrivals;
    std::string line;
    std::size_t number = 0;
    double previous = 0;
    while (std::getline(file, line)) {
        ++number;
        if (line.empty()) {
            continue;
        }
        auto fail = [&](const std::string& why) {
            return std::unexpected(fmt::format("{}:{}: {}", path, number, why));
        };
        const nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
        if (!entry.is_object() || !entry.contains("at") || !entry["at"].is_number() ||
            !entry.contains("type") || !entry["type"].is_number_integer() ||
            !entry.contains("rating") || !entry["rating"].is_number_integer() ||
            !entry.contains("users") || !entry["users"].is_array() || entry["users"].empty() ||
            entry["users"].size() > 8) {
            return fail(
                "expected {\"at\": seconds, \"type\": 0..255, \"rating\": integer, \"users\": "
                "[1..8 IDs]}");
        }
        Arrival arrival;
        arrival.at = entry["at"].get<double>();
        arrival.type = entry["type"].get<int>();
        arrival.rating = entry["rating"].get<std::int64_t>();
        if (arrival.at < previous || arrival.type < 0 || arrival.type > 255) {
            return fail("arrivals must be in time order, with ticket types 0..255");
        }
        previous = arrival.at;
        for (const auto& user : entry["users"]) {
            if (!user.is_string() || user.get<std::string>().empty()) {
                return fail("user IDs are non-empty strings");
            }
            arrival.users.push_back(user.get<std::string>());
        }
        arrivals.push_back(std::move(arrival));
    }
    return arrivals;
}

}  // namespace matchmesh::bench
