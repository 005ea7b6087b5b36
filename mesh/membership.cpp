#include "mesh/membership.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include <xxhash.h>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

Membership::Membership(MemberInfo self, MembershipOptions options)
    : self_(std::move(self)),
      options_(options),
      gossip_(options.members_max),
      random_(std::hash<std::string>{}(self_.id.str()) ^ self_.incarnation) {
    MM_ASSERT(!self_.id.empty());
    MM_ASSERT(options_.dead_after > options_.heartbeat_interval);
    MM_ASSERT(options_.updates_per_frame_max <= probe_updates_max);
    MM_ASSERT(options_.sync_every_periods > 0);
    rebuild_live();
}

const MemberInfo* Membership::find_live(const NodeId& id) const {
    auto found = live_index_.find(id);
    return found == live_index_.end() ? nullptr : &live_[found->second];
}

bool Membership::is_live(const MemberInfo& member) const {
    const MemberInfo* live = find_live(member.id);
    return live != nullptr && live->incarnation == member.incarnation;
}

bool Membership::is_dead(const MemberInfo& member) const {
    auto tomb = tombstones_.find(member.id);
    return tomb != tombstones_.end() && member.incarnation <= tomb->second.member.incarnation;
}

bool Membership::is_suspect(const NodeId& id) const {
    auto found = peers_.find(id);
    return found != peers_.end() && found->second.suspected_since.has_value();
}

bool Membership::tell_dead(const MemberInfo& member, Time now) {
    auto tomb = tombstones_.find(member.id);
    if (tomb == tombstones_.end() || member.incarnation > tomb->second.member.incarnation ||
        (tomb->second.told != Time{} && now - tomb->second.told < options_.heartbeat_interval)) {
        return false;
    }
    tomb->second.told = now;
    return true;
}

std::vector<MemberInfo> Membership::take_to_tell() {
    return std::exchange(to_tell_, {});
}

void Membership::tell_if_buried_here(const MemberInfo& member) {
    // Called alive over there, declared dead here: it may only have been paused or cut off, and
    // it reconciles once told. A member that left is not told: it is gone.
    auto tomb = tombstones_.find(member.id);
    if (tomb != tombstones_.end() && tomb->second.probe) {
        to_tell_.push_back(member);
    }
}

void Membership::rebuild_live() {
    live_.clear();
    live_.push_back(self_);
    for (const auto& [id, peer] : peers_) {
        if (peer.live) {
            live_.push_back(peer.info);
        }
    }
    std::sort(live_.begin(), live_.end(),
              [](const MemberInfo& a, const MemberInfo& b) { return a.id < b.id; });
    live_index_.clear();
    for (std::uint32_t at = 0; at < live_.size(); ++at) {
        live_index_.emplace(live_[at].id, at);
    }
    std::string text;
    for (const MemberInfo& member : live_) {
        text += member.id.str();
        text.push_back('\0');
        text.append(reinterpret_cast<const char*>(&member.incarnation), sizeof member.incarnation);
    }
    live_digest_ = XXH3_64bits(text.data(), text.size());
}

void Membership::add_peer(const MemberInfo& member, Time now) {
    peers_.emplace(member.id, Peer{member, false, 0, {}, now, now});
    unsettled_.insert(member.id);
}

void Membership::start_suspicion(Peer& peer, Time now) {
    peer.suspected_since = now;
    unsettled_.insert(peer.info.id);
    spread(peer.info, Status::suspect, peer.alive_counter);
}

void Membership::spread(const MemberInfo& member, Status status, std::uint64_t alive_counter) {
    // λ·log2(N + 1) sends reach every member with high probability (each holder passes the news
    // on as well, so it spreads like an epidemic).
    const auto members = static_cast<std::uint64_t>(live_.size() + 1);
    const auto log2_members = static_cast<std::size_t>(std::bit_width(members));
    gossip_.push(MemberUpdate{member, status, alive_counter},
                 options_.gossip_repeat_factor * log2_members);
}

void Membership::bury(const MemberInfo& member, MembershipEvent::Kind kind, Time now) {
    auto& tomb = tombstones_[member.id];
    if (member.incarnation >= tomb.member.incarnation) {
        tomb.member = member;
    }
    tomb.at = now;
    tomb.probe = kind == MembershipEvent::Kind::died;
    events_.push_back({kind, member});
}

void Membership::declare_dead(Peer& peer, Time now) {
    const MemberInfo member = peer.info;
    const std::uint64_t counter = peer.alive_counter;
    peers_.erase(member.id);
    bury(member, MembershipEvent::Kind::died, now);
    spread(member, Status::dead, counter);
    to_tell_.push_back(member);  // if it is only paused or cut off, it reconciles when it hears
    rebuild_live();
}

void Membership::make_live(Peer& peer, const MemberInfo& info, Time now) {
    peer.info = info;
    peer.live = true;
    peer.suspected_since.reset();
    peer.last_heard = now;
    events_.push_back({MembershipEvent::Kind::joined, info});
    rebuild_live();
    spread(info, Status::alive, peer.alive_counter);
}

Membership::Verdict Membership::contact(const MemberInfo& sender, Time now) {
    if (sender.id == self_.id) {
        return Verdict::ignored;
    }
    if (is_dead(sender)) {
        return Verdict::rejected;
    }
    auto found = peers_.find(sender.id);
    if (found == peers_.end()) {
        if (peers_.size() >= options_.members_max) {
            return Verdict::ignored;
        }
        add_peer(sender, now);
        found = peers_.find(sender.id);
    }
    Peer& peer = found->second;
    if (sender.incarnation < peer.info.incarnation) {
        return Verdict::ignored;  // an older process than the one we know
    }
    if (!peer.live) {
        make_live(peer, sender, now);
    } else if (sender.incarnation > peer.info.incarnation) {
        // Restarted: the old incarnation is gone, with all it owned.
        const MemberInfo old = peer.info;
        peer.live = false;
        peer.alive_counter = 0;
        bury(old, MembershipEvent::Kind::died, now);
        make_live(peer, sender, now);
    } else {
        // Heard straight from it: whatever others suspect, it is alive as seen from here.
        peer.last_heard = now;
        peer.suspected_since.reset();
    }
    return Verdict::accepted;
}

Membership::Verdict Membership::on_sync(const MemberInfo& sender, std::span<const MemberInfo> view,
                                        Time now) {
    const Verdict verdict = contact(sender, now);
    if (verdict != Verdict::accepted) {
        return verdict;
    }
    for (const MemberInfo& member : view) {
        if (member.id != self_.id && is_dead(member)) {
            tell_if_buried_here(member);
        } else {
            learn(member, now);
        }
    }
    return verdict;
}

Membership::Verdict Membership::on_probe(const MemberInfo& sender, std::uint64_t alive_counter,
                                         Time now) {
    const Verdict verdict = contact(sender, now);
    if (verdict == Verdict::accepted) {
        // The same news as gossip of it being alive: passed on if new, so that it reaches
        // whoever still suspects it.
        apply_to_peer(peers_.at(sender.id), MemberUpdate{sender, Status::alive, alive_counter},
                      now);
    }
    return verdict;
}

void Membership::learn(const MemberInfo& member, Time now) {
    if (member.id == self_.id || member.id.empty() || is_dead(member)) {
        return;
    }
    auto found = peers_.find(member.id);
    if (found == peers_.end()) {
        if (peers_.size() < options_.members_max) {
            add_peer(member, now);
        }
    } else if (!found->second.live && member.incarnation > found->second.info.incarnation) {
        found->second.info = member;
    }
}

void Membership::on_gossip(std::span<const MemberUpdate> updates, Time now) {
    for (const MemberUpdate& update : updates) {
        if (!update.member.id.empty()) {
            apply(update, now);
        }
    }
}

void Membership::apply(const MemberUpdate& update, Time now) {
    const MemberInfo& member = update.member;
    if (member.id == self_.id) {
        apply_to_self(update);
        return;
    }
    const bool alive = update.status == Status::alive || update.status == Status::suspect;
    if (is_dead(member)) {
        if (alive) {
            tell_if_buried_here(member);
        }
        return;
    }
    auto found = peers_.find(member.id);
    if (found == peers_.end()) {
        if (alive) {
            learn(member, now);
            if (auto learned = peers_.find(member.id); learned != peers_.end()) {
                learned->second.alive_counter = update.alive_counter;
            }
        }
        return;
    }
    Peer& peer = found->second;
    if (member.incarnation < peer.info.incarnation) {
        return;
    }
    if (member.incarnation > peer.info.incarnation) {
        restarted(peer, update, now);
        return;
    }
    apply_to_peer(peer, update, now);
}

void Membership::apply_to_self(const MemberUpdate& update) {
    if (update.member.incarnation != self_.incarnation) {
        return;
    }
    if ((update.status == Status::suspect || update.status == Status::dead) &&
        update.alive_counter >= alive_counter_) {
        // Refute: a higher alive counter overrides every suspicion of the lower ones. Whoever
        // buried this node already tells it so when it hears this.
        alive_counter_ = update.alive_counter + 1;
        spread(self_, Status::alive, alive_counter_);
    }
}

void Membership::apply_to_peer(Peer& peer, const MemberUpdate& update, Time now) {
    switch (update.status) {
        case Status::alive:
            if (update.alive_counter > peer.alive_counter) {
                peer.alive_counter = update.alive_counter;
                peer.suspected_since.reset();
                spread(peer.info, Status::alive, peer.alive_counter);
            }
            return;
        case Status::suspect:
            if (peer.live && update.alive_counter >= peer.alive_counter && !peer.suspected_since) {
                peer.alive_counter = update.alive_counter;
                start_suspicion(peer, now);
            }
            return;
        case Status::dead:
            if (update.alive_counter < peer.alive_counter) {
                return;  // refuted since
            }
            if (!peer.live) {
                // Never met here: nothing shared to end (the key is copied: it dies with it).
                peers_.erase(NodeId(peer.info.id));
            } else if (peer.suspected_since) {
                declare_dead(peer, now);
            } else {
                // Not suspect here: a verdict from far away (perhaps across a partition that just
                // healed) starts a suspicion instead, which the member can still refute.
                start_suspicion(peer, now);
            }
            return;
        case Status::left: on_leave(peer.info.id, peer.info.incarnation, now); return;
    }
}

void Membership::restarted(Peer& peer, const MemberUpdate& update, Time now) {
    const bool was_live = peer.live;
    if (was_live) {
        bury(peer.info, MembershipEvent::Kind::died, now);
    }
    peers_.erase(NodeId(peer.info.id));  // a copy: the key dies with the entry
    if (was_live) {
        rebuild_live();
    }
    if (update.status == Status::alive || update.status == Status::suspect) {
        learn(update.member, now);
    }
}

void Membership::on_contact(const MemberInfo& sender, Time now) {
    auto found = peers_.find(sender.id);
    if (found != peers_.end() && found->second.live &&
        found->second.info.incarnation == sender.incarnation) {
        found->second.last_heard = now;
    }
}

void Membership::on_leave(const NodeId& id, std::uint64_t incarnation, Time now) {
    auto found = peers_.find(id);
    if (found == peers_.end() || found->second.info.incarnation != incarnation) {
        return;
    }
    const Peer peer = found->second;
    peers_.erase(found);
    if (peer.live) {
        bury(peer.info, MembershipEvent::Kind::left, now);
        spread(peer.info, Status::left, peer.alive_counter);
        rebuild_live();
    } else {
        tombstones_[id] = Tombstone{peer.info, now, false};
    }
}

void Membership::add_pending(const MemberInfo& member, Time now) {
    learn(member, now);
}

bool Membership::on_rejected(const MemberInfo& peer, Time now) {
    if (peer.id == self_.id) {
        return false;
    }
    if (auto tomb = tombstones_.find(peer.id);
        tomb != tombstones_.end() && tomb->second.member.incarnation > peer.incarnation) {
        return false;  // a process that is gone already
    }
    if (auto recent = reconciled_.find(peer.id); recent != reconciled_.end() &&
                                                 recent->second.incarnation == peer.incarnation &&
                                                 now - recent->second.at <= options_.dead_after) {
        return false;
    }
    auto found = peers_.find(peer.id);
    if (found != peers_.end() && found->second.info.incarnation != peer.incarnation) {
        return false;  // we know another incarnation; that one never buried us
    }
    if (found != peers_.end()) {
        const Peer peer_was = found->second;
        peers_.erase(found);
        if (peer_was.live) {
            // It ended everything it shared with this node: end the same here.
            bury(peer_was.info, MembershipEvent::Kind::died, now);
            rebuild_live();
        }
    }
    tombstones_.erase(peer.id);
    reconciled_[peer.id] = Reconciled{peer.incarnation, now};
    events_.push_back({MembershipEvent::Kind::reconciled, peer});
    // Others may have buried this node too: hearing it called alive, they tell it so.
    ++alive_counter_;
    spread(self_, Status::alive, alive_counter_);
    // Contact it until it answers, as any member learned of.
    if (peers_.size() < options_.members_max) {
        add_peer(peer, now);
    }
    return true;
}

void Membership::suspect(const MemberInfo& member, Time now) {
    auto found = peers_.find(member.id);
    if (found == peers_.end() || !found->second.live ||
        found->second.info.incarnation != member.incarnation || found->second.suspected_since) {
        return;
    }
    start_suspicion(found->second, now);
}

void Membership::tick(Time now) {
    ++periods_;
    std::vector<NodeId> timed_out;
    for (auto it = unsettled_.begin(); it != unsettled_.end();) {
        auto found = peers_.find(*it);
        if (found == peers_.end() || (found->second.live && !found->second.suspected_since)) {
            it = unsettled_.erase(it);  // gone, or settled since
            continue;
        }
        const Peer& peer = found->second;
        if (peer.live && now - *peer.suspected_since >= options_.dead_after) {
            timed_out.push_back(*it);
        } else if (!peer.live && now - peer.learned_at > options_.forget_unheard_after) {
            peers_.erase(found);
            it = unsettled_.erase(it);
            continue;
        }
        ++it;
    }
    for (const NodeId& id : timed_out) {
        declare_dead(peers_.at(id), now);
    }
    std::erase_if(reconciled_,
                  [&](const auto& entry) { return now - entry.second.at > options_.dead_after; });
    std::erase_if(tombstones_, [&](const auto& entry) {
        return now - entry.second.at > options_.tombstone_keep;
    });
    while (tombstones_.size() > options_.tombstones_max) {
        auto oldest = std::min_element(tombstones_.begin(), tombstones_.end(),
                                       [](auto& a, auto& b) { return a.second.at < b.second.at; });
        tombstones_.erase(oldest);
    }
}

std::optional<MemberInfo> Membership::next_probe_target() {
    for (int rounds = 0; rounds < 2; ++rounds) {
        while (probe_next_ < probe_order_.size()) {
            const MemberInfo* member = find_live(probe_order_[probe_next_++]);
            if (member != nullptr && member->id != self_.id) {
                return *member;
            }
        }
        // A new round, in a new order: every member is probed once a round, at random times.
        probe_order_.clear();
        probe_next_ = 0;
        for (const MemberInfo& member : live_) {
            if (member.id != self_.id) {
                probe_order_.push_back(member.id);
            }
        }
        std::shuffle(probe_order_.begin(), probe_order_.end(), random_);
    }
    return std::nullopt;
}

std::vector<MemberInfo> Membership::helpers_for(const MemberInfo& target) {
    std::vector<MemberInfo> candidates;
    for (const MemberInfo& member : live_) {
        if (member.id != self_.id && member.id != target.id) {
            candidates.push_back(member);
        }
    }
    std::shuffle(candidates.begin(), candidates.end(), random_);
    candidates.resize(std::min(candidates.size(), options_.helpers_count));
    return candidates;
}

std::optional<MemberInfo> Membership::next_tombstone_probe() {
    // At random rather than in turn: after a partition heals, the nodes of one side then probe
    // different members of the other, and each member probed spreads the news of its healing.
    std::vector<const MemberInfo*> buried;
    for (const auto& [id, tomb] : tombstones_) {
        if (tomb.probe && !peers_.contains(id)) {
            buried.push_back(&tomb.member);
        }
    }
    if (buried.empty()) {
        return std::nullopt;
    }
    return *buried[std::uniform_int_distribution<std::size_t>(0, buried.size() - 1)(random_)];
}

std::optional<MemberInfo> Membership::sync_partner() {
    if (periods_ % options_.sync_every_periods != 0 || live_.size() < 2) {
        return std::nullopt;
    }
    // One of the others at random: an index among them, past this node's own place in the list.
    const std::size_t self_at = static_cast<std::size_t>(find_live(self_.id) - live_.data());
    const std::size_t pick =
        std::uniform_int_distribution<std::size_t>(0, live_.size() - 2)(random_);
    return live_[pick < self_at ? pick : pick + 1];
}

std::vector<MemberInfo> Membership::pending() const {
    std::vector<MemberInfo> all;
    for (const NodeId& id : unsettled_) {
        if (auto found = peers_.find(id); found != peers_.end() && !found->second.live) {
            all.push_back(found->second.info);
        }
    }
    return all;
}

std::vector<MemberUpdate> Membership::gossip_for(const NodeId& to) {
    return gossip_.take(to, options_.updates_per_frame_max);
}

std::vector<MemberInfo> Membership::contacts() const {
    std::vector<MemberInfo> all;
    all.reserve(peers_.size());
    for (const auto& [id, peer] : peers_) {
        all.push_back(peer.info);
    }
    for (const auto& [id, tomb] : tombstones_) {
        if (tomb.probe && !peers_.contains(id)) {
            all.push_back(tomb.member);
        }
    }
    return all;
}

std::vector<MembershipEvent> Membership::take_events() {
    return std::exchange(events_, {});
}

}  // namespace matchmesh::mesh
