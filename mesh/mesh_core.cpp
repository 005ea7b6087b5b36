#include "mesh/mesh_core.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "mesh/control.hpp"
#include "mesh/envelope.capnp.h"

namespace matchmesh::mesh {

MeshCore::MeshCore(MemberInfo self, MeshOptions options, Scheduler& scheduler, Transport& transport)
    : options_(options),
      reader_options_(options.limits.reader_options()),
      scheduler_(scheduler),
      transport_(transport),
      membership_(std::move(self), options.membership) {}

MeshCore::~MeshCore() {
    *alive_ = false;
    scheduler_.cancel(period_timer_);
    scheduler_.cancel(probe_timer_);
    for (auto& [correlation, pending] : pending_) {
        scheduler_.cancel(pending.timer);
    }
}

void MeshCore::start() {
    MM_ASSERT(!started_);
    started_ = true;
    period();
}

void MeshCore::leave() {
    if (leaving_) {
        return;
    }
    leaving_ = true;
    scheduler_.cancel(period_timer_);
    scheduler_.cancel(probe_timer_);
    const Payload payload = encode(LeaveMessage{self().id, self().incarnation});
    for (const MemberInfo& member : membership_.contacts()) {
        transport_.send(member, control_frame(wire::METHOD_LEAVE, payload));
    }
    auto pending = std::exchange(pending_, {});
    pending_per_peer_.clear();
    for (auto& [correlation, request] : pending) {
        scheduler_.cancel(request.timer);
        fail_later(std::move(request.on_reply), MeshErrc::shutdown, "this node is leaving");
    }
}

namespace {

// How long a ping may go unanswered before helpers are asked to reach its target: a fraction of
// the period, so that their pings can still be answered within it.
Duration probe_timeout(const MembershipOptions& options) {
    return options.heartbeat_interval * 2 / 5;
}

}  // namespace

void MeshCore::period() {
    const Time now = scheduler_.now();
    conclude_probe();
    membership_.tick(now);
    publish_events();  // before sending: the connections to the dead are dropped first
    tell_buried();
    start_probe();
    for (const MemberInfo& member : membership_.pending()) {
        send_probe(member, wire::METHOD_PING, 0, {});
    }
    if (auto buried = membership_.next_tombstone_probe()) {
        send_probe(*buried, wire::METHOD_PING, 0, {});
    }
    if (auto partner = membership_.sync_partner()) {
        send_sync(*partner, wire::METHOD_SYNC, /*digest_only=*/true);
    }
    period_timer_ =
        scheduler_.run_after(options_.membership.heartbeat_interval, [this, alive = alive_] {
            if (*alive) {
                period();
            }
        });
}

void MeshCore::conclude_probe() {
    if (!probe_ || probe_->answered) {
        return;
    }
    membership_.suspect(probe_->target, scheduler_.now());
    // Tell the suspect at once (news about a member goes first on frames to it): if it is alive
    // it refutes long before the suspicion times out.
    if (membership_.is_suspect(probe_->target.id)) {
        send_probe(probe_->target, wire::METHOD_PING, 0, {});
    }
}

void MeshCore::start_probe() {
    scheduler_.cancel(probe_timer_);
    probe_.reset();
    auto target = membership_.next_probe_target();
    if (!target) {
        return;
    }
    const std::uint64_t sequence = next_probe_sequence_++;
    probe_ = Probe{*target, sequence, false};
    send_probe(*target, wire::METHOD_PING, sequence, {});
    probe_timer_ =
        scheduler_.run_after(probe_timeout(options_.membership), [this, alive = alive_, sequence] {
            if (*alive) {
                ask_helpers(sequence);
            }
        });
}

void MeshCore::ask_helpers(std::uint64_t sequence) {
    if (!probe_ || probe_->sequence != sequence || probe_->answered) {
        return;
    }
    for (const MemberInfo& helper : membership_.helpers_for(probe_->target)) {
        send_probe(helper, wire::METHOD_PING_REQUEST, sequence, probe_->target);
    }
}

void MeshCore::send_probe(const MemberInfo& to, MethodId method, std::uint64_t sequence,
                          const MemberInfo& subject) {
    const ProbeMessage message{self(), membership_.alive_counter(), sequence, subject,
                               membership_.gossip_for(to.id)};
    transport_.send(to, control_frame(method, encode(message)));
}

void MeshCore::send_sync(const MemberInfo& to, MethodId method, bool digest_only) {
    SyncMessage message{self(), {}, membership_.live_digest(), digest_only};
    if (!digest_only) {
        for (const MemberInfo& member : membership_.live()) {
            if (member.id != self().id) {
                message.members.push_back(member);
            }
        }
    }
    transport_.send(to, control_frame(method, encode(message)));
}

void MeshCore::tell_buried() {
    const Time now = scheduler_.now();
    for (const MemberInfo& member : membership_.take_to_tell()) {
        if (membership_.tell_dead(member, now)) {
            transport_.send(
                member, control_frame(wire::METHOD_REJECTED, encode_rejected(member.incarnation)));
        }
    }
}

void MeshCore::connected(const MemberInfo& peer) {
    if (leaving_ || peer.id == self().id) {
        return;
    }
    membership_.add_pending(peer, scheduler_.now());
    // A seed or a new peer: exchange member lists at once, so that a joining node meets everyone.
    send_sync(peer, wire::METHOD_SYNC, /*digest_only=*/false);
}

void MeshCore::deliver(const MemberInfo& from, Transport::ConnectionId via,
                       const Envelope& envelope) {
    if (leaving_) {
        return;
    }
    if (envelope.kind == EnvelopeKind::response || envelope.kind == EnvelopeKind::failure) {
        handle_reply(from, envelope);
        return;
    }
    if (envelope.service == mesh_service) {
        handle_control(from, envelope);
        return;
    }
    if (!membership_.is_live(from)) {
        // Only members may change this node's state; a dead incarnation is told so.
        ++counters_.frames_from_strangers;
        if (membership_.tell_dead(from, scheduler_.now())) {
            transport_.send(
                from, control_frame(wire::METHOD_REJECTED, encode_rejected(from.incarnation)));
        }
        if (envelope.kind == EnvelopeKind::request) {
            transport_.reply(
                via, encode_frame(FrameFields{envelope.service, envelope.method,
                                              envelope.correlation, EnvelopeKind::failure,
                                              static_cast<std::uint16_t>(MeshErrc::unreachable),
                                              "not a live member here"},
                                  {}));
        }
        return;
    }
    membership_.on_contact(from, scheduler_.now());
    if (probe_ && probe_->target == from) {
        probe_->answered = true;  // busy with other traffic, but evidently alive
    }
    if (envelope.kind == EnvelopeKind::request) {
        handle_request(from, via, envelope);
        return;
    }
    auto handler = one_way_handlers_.find(key_of(envelope.service, envelope.method));
    if (handler == one_way_handlers_.end()) {
        ++counters_.handler_failures;
        return;
    }
    try {
        handler->second(from.id, envelope.payload);
    } catch (const std::exception& error) {
        ++counters_.handler_failures;
        warn(fmt::format("one-way {}/{} from {} failed: {}", envelope.service, envelope.method,
                         from.id.str(), error.what()));
    }
}

void MeshCore::handle_control(const MemberInfo& from, const Envelope& envelope) {
    const Time now = scheduler_.now();
    switch (envelope.method) {
        case wire::METHOD_SYNC:
        case wire::METHOD_SYNC_ANSWER: handle_sync(from, envelope); return;
        case wire::METHOD_PING:
        case wire::METHOD_ACK:
        case wire::METHOD_PING_REQUEST:
        case wire::METHOD_INDIRECT_ACK: handle_probe(from, envelope); return;
        case wire::METHOD_LEAVE: {
            auto message = decode_leave(envelope.payload, reader_options_);
            if (message && message->id == from.id) {
                membership_.on_leave(message->id, message->incarnation, now);
                publish_events();
            }
            return;
        }
        case wire::METHOD_REJECTED: {
            auto incarnation = decode_rejected(envelope.payload, reader_options_);
            if (incarnation && *incarnation == self().incarnation &&
                membership_.on_rejected(from, now)) {
                publish_events();  // the connections to it are closed and rebuilt
                transport_.send(
                    from, control_frame(wire::METHOD_REJECTED, encode_rejected(from.incarnation)));
                // Meet it again at once rather than at the next period: it reconciles on the
                // Rejected just sent, then takes this ping as the first word of a new member.
                send_probe(from, wire::METHOD_PING, 0, {});
            }
            return;
        }
        default: ++counters_.frames_from_strangers; return;
    }
}

void MeshCore::answer_verdict(const MemberInfo& from, Membership::Verdict verdict) {
    if (verdict == Membership::Verdict::rejected && membership_.tell_dead(from, scheduler_.now())) {
        transport_.send(from,
                        control_frame(wire::METHOD_REJECTED, encode_rejected(from.incarnation)));
    } else if (verdict == Membership::Verdict::ignored && from.id == self().id) {
        warn(fmt::format("another node uses this node's ID {} (from {})", from.id.str(),
                         from.address));
    }
}

void MeshCore::handle_sync(const MemberInfo& from, const Envelope& envelope) {
    auto message = decode_sync(envelope.payload, reader_options_);
    if (!message || message->sender != from) {
        warn(fmt::format(
            "ignored a member list from {}: {}", from.id.str(),
            message ? "sender does not match the connection" : message.error().message));
        return;
    }
    const auto verdict = membership_.on_sync(message->sender, message->members, scheduler_.now());
    answer_verdict(from, verdict);
    if (verdict == Membership::Verdict::accepted) {
        if (!message->digest_only) {
            if (envelope.method == wire::METHOD_SYNC) {
                send_sync(from, wire::METHOD_SYNC_ANSWER, /*digest_only=*/false);
            }
        } else if (message->digest != membership_.live_digest()) {
            // The lists differ: exchange them (a full Sync, answered with the full list).
            send_sync(from, wire::METHOD_SYNC, /*digest_only=*/false);
        }
    }
    tell_buried();
    publish_events();
}

void MeshCore::handle_probe(const MemberInfo& from, const Envelope& envelope) {
    auto message = decode_probe(envelope.payload, reader_options_);
    if (!message || message->sender != from) {
        warn(fmt::format(
            "ignored a probe from {}: {}", from.id.str(),
            message ? "sender does not match the connection" : message.error().message));
        return;
    }
    const Time now = scheduler_.now();
    const auto verdict = membership_.on_probe(from, message->alive_counter, now);
    answer_verdict(from, verdict);
    if (verdict == Membership::Verdict::accepted) {
        membership_.on_gossip(message->updates, now);
        answer_probe(from, envelope.method, *message);
    }
    tell_buried();
    publish_events();
}

void MeshCore::answer_probe(const MemberInfo& from, MethodId method, const ProbeMessage& probe) {
    const MemberInfo& subject = probe.subject;
    switch (method) {
        case wire::METHOD_PING: send_probe(from, wire::METHOD_ACK, probe.sequence, subject); return;
        case wire::METHOD_ACK:
            if (subject.id.empty()) {
                if (probe_ && probe_->sequence == probe.sequence && probe_->target == from) {
                    probe_->answered = true;
                }
            } else if (membership_.is_live(subject) && subject.id != self().id) {
                // Answered a ping this node sent for `subject`: pass the answer on.
                send_probe(subject, wire::METHOD_INDIRECT_ACK, probe.sequence, from);
            }
            return;
        case wire::METHOD_PING_REQUEST:
            if (membership_.is_live(subject) && subject.id != self().id) {
                send_probe(subject, wire::METHOD_PING, probe.sequence, from);
            }
            return;
        case wire::METHOD_INDIRECT_ACK:
            if (probe_ && probe_->sequence == probe.sequence && probe_->target == subject) {
                probe_->answered = true;
            }
            return;
        default: return;
    }
}

void MeshCore::handle_request(const MemberInfo& from, Transport::ConnectionId via,
                              const Envelope& envelope) {
    const ServiceId service = envelope.service;
    const MethodId method = envelope.method;
    const std::uint64_t correlation = envelope.correlation;
    auto answer = [this, alive = alive_, via, service, method,
                   correlation](std::expected<Payload, MeshError> result) {
        if (!*alive) {
            return;
        }
        if (result) {
            transport_.reply(
                via, encode_frame(
                         FrameFields{service, method, correlation, EnvelopeKind::response, 0, {}},
                         result->words()));
        } else {
            transport_.reply(
                via, encode_frame(FrameFields{service, method, correlation, EnvelopeKind::failure,
                                              static_cast<std::uint16_t>(result.error().code),
                                              result.error().message},
                                  {}));
        }
    };
    auto handler = request_handlers_.find(key_of(service, method));
    if (handler == request_handlers_.end()) {
        answer(
            matchmesh::fail(MeshErrc::no_handler,
                            fmt::format("no handler for service {} method {}", service, method)));
        return;
    }
    Responder responder(std::move(answer));
    try {
        handler->second(from.id, envelope.payload, std::move(responder));
    } catch (const std::exception& error) {
        ++counters_.handler_failures;
        warn(fmt::format("request {}/{} from {} failed: {}", service, method, from.id.str(),
                         error.what()));
    }
}

void MeshCore::handle_reply(const MemberInfo& from, const Envelope& envelope) {
    auto found = pending_.find(envelope.correlation);
    if (found == pending_.end() || found->second.to != from.id) {
        ++counters_.late_responses;
        return;
    }
    if (envelope.kind == EnvelopeKind::response) {
        if (options_.on_round_trip) {
            options_.on_round_trip(scheduler_.precise_now() - found->second.sent);
        }
        finish(envelope.correlation, envelope.payload);
        return;
    }
    const auto code = static_cast<MeshErrc>(envelope.error_code);
    const bool known = envelope.error_code >= static_cast<std::uint16_t>(MeshErrc::timeout) &&
                       envelope.error_code <= static_cast<std::uint16_t>(MeshErrc::shutdown);
    finish(envelope.correlation,
           std::unexpected(
               MeshError{known ? code : MeshErrc::remote, std::string(envelope.error_message)}));
}

void MeshCore::finish(std::uint64_t correlation, std::expected<PayloadView, MeshError> result) {
    auto found = pending_.find(correlation);
    MM_ASSERT(found != pending_.end());
    Pending pending = std::move(found->second);
    pending_.erase(found);
    auto peer = pending_per_peer_.find(pending.to);
    MM_ASSERT(peer != pending_per_peer_.end() && peer->second > 0);
    if (--peer->second == 0) {
        pending_per_peer_.erase(peer);
    }
    scheduler_.cancel(pending.timer);
    if (!result) {
        ++counters_.requests_failed;
    }
    pending.on_reply(result);
}

void MeshCore::fail_later(ReplyHandler on_reply, MeshErrc code, std::string message) {
    ++counters_.requests_failed;
    scheduler_.run_after(Duration(0),
                         [on_reply = std::move(on_reply), code, message = std::move(message)] {
                             on_reply(std::unexpected(MeshError{code, message}));
                         });
}

void MeshCore::send(const NodeId& to, ServiceId service, MethodId method, Payload payload) {
    if (leaving_) {
        ++counters_.sends_dropped;
        return;
    }
    if (to == self().id) {
        dispatch_local(service, method, std::move(payload), nullptr);
        return;
    }
    const MemberInfo* member = membership_.find_live(to);
    if (member == nullptr ||
        transport_.send(*member,
                        encode_frame(FrameFields{service, method, 0, EnvelopeKind::one_way, 0, {}},
                                     payload.words())) != Transport::SendResult::queued) {
        ++counters_.sends_dropped;
    }
}

void MeshCore::request(const NodeId& to, ServiceId service, MethodId method, Payload payload,
                       Duration timeout, ReplyHandler on_reply) {
    MM_ASSERT(on_reply);
    ++counters_.requests_sent;
    if (leaving_) {
        fail_later(std::move(on_reply), MeshErrc::shutdown, "this node is leaving");
        return;
    }
    if (to == self().id) {
        dispatch_local(service, method, std::move(payload),
                       [on_reply = std::move(on_reply)](std::expected<Payload, MeshError> result) {
                           if (result) {
                               on_reply(result->words());
                           } else {
                               on_reply(std::unexpected(result.error()));
                           }
                       });
        return;
    }
    const MemberInfo* member = membership_.find_live(to);
    if (member == nullptr) {
        fail_later(std::move(on_reply), MeshErrc::unreachable,
                   fmt::format("{} is not a live member", to.str()));
        return;
    }
    if (auto in_flight = pending_per_peer_.find(to);
        in_flight != pending_per_peer_.end() &&
        in_flight->second >= options_.requests_per_peer_max) {
        ++counters_.requests_over_peer_limit;
        fail_later(std::move(on_reply), MeshErrc::overloaded,
                   fmt::format("{} requests already await {}", in_flight->second, to.str()));
        return;
    }
    const std::uint64_t correlation = next_correlation_++;
    const auto sent = transport_.send(
        *member,
        encode_frame(FrameFields{service, method, correlation, EnvelopeKind::request, 0, {}},
                     payload.words()));
    if (sent != Transport::SendResult::queued) {
        const bool full = sent == Transport::SendResult::overloaded;
        fail_later(std::move(on_reply), full ? MeshErrc::overloaded : MeshErrc::unreachable,
                   fmt::format("cannot send to {}: {}", to.str(),
                               full ? "its queue is full" : "no connection"));
        return;
    }
    // The destructor cancels every pending request's timer, so this one needs no `alive`: two
    // words, which std::function keeps without a heap block.
    const TimerId timer = scheduler_.run_after(timeout, [this, correlation] {
        if (pending_.contains(correlation)) {
            ++counters_.requests_timed_out;
            finish(correlation, std::unexpected(MeshError{MeshErrc::timeout, "no answer in time"}));
        }
    });
    pending_.emplace(correlation,
                     Pending{to, std::move(on_reply), timer, scheduler_.precise_now()});
    ++pending_per_peer_[to];
}

void MeshCore::dispatch_local(ServiceId service, MethodId method, Payload payload,
                              std::function<void(std::expected<Payload, MeshError>)> answer) {
    // Delivered on a later turn of the loop, as a remote message would be.
    scheduler_.run_after(
        Duration(0), [this, alive = alive_, service, method, payload = std::move(payload),
                      answer = std::move(answer)]() mutable {
            if (!*alive) {
                return;
            }
            if (!answer) {
                auto handler = one_way_handlers_.find(key_of(service, method));
                if (handler != one_way_handlers_.end()) {
                    handler->second(self().id, payload.words());
                }
                return;
            }
            auto handler = request_handlers_.find(key_of(service, method));
            if (handler == request_handlers_.end()) {
                answer(matchmesh::fail(MeshErrc::no_handler, "no handler on this node"));
                return;
            }
            auto deliver_answer = [this, alive, answer = std::move(answer)](
                                      std::expected<Payload, MeshError> result) mutable {
                scheduler_.run_after(Duration(0), [alive, answer = std::move(answer),
                                                   result = std::move(result)]() mutable {
                    if (*alive) {
                        answer(std::move(result));
                    }
                });
            };
            handler->second(self().id, payload.words(), Responder(std::move(deliver_answer)));
        });
}

void MeshCore::publish_events() {
    for (const MembershipEvent& event : membership_.take_events()) {
        if (event.kind == MembershipEvent::Kind::died ||
            event.kind == MembershipEvent::Kind::left) {
            transport_.forget(event.member.id);
            std::vector<std::uint64_t> doomed;
            for (const auto& [correlation, pending] : pending_) {
                if (pending.to == event.member.id) {
                    doomed.push_back(correlation);
                }
            }
            std::sort(doomed.begin(), doomed.end());  // a deterministic order for the simulation
            for (std::uint64_t correlation : doomed) {
                finish(correlation, std::unexpected(MeshError{MeshErrc::unreachable,
                                                              fmt::format("{} left the cluster",
                                                                          event.member.id.str())}));
            }
        }
        for (const auto& listener : listeners_) {
            listener(event);
        }
    }
}

void MeshCore::on_request(ServiceId service, MethodId method, RequestHandler handler) {
    MM_ASSERT(service != mesh_service);
    request_handlers_[key_of(service, method)] = std::move(handler);
}

void MeshCore::on_one_way(ServiceId service, MethodId method, OneWayHandler handler) {
    MM_ASSERT(service != mesh_service);
    one_way_handlers_[key_of(service, method)] = std::move(handler);
}

void MeshCore::on_membership(MembershipListener listener) {
    listeners_.push_back(std::move(listener));
}

void MeshCore::warn(std::string message) {
    if (options_.on_warning) {
        options_.on_warning(message);
    }
}

}  // namespace matchmesh::mesh
