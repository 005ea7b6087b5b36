#include "bench/outcomes.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace matchmesh::bench {
namespace {

double percentile(const std::vector<double>& sorted, double fraction) {
    if (sorted.empty()) {
        return 0;
    }
    const auto rank =
        static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
    return sorted[std::min(rank == 0 ? 0 : rank - 1, sorted.size() - 1)];
}

double round1(double value) {
    return std::round(value * 10) / 10;
}

// Team matches, one entry per room (its players' owners all report the same match); none when
// no record carries a team match.
nlohmann::json summarize_teams(const std::vector<const TicketRecord*>& records) {
    std::map<std::string, const TicketRecord*> by_room;
    for (const TicketRecord* record : records) {
        if (record->outcome == Outcome::matched &&
            (record->side_difference || !record->violations.empty())) {
            by_room.try_emplace(record->room, record);
        }
    }
    if (by_room.empty()) {
        return nullptr;
    }
    std::vector<double> differences;
    std::vector<double> spreads;
    std::size_t violations = 0;
    std::map<std::string, std::size_t> kinds;
    for (const auto& [room, record] : by_room) {
        if (record->side_difference) {
            differences.push_back(*record->side_difference);
            spreads.push_back(static_cast<double>(record->spread));
        }
        violations += record->violations.empty() ? 0 : 1;
        for (const std::string& kind : record->violations) {
            ++kinds[kind];
        }
    }
    return {{"matches", by_room.size()},
            {"side_difference", percentiles(std::move(differences))},
            {"spread", percentiles(std::move(spreads))},
            {"violations", violations},
            {"violation_kinds", kinds}};
}

nlohmann::json summarize_part(const std::vector<const TicketRecord*>& records, double window_s) {
    std::map<Outcome, std::size_t> counts;
    std::vector<double> ttm;
    std::vector<double> accepted_ttm;  // from the start the cluster accepted
    std::vector<double> connect_waits;
    std::set<std::string> rooms;
    std::size_t started = 0;
    std::size_t retries = 0;
    std::size_t players_retried = 0;
    double first_arrival_s = records.empty() ? 0.0 : records.front()->started_s;
    double last_arrival_s = first_arrival_s;
    std::map<std::string, double> matched_at;  // room: when its first member heard of it
    std::map<std::string, std::size_t> refusals;
    for (const TicketRecord* record : records) {
        ++counts[record->outcome];
        retries += static_cast<std::size_t>(record->retries);
        players_retried += record->retries > 0 ? 1 : 0;
        connect_waits.push_back(record->connect_wait_ms);
        first_arrival_s = std::min(first_arrival_s, record->started_s);
        last_arrival_s = std::max(last_arrival_s, record->started_s);
        if (record->outcome == Outcome::refused) {
            ++refusals[record->refusal];
            continue;
        }
        ++started;
        if (record->outcome == Outcome::matched) {
            ttm.push_back(record->ttm_ms);
            if (record->accepted_s > 0) {
                accepted_ttm.push_back((record->ended_s - record->accepted_s) * 1000);
            }
            rooms.insert(record->room);
            // Backends that measure no end of their own: the start plus the time to match.
            const double at =
                record->ended_s > 0 ? record->ended_s : record->started_s + record->ttm_ms / 1000;
            auto [room, inserted] = matched_at.try_emplace(record->room, at);
            room->second = inserted ? at : std::min(room->second, at);
        }
    }
    // Goodput: matches made while players kept arriving, per second of that span. Matches made
    // after the last arrival (a rating outlier's late partner, a refused player's last retry)
    // say nothing about the rate the system sustains under the load, so they do not stretch it.
    const double arrival_span_s = last_arrival_s - first_arrival_s;
    const auto matched_while_arriving = static_cast<double>(
        std::count_if(matched_at.begin(), matched_at.end(),
                      [&](const auto& room) { return room.second <= last_arrival_s; }));
    const double fill =
        started == 0 ? 0.0
                     : static_cast<double>(counts[Outcome::matched]) / static_cast<double>(started);
    nlohmann::json result = {
        {"tickets_started", started},
        {"completed", counts[Outcome::matched]},
        {"timed_out", counts[Outcome::timed_out]},
        {"canceled", counts[Outcome::canceled]},
        {"unfinished", counts[Outcome::unfinished]},
        {"refused", counts[Outcome::refused]},
        {"fill_rate", std::round(fill * 10000) / 10000},
        {"matches", rooms.size()},
        {"matches_per_s",
         window_s <= 0 ? 0.0 : round1(static_cast<double>(rooms.size()) / window_s)},
        {"arrivals_per_s",
         arrival_span_s <= 0 ? 0.0 : round1(static_cast<double>(records.size()) / arrival_span_s)},
        {"goodput_per_s",
         arrival_span_s <= 0 ? 0.0 : round1(matched_while_arriving / arrival_span_s)},
        {"retries", retries},
        {"players_retried", players_retried},
        {"ttm_ms", percentiles(std::move(ttm))}};
    if (!accepted_ttm.empty()) {
        result["accepted_ttm_ms"] = percentiles(std::move(accepted_ttm));
    }
    if (std::any_of(connect_waits.begin(), connect_waits.end(), [](double ms) { return ms > 0; })) {
        result["connect_wait_ms"] = percentiles(std::move(connect_waits));
    }
    if (!refusals.empty()) {
        result["refusals"] = refusals;
    }
    if (nlohmann::json teams = summarize_teams(records); !teams.is_null()) {
        result["teams"] = std::move(teams);
    }
    return result;
}

}  // namespace

nlohmann::json record_json(const TicketRecord& record) {
    return {{"arrived", record.arrived},
            {"type", record.type},
            {"party", record.party_size},
            {"started_s", record.started_s},
            {"ttm_ms", record.ttm_ms},
            {"accepted_s", record.accepted_s},
            {"ended_s", record.ended_s},
            {"retries", record.retries},
            {"connect_wait_ms", record.connect_wait_ms},
            {"outcome", static_cast<int>(record.outcome)},
            {"room", record.room},
            {"user", record.user},
            {"node", record.node},
            {"refusal", record.refusal},
            {"side_difference",
             record.side_difference ? nlohmann::json(*record.side_difference) : nlohmann::json()},
            {"spread", record.spread},
            {"violations", record.violations}};
}

TicketRecord record_of(const nlohmann::json& json) {
    TicketRecord record;
    record.arrived = json.at("arrived").get<bool>();
    record.type = json.at("type").get<int>();
    record.party_size = json.at("party").get<int>();
    record.started_s = json.at("started_s").get<double>();
    record.ttm_ms = json.at("ttm_ms").get<double>();
    record.accepted_s = json.at("accepted_s").get<double>();
    record.ended_s = json.at("ended_s").get<double>();
    record.retries = json.at("retries").get<int>();
    record.connect_wait_ms = json.at("connect_wait_ms").get<double>();
    record.outcome = static_cast<Outcome>(json.at("outcome").get<int>());
    record.room = json.at("room").get<std::string>();
    record.user = json.at("user").get<std::string>();
    record.node = json.at("node").get<std::string>();
    record.refusal = json.at("refusal").get<std::string>();
    if (const auto& difference = json.at("side_difference"); !difference.is_null()) {
        record.side_difference = difference.get<double>();
    }
    record.spread = json.at("spread").get<std::int64_t>();
    record.violations = json.at("violations").get<std::vector<std::string>>();
    return record;
}

Outcome outcome_of(ticket::PushKind terminal) {
    return terminal == ticket::PushKind::success   ? Outcome::matched
           : terminal == ticket::PushKind::timeout ? Outcome::timed_out
                                                   : Outcome::canceled;
}

nlohmann::json summarize(const std::vector<TicketRecord>& records, double window_s) {
    std::vector<const TicketRecord*> all;
    std::map<int, std::vector<const TicketRecord*>> by_type;
    for (const auto& record : records) {
        if (!record.arrived) {
            continue;  // the run was cut short before it
        }
        all.push_back(&record);
        by_type[record.type].push_back(&record);
    }
    nlohmann::json result = summarize_part(all, window_s);
    result["by_type"] = nlohmann::json::object();
    for (const auto& [type, part] : by_type) {
        result["by_type"][std::to_string(type)] = summarize_part(part, window_s);
    }
    return result;
}

nlohmann::json percentiles(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return {{"p50", round1(percentile(values, 0.50))},
            {"p90", round1(percentile(values, 0.90))},
            {"p99", round1(percentile(values, 0.99))},
            {"max", round1(values.empty() ? 0.0 : values.back())}};
}

}  // namespace matchmesh::bench
