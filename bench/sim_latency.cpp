#include "bench/sim_latency.hpp"

#include <chrono>
#include <cmath>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "bench/ideal.hpp"
#include "bench/outcomes.hpp"
#include "bench/simulated_cluster.hpp"
#include "ticket/service.hpp"

namespace matchmesh::bench {

nlohmann::json latency_mode(const LatencyOptions& options) {
    std::vector<Arrival> arrivals = duel_trace(options.rate, options.seconds, options.seed);
    for (Arrival& arrival : arrivals) {
        arrival.at = std::round(arrival.at * 1000) / 1000;  // the millisecond it starts on
    }
    SimulatedCluster cluster(load_duel_config(), options.seed,
                             ticket::TicketServiceOptions{}.tickets_max, options.nodes);
    cluster.world().set_links({.latency = Duration(options.link_ms)});

    std::vector<TicketRecord> records(arrivals.size());
    std::unordered_map<std::string, std::size_t> index_of;
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
        index_of.emplace(arrivals[i].users.front(), i);
        records[i].arrived = records[i].accepted = true;
        records[i].type = arrivals[i].type;
        records[i].user = arrivals[i].users.front();
        records[i].started_s = records[i].accepted_s = arrivals[i].at;
    }
    const Time begin = cluster.world().now();
    cluster.on_terminal = [&](const UserId& user, const ticket::PushMessage& message) {
        TicketRecord& record = records.at(index_of.at(user.str()));
        record.ended_s = std::chrono::duration<double>(cluster.world().now() - begin).count();
        record.ttm_ms = (record.ended_s - record.started_s) * 1000;
        record.outcome = outcome_of(message.kind);
        record.room = message.room_id;
    };
    (void)cluster.play(arrivals);

    const nlohmann::json found = summarize(records, options.seconds);
    const nlohmann::json ideal =
        summarize(ideal_outcomes(arrivals, cluster.config().ticket_types), options.seconds);
    // What the time to match is made of: searches, and joins spent on rooms that another
    // searcher had taken or that were not waiting (a round trip each).
    const double matches =
        static_cast<double>(std::max<std::uint64_t>(1, cluster.rooms_completed()));
    const auto per = [](double count, double of) { return std::round(count / of * 100) / 100; };
    const double searches_per_ticket =
        per(static_cast<double>(cluster.ticket_counter(&ticket::TicketCounters::searches)),
            static_cast<double>(std::max<std::size_t>(1, arrivals.size())));
    const double refused_joins_per_match =
        per(static_cast<double>(cluster.ticket_counter(&ticket::TicketCounters::own_joins_refused)),
            matches);
    // Why the rooms' nodes refused them: mostly rooms that had just completed, whose removal had
    // not reached the replica that handed them out yet.
    nlohmann::json refused_by_reason = nlohmann::json::object();
    for (std::size_t why = 0; why < ticket::join_refusals_count; ++why) {
        const auto refusal = static_cast<ticket::JoinRefusal>(why);
        if (const std::uint64_t count = cluster.joins_refused(refusal); count > 0) {
            refused_by_reason[std::string(ticket::label_of(refusal))] =
                per(static_cast<double>(count), matches);
        }
    }
    const double p99 = found["ttm_ms"]["p99"].get<double>();
    const double ideal_p99 = ideal["ttm_ms"]["p99"].get<double>();
    fmt::print(stderr,
               "latency: {} tickets at {}/s on {} nodes, {} ms links: fill {:.2f}% (ideal "
               "{:.2f}%), ttm p50 {} ms p99 {} ms (ideal {} / {} ms); {} searches a ticket, {} "
               "refused joins a match\n",
               arrivals.size(), options.rate, options.nodes, options.link_ms,
               100 * found["fill_rate"].get<double>(), 100 * ideal["fill_rate"].get<double>(),
               found["ttm_ms"]["p50"].dump(), p99, ideal["ttm_ms"]["p50"].dump(), ideal_p99,
               searches_per_ticket, refused_joins_per_match);
    return {{"mode", "latency"},
            {"rate", options.rate},
            {"seconds", options.seconds},
            {"nodes", options.nodes},
            {"link_ms", options.link_ms},
            {"fill_rate", found["fill_rate"]},
            {"ttm_ms", found["ttm_ms"]},
            {"ideal_fill_rate", ideal["fill_rate"]},
            {"ideal_ttm_ms", ideal["ttm_ms"]},
            {"ttm_p99_over_ideal_ms", p99 - ideal_p99},
            {"searches_per_ticket", searches_per_ticket},
            {"refused_joins_per_match", refused_joins_per_match},
            {"refused_joins_per_match_by_reason", refused_by_reason}};
}

}  // namespace matchmesh::bench
