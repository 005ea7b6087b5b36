#include "mesh/membership.hpp"

#include <algorithm>

#include "mesh/base/assert.hpp"

namespace matchmesh::mesh {

Membership::Membership(MemberInfo self, MembershipOptions options)
    : self_(std::move(self)), options_(options) {
    MM_ASSERT(!self_.id.empty());
    MM_ASSERT(options_.dead_after > options_.heartbeat_interval);
    rebuild_live();
}

const MemberInfo* Membership::find_live(const NodeId& id) const {
    auto found =
        std::lower_bound(live_.begin(), live_.end(), id,
                         [](const MemberInfo& m, const NodeId& key) { return m.id < key; });
    return found != live_.end() && found->id == id ? &*found : nullptr;
}

bool Membership::is_live(const MemberInfo& member) const {
    const MemberInfo* live = find_live(member.id);
    return live != nullptr && live->incarnation == member.incarnation;
}

bool Membership::is_dead(const MemberInfo& member) const {
    auto tomb = tombstones_.find(member.id);
    return tomb != tombstones_.end() && member.incarnation <= tomb->second.member.incarnation;
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

void Membership::make_live(Peer& peer, const MemberInfo& info, Time now) {
    peer.info = info;
    peer.live = true;
    peer.last_heard = now;
    events_.push_back({MembershipEvent::Kind::joined, info});
    rebuild_live();
}

Membership::Verdict Membership::on_heartbeat(const MemberInfo& sender,
                                             std::span<const MemberInfo> view, Time now) {
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
        found = peers_.emplace(sender.id, Peer{sender, false, now, now}).first;
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
        bury(old, MembershipEvent::Kind::died, now);
        make_live(peer, sender, now);
    } else {
        peer.last_heard = now;
    }
    for (const MemberInfo& member : view) {
        learn(member, now);
    }
    return Verdict::accepted;
}

void Membership::learn(const MemberInfo& member, Time now) {
    if (member.id == self_.id || member.id.empty() || is_dead(member)) {
        return;
    }
    auto found = peers_.find(member.id);
    if (found == peers_.end()) {
        if (peers_.size() < options_.members_max) {
            peers_.emplace(member.id, Peer{member, false, now, now});
        }
    } else if (!found->second.live && member.incarnation > found->second.info.incarnation) {
        found->second.info = member;
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
    // Contact it until it answers, as any member learned of.
    if (peers_.size() < options_.members_max) {
        peers_.emplace(peer.id, Peer{peer, false, now, now});
    }
    return true;
}

void Membership::tick(Time now) {
    bool changed = false;
    for (auto it = peers_.begin(); it != peers_.end();) {
        const Peer& peer = it->second;
        if (peer.live && now - peer.last_heard > options_.dead_after) {
            bury(peer.info, MembershipEvent::Kind::died, now);
            it = peers_.erase(it);
            changed = true;
        } else if (!peer.live && now - peer.learned_at > options_.forget_unheard_after) {
            it = peers_.erase(it);
        } else {
            ++it;
        }
    }
    if (changed) {
        rebuild_live();
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
