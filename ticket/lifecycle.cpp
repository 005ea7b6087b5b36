// The owner side of a ticket: created, searching, joining another room or waiting in its own,
// and its end. See README.md for the state machine.
#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "ticket/home.hpp"
#include "ticket/lifecycle.hpp"
#include "ticket/rooms.hpp"
#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {
namespace {

constexpr std::string_view waiting_since_key = "waitingSinceMs";
constexpr std::size_t values_kept_max = 4096;

// The unique ID of a waiting ticket's item under its i-th tag: one room, one item per tag.
// Searchers read the room from its ID; the item's value is empty unless its ticket prefers the
// oldest rooms (then it says when the room began waiting).
std::string item_id(const TicketId& room_id, std::size_t tag_index) {
    return numbered(room_id.str(), '#', tag_index);
}

std::string_view room_of_item(std::string_view item_id) {
    return item_id.substr(0, item_id.rfind('#'));
}

HolderView holder_view(const TicketSettings& params) {
    return {params.values->add_properties, params.values->search_properties,
            params.application_data()};
}

}  // namespace

// The item's value: when its room began waiting, for searchers that prefer the oldest.
matching::ValueMap Tickets::waiting_since(const OwnedTicket& ticket) {
    if (ticket.params.prefer != Prefer::oldest) {
        return {};
    }
    return matching::ValueMap{{std::string(waiting_since_key), ticket.params.waiting_since_ms()}};
}

std::int64_t Tickets::since_of(const matching::Found& item) {
    const matching::FoundEntry* found = matching::find_entry(item.value, waiting_since_key);
    const auto* since = found != nullptr ? std::get_if<std::int64_t>(&found->scalar) : nullptr;
    return since != nullptr ? *since : INT64_MAX;  // rooms that do not say come last
}

std::int64_t Tickets::unix_ms() const {
    if (context_.options.unix_ms) {
        return context_.options.unix_ms();
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               context_.scheduler.now().time_since_epoch())
        .count();
}

Holder holder_of(const TicketSettings& params) {
    return Holder{params.values->add_properties, params.values->search_properties,
                  params.application_data()};
}

Tickets::Tickets(Context& context, Rooms& rooms, Home& home)
    : context_(context),
      rooms_(rooms),
      home_(home),
      random_(std::hash<std::string>{}(context.self().str()) + 1) {}

std::size_t Tickets::ValuesHash::operator()(const TicketValues& values) const {
    std::size_t hash = values.add_properties.size();
    const auto mix = [&hash](std::int64_t number) {
        // FNV-1a's step, a whole number at a time
        hash = (hash ^ static_cast<std::size_t>(number)) * 0x100000001b3;
    };
    for (const auto& [name, value] : values.add_properties) {
        mix(value);
    }
    for (const auto& [name, range] : values.search_properties) {
        mix(static_cast<std::int64_t>(range.size()));
        for (std::int64_t value : range) {
            mix(value);
        }
    }
    return hash;
}

TicketSettings Tickets::settle(TicketParams params) {
    const auto tags = tags_of(params);
    const NamesView names{add_profiles(params), search_profiles(params), tags};
    auto shared = names_.find(names);
    if (shared == names_.end()) {
        shared =
            names_
                .insert(std::make_shared<const TicketNames>(TicketNames{
                    add_profiles(params), search_profiles(params), {tags.begin(), tags.end()}}))
                .first;
    }
    TicketValues values{std::move(params.add_properties), std::move(params.search_properties)};
    auto shared_values = values_.find(values);
    if (shared_values == values_.end()) {
        shared_values =
            values_.insert(std::make_shared<const TicketValues>(std::move(values))).first;
    }
    std::unique_ptr<const TicketExtras> extras;
    if (!params.application_data.empty() || !params.search_steps.empty() ||
        params.prefer == Prefer::oldest) {
        extras = std::make_unique<const TicketExtras>(TicketExtras{
            std::move(params.application_data),
            params.prefer == Prefer::oldest ? unix_ms() : 0,
            context_.scheduler.now(),
            std::move(params.search_steps),
        });
    }
    return TicketSettings{*shared,
                          *shared_values,
                          params.search_interval,
                          params.wait_search_after,
                          params.timeout_extension_on_match_join,
                          params.max_members,
                          params.search_tries,
                          params.empty_searches,
                          params.wait_searches,
                          params.how_many,
                          params.prefer,
                          std::move(extras)};
}

Result<OwnedTicket*> Tickets::create(TicketType type, SharedUser owner, std::vector<User> party,
                                     TicketId id) {
    MM_ASSERT(owner != nullptr);
    if (tickets_.size() >= context_.options.tickets_max) {
        return fail(Errc::unavailable,
                    fmt::format("this node holds {} tickets, its limit", tickets_.size()));
    }
    if (const auto& placement = context_.matching.placement(); placement.candidates().empty()) {
        return fail(Errc::unavailable,
                    fmt::format("no live node of type '{}' stores items, so no ticket can match",
                                placement.target_node_type()));
    }
    const Callbacks* handlers = context_.callbacks(type);
    std::optional<TicketParams> params = handlers->on_issue_ticket(*owner);
    if (!params) {
        return fail(Errc::failed_to_create, "OnIssueTicket gave no ticket parameters");
    }
    if (auto ok = validate_params(*params, context_.options.limits, party.size() + 1,
                                  context_.matching.profiles());
        !ok) {
        return std::unexpected(ok.error());
    }
    OwnedTicket ticket;
    ticket.id = id;
    ticket.room_id = ticket.id;
    ticket.type = type;
    ticket.party.push_back(std::move(owner));
    for (User& member : party) {
        ticket.party.push_back(std::make_shared<const User>(std::move(member)));
    }
    ticket.started = context_.scheduler.now();
    ticket.deadline = ticket.started + params->ticket_duration;
    ticket.params = settle(std::move(*params));
    const UserId owner_id = ticket.owner();
    OwnedTicket& stored = tickets_.add(id, owner_id, type, std::move(ticket));
    Room& room = rooms_.open(stored);
    for (const SharedUser& user : stored.party) {
        if (user->home == context_.self()) {
            home_.participations().set(user->id, type,
                                       Participation{id, id, context_.self(), false});
        } else {  // claimed at its home earlier: now the ticket exists
            rooms_.push_to_member(room, Member{user, id}, WireKind::placed, 0, 0, {});
        }
    }
    ++context_.counters.by_type[type].started;
    if (stored.params.search_tries == 0) {
        start_waiting(stored);
        schedule_look(stored);
    } else {
        schedule_search(stored, Duration(0));
    }
    return &stored;
}

void Tickets::start_backfill(Room& room, SharedUser owner, TicketParams params, TicketId id) {
    MM_ASSERT(owner != nullptr && room.live_ticket.empty());  // one live ticket per room
    OwnedTicket ticket;
    ticket.id = id;
    ticket.room_id = room.id;
    ticket.type = room.type;
    ticket.party.push_back(std::move(owner));
    ticket.started = context_.scheduler.now();
    ticket.deadline = ticket.started + params.ticket_duration;
    ticket.params = settle(std::move(params));
    ticket.backfill = true;
    room.live_ticket = id;
    const UserId owner_id = ticket.owner();
    OwnedTicket& stored = tickets_.add(id, owner_id, room.type, std::move(ticket));
    start_waiting(stored);
}

void Tickets::forget_unused_settings() {
    std::erase_if(names_, [](const auto& names) { return names.use_count() == 1; });
    // Values come and go with their rating band's tickets: unused ones are kept for the band's
    // next ticket until there are more than a few thousand.
    if (values_.size() > values_kept_max) {
        std::erase_if(values_, [](const auto& values) { return values.use_count() == 1; });
    }
}

void Tickets::cancel_timers() {
    for (const auto& [id, ticket] : tickets_.all()) {
        context_.scheduler.cancel(ticket.timer);
    }
}

void Tickets::arm(OwnedTicket& ticket) {
    context_.scheduler.cancel(ticket.timer);
    const Time at = std::min(ticket.next_step, ticket.deadline);
    // Every end of a ticket, and the service's, cancels this timer: it needs no liveness guard
    // (and so stays small enough for one heap block less per waiting ticket).
    ticket.timer = context_.scheduler.run_after(at - context_.scheduler.now(),
                                                [this, id = ticket.id] { wake(id); });
}

void Tickets::wake(const TicketId& id) {
    auto found = tickets_.find(id);
    if (found == nullptr) {
        return;
    }
    OwnedTicket& ticket = *found;
    ticket.timer = 0;
    if (context_.scheduler.now() >= ticket.deadline) {
        on_deadline(id);
        return;
    }
    // While a search is out, no timer is set: its answer leads to a join, the next search or
    // waiting, each of which looks at the deadline again (see try_next_candidate).
    ticket.next_step = Time::max();
    if (ticket.phase == TicketPhase::searching) {
        run_search(id);
    } else {
        refresh_items(id);
    }
}

void Tickets::schedule_search(OwnedTicket& ticket, Duration delay) {
    ticket.next_step = context_.scheduler.now() + delay;
    arm(ticket);
}

void Tickets::run_search(const TicketId& id) {
    auto found = tickets_.find(id);
    if (found == nullptr || found->phase != TicketPhase::searching || found->joining) {
        return;
    }
    start_search(*found);
}

// How a ticket's search wants the buckets' items handed out.
// - A wait search after a burst meets many others in the same buckets: each sees its own share
//   of their rooms rather than all the same oldest ones.
// - When one more party of its size fills the rooms it looks for (a 1v1, a 2v2 of pairs),
//   searchers that find the same rooms at once would all try the same first one, and all but
//   one would spend a round trip to be refused. So each node asked offers the search one room
//   that it has offered to nobody else lately, which the search tries first, and rooms on offer
//   to other searches are passed by (try_next_candidate): their searchers are joining them. An
//   offer lasts about as long as it takes its searcher's join to arrive and the completed
//   room's items to be removed, two round trips: twice the time this node's joins to other nodes
//   have lately taken to be answered, or four times its recent search time if longer (its own
//   keys answer at once, so a node that stores the keys it searches learns little of a round
//   trip from its searches), at least 2 ms and at most a quarter of a search interval. A room
//   offered to a search that joined another is passed by until then, and keeps looking itself
//   meanwhile. Rooms with seats for several parties are better filled by several searchers at
//   once: no offers there. Nor for a waiting ticket's look, whose own room may be the one a node
//   would offer it; its look still passes by the rooms on offer to others.
matching::Handout Tickets::handout(const OwnedTicket& ticket) {
    matching::Handout handout;
    if (ticket.looking) {
        handout.rotation = static_cast<std::uint32_t>(random_()) | 1U;
    } else if (ticket.params.prefer == Prefer::spread &&
               ticket.params.max_members <= 2 * ticket.party.size()) {
        const auto longest =
            std::chrono::duration_cast<Duration>(ticket.params.search_interval / 4);
        const Duration join_time(static_cast<Duration::rep>(join_ms_ + 0.5));
        handout.offer_hold =
            std::clamp(std::max(4 * context_.matching.recent_search_time(), 2 * join_time),
                       Duration(2), std::max(Duration(2), longest));
    }
    return handout;
}

bool Tickets::taken_by_another(const OwnedTicket& ticket, const Candidate& candidate) {
    return ticket.params.prefer == Prefer::spread && candidate.offer == matching::Offer::another;
}

void Tickets::start_search(OwnedTicket& ticket) {
    ++context_.counters.searches;
    auto started = context_.matching.search_with_range_with_tags(
        ticket.params.names->search_profiles, ticket.params.names->tags,
        ticket.params.searching_now(context_.scheduler.now()), ticket.params.how_many,
        [this, alive = context_.alive, id = ticket.id](matching::SearchOutcome outcome) {
            if (*alive) {
                on_search_results(id, std::move(outcome));
            }
        },
        handout(ticket));
    if (!started) {  // parameters were checked at start; a profile may have been cleared since
        on_search_results(ticket.id, {});
    }
}

// A waiting ticket alone in its room keeps looking for another waiting room: at its search
// interval while it has searches left, then every wait_search_after as many times as
// wait_searches says. Only searchers join waiting rooms, so two tickets that both wait would
// otherwise wait until a later searcher came, which after a burst may be never. While arrivals
// keep coming a searcher usually finds a waiting ticket first, and a room others joined stops
// looking. While it tries a join its own room is closed; two that try each other at once are
// settled by yield_to_crossed_join.
void Tickets::schedule_look(const OwnedTicket& ticket) {
    if (ticket.backfill) {
        return;
    }
    const bool tries_left = has_tries_left(ticket);
    if (!tries_left && ticket.wait_searches >= ticket.params.wait_searches) {
        return;
    }
    context_.scheduler.run_after(
        tries_left ? ticket.params.search_interval : ticket.params.wait_search_after,
        [this, alive = context_.alive, id = ticket.id] {
            if (*alive) {
                run_look(id, Look::scheduled);
            }
        });
}

void Tickets::run_look(const TicketId& id, Look look) {
    auto found = tickets_.find(id);
    if (found == nullptr || found->phase != TicketPhase::waiting || found->looking ||
        found->joining || !alone_in_room(*found)) {
        return;  // it moved, ended, or others joined: the room stays where it is
    }
    OwnedTicket& ticket = *found;
    if (look == Look::confirming) {
        // counts as no search of its own: it belongs to the one that found nothing
    } else if (has_tries_left(ticket)) {
        ++ticket.searches;
    } else {
        ++ticket.wait_searches;
    }
    ticket.looking = true;
    start_search(ticket);
}

bool Tickets::has_tries_left(const OwnedTicket& ticket) {
    return ticket.searches < ticket.params.search_tries &&
           (ticket.params.empty_searches == 0 ||
            ticket.empty_searches < ticket.params.empty_searches);
}

bool Tickets::alone_in_room(const OwnedTicket& ticket) const {
    auto room = rooms_.find(ticket.room_id);
    return room != nullptr && room->members.size() == ticket.party.size();
}

void Tickets::end_look(OwnedTicket& ticket) {
    ticket.looking = false;
    if (auto room = rooms_.find(ticket.room_id); room != nullptr) {
        room->state = RoomState::waiting;
    }
    schedule_look(ticket);
}

// Two waiting tickets whose wait searches found each other send each other a join at once, each
// with its own room closed until its answer: both would be refused and both go on waiting. The
// ticket with the lower ID gives its join up and takes the other in. Its own join is sure to be
// refused: the other room stays closed until that other ticket hears back, and by then it has
// joined this room and is gone. Unless this room refuses it after all: then take_back_join.
std::optional<Tickets::GivenUpJoin> Tickets::yield_to_crossed_join(Room& room,
                                                                   const JoinMessage& join) {
    auto ticket = tickets_.find(room.live_ticket);
    if (ticket == nullptr || !ticket->looking || !ticket->joining ||
        ticket->joining->room_id != join.ticket_id || !(room.id.str() < join.ticket_id.str())) {
        return std::nullopt;
    }
    MM_ASSERT(room.state == RoomState::searching);
    GivenUpJoin given_up{std::move(ticket->joining),
                         LeaveMessage{join.ticket_id, ticket->owner(), ticket->type}};
    ticket->looking = false;
    room.state = RoomState::waiting;
    return given_up;
}

void Tickets::take_back_join(const TicketId& room_id, GivenUpJoin given_up) {
    auto room = rooms_.find(room_id);
    auto ticket = room == nullptr ? nullptr : tickets_.find(room->live_ticket);
    if (ticket != nullptr && ticket->phase == TicketPhase::waiting && !ticket->looking &&
        !ticket->joining && room->state == RoomState::waiting && alone_in_room(*ticket)) {
        ticket->joining = std::move(given_up.attempt);
        ticket->looking = true;
        room->state = RoomState::searching;
        return;
    }
    // The game's callbacks moved or ended the ticket meanwhile: should that room take the party
    // now, it leaves again.
    send_leave(given_up.attempt->node, given_up.leave);
}

Room* Tickets::room_found_by(const JoinMessage& join, const Holder& holder) {
    matching::ProfileRegistry& profiles = context_.matching.profiles();
    joiner_keys_.clear();
    if (!profiles.range_search_keys(join.search_profiles, join.search_tags,
                                    holder.search_properties, joiner_keys_)) {
        return nullptr;
    }
    const auto finds = [&](const OwnedTicket& ticket) {
        for (const std::string& tag : ticket.params.names->tags) {
            for (const std::string& profile : ticket.params.names->add_profiles) {
                if (!profiles.item_key(profile, tag, ticket.params.values->add_properties,
                                       room_key_)) {
                    continue;
                }
                for (const matching::SearchKey& key : joiner_keys_.keys()) {
                    if (key.hash == room_key_.hash && key.text == room_key_.text) {
                        return true;
                    }
                }
            }
        }
        return false;
    };
    const std::optional<TicketId> waiter =
        waiting_lately_.first(join.ticket_type, [&](const TicketId& id) {
            const OwnedTicket* ticket = tickets_.find(id);
            if (ticket == nullptr || ticket->phase != TicketPhase::waiting) {
                return WaitingLately::Seen::gone;
            }
            const Room* room = rooms_.find(ticket->room_id);
            if (room == nullptr || room->state != RoomState::waiting || room->id == join.room_id ||
                id == join.ticket_id || !finds(*ticket)) {
                return WaitingLately::Seen::passed;
            }
            return WaitingLately::Seen::taken;
        });
    return waiter ? rooms_.find(tickets_.find(*waiter)->room_id) : nullptr;
}

bool Tickets::joining_from_here(const TicketId& id, const std::string& attempt) {
    const OwnedTicket* ticket = tickets_.find(id);
    return ticket != nullptr && ticket->joining && ticket->joining->attempt == attempt;
}

void Tickets::redirect_join(const TicketId& id, const std::string& attempt,
                            const TicketId& room_id) {
    if (OwnedTicket* ticket = tickets_.find(id);
        ticket != nullptr && ticket->joining && ticket->joining->attempt == attempt &&
        node_text_of(room_id.str()) == ticket->joining->node.str()) {
        ticket->joining->room_id = room_id;
    }
}

void Tickets::send_leave(const NodeId& node, const LeaveMessage& leave) {
    context_.courier.request(node, wire::SERVICE, wire::METHOD_LEAVE, encode(leave), [](auto) {});
}

void Tickets::on_search_results(const TicketId& id, matching::SearchOutcome outcome) {
    auto found = tickets_.find(id);
    if (found == nullptr || (found->phase != TicketPhase::searching && !found->looking)) {
        return;
    }
    OwnedTicket& ticket = *found;
    if (ticket.looking && !alone_in_room(ticket)) {
        ticket.looking = false;  // others joined while it searched: it stays
        return;
    }
    ticket.candidates.clear();
    ticket.next_candidate = 0;
    ticket.taken = 0;
    contended_.forget_gone(context_.scheduler.now());
    for (const matching::Found& item : outcome.items) {
        const std::string_view room_id = room_of_item(item.unique_id);
        const bool seen = std::any_of(ticket.candidates.begin(), ticket.candidates.end(),
                                      [&](const Candidate& c) { return c.room() == room_id; });
        if (!node_text_of(room_id).empty() && room_id != ticket.room_id.str() && !seen &&
            !contended_.is_gone(room_id)) {
            const std::size_t room_length = room_id.size();
            const std::int64_t since = since_of(item);
            ticket.candidates.push_back(
                Candidate{std::string(item.unique_id), room_length, since, item.offer});
        }
    }
    if (ticket.params.prefer == Prefer::oldest) {
        std::stable_sort(ticket.candidates.begin(), ticket.candidates.end(),
                         [](const Candidate& a, const Candidate& b) {
                             return a.waiting_since_ms < b.waiting_since_ms;
                         });
    } else if (ticket.params.prefer == Prefer::spread) {
        // The rooms offered to this search first; rooms another searcher here is joining last:
        // it may well take the last seat.
        const auto rank = [&](const Candidate& c) {
            if (c.offer == matching::Offer::yours) {
                return 0;
            }
            return contended_.is_joined(c.room()) ? 2 : 1;
        };
        std::stable_sort(ticket.candidates.begin(), ticket.candidates.end(),
                         [&](const Candidate& a, const Candidate& b) { return rank(a) < rank(b); });
    }
    if (ticket.candidates.empty()) {
        ++ticket.empty_searches;
    }
    spread_candidates(ticket);
    try_next_candidate(ticket);
}

void Tickets::try_next_candidate(OwnedTicket& ticket) {
    if (context_.scheduler.now() >= ticket.deadline) {  // it passed while a search or join was out
        on_deadline(ticket.id);
        return;
    }
    // Under a high arrival rate, by the time a searcher reaches a search's later candidates
    // others have mostly taken them, each try costing a round trip. After a few found taken, it
    // searches again or waits: a waiting ticket is found as soon as it would find one.
    constexpr std::uint8_t taken_max = 3;
    // Rooms that another join from here found gone or complete since the search are passed by.
    // So are rooms on offer to another search, unless the game asked for a strict order (see
    // handout).
    while (ticket.next_candidate < ticket.candidates.size() &&
           (taken_by_another(ticket, ticket.candidates[ticket.next_candidate]) ||
            contended_.is_gone(ticket.candidates[ticket.next_candidate].room()))) {
        ++ticket.next_candidate;
    }
    if (ticket.next_candidate < ticket.candidates.size() && ticket.taken < taken_max) {
        const Candidate& candidate = ticket.candidates[ticket.next_candidate++];
        ticket.joining = std::make_unique<JoinAttempt>(
            JoinAttempt{numbered(ticket.id.str(), '/', next_attempt_++), TicketId(candidate.room()),
                        NodeId(node_text_of(candidate.room()))});
        send_join(ticket.id);
        return;
    }
    // This search found no room to join.
    if (ticket.looking) {
        end_look(ticket);
        return;
    }
    ++ticket.searches;
    // Findable at once, rather than after another interval. A ticket whose search found no room
    // at all may have run it at the same moment as another that found nothing either and is
    // becoming findable too, so it looks again right away: its room's items were sent before
    // that look, and the other's before its own, so unless both were still on their way one
    // finds the other; two that find each other make one room (yield_to_crossed_join). (Rooms
    // found taken mean searchers are busy in these buckets: one will come.)
    // The looks of a burst's tickets, which all found nothing at once, are spread over a
    // quarter of the search interval: each closes its room while it tries a join, and looks all
    // at the same moment would mostly find each other's rooms closed.
    // Rooms that were all on offer to others count as none: their searchers may join others.
    start_waiting(ticket);
    const bool none_for_it =
        std::all_of(ticket.candidates.begin(), ticket.candidates.end(),
                    [&](const Candidate& c) { return taken_by_another(ticket, c); });
    if (!none_for_it || ticket.backfill) {
        schedule_look(ticket);
        return;
    }
    const Duration spread(std::uniform_int_distribution<Duration::rep>(
        0,
        std::chrono::duration_cast<Duration>(ticket.params.search_interval / 4).count())(random_));
    context_.scheduler.run_after(spread, [this, alive = context_.alive, id = ticket.id] {
        if (*alive) {
            run_look(id, Look::confirming);
        }
    });
}

void Tickets::send_join(const TicketId& id) {
    OwnedTicket& ticket = tickets_.at(id);
    MM_ASSERT(ticket.joining != nullptr);
    // The holder stays in the ticket's settings until a local join needs its own copy.
    JoinMessage join{ticket.joining->attempt,
                     ticket.joining->room_id,
                     ticket.type,
                     ticket.id,
                     ticket.party,
                     {},
                     true,
                     context_.scheduler.now() - ticket.started};
    if (ticket.params.prefer != Prefer::closest) {  // the closest rooms may be on other nodes
        join.search_profiles = ticket.params.names->search_profiles;
        join.search_tags = ticket.params.names->tags;
    }
    const std::string attempt = join.attempt;
    if (auto room = rooms_.find(ticket.room_id); ticket.looking && room != nullptr) {
        room->state = RoomState::searching;  // a party in two rooms would be two matches
    }
    const TicketId room_id = ticket.joining->room_id;
    contended_.joining(room_id);
    if (ticket.joining->node == context_.self()) {
        auto reply = rooms_.accept_join(join, holder_of(ticket.params));
        context_.scheduler.run_after(Duration(0),
                                     [this, alive = context_.alive, id, attempt, room_id, reply] {
                                         if (*alive) {
                                             note_join_answer(room_id, reply);
                                             on_join_reply(id, attempt, reply);
                                         }
                                     });
        return;
    }
    // A join honours its ticket's deadline: no retry starts after it.
    auto answered = [this, alive = context_.alive, id, attempt, node = ticket.joining->node,
                     leave = LeaveMessage{room_id, ticket.owner(), ticket.type},
                     sent = context_.scheduler.now()](
                        std::expected<mesh::PayloadView, mesh::MeshError> reply) {
        if (!*alive) {
            return;
        }
        if (reply) {  // an average over the last few dozen answers, from the first
            const auto took = static_cast<double>((context_.scheduler.now() - sent).count());
            join_ms_ = join_ms_ == 0 ? took : join_ms_ + (took - join_ms_) / 32;
        }
        std::expected<JoinReplyMessage, std::string> answer =
            reply ? decode_join_reply(*reply, context_.network.reader_options())
                  : std::unexpected(reply.error().message);
        note_join_answer(leave.room_id, answer);
        if (!reply) {
            auto ticket = tickets_.find(id);
            const bool still_joining =
                ticket != nullptr && ticket->joining && ticket->joining->attempt == attempt;
            if (reply.error().code == mesh::MeshErrc::timeout && still_joining) {
                // The room's node may have taken the party without its answer arriving: leave,
                // so that it does not keep members who were told something else. (Not when a
                // push from that room already said the join succeeded: the party is there.)
                send_leave(node, leave);
            }
        }
        std::vector<PushEnvelope> pushes =
            answer ? std::exchange(answer->pushes, {}) : std::vector<PushEnvelope>{};
        on_join_reply(id, attempt, std::move(answer));
        home_.receive_pushes(pushes);  // the room's news for users here
    };
    context_.courier.request(ticket.joining->node, wire::SERVICE, wire::METHOD_JOIN,
                             encode(join, holder_view(ticket.params)), std::move(answered),
                             ticket.deadline);
}

void Tickets::on_join_reply(const TicketId& id, const std::string& attempt,
                            std::expected<JoinReplyMessage, std::string> reply) {
    auto found = tickets_.find(id);
    if (found == nullptr || !found->joining || found->joining->attempt != attempt) {
        return;
    }
    OwnedTicket& ticket = *found;
    if (reply && reply->accepted) {
        if (!reply->seated_in.empty()) {  // its room was taken; another there took the party
            redirect_join(id, attempt, reply->seated_in);
        }
        conclude_join(ticket);
        return;
    }
    ticket.joining.reset();
    ++context_.counters.own_joins_refused;
    if (reply && reply->taken) {
        ++ticket.taken;
    }
    if (ticket.cancel_requested) {
        end(id, PushKind::cancel, *ticket.cancel_requested);
    } else if (ticket.expired) {
        end(id, ticket.complete_when_expire ? PushKind::success : PushKind::timeout);
    } else {
        spread_candidates(ticket);
        try_next_candidate(ticket);
    }
}

void Tickets::note_join_answer(const TicketId& room,
                               const std::expected<JoinReplyMessage, std::string>& reply) {
    contended_.answered(room);
    if (reply && reply->gone) {
        contended_.gone(room, context_.scheduler.now());
    }
}

// Every searcher of a bucket is handed the same rooms in the same order; if each tried them in
// that order, a busy bucket would fill one room per round trip while its waiting rooms pile up,
// and the refused joins would grow with the load, each a round trip that slows the next. So each
// try, the first included, is drawn from the next few rooms: searchers spread over the rooms
// while still trying the longest waiting ones first. A room offered to this search (handout) is
// tried as it comes: the others were offered other rooms.
void Tickets::spread_candidates(OwnedTicket& ticket) {
    if (ticket.params.prefer != Prefer::spread) {
        return;  // the game asked for a strict order
    }
    constexpr std::size_t window = 8;
    const std::size_t left = ticket.candidates.size() - ticket.next_candidate;
    if (left > 1 && ticket.candidates[ticket.next_candidate].offer != matching::Offer::yours) {
        const std::size_t pick =
            std::uniform_int_distribution<std::size_t>(0, std::min(left, window) - 1)(random_);
        std::swap(ticket.candidates[ticket.next_candidate],
                  ticket.candidates[ticket.next_candidate + pick]);
    }
}

void Tickets::extend_on_join(const TicketId& id) {
    auto ticket = tickets_.find(id);
    if (ticket == nullptr) {
        return;
    }
    const auto extension = ticket->params.timeout_extension_on_match_join;
    if (extension.count() > 0) {
        ticket->deadline += extension;
        arm(*ticket);
    }
}

void Tickets::conclude_join(OwnedTicket& ticket) {
    MM_ASSERT(ticket.joining != nullptr && ticket.phase != TicketPhase::matched);
    // The party now belongs to that room; its node decides the rest, pushes included.
    const JoinAttempt joined = *ticket.joining;
    const TicketId id = ticket.id;
    ticket.joining.reset();
    // A waiting ticket's items, while its phase still says it has some.
    remove_items(ticket);
    if (ticket.cancel_requested) {  // the room's 222 to the party says why
        send_leave(joined.node, LeaveMessage{joined.room_id, ticket.owner(), ticket.type,
                                             *ticket.cancel_requested});
    }
    for (const SharedUser& user : ticket.party) {
        if (Participation* participation =
                home_.participations().of_ticket(user->id, ticket.type, id)) {
            participation->room_id = joined.room_id;
            participation->room_node = joined.node;
        }
    }
    context_.recall.joined(id, MatchedTicket{ticket.type, ticket.party, joined.node, {}},
                           context_.scheduler.now());
    ticket.phase = TicketPhase::matched;
    finish(ticket);
    rooms_.erase(id);
    tickets_.erase(id, ticket.owner(), ticket.type);
}

void Tickets::start_waiting(OwnedTicket& ticket) {
    MM_ASSERT(ticket.phase == TicketPhase::searching && ticket.joining == nullptr);
    ticket.phase = TicketPhase::waiting;
    if (auto room = rooms_.find(ticket.room_id); room != nullptr) {
        room->state = ticket.backfill ? RoomState::backfill : RoomState::waiting;
    }
    if (!ticket.backfill) {
        waiting_lately_.add(ticket.type, ticket.id);
    }
    refresh_items(ticket.id);
}

void Tickets::refresh_items(const TicketId& id) {
    auto found = tickets_.find(id);
    if (found == nullptr || found->phase != TicketPhase::waiting) {
        return;
    }
    OwnedTicket& ticket = *found;
    const Duration remaining = ticket.deadline - context_.scheduler.now();
    const auto ttl = std::clamp(
        std::chrono::duration_cast<std::chrono::seconds>(remaining) + std::chrono::seconds(1),
        std::chrono::seconds(1), context_.options.item_ttl_max);
    const auto& tags = ticket.params.names->tags;
    for (std::size_t t = 0; t < tags.size(); ++t) {
        for (const std::string& profile : ticket.params.names->add_profiles) {
            // Fails only when no node stores items right now; the next refresh tries again.
            (void)context_.matching.add(profile, item_id(ticket.room_id, t), tags[t],
                                        ticket.params.values->add_properties, waiting_since(ticket),
                                        ttl);
        }
    }
    // Refresh at half the TTL, so the items never lapse while the ticket waits.
    const Duration half =
        std::chrono::duration_cast<Duration>(ttl) / 2;  // not whole seconds: 1 s / 2
    ticket.next_step = context_.scheduler.now() + half;
    arm(ticket);
}

void Tickets::remove_items(const OwnedTicket& ticket) {
    if (ticket.phase != TicketPhase::waiting) {
        return;
    }
    std::vector<std::string> ids;
    for (std::size_t t = 0; t < ticket.params.names->tags.size(); ++t) {
        ids.push_back(item_id(ticket.room_id, t));
    }
    for (const std::string& profile : ticket.params.names->add_profiles) {
        (void)context_.matching.remove(profile, ids);
    }
}

void Tickets::on_deadline(const TicketId& id) {
    auto found = tickets_.find(id);
    if (found == nullptr) {
        return;
    }
    OwnedTicket& ticket = *found;
    if (ticket.joining) {
        ticket.expired = true;  // decided once the join is answered
        return;
    }
    end(id,
        ticket.complete_when_expire && !ticket.backfill ? PushKind::success : PushKind::timeout);
}

void Tickets::finish(OwnedTicket& ticket) {
    context_.scheduler.cancel(ticket.timer);
    remove_items(ticket);
    tickets_.retire(ticket.id, ticket.owner(), ticket.type);
    if (auto room = rooms_.find(ticket.room_id);
        room != nullptr && room->live_ticket == ticket.id) {
        room->live_ticket = TicketId();
    }
}

void Tickets::end(TicketId id, PushKind outcome, EndReason why) {
    auto found = tickets_.find(id);
    if (found == nullptr) {
        return;
    }
    OwnedTicket& ticket = *found;
    if (ticket.joining) {  // the join's answer decides, then this outcome applies
        if (outcome == PushKind::cancel && !ticket.cancel_requested) {
            ticket.cancel_requested = why;
        }
        ticket.expired = ticket.expired || outcome == PushKind::timeout;
        return;
    }
    MM_ASSERT(ticket.phase != TicketPhase::matched);  // a matched ticket is gone already
    const TicketId room_id = ticket.room_id;
    const bool backfill = ticket.backfill;
    if (auto room = rooms_.find(room_id);
        outcome == PushKind::success && !backfill && room != nullptr) {
        // The completed room outlives its ticket, and keeps the owner's holder.
        room->edit_extras().ticket_properties.owner = holder_of(ticket.params);
    }
    finish(ticket);
    tickets_.erase(id, ticket.owner(), ticket.type);
    if (backfill) {  // a backfill ends quietly: the room returns to completed
        if (auto room = rooms_.find(room_id); room != nullptr) {
            room->state = RoomState::completed;
        }
        return;
    }
    end_room(room_id, outcome, why);
}

void Tickets::end_room(const TicketId& room_id, PushKind outcome, EndReason why) {
    auto room = rooms_.find(room_id);
    if (room == nullptr) {
        return;
    }
    TicketTypeCounters& counters = context_.counters.by_type[room->type];
    if (outcome == PushKind::success) {
        ++counters.ended_as(EndReason::completed);
        rooms_.complete(*room);
        return;
    }
    // A 222 counts under its reason; one that gives none (or another outcome's) as canceled.
    const bool cancel_reason = why > EndReason::timed_out;
    ++counters.ended_as(outcome == PushKind::timeout ? EndReason::timed_out
                        : cancel_reason              ? why
                                                     : EndReason::canceled);
    const Callbacks* handlers = context_.callbacks(room->type);
    const UserId owner = room->owner;
    rooms_.close(room_id, outcome, why);
    if (handlers != nullptr) {
        const User* owner_user = context_.local_user(owner);
        if (outcome == PushKind::timeout && handlers->on_ticket_timeout) {
            handlers->on_ticket_timeout(owner_user);
        } else if (outcome == PushKind::cancel && handlers->on_ticket_canceled) {
            handlers->on_ticket_canceled(owner_user);
        }
    }
}

}  // namespace matchmesh::ticket
