#pragma once
// MatchingService: the distributed store. Adds go to every replica of their bucket key; searches
// ask one replica per key (this node when it is one), fall back to the next replica when a node
// fails or times out, and merge the answers in key order; removes go to the nodes the item was
// added to. Written against mesh/'s Network and Scheduler only, so it runs unchanged over TCP and
// in the simulation.
//
// Owned by the node; lives on the node's loop thread; must be destroyed before the Network.
//
// The reference API's relay `limit` arguments (on Add and Remove) have no counterpart: placement
// sends each item to exactly its replicas, and removes to exactly the nodes that hold it.

#include <chrono>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "matching/bucket_store.hpp"
#include "matching/found.hpp"
#include "matching/node_lists.hpp"
#include "matching/placement.hpp"
#include "matching/profile.hpp"
#include "matching/wire.hpp"
#include "mesh/base/strong_id.hpp"
#include "mesh/network.hpp"
#include "mesh/scheduler.hpp"

namespace matchmesh::matching {

struct ServiceOptions {
    std::string target_node_type = "HTTP";
    ReplicaRule replicas;
    // Buckets per placement group along each property (see profile.hpp): a search over up to this
    // many neighbouring buckets asks one or two nodes; larger groups put a mode's items and
    // searches on fewer nodes. The same on every node.
    std::int64_t placement_group = 8;
    Duration search_timeout{500};   // per node asked; a failed node's keys go to the next replica
    Duration sweep_interval{1000};  // how often expired items and bookkeeping are freed
    std::function<void(const std::string&)> on_warning;
};

using SearchCallback = std::function<void(SearchOutcome)>;

struct ServiceCounters {
    std::uint64_t items_added = 0;
    std::uint64_t items_received = 0;
    std::uint64_t peer_items_rejected = 0;
    std::uint64_t searches = 0;
    std::uint64_t searches_served = 0;  // for other nodes
    std::uint64_t search_fallbacks = 0;
    std::uint64_t keys_unanswered = 0;
    std::uint64_t items_purged = 0;  // dropped because their origin died or left
};

class MatchingService {
public:
    MatchingService(mesh::Network& network, mesh::Scheduler& scheduler, ServiceOptions options);
    ~MatchingService();
    MatchingService(const MatchingService&) = delete;
    MatchingService& operator=(const MatchingService&) = delete;

    [[nodiscard]] ProfileRegistry& profiles() { return profiles_; }

    // Validates now (a rejected call changes nothing), then stores on the key's replicas.
    [[nodiscard]] Result<void> add(std::string_view profile_id, std::string_view unique_id,
                                   std::string_view tag, const Properties& properties,
                                   ValueMap value, std::chrono::seconds ttl);

    // Validates now; `done` runs later on the loop, exactly once, with what was found. Each
    // bucket gives its oldest items first, or as `handout` asks (see BucketStore::collect): with
    // offers, each node asked offers the search one item, in the first key it serves that has
    // one on offer to nobody.
    [[nodiscard]] Result<void> search(std::span<const std::string> profile_ids,
                                      std::string_view tag, const Properties& properties,
                                      std::size_t limit, SearchCallback done);
    [[nodiscard]] Result<void> search_with_range(std::span<const std::string> profile_ids,
                                                 std::string_view tag,
                                                 const RangeProperties& properties,
                                                 std::size_t limit, SearchCallback done);
    [[nodiscard]] Result<void> search_with_range_with_tags(std::span<const std::string> profile_ids,
                                                           std::span<const std::string> tags,
                                                           const RangeProperties& properties,
                                                           std::size_t limit, SearchCallback done,
                                                           Handout handout = {});

    [[nodiscard]] Result<void> remove(std::string_view profile_id,
                                      std::span<const std::string> unique_ids);

    [[nodiscard]] const BucketStore& local_items() const { return items_; }
    [[nodiscard]] const Placement& placement() const { return placement_; }
    [[nodiscard]] const ServiceCounters& counters() const { return counters_; }
    // How long this node's searches have taken lately, from start to answer (a moving average;
    // 0 before the first).
    [[nodiscard]] Duration recent_search_time() const {
        return Duration(static_cast<Duration::rep>(search_ms_ + 0.5));
    }
    [[nodiscard]] const mesh::Network& network() const { return network_; }

private:
    struct OriginEntry {
        std::uint32_t replicas;  // its number in replica_lists_ (acquired for this record)
        Time expires_at;
    };
    // A search in flight. Jobs live in a pool and are used again, lists and all, so a search
    // allocates almost nothing once the pool has grown to the searches in flight.
    struct SearchJob;
    struct JobRef {
        std::uint32_t slot = 0;
        std::uint32_t generation = 0;
    };

    void start_search(std::size_t limit, std::size_t profile_count, SearchCallback done,
                      Handout handout = {});
    [[nodiscard]] SearchJob& job_at(JobRef ref) const;
    // Puts first, in each key's replica list, a node that makes the whole search ask as few
    // nodes as it can: this node where it is a replica, then the nodes holding the most keys;
    // among those, each searching node prefers a different replica, so that a busy group's
    // searches spread over all its replicas.
    void ask_fewest_nodes(std::vector<std::vector<NodeId>>& replicas, std::size_t key_count);
    // Asks the next replica of every key that `request` carried (0: the keys not asked yet).
    void dispatch(JobRef ref, std::uint32_t request);
    // The keys request `number` carries, in the order it sent them, into `request_key_indexes_`.
    void keys_of_request(const SearchJob& job, std::uint32_t number);
    // Takes request `number`'s answer into the job; false (and nothing taken) when it is bad.
    bool take_answer(SearchJob& job, std::uint32_t number, mesh::PayloadView reply);
    void finish_if_done(JobRef ref);
    // Hands a finished job's outcome to its callback and frees the job.
    void answer(JobRef ref);
    // The items this node holds for `keys`, as views (valid until the store next changes, and
    // until the next call).
    [[nodiscard]] std::span<const KeyedView> serve(std::span<const std::string_view> keys,
                                                   std::size_t limit, Handout handout);
    void on_add(const NodeId& from, mesh::PayloadView payload);
    void on_remove(const NodeId& from, mesh::PayloadView payload);
    void on_search(const NodeId& from, mesh::PayloadView payload, mesh::Responder responder);
    void on_membership(const mesh::MembershipEvent& event);
    void sweep();
    void warn(std::string message);

    mesh::Network& network_;
    mesh::Scheduler& scheduler_;
    ServiceOptions options_;
    ProfileRegistry profiles_;
    BucketStore items_;
    Placement placement_;
    // Items this node added, by profile and ID ("profile\tID"). The key's text is shared with
    // its deadlines below, and found by the text alone.
    using OriginKey = StrongId<struct OriginKeyTag>;
    struct OriginHash {
        using is_transparent = void;
        std::size_t operator()(const OriginKey& key) const noexcept { return key.hash(); }
        std::size_t operator()(std::string_view text) const noexcept {
            return OriginKey::hash_of(text);
        }
    };
    struct OriginEqual {
        using is_transparent = void;
        static std::string_view text(const OriginKey& key) { return key.str(); }
        static std::string_view text(std::string_view text) { return text; }
        bool operator()(const auto& left, const auto& right) const {
            return text(left) == text(right);
        }
    };
    std::unordered_map<OriginKey, OriginEntry, OriginHash, OriginEqual> origins_;
    NodeLists replica_lists_;  // the nodes each origin entry's item went to
    // When each origin entry may expire, soonest first; an entry refreshed since has a later
    // deadline and is kept when its old one comes up. Sweeps cost what expires, not what exists.
    using OriginDeadline = std::pair<Time, OriginKey>;
    std::priority_queue<OriginDeadline, std::vector<OriginDeadline>, std::greater<>>
        origin_deadlines_;
    SearchKeys keys_;
    SearchKey item_key_;
    std::uint64_t self_hash_ = 0;  // member_hash of this node: picks its replica among equals
    std::vector<NodeId> replicas_;
    std::vector<std::unique_ptr<SearchJob>> jobs_;
    std::vector<std::uint32_t> free_jobs_;
    // Scratch lists, kept for their capacity.
    std::vector<bool> covered_;
    std::vector<std::pair<const NodeId*, std::size_t>> holders_;
    std::vector<std::pair<const NodeId*, std::uint32_t>> asked_;
    // remove()'s: a node and the IDs it is told to remove (those in use come first).
    std::vector<std::pair<NodeId, std::vector<std::string>>> removals_;
    std::vector<std::string_view> request_keys_;
    std::vector<std::size_t> request_key_indexes_;
    std::vector<std::string_view> request_profiles_;  // take_answer's: its keys' profile IDs
    std::vector<KeyedFound> answered_items_;          // take_answer's
    std::vector<FoundItem> served_items_;
    std::vector<KeyedView> served_;
    mesh::TimerId sweep_timer_ = 0;
    ServiceCounters counters_;
    double search_ms_ = 0;  // see recent_search_time
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace matchmesh::matching
