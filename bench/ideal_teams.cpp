#include "bench/ideal_teams.hpp"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "bench/rules.hpp"
#include "mesh/base/assert.hpp"
#include "node/match_result.hpp"
#include "ticket/teams.hpp"

namespace matchmesh::bench {
namespace {

// Rooms tried around one anchor for one newcomer: the nearest-rated parties usually make a room
// in the first few, and a pool of hundreds must not make one arrival search for long.
constexpr int combinations_max = 20000;

struct WaitingParty {
    std::size_t index;  // into arrivals
    double at;
    std::int64_t rating;
    int size;
};

using Pool = std::list<WaitingParty>;

// A party as the team rules see it: the bench's arrivals carry the owner's rating only, and a
// member who submitted none plays at the owner's.
ticket::TeamParty party_of(const WaitingParty& party) {
    return ticket::TeamParty(static_cast<std::size_t>(party.size), party.rating);
}

struct Room {
    std::vector<Pool::iterator> members;  // the waiting parties taken, besides the newcomer
    ticket::TeamSplit split;
};

// A depth-first search over the candidates in order: each is taken while the room can still form
// a match, and a full room is kept if some split keeps the rules.
class RoomSearch {
public:
    RoomSearch(const ticket::TeamRules& rules, const std::vector<Pool::iterator>& candidates)
        : rules_(rules), candidates_(candidates) {}

    std::optional<Room> find(std::vector<ticket::TeamParty> parties,
                             std::vector<Pool::iterator> members) {
        parties_ = std::move(parties);
        members_ = std::move(members);
        players_ = 0;
        for (const auto& party : parties_) {
            players_ += static_cast<int>(party.size());
        }
        if (!ticket::can_still_form(parties_, rules_) || !extend(0)) {
            return std::nullopt;
        }
        return std::move(found_);
    }

private:
    bool extend(std::size_t next) {
        if (players_ == rules_.players()) {
            auto split = ticket::split_teams(parties_, rules_);
            if (split) {
                found_ = Room{members_, std::move(*split)};
            }
            return split.has_value();
        }
        for (std::size_t at = next; at < candidates_.size() && steps_ < combinations_max; ++at) {
            const WaitingParty& candidate = *candidates_[at];
            if (players_ + candidate.size > rules_.players()) {
                continue;
            }
            ++steps_;
            parties_.push_back(party_of(candidate));
            members_.push_back(candidates_[at]);
            players_ += candidate.size;
            if (ticket::can_still_form(parties_, rules_) && extend(at + 1)) {
                return true;
            }
            players_ -= candidate.size;
            members_.pop_back();
            parties_.pop_back();
        }
        return false;
    }

    const ticket::TeamRules& rules_;
    const std::vector<Pool::iterator>& candidates_;
    std::vector<ticket::TeamParty> parties_;
    std::vector<Pool::iterator> members_;
    int players_ = 0;
    int steps_ = 0;
    std::optional<Room> found_;
};

class TeamIdeal final : public TypeIdeal {
public:
    TeamIdeal(const config::TicketTypeConfig& type, const std::vector<Arrival>& arrivals,
              std::vector<TicketRecord>& records, std::size_t& rooms)
        : rules_(node::team_rules(*type.teams)),
          match_rules_(rules_for(type)),
          arrivals_(arrivals),
          records_(records),
          rooms_(rooms) {}

    void advance(double now) override {
        while (!timers_.empty() && timers_.top().first <= now) {
            const auto [at, index] = timers_.top();
            timers_.pop();
            time_out(index);
        }
    }

    // A room that forms now holds the newcomer (the waiting parties alone could form none), and
    // its longest-waiting party is an anchor the newcomer may play with.
    void arrive(std::size_t index) override {
        const Arrival& arrival = arrivals_[index];
        const WaitingParty newcomer{index, arrival.at, arrival.rating,
                                    static_cast<int>(arrival.users.size())};
        for (auto anchor = waiting_.begin(); anchor != waiting_.end(); ++anchor) {
            if (!compatible(*anchor, newcomer)) {
                continue;
            }
            if (auto room = room_around(anchor, newcomer)) {
                complete(*room, newcomer);
                return;
            }
        }
        waiting_.push_back(newcomer);
        timers_.emplace(newcomer.at + match_rules_.duration_s, index);
    }

private:
    [[nodiscard]] bool compatible(const WaitingParty& anchor, const WaitingParty& other) const {
        return std::llabs(anchor.rating - other.rating) <= match_rules_.window;
    }

    // The anchor, the newcomer and parties younger than the anchor within its window, nearest in
    // rating first (then the longest-waiting).
    std::optional<Room> room_around(Pool::iterator anchor, const WaitingParty& newcomer) {
        std::vector<Pool::iterator> candidates;
        for (auto other = std::next(anchor); other != waiting_.end(); ++other) {
            if (compatible(*anchor, *other)) {
                candidates.push_back(other);
            }
        }
        const std::int64_t center = anchor->rating;
        std::stable_sort(candidates.begin(), candidates.end(),
                         [center](Pool::iterator a, Pool::iterator b) {
                             return std::llabs(a->rating - center) < std::llabs(b->rating - center);
                         });
        RoomSearch search(rules_, candidates);
        return search.find({party_of(*anchor), party_of(newcomer)}, {anchor});
    }

    void complete(const Room& room, const WaitingParty& newcomer) {
        const std::string name = fmt::format("ideal-{}", rooms_++);
        const auto record = [&](const WaitingParty& party) {
            TicketRecord& entry = records_[party.index];
            entry.outcome = Outcome::matched;
            entry.ttm_ms = (newcomer.at - party.at) * 1000.0;
            entry.room = name;
            entry.side_difference = room.split.difference;
            entry.spread = room.split.spread;
        };
        record(newcomer);
        for (const auto& member : room.members) {
            record(*member);
            waiting_.erase(member);
        }
    }

    void time_out(std::size_t index) {
        const auto party =
            std::find_if(waiting_.begin(), waiting_.end(),
                         [index](const WaitingParty& p) { return p.index == index; });
        if (party == waiting_.end()) {
            return;  // matched already
        }
        records_[index].outcome = Outcome::timed_out;
        records_[index].ttm_ms = match_rules_.duration_s * 1000.0;
        waiting_.erase(party);
    }

    ticket::TeamRules rules_;
    MatchRules match_rules_;
    const std::vector<Arrival>& arrivals_;
    std::vector<TicketRecord>& records_;
    std::size_t& rooms_;
    Pool waiting_;  // in arrival order
    std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>,
                        std::greater<>>
        timers_;  // each party's deadline
};

}  // namespace

std::unique_ptr<TypeIdeal> team_ideal(const config::TicketTypeConfig& type,
                                      const std::vector<Arrival>& arrivals,
                                      std::vector<TicketRecord>& records, std::size_t& rooms) {
    MM_ASSERT(type.teams.has_value());
    return std::make_unique<TeamIdeal>(type, arrivals, records, rooms);
}

}  // namespace matchmesh::bench
