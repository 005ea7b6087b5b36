#include "mesh/control.hpp"

#include <algorithm>

#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>

#include "mesh/base/assert.hpp"
#include "mesh/envelope.capnp.h"

namespace matchmesh::mesh {
namespace {

// Thrown inside a decoder's try block for a field that breaks our rules (not Cap'n Proto's).
struct Invalid {
    std::string reason;
};

std::string read_text(capnp::Text::Reader text, const char* field) {
    if (text.size() > member_text_bytes_max) {
        throw Invalid{fmt::format("{} longer than {} bytes", field, member_text_bytes_max)};
    }
    return std::string(text.cStr(), text.size());
}

template <std::size_t N>
std::array<std::uint8_t, N> read_fixed(capnp::Data::Reader data, const char* field) {
    if (data.size() != N) {
        throw Invalid{fmt::format("{} must be {} bytes, got {}", field, N, data.size())};
    }
    std::array<std::uint8_t, N> out{};
    std::copy(data.begin(), data.end(), out.begin());
    return out;
}

MemberInfo read_member(wire::MemberInfo::Reader reader) {
    MemberInfo member;
    member.id = NodeId(read_text(reader.getId(), "member id"));
    member.address = read_text(reader.getAddress(), "member address");
    member.node_type = read_text(reader.getNodeType(), "member node type");
    member.incarnation = reader.getIncarnation();
    if (member.id.empty()) {
        throw Invalid{"member id is empty"};
    }
    return member;
}

void write_member(wire::MemberInfo::Builder builder, const MemberInfo& member) {
    builder.setId(member.id.str());
    builder.setAddress(member.address);
    builder.setNodeType(member.node_type);
    builder.setIncarnation(member.incarnation);
}

template <std::size_t N>
kj::ArrayPtr<const kj::byte> bytes_of(const std::array<std::uint8_t, N>& data) {
    return kj::arrayPtr(data.data(), data.size());
}

// Runs `read` on the payload's root inside one try block.
template <typename Root, typename Read>
auto decode(PayloadView payload, const capnp::ReaderOptions& options, Read&& read)
    -> std::expected<decltype(read(std::declval<typename Root::Reader>())), ControlError> {
    try {
        capnp::FlatArrayMessageReader message(kj::arrayPtr(payload.data(), payload.size()),
                                              options);
        return read(message.getRoot<Root>());
    } catch (const Invalid& invalid) {
        return fail(MeshErrc::malformed, invalid.reason);
    } catch (const kj::Exception& error) {
        return fail(MeshErrc::malformed, error.getDescription().cStr());
    }
}

}  // namespace

Payload encode(const SyncMessage& message) {
    return make_payload<wire::Sync>([&](wire::Sync::Builder root) {
        write_member(root.initSender(), message.sender);
        auto members = root.initMembers(static_cast<unsigned>(message.members.size()));
        for (unsigned i = 0; i < message.members.size(); ++i) {
            write_member(members[i], message.members[i]);
        }
        root.setDigest(message.digest);
        root.setDigestOnly(message.digest_only);
    });
}

Payload encode(const ProbeMessage& message) {
    MM_ASSERT(message.updates.size() <= probe_updates_max);
    return make_payload<wire::Probe>([&](wire::Probe::Builder root) {
        write_member(root.initSender(), message.sender);
        root.setAliveCounter(message.alive_counter);
        root.setSequence(message.sequence);
        if (!message.subject.id.empty()) {
            write_member(root.initSubject(), message.subject);
        }
        auto updates = root.initUpdates(static_cast<unsigned>(message.updates.size()));
        for (unsigned i = 0; i < message.updates.size(); ++i) {
            write_member(updates[i].initMember(), message.updates[i].member);
            updates[i].setStatus(
                static_cast<wire::MemberUpdate::Status>(message.updates[i].status));
            updates[i].setAliveCounter(message.updates[i].alive_counter);
        }
    });
}

Payload encode(const ChallengeMessage& message) {
    return make_payload<wire::Challenge>([&](wire::Challenge::Builder root) {
        root.setCluster(message.cluster);
        root.setNonce(bytes_of(message.nonce));
    });
}

Payload encode(const HelloMessage& message) {
    return make_payload<wire::Hello>([&](wire::Hello::Builder root) {
        root.setCluster(message.cluster);
        write_member(root.initMember(), message.member);
        root.setNonce(bytes_of(message.nonce));
        root.setProof(bytes_of(message.proof));
    });
}

Payload encode(const WelcomeMessage& message) {
    return make_payload<wire::Welcome>([&](wire::Welcome::Builder root) {
        write_member(root.initMember(), message.member);
        root.setProof(bytes_of(message.proof));
    });
}

Payload encode(const LeaveMessage& message) {
    return make_payload<wire::Leave>([&](wire::Leave::Builder root) {
        root.setId(message.id.str());
        root.setIncarnation(message.incarnation);
    });
}

Payload encode_rejected(std::uint64_t incarnation) {
    return make_payload<wire::Rejected>(
        [&](wire::Rejected::Builder root) { root.setIncarnation(incarnation); });
}

std::expected<SyncMessage, ControlError> decode_sync(PayloadView payload,
                                                     const capnp::ReaderOptions& options) {
    return decode<wire::Sync>(payload, options, [](wire::Sync::Reader root) {
        SyncMessage message;
        message.sender = read_member(root.getSender());
        auto members = root.getMembers();
        if (members.size() > sync_members_max) {
            throw Invalid{fmt::format("sync lists {} members", members.size())};
        }
        if (root.getDigestOnly() && members.size() != 0) {
            throw Invalid{"a digest-only sync lists members"};
        }
        for (auto member : members) {
            message.members.push_back(read_member(member));
        }
        message.digest = root.getDigest();
        message.digest_only = root.getDigestOnly();
        return message;
    });
}

std::expected<ProbeMessage, ControlError> decode_probe(PayloadView payload,
                                                       const capnp::ReaderOptions& options) {
    return decode<wire::Probe>(payload, options, [](wire::Probe::Reader root) {
        ProbeMessage message;
        message.sender = read_member(root.getSender());
        message.alive_counter = root.getAliveCounter();
        message.sequence = root.getSequence();
        if (root.hasSubject()) {
            message.subject = read_member(root.getSubject());
        }
        auto updates = root.getUpdates();
        if (updates.size() > probe_updates_max) {
            throw Invalid{fmt::format("probe carries {} updates", updates.size())};
        }
        for (auto update : updates) {
            const auto status = static_cast<unsigned>(update.getStatus());
            if (status > static_cast<unsigned>(MemberUpdate::Status::left)) {
                throw Invalid{fmt::format("unknown member status {}", status)};
            }
            message.updates.push_back(MemberUpdate{read_member(update.getMember()),
                                                   static_cast<MemberUpdate::Status>(status),
                                                   update.getAliveCounter()});
        }
        return message;
    });
}

std::expected<ChallengeMessage, ControlError> decode_challenge(
    PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::Challenge>(payload, options, [](wire::Challenge::Reader root) {
        return ChallengeMessage{read_text(root.getCluster(), "cluster"),
                                read_fixed<nonce_bytes>(root.getNonce(), "nonce")};
    });
}

std::expected<HelloMessage, ControlError> decode_hello(PayloadView payload,
                                                       const capnp::ReaderOptions& options) {
    return decode<wire::Hello>(payload, options, [](wire::Hello::Reader root) {
        return HelloMessage{read_text(root.getCluster(), "cluster"), read_member(root.getMember()),
                            read_fixed<nonce_bytes>(root.getNonce(), "nonce"),
                            read_fixed<proof_bytes>(root.getProof(), "proof")};
    });
}

std::expected<WelcomeMessage, ControlError> decode_welcome(PayloadView payload,
                                                           const capnp::ReaderOptions& options) {
    return decode<wire::Welcome>(payload, options, [](wire::Welcome::Reader root) {
        return WelcomeMessage{read_member(root.getMember()),
                              read_fixed<proof_bytes>(root.getProof(), "proof")};
    });
}

std::expected<LeaveMessage, ControlError> decode_leave(PayloadView payload,
                                                       const capnp::ReaderOptions& options) {
    return decode<wire::Leave>(payload, options, [](wire::Leave::Reader root) {
        return LeaveMessage{NodeId(read_text(root.getId(), "id")), root.getIncarnation()};
    });
}

std::expected<std::uint64_t, ControlError> decode_rejected(PayloadView payload,
                                                           const capnp::ReaderOptions& options) {
    return decode<wire::Rejected>(
        payload, options, [](wire::Rejected::Reader root) { return root.getIncarnation(); });
}

Frame control_frame(MethodId method, const Payload& payload) {
    return encode_frame(FrameFields{mesh_service, method, 0, EnvelopeKind::one_way, 0, {}},
                        payload.words());
}

}  // namespace matchmesh::mesh
