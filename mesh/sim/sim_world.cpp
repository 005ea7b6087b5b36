#include "mesh/sim/sim_world.hpp"

#include <algorithm>

#include <xxhash.h>

#include "mesh/base/assert.hpp"
#include "mesh/handshake.hpp"

namespace matchmesh::mesh::sim {

class SimNode::NodeScheduler final : public Scheduler {
public:
    NodeScheduler(SimWorld& world, SimNode& node) : world_(world), node_(node) {}
    [[nodiscard]] Time now() const override { return world_.now(); }
    TimerId run_after(Duration delay, Task task) override {
        const Time at = world_.now() + std::max(delay, Duration(0));
        return world_.schedule(at, std::move(task), SimWorld::timer_tag(node_.index()));
    }
    bool cancel(TimerId timer) override { return world_.cancel(timer); }

private:
    SimWorld& world_;
    SimNode& node_;
};

class SimNode::NodeTransport final : public Transport {
public:
    NodeTransport(SimWorld& world, SimNode& node) : world_(world), node_(node) {}

    SendResult send(const MemberInfo& to, Frame frame) override {
        SimNode* target = world_.find(to.id);
        if (target == nullptr) {
            return SendResult::unreachable;
        }
        world_.transmit(node_, target->index(), std::move(frame));
        return SendResult::queued;
    }
    SendResult reply(ConnectionId via, Frame frame) override {
        world_.transmit(node_, static_cast<std::size_t>(via), std::move(frame));
        return SendResult::queued;
    }
    void forget(const NodeId& id) override {
        if (SimNode* target = world_.find(id)) {
            world_.close_connection(node_.index(), target->index());
        }
    }

private:
    SimWorld& world_;
    SimNode& node_;
};

Scheduler& SimNode::scheduler() {
    return *scheduler_;
}

SimWorld::SimWorld(std::uint64_t seed, MeshOptions options, LinkModel links)
    : options_(std::move(options)), links_(links), random_(seed), nonces_(seed ^ 0x5eed) {}

SimWorld::~SimWorld() {
    for (auto& node : nodes_) {
        if (node->running()) {
            stop(*node);
        }
    }
}

SimNode* SimWorld::find(const NodeId& id) {
    const auto found = index_of_.find(id);
    return found == index_of_.end() ? nullptr : nodes_[found->second].get();
}

SimNode& SimWorld::node(const NodeId& id) {
    SimNode* found = find(id);
    MM_ASSERT(found != nullptr);
    return *found;
}

std::vector<SimNode*> SimWorld::nodes() {
    std::vector<SimNode*> all;
    for (auto& node : nodes_) {
        all.push_back(node.get());
    }
    return all;
}

SimNode& SimWorld::add_node(SimNodeConfig config) {
    MM_ASSERT(find(config.id) == nullptr);
    auto node = std::make_unique<SimNode>();
    node->config_ = std::move(config);
    node->index_ = nodes_.size();
    index_of_.emplace(node->config_.id, node->index_);
    node->scheduler_ = std::make_unique<SimNode::NodeScheduler>(*this, *node);
    node->transport_ = std::make_unique<SimNode::NodeTransport>(*this, *node);
    nodes_.push_back(std::move(node));
    start(*nodes_.back());
    return *nodes_.back();
}

void SimWorld::start(SimNode& node) {
    MM_ASSERT(!node.running());
    ++node.incarnation_;
    MemberInfo self{node.config_.id, node.config_.id.str(), node.config_.node_type,
                    node.incarnation_};
    node.core_ = std::make_unique<MeshCore>(self, options_, *node.scheduler_, *node.transport_);
    for (auto& hook : start_hooks_) {
        hook(node);
    }
    node.core_->start();
    // Connecting to a seed takes one latency; then the handshake runs over the links.
    for (const NodeId& seed : node.config_.seeds) {
        SimNode* target = find(seed);
        if (target == nullptr || target == &node) {
            continue;
        }
        const std::size_t target_index = target->index();
        schedule(now_ + links_.latency, [this, &node, target_index] {
            if (node.running() && nodes_[target_index]->running() &&
                !blocked_.contains(link(node.index(), target_index))) {
                dial_seed(node, target_index);
            }
        });
    }
}

namespace {

Nonce draw_nonce(std::mt19937_64& random) {
    Nonce nonce{};
    for (auto& byte : nonce) {
        byte = static_cast<std::uint8_t>(random());
    }
    return nonce;
}

}  // namespace

void SimWorld::dial_seed(SimNode& dialer, std::size_t seed_index) {
    SimNode& seed = *nodes_[seed_index];
    const auto handshake_of = [this](SimNode& node) {
        return HandshakeOptions{node.config_.cluster, node.config_.secret, node.core_->self(),
                                options_.limits.reader_options()};
    };
    auto accepting = std::make_shared<AcceptingHandshake>(handshake_of(seed), draw_nonce(nonces_));
    auto dialing = std::make_shared<DialingHandshake>(handshake_of(dialer), draw_nonce(nonces_));
    const std::size_t dialer_index = dialer.index();
    const std::uint64_t incarnation = dialer.incarnation_;
    auto refused = [this] { ++handshakes_refused_; };
    relay(seed_index, dialer_index, accepting->challenge(), [=, this](const Envelope& challenge) {
        HandshakeStep hello = dialing->receive(challenge);
        if (hello.verdict != HandshakeStep::Verdict::more) {
            refused();
            return;
        }
        relay(dialer_index, seed_index, std::move(*hello.reply), [=, this](const Envelope& frame) {
            HandshakeStep welcome = accepting->receive(frame);
            if (welcome.verdict != HandshakeStep::Verdict::ready) {
                refused();
                return;
            }
            relay(seed_index, dialer_index, std::move(*welcome.reply),
                  [=, this](const Envelope& last) {
                      SimNode& node = *nodes_[dialer_index];
                      const HandshakeStep done = dialing->receive(last);
                      if (done.verdict != HandshakeStep::Verdict::ready) {
                          refused();
                      } else if (node.incarnation_ == incarnation) {
                          node.core_->connected(done.peer);
                      }
                  });
        });
    });
}

void SimWorld::relay(std::size_t from, std::size_t to, Frame frame,
                     std::function<void(const Envelope&)> received) {
    schedule(
        now_ + links_.latency,
        [this, from, to, frame = std::move(frame), received = std::move(received)] {
            if (!nodes_[from]->running() || !nodes_[to]->running() ||
                blocked_.contains(link(from, to))) {
                ++frames_dropped_;
                return;
            }
            auto envelope = decode_frame(frame, options_.limits);
            MM_ASSERT(envelope.has_value());  // encoded by the handshake itself
            received(*envelope);
        },
        arrival_tag(to));
}

void SimWorld::stop(SimNode& node) {
    for (auto& hook : stop_hooks_) {
        hook(node);
    }
    node.core_.reset();
}

void SimWorld::crash(const NodeId& id) {
    SimNode& target = node(id);
    if (target.running()) {
        log(2, target.index(), 0);
        stop(target);
    }
    target.paused_until_ = Time{};
}

void SimWorld::restart(const NodeId& id) {
    SimNode& target = node(id);
    MM_ASSERT(!target.running());
    log(3, target.index(), 0);
    start(target);
}

void SimWorld::stop_gracefully(const NodeId& id) {
    SimNode& target = node(id);
    if (!target.running()) {
        return;
    }
    target.core_->leave();
    const std::size_t index = target.index();
    schedule(now_ + links_.latency + links_.jitter + Duration(1), [this, index] {
        if (nodes_[index]->running()) {
            stop(*nodes_[index]);
        }
    });
}

void SimWorld::pause(const NodeId& id, Duration duration) {
    SimNode& target = node(id);
    log(5, target.index(), static_cast<std::uint64_t>(duration.count()));
    target.paused_until_ = std::max(target.paused_until_, now_ + duration);
}

std::vector<Time>& SimWorld::connection_closes(std::size_t a, std::size_t b) {
    return connection_closes_[link(std::min(a, b), std::max(a, b))];
}

void SimWorld::close_connection(std::size_t a, std::size_t b) {
    connection_closes(a, b).push_back(now_);
}

void SimWorld::block(const NodeId& from, const NodeId& to) {
    blocked_.insert(link(node(from).index(), node(to).index()));
}

void SimWorld::unblock(const NodeId& from, const NodeId& to) {
    blocked_.erase(link(node(from).index(), node(to).index()));
}

void SimWorld::partition(const std::set<NodeId>& side_a, const std::set<NodeId>& side_b) {
    for (const NodeId& a : side_a) {
        for (const NodeId& b : side_b) {
            block(a, b);
            block(b, a);
        }
    }
}

void SimWorld::heal() {
    blocked_.clear();
}

TimerId SimWorld::schedule(Time at, Task task, std::uint32_t tag) {
    return events_.add(std::max(at, now_), std::move(task), tag);
}

void SimWorld::transmit(SimNode& from, std::size_t to_index, Frame frame) {
    const std::size_t from_index = from.index();
    if (blocked_.contains(link(from_index, to_index)) ||
        std::bernoulli_distribution(links_.drop_rate)(random_)) {
        ++frames_dropped_;
        return;
    }
    Duration delay = links_.latency;
    if (links_.jitter > Duration(0)) {
        delay += Duration(
            std::uniform_int_distribution<std::int64_t>(0, links_.jitter.count())(random_));
    }
    Time arrival = now_ + delay;
    if (!links_.reorder) {
        Time& last = last_arrival_[link(from_index, to_index)];
        arrival = std::max(arrival, last);
        last = arrival;
    }
    const MemberInfo sender = from.core_->self();
    const std::size_t epoch = connection_closes(from_index, to_index).size();
    auto arrive = [this, from_index, to_index, sender, epoch, arrival, frame = std::move(frame)] {
        SimNode& target = *nodes_[to_index];
        // A frame that met its connection closed is lost; one that arrived before the close
        // waits in the receiver's buffer, and a paused receiver reads it once it runs again.
        const std::vector<Time>& closes = connection_closes(from_index, to_index);
        if (!target.running() || (closes.size() > epoch && closes[epoch] <= arrival)) {
            ++frames_dropped_;  // the node, or the connection the frame was on, is gone
            return;
        }
        auto envelope = decode_frame(frame, options_.limits);
        MM_ASSERT(envelope.has_value());  // we encoded it ourselves
        if (drop_rule_ && drop_rule_(nodes_[from_index]->id(), target.id(), *envelope)) {
            ++frames_dropped_;
            return;
        }
        log(4, from_index * 1000 + to_index, XXH3_64bits(frame.data(), frame.size()));
        ++frames_delivered_;
        ++frames_by_method_[{envelope->service, envelope->method}];
        bytes_delivered_ += frame.size();
        target.core_->deliver(sender, from_index, *envelope);
    };
    schedule(arrival, std::move(arrive), arrival_tag(to_index));
}

void SimWorld::log(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    const std::uint64_t record[4] = {static_cast<std::uint64_t>(ms_since_epoch(now_)), a, b, c};
    log_hash_ = XXH3_64bits_withSeed(record, sizeof(record), log_hash_);
}

void SimWorld::run_until(Time until) {
    while (true) {
        auto next = events_.next_deadline();
        if (!next || *next > until) {
            break;
        }
        now_ = std::max(now_, *next);
        auto due = events_.pop_due(now_);
        MM_ASSERT(due.has_value());
        if (due->tag != 0) {
            const SimNode& owner = *nodes_[(due->tag & ~arrival_bit) - 1];
            if (owner.paused_until_ > now_) {
                events_.put_back(owner.paused_until_, std::move(*due));
                continue;
            }
            if ((due->tag & arrival_bit) == 0) {  // a node's timer
                log(1, due->tag - 1, 0);
            }
        }
        due->task();
    }
    now_ = std::max(now_, until);
}

bool SimWorld::run_until_converged(Duration limit) {
    const Time deadline = now_ + limit;
    while (now_ < deadline) {
        run_for(Duration(50));
        std::vector<MemberInfo> expected;
        for (auto& node : nodes_) {
            if (node->running()) {
                expected.push_back(node->core_->self());
            }
        }
        std::sort(expected.begin(), expected.end(),
                  [](const MemberInfo& a, const MemberInfo& b) { return a.id < b.id; });
        bool converged = true;
        for (auto& node : nodes_) {
            if (!node->running()) {
                continue;
            }
            const auto live = node->core_->live_members();
            converged =
                converged && std::equal(live.begin(), live.end(), expected.begin(), expected.end());
        }
        if (converged) {
            return true;
        }
    }
    return false;
}

}  // namespace matchmesh::mesh::sim
