#include "matching/service.hpp"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "matching/store.hpp"
#include "mesh/base/assert.hpp"

namespace matchmesh::matching {
namespace {

// Made at its exact size (reserve() would round a short string's first block up to 30 bytes):
// an added item's key is kept for as long as the item.
std::string origin_key(std::string_view profile_id, std::string_view unique_id) {
    std::string key(profile_id.size() + 1 + unique_id.size(), '\t');
    profile_id.copy(key.data(), profile_id.size());
    unique_id.copy(key.data() + profile_id.size() + 1, unique_id.size());
    return key;
}

bool contains(const std::vector<NodeId>& nodes, const NodeId& id) {
    return std::find(nodes.begin(), nodes.end(), id) != nodes.end();
}

// Idle jobs that keep their lists for the next search; the rest free them.
constexpr std::size_t jobs_keeping_lists_max = 64;

}  // namespace

struct MatchingService::SearchJob {
    static constexpr std::uint32_t no_request = 0xffff'ffffU;   // answered, or no replica left
    static constexpr std::uint32_t being_asked = 0xffff'fffeU;  // within dispatch only

    std::uint32_t generation = 0;  // moves on when the job is answered: older refs are stale
    Time started{};
    // Per key, in [0, key_count): the lists keep their length and their elements' capacity from
    // job to job.
    std::size_t key_count = 0;
    std::vector<std::string> keys;
    std::vector<std::vector<NodeId>> replicas;  // the one to ask first in front
    std::vector<std::size_t> next_replica;
    std::vector<std::uint32_t> request_of;  // the request that asks for the key now (0: none yet)
    std::vector<std::vector<Found>> found;
    std::uint32_t requests = 0;  // sent so far; they are numbered from 1
    std::size_t limit = 0;
    std::size_t node_limit = 0;
    Handout handout;
    std::size_t profile_count = 0;
    std::size_t outstanding = 0;
    std::size_t unanswered = 0;
    SearchCallback done;
    SearchOutcome outcome;     // once every key is answered or given up
    mesh::TimerId answer = 0;  // the turn that hands `outcome` to `done`
};

MatchingService::MatchingService(mesh::Network& network, mesh::Scheduler& scheduler,
                                 ServiceOptions options)
    : network_(network),
      scheduler_(scheduler),
      options_(std::move(options)),
      profiles_(options_.placement_group),
      placement_(options_.target_node_type, options_.replicas),
      self_hash_(member_hash(network_.self().id)) {
    placement_.update(network_.live_members());
    network_.on_one_way(wire::SERVICE, wire::METHOD_ADD,
                        [this, alive = alive_](const NodeId& from, mesh::PayloadView payload) {
                            if (*alive) {
                                on_add(from, payload);
                            }
                        });
    network_.on_one_way(wire::SERVICE, wire::METHOD_REMOVE,
                        [this, alive = alive_](const NodeId& from, mesh::PayloadView payload) {
                            if (*alive) {
                                on_remove(from, payload);
                            }
                        });
    network_.on_request(wire::SERVICE, wire::METHOD_SEARCH,
                        [this, alive = alive_](const NodeId& from, mesh::PayloadView payload,
                                               mesh::Responder responder) {
                            if (*alive) {
                                on_search(from, payload, std::move(responder));
                            } else {
                                responder.fail(mesh::MeshErrc::shutdown, "service stopped");
                            }
                        });
    network_.on_membership([this, alive = alive_](const mesh::MembershipEvent& event) {
        if (*alive) {
            on_membership(event);
        }
    });
    sweep_timer_ = scheduler_.run_after(options_.sweep_interval, [this, alive = alive_] {
        if (*alive) {
            sweep();
        }
    });
}

MatchingService::~MatchingService() {
    *alive_ = false;
    scheduler_.cancel(sweep_timer_);
    for (const auto& job : jobs_) {
        if (job->answer != 0) {
            scheduler_.cancel(job->answer);
        }
    }
}

void MatchingService::warn(std::string message) {
    if (options_.on_warning) {
        options_.on_warning(message);
    }
}

void MatchingService::sweep() {
    const Time now = scheduler_.now();
    items_.expire(now);
    while (!origin_deadlines_.empty() && origin_deadlines_.top().first <= now) {
        auto entry = origins_.find(origin_deadlines_.top().second);
        if (entry != origins_.end() && entry->second.expires_at <= now) {
            replica_lists_.release(entry->second.replicas);
            origins_.erase(entry);
        }
        origin_deadlines_.pop();
    }
    sweep_timer_ = scheduler_.run_after(options_.sweep_interval, [this, alive = alive_] {
        if (*alive) {
            sweep();
        }
    });
}

Result<void> MatchingService::add(std::string_view profile_id, std::string_view unique_id,
                                  std::string_view tag, const Properties& properties,
                                  ValueMap value, std::chrono::seconds ttl) {
    if (auto ok =
            validate_item(profiles_, profile_id, unique_id, tag, properties, value, ttl, item_key_);
        !ok) {
        return ok;
    }
    if (placement_.candidates().empty()) {
        return fail(Errc::unavailable, fmt::format("no live node of type '{}' stores items",
                                                   placement_.target_node_type()));
    }
    const Time now = scheduler_.now();
    const NodeId& self = network_.self().id;
    placement_.replicas(item_key_.place, replicas_);

    // Nodes that held this item before but are not its replicas now would keep a stale copy.
    std::string origin = origin_key(profile_id, unique_id);
    const std::uint32_t replicas = replica_lists_.acquire(replicas_);
    auto found = origins_.find(std::string_view(origin));
    if (found == origins_.end()) {
        found = origins_.emplace(OriginKey(std::move(origin)), OriginEntry{replicas, now}).first;
    } else {
        const std::uint32_t before = std::exchange(found->second.replicas, replicas);
        for (const NodeId& node : replica_lists_.nodes(before)) {
            if (!contains(replicas_, node)) {
                const std::vector<std::string> ids{std::string(unique_id)};
                if (node == self) {
                    items_.remove(profile_id, ids, now);
                } else {
                    network_.send(node, wire::SERVICE, wire::METHOD_REMOVE,
                                  encode_remove(profile_id, ids));
                }
            }
        }
        replica_lists_.release(before);
    }
    found->second.expires_at = now + ttl;
    origin_deadlines_.emplace(now + ttl, found->first);

    ++counters_.items_added;
    mesh::Payload payload;
    for (const NodeId& node : replicas_) {
        if (node == self) {
            items_.put(PutItem{profile_id, item_key_.text, item_key_.hash, unique_id, value, ttl,
                               self.str()},
                       now);
            continue;
        }
        if (payload.words().empty()) {
            const AddedItem item{std::string(profile_id), item_key_.text, std::string(unique_id),
                                 value, ttl};
            payload = encode_add(std::span(&item, 1));
        }
        network_.send(node, wire::SERVICE, wire::METHOD_ADD, payload);
    }
    return {};
}

Result<void> MatchingService::search(std::span<const std::string> profile_ids, std::string_view tag,
                                     const Properties& properties, std::size_t limit,
                                     SearchCallback done) {
    if (auto ok = validate_limit(limit); !ok) {
        return ok;
    }
    keys_.clear();
    if (auto ok = profiles_.search_keys(profile_ids, tag, properties, keys_); !ok) {
        return ok;
    }
    start_search(limit, profile_ids.size(), std::move(done));
    return {};
}

Result<void> MatchingService::search_with_range(std::span<const std::string> profile_ids,
                                                std::string_view tag,
                                                const RangeProperties& properties,
                                                std::size_t limit, SearchCallback done) {
    const std::string tag_copy(tag);
    return search_with_range_with_tags(profile_ids, std::span(&tag_copy, 1), properties, limit,
                                       std::move(done));
}

Result<void> MatchingService::search_with_range_with_tags(std::span<const std::string> profile_ids,
                                                          std::span<const std::string> tags,
                                                          const RangeProperties& properties,
                                                          std::size_t limit, SearchCallback done,
                                                          Handout handout) {
    if (auto ok = validate_limit(limit); !ok) {
        return ok;
    }
    keys_.clear();
    if (auto ok = profiles_.range_search_keys(profile_ids, tags, properties, keys_); !ok) {
        return ok;
    }
    start_search(limit, profile_ids.size(), std::move(done), handout);
    return {};
}

void MatchingService::ask_fewest_nodes(std::vector<std::vector<NodeId>>& replicas,
                                       std::size_t key_count) {
    // Greedy cover: this node for every key it holds, then, while keys are left, the node that
    // holds most of them (ties: among the earliest such key's replicas, the first from a place
    // this node's hash picks, so that nodes searching the same group ask different replicas of
    // it). Every request and answer is a frame, and a frame costs both nodes far more than the
    // keys it carries.
    covered_.assign(key_count, false);
    std::optional<NodeId> chosen = network_.self().id;
    // Uncovered keys each node holds: a handful of nodes, so a list.
    const auto held_by = [&](const NodeId& node) -> std::size_t& {
        auto found = std::find_if(holders_.begin(), holders_.end(),
                                  [&](const auto& entry) { return *entry.first == node; });
        return found != holders_.end() ? found->second : holders_.emplace_back(&node, 0).second;
    };
    while (chosen) {
        for (std::size_t k = 0; k < key_count; ++k) {
            auto& list = replicas[k];
            if (auto found = std::find(list.begin(), list.end(), *chosen);
                !covered_[k] && found != list.end()) {
                // Asked first; the others stay behind it as fallbacks.
                std::rotate(list.begin(), found, found + 1);
                covered_[k] = true;
            }
        }
        holders_.clear();
        chosen.reset();
        std::size_t best = 0;
        for (std::size_t k = 0; k < key_count; ++k) {
            if (covered_[k]) {
                continue;
            }
            for (const NodeId& node : replicas[k]) {
                if (const std::size_t count = ++held_by(node); count > best) {
                    best = count;
                }
            }
        }
        for (std::size_t k = 0; k < key_count && !chosen; ++k) {
            if (covered_[k]) {
                continue;
            }
            const auto& list = replicas[k];
            for (std::size_t i = 0; i < list.size(); ++i) {
                const NodeId& node = list[(self_hash_ + i) % list.size()];
                if (held_by(node) == best) {
                    chosen = node;
                    break;
                }
            }
        }
    }
    holders_.clear();
}

MatchingService::SearchJob& MatchingService::job_at(JobRef ref) const {
    SearchJob& job = *jobs_[ref.slot];
    MM_ASSERT(job.generation == ref.generation);
    return job;
}

void MatchingService::start_search(std::size_t limit, std::size_t profile_count,
                                   SearchCallback done, Handout handout) {
    ++counters_.searches;
    if (free_jobs_.empty()) {
        free_jobs_.push_back(static_cast<std::uint32_t>(jobs_.size()));
        jobs_.push_back(std::make_unique<SearchJob>());
    }
    const JobRef ref{free_jobs_.back(), jobs_[free_jobs_.back()]->generation};
    free_jobs_.pop_back();
    SearchJob& job = *jobs_[ref.slot];
    job.limit = limit;
    job.handout = handout;
    job.started = scheduler_.now();
    job.profile_count = profile_count;
    // With several profiles, another node's answer may repeat up to `limit` of a node's unique
    // IDs, so each node returns up to twice the limit to keep the merged result exact.
    job.node_limit = profile_count > 1 ? 2 * limit : limit;
    job.requests = 0;
    job.outstanding = 0;
    job.unanswered = 0;
    job.done = std::move(done);
    job.outcome = SearchOutcome{};
    const auto keys = keys_.keys();
    job.key_count = keys.size();
    if (job.keys.size() < keys.size()) {
        job.keys.resize(keys.size());
        job.replicas.resize(keys.size());
        job.next_replica.resize(keys.size());
        job.request_of.resize(keys.size());
        job.found.resize(keys.size());
    }
    for (std::size_t k = 0; k < keys.size(); ++k) {
        job.keys[k].assign(keys[k].text);
        placement_.replicas(keys[k].place, job.replicas[k]);
        job.next_replica[k] = 0;
        job.request_of[k] = 0;
        job.found[k].clear();
    }
    ask_fewest_nodes(job.replicas, job.key_count);
    dispatch(ref, 0);
    finish_if_done(ref);
}

void MatchingService::dispatch(JobRef ref, std::uint32_t request) {
    SearchJob& job = job_at(ref);
    // The nodes to ask, each with its request's number; a search covers a handful of keys on
    // fewer nodes, so a short list beats a map. Replies never run inside network_.request (they
    // come on a later turn of the loop), so nothing below is re-entered while it runs.
    asked_.clear();
    for (std::size_t k = 0; k < job.key_count; ++k) {
        if (job.request_of[k] != request) {
            continue;
        }
        if (job.next_replica[k] >= job.replicas[k].size()) {
            ++job.unanswered;
            job.request_of[k] = SearchJob::no_request;
            continue;
        }
        const NodeId& node = job.replicas[k][job.next_replica[k]++];
        job.request_of[k] = SearchJob::being_asked;
        if (std::none_of(asked_.begin(), asked_.end(),
                         [&](const auto& entry) { return *entry.first == node; })) {
            asked_.emplace_back(&node, 0);
        }
    }
    std::sort(asked_.begin(), asked_.end(),
              [](const auto& a, const auto& b) { return *a.first < *b.first; });
    for (auto& [node, number] : asked_) {
        number = ++job.requests;
    }
    for (std::size_t k = 0; k < job.key_count; ++k) {
        if (job.request_of[k] == SearchJob::being_asked) {
            const NodeId& node = job.replicas[k][job.next_replica[k] - 1];
            job.request_of[k] = std::find_if(asked_.begin(), asked_.end(), [&](const auto& entry) {
                                    return *entry.first == node;
                                })->second;
        }
    }
    for (const auto& [node, number] : asked_) {
        keys_of_request(job, number);
        request_keys_.clear();
        for (const std::size_t k : request_key_indexes_) {
            request_keys_.emplace_back(job.keys[k]);
        }
        if (*node == network_.self().id) {
            const Time now = scheduler_.now();
            for (const KeyedView& view : serve(request_keys_, job.node_limit, job.handout)) {
                job.found[request_key_indexes_[view.key_index]].push_back(
                    job.outcome.keep_copy(view.item, now));
            }
            for (const std::size_t k : request_key_indexes_) {
                job.request_of[k] = SearchJob::no_request;
            }
            continue;
        }
        ++job.outstanding;
        network_.request(
            *node, wire::SERVICE, wire::METHOD_SEARCH,
            encode_search(request_keys_, job.node_limit, job.handout), options_.search_timeout,
            [this, alive = alive_, ref,
             number = number](std::expected<mesh::PayloadView, mesh::MeshError> reply) {
                if (!*alive) {
                    return;
                }
                SearchJob& job = job_at(ref);
                --job.outstanding;
                if (reply && take_answer(job, number, *reply)) {
                    finish_if_done(ref);
                    return;
                }
                ++counters_.search_fallbacks;
                dispatch(ref, number);
                finish_if_done(ref);
            });
    }
}

// The answer numbers the request's keys in the order they were sent; the job's outcome keeps the
// answer, and its items go into the keys' lists as views into it.
bool MatchingService::take_answer(SearchJob& job, std::uint32_t number, mesh::PayloadView reply) {
    answered_items_.clear();
    if (!decode_search_response(reply, network_.reader_options(), job.outcome, answered_items_)) {
        return false;
    }
    keys_of_request(job, number);
    // An answer with shared texts leaves out the items' profile IDs: each is its key's (the text
    // before the key's first tab), kept with the outcome once per key that found something.
    request_profiles_.assign(request_key_indexes_.size(), std::string_view());
    for (KeyedFound& found : answered_items_) {
        if (found.key_index >= request_key_indexes_.size()) {
            continue;  // names no key that was asked
        }
        const std::size_t k = request_key_indexes_[found.key_index];
        if (found.item.profile_id.empty()) {
            std::string_view& profile = request_profiles_[found.key_index];
            if (profile.empty()) {
                const std::string_view key = job.keys[k];
                profile = job.outcome.keep_text(key.substr(0, key.find('\t')));
            }
            found.item.profile_id = profile;
        }
        job.found[k].push_back(found.item);
    }
    for (const std::size_t k : request_key_indexes_) {
        job.request_of[k] = SearchJob::no_request;
    }
    return true;
}

void MatchingService::keys_of_request(const SearchJob& job, std::uint32_t number) {
    request_key_indexes_.clear();
    for (std::size_t k = 0; k < job.key_count; ++k) {
        if (job.request_of[k] == number) {
            request_key_indexes_.push_back(k);
        }
    }
}

void MatchingService::finish_if_done(JobRef ref) {
    SearchJob& job = job_at(ref);
    if (job.outstanding > 0) {
        return;
    }
    SearchOutcome& outcome = job.outcome;
    outcome.keys_unanswered = job.unanswered;
    counters_.keys_unanswered += job.unanswered;
    // One profile cannot repeat a unique ID (it lives in one bucket); several profiles can.
    std::size_t found = 0;
    for (std::size_t k = 0; k < job.key_count; ++k) {
        found += job.found[k].size();
    }
    outcome.items.reserve(std::min(found, job.limit));
    std::unordered_set<std::string_view> seen;
    for (std::size_t k = 0; k < job.key_count; ++k) {
        for (const Found& item : job.found[k]) {
            if (outcome.items.size() >= job.limit) {
                break;
            }
            if (job.profile_count == 1 || seen.insert(item.unique_id).second) {
                outcome.items.push_back(item);
            }
        }
    }
    // Always answer on a later turn of the loop, even when every key was local.
    job.answer = scheduler_.run_after(Duration(0), [this, ref] { answer(ref); });
}

void MatchingService::answer(JobRef ref) {
    SearchJob& job = job_at(ref);
    SearchCallback done = std::move(job.done);
    SearchOutcome outcome = std::move(job.outcome);
    job.answer = 0;
    // An average over the last few dozen searches.
    constexpr double weight = 1.0 / 32;
    search_ms_ +=
        weight * (static_cast<double>((scheduler_.now() - job.started).count()) - search_ms_);
    ++job.generation;
    if (free_jobs_.size() >= jobs_keeping_lists_max) {
        // After a burst of searches, only a few idle jobs keep their lists' memory.
        job.keys = {};
        job.replicas = {};
        job.next_replica = {};
        job.request_of = {};
        job.found = {};
    }
    free_jobs_.push_back(ref.slot);
    done(std::move(outcome));
}

std::span<const KeyedView> MatchingService::serve(std::span<const std::string_view> keys,
                                                  std::size_t limit, Handout handout) {
    const Time now = scheduler_.now();
    served_items_.clear();
    served_.clear();
    for (std::size_t i = 0; i < keys.size() && served_items_.size() < limit; ++i) {
        const std::size_t before = served_items_.size();
        // One offer per request: in the first key (nearest first) that has an item on offer to
        // nobody.
        if (items_.collect(keys[i], key_hash(keys[i]), now, limit, before, served_items_,
                           handout)) {
            handout.offer_hold = Duration(0);
        }
        for (std::size_t j = before; j < served_items_.size(); ++j) {
            served_.push_back(KeyedView{i, served_items_[j]});
        }
    }
    return served_;
}

Result<void> MatchingService::remove(std::string_view profile_id,
                                     std::span<const std::string> unique_ids) {
    if (profiles_.find(profile_id) == nullptr) {
        return fail(Errc::unknown_profile, fmt::format("profile '{}' is not defined", profile_id));
    }
    // Each node's IDs, the nodes in order; a removal reaches a handful of nodes, so a short list.
    // (Nothing below runs remove() again: a send only queues its frame.)
    std::size_t groups = 0;
    const auto ids_for = [&](const NodeId& node) -> std::vector<std::string>& {
        for (std::size_t g = 0; g < groups; ++g) {
            if (removals_[g].first == node) {
                return removals_[g].second;
            }
        }
        if (groups == removals_.size()) {
            removals_.emplace_back();
        }
        auto& [id, ids] = removals_[groups++];
        id = node;
        ids.clear();
        return ids;
    };
    std::vector<std::string> unknown;
    for (const std::string& unique_id : unique_ids) {
        auto entry = origins_.find(std::string_view(origin_key(profile_id, unique_id)));
        if (entry == origins_.end()) {
            unknown.push_back(unique_id);
            continue;
        }
        for (const NodeId& node : replica_lists_.nodes(entry->second.replicas)) {
            ids_for(node).push_back(unique_id);
        }
        replica_lists_.release(entry->second.replicas);
        origins_.erase(entry);
    }
    if (!unknown.empty()) {  // added elsewhere or forgotten: ask every node that stores items
        for (const NodeId& node : placement_.candidates()) {
            auto& ids = ids_for(node);
            ids.insert(ids.end(), unknown.begin(), unknown.end());
        }
    }
    const auto in_use = std::span(removals_).first(groups);
    std::sort(in_use.begin(), in_use.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [node, ids] : in_use) {
        for (std::size_t start = 0; start < ids.size(); start += remove_batch_max) {
            const auto batch =
                std::span(ids).subspan(start, std::min(remove_batch_max, ids.size() - start));
            if (node == network_.self().id) {
                items_.remove(profile_id, batch, scheduler_.now());
            } else {
                network_.send(node, wire::SERVICE, wire::METHOD_REMOVE,
                              encode_remove(profile_id, batch));
            }
        }
    }
    return {};
}

void MatchingService::on_add(const NodeId& from, mesh::PayloadView payload) {
    auto items = decode_add(payload, network_.reader_options());
    if (!items) {
        ++counters_.peer_items_rejected;
        warn(fmt::format("dropped items from {}: {}", from.str(), items.error().message));
        return;
    }
    const Time now = scheduler_.now();
    for (AddedItem& item : *items) {
        if (profiles_.find(item.profile_id) == nullptr) {
            ++counters_.peer_items_rejected;
            warn(fmt::format("dropped an item from {}: profile '{}' is not defined here",
                             from.str(), item.profile_id));
            continue;
        }
        ++counters_.items_received;
        items_.put(PutItem{item.profile_id, item.key, key_hash(item.key), item.unique_id,
                           std::move(item.value), item.ttl, from.str()},
                   now);
    }
}

void MatchingService::on_remove(const NodeId& from, mesh::PayloadView payload) {
    auto removed = decode_remove(payload, network_.reader_options());
    if (!removed) {
        warn(fmt::format("dropped a remove from {}: {}", from.str(), removed.error().message));
        return;
    }
    items_.remove(removed->profile_id, removed->unique_ids, scheduler_.now());
}

void MatchingService::on_search(const NodeId& from, mesh::PayloadView payload,
                                mesh::Responder responder) {
    auto query = decode_search(payload, network_.reader_options());
    if (!query) {
        warn(fmt::format("refused a search from {}: {}", from.str(), query.error().message));
        responder.fail(mesh::MeshErrc::malformed, query.error().message);
        return;
    }
    ++counters_.searches_served;
    responder.reply(encode_search_response(serve(query->keys, query->limit, query->handout),
                                           scheduler_.now(), query->shared_texts));
}

void MatchingService::on_membership(const mesh::MembershipEvent& event) {
    placement_.update(network_.live_members());
    switch (event.kind) {
        case mesh::MembershipEvent::Kind::died:
        case mesh::MembershipEvent::Kind::left:
            counters_.items_purged += items_.remove_origin(event.member.id.str());
            break;
        case mesh::MembershipEvent::Kind::joined:
        case mesh::MembershipEvent::Kind::reconciled: break;
    }
}

}  // namespace matchmesh::matching
