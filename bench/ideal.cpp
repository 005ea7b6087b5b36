#include "bench/ideal.hpp"

#include <cstdlib>
#include <limits>
#include <list>
#include <memory>
#include <queue>

#include <fmt/format.h>

#include "bench/ideal_teams.hpp"
#include "bench/rules.hpp"

namespace matchmesh::bench {
namespace {

struct Waiting {
    std::size_t index;  // into arrivals
    double at;
    std::int64_t rating;
    int size;
};

class TypeMatcher final : public TypeIdeal {
public:
    TypeMatcher(MatchRules rules, const std::vector<Arrival>& arrivals,
                std::vector<TicketRecord>& records, std::size_t& rooms)
        : rules_(rules), arrivals_(arrivals), records_(records), rooms_(rooms) {}

    // Advances virtual time to `now`, handling the timers due before it.
    void advance(double now) override {
        while (!timers_.empty() && timers_.top().first <= now) {
            const auto [at, index] = timers_.top();
            timers_.pop();
            on_timer(at, index);
        }
    }

    void arrive(std::size_t index) override {
        const Arrival& arrival = arrivals_[index];
        const Waiting newcomer{index, arrival.at, arrival.rating,
                               static_cast<int>(arrival.users.size())};
        // Longest-waiting anchor first: the first group the newcomer fills, or completes by policy.
        for (auto anchor = waiting_.begin(); anchor != waiting_.end(); ++anchor) {
            if (!compatible(*anchor, newcomer)) {
                continue;
            }
            auto group = gather(anchor, &newcomer);
            const int players = count(group, &newcomer);
            const bool waited =
                rules_.min_members && arrival.at - anchor->at >= rules_.complete_after_s;
            if (players == rules_.max_members || (waited && players >= *rules_.min_members)) {
                complete(group, &newcomer, arrival.at);
                return;
            }
        }
        waiting_.push_back(newcomer);
        if (rules_.min_members) {
            timers_.emplace(newcomer.at + rules_.complete_after_s, index);
        }
        timers_.emplace(newcomer.at + rules_.duration_s, index);
    }

private:
    using Iterator = std::list<Waiting>::iterator;

    [[nodiscard]] bool compatible(const Waiting& anchor, const Waiting& other) const {
        return std::llabs(anchor.rating - other.rating) <= rules_.window;
    }

    // The anchor, the newcomer (if any), then others younger than the anchor, oldest first: whole
    // parties that fit.
    std::vector<Iterator> gather(Iterator anchor, const Waiting* newcomer) {
        std::vector<Iterator> group{anchor};
        int players = anchor->size + (newcomer ? newcomer->size : 0);
        for (auto other = std::next(anchor);
             other != waiting_.end() && players < rules_.max_members; ++other) {
            if (compatible(*anchor, *other) && players + other->size <= rules_.max_members) {
                group.push_back(other);
                players += other->size;
            }
        }
        return group;
    }

    [[nodiscard]] static int count(const std::vector<Iterator>& group, const Waiting* newcomer) {
        int players = newcomer ? newcomer->size : 0;
        for (const auto& member : group) {
            players += member->size;
        }
        return players;
    }

    void complete(const std::vector<Iterator>& group, const Waiting* newcomer, double now) {
        const std::string room = fmt::format("ideal-{}", rooms_++);
        auto record = [&](const Waiting& party) {
            TicketRecord& entry = records_[party.index];
            entry.outcome = Outcome::matched;
            entry.ttm_ms = (now - party.at) * 1000.0;
            entry.room = room;
        };
        if (newcomer != nullptr) {
            record(*newcomer);
        }
        for (const auto& member : group) {
            record(*member);
            waiting_.erase(member);
        }
    }

    void on_timer(double at, std::size_t index) {
        auto party = waiting_.begin();
        while (party != waiting_.end() && party->index != index) {
            ++party;
        }
        if (party == waiting_.end()) {
            return;  // already matched
        }
        if (at >= party->at + rules_.duration_s) {
            records_[index].outcome = Outcome::timed_out;
            records_[index].ttm_ms = rules_.duration_s * 1000.0;
            waiting_.erase(party);
            return;
        }
        // The anchor has waited long enough: complete with whoever fits, if enough.
        auto group = gather(party, nullptr);
        if (rules_.min_members && count(group, nullptr) >= *rules_.min_members) {
            complete(group, nullptr, at);
        }
    }

    MatchRules rules_;
    const std::vector<Arrival>& arrivals_;
    std::vector<TicketRecord>& records_;
    std::size_t& rooms_;
    std::list<Waiting> waiting_;  // in arrival order
    std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>,
                        std::greater<>>
        timers_;
};

}  // namespace

std::vector<TicketRecord> ideal_outcomes(const std::vector<Arrival>& arrivals,
                                         const std::map<int, config::TicketTypeConfig>& types) {
    std::vector<TicketRecord> records(arrivals.size());
    std::size_t rooms = 0;
    std::map<int, std::unique_ptr<TypeIdeal>> matchers;
    for (const auto& [number, type] : types) {
        matchers[number] =
            type.teams ? team_ideal(type, arrivals, records, rooms)
                       : std::make_unique<TypeMatcher>(rules_for(type), arrivals, records, rooms);
    }
    for (std::size_t index = 0; index < arrivals.size(); ++index) {
        const Arrival& arrival = arrivals[index];
        TicketRecord& record = records[index];
        record.arrived = true;
        record.type = arrival.type;
        record.party_size = static_cast<int>(arrival.users.size());
        record.started_s = arrival.at;
        auto matcher = matchers.find(arrival.type);
        if (matcher == matchers.end()) {
            record.outcome = Outcome::refused;
            record.refusal = "unknown_ticket_type";
            continue;
        }
        for (auto& [number, each] : matchers) {
            each->advance(arrival.at);
        }
        matcher->second->arrive(index);
    }
    for (auto& [number, matcher] : matchers) {
        matcher->advance(std::numeric_limits<double>::infinity());
    }
    return records;
}

}  // namespace matchmesh::bench
