#include "ticket/wire.hpp"

#include <stdexcept>

#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>

#include "matching/wire.hpp"
#include "mesh/frame.hpp"
#include "mesh/text.hpp"
#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {
namespace {

// A leave from a sender too old to say why is a member leaving.
EndReason leave_reason(wire::EndReason reason) {
    const EndReason read = end_reason_from_wire(static_cast<unsigned>(reason));
    return read == EndReason::unspecified ? EndReason::left : read;
}

std::string text(capnp::Text::Reader reader, std::size_t bytes_max, const char* field) {
    return mesh::read_text(reader, {.bytes_max = bytes_max}, field);
}

Bytes bytes(capnp::Data::Reader reader, std::size_t bytes_max, const char* field) {
    if (reader.size() > bytes_max) {
        throw std::invalid_argument(fmt::format("{} longer than {} bytes", field, bytes_max));
    }
    return Bytes(reader.begin(), reader.end());
}

std::vector<std::string> read_texts(capnp::List<capnp::Text>::Reader list, std::size_t count_max,
                                    std::size_t bytes_max, const char* field) {
    if (list.size() > count_max) {
        throw std::invalid_argument(fmt::format("{} {}s, at most {}", list.size(), field, count_max));
    }
    std::vector<std::string> texts;
    texts.reserve(list.size());
    for (auto entry : list) {
        texts.push_back(text(entry, bytes_max, field));
    }
    return texts;
}

kj::ArrayPtr<const kj::byte> data_of(const Bytes& value) {
    return kj::arrayPtr(value.data(), value.size());
}

constexpr std::size_t message_bytes_max = 16 * 1024;

void write_user(wire::UserInfo::Builder out, const User& user) {
    out.setId(user.id.str());
    out.setSessionId(user.session_id);
    out.setHome(user.home.str());
    matching::write_value(out.initData(static_cast<unsigned>(user.data.size())), user.data);
}

User read_user(wire::UserInfo::Reader in) {
    User user{UserId(text(in.getId(), id_bytes_max, "user ID")),
              text(in.getSessionId(), id_bytes_max, "session ID"),
              NodeId(text(in.getHome(), id_bytes_max, "home")), matching::read_value(in.getData())};
    if (user.id.empty() || user.home.empty()) {
        throw std::invalid_argument("user without an ID or a home");
    }
    return user;
}

void write_holder(wire::Holder::Builder out, const HolderView& holder) {
    auto add = out.initAddProperties(static_cast<unsigned>(holder.add_properties.size()));
    unsigned i = 0;
    for (const auto& [name, value] : holder.add_properties) {
        add[i].setName(name);
        add[i].setValue(value);
        ++i;
    }
    auto search = out.initSearchProperties(static_cast<unsigned>(holder.search_properties.size()));
    i = 0;
    for (const auto& [name, values] : holder.search_properties) {
        search[i].setName(name);
        auto list = search[i].initValues(static_cast<unsigned>(values.size()));
        for (unsigned j = 0; j < values.size(); ++j) {
            list.set(j, values[j]);
        }
        ++i;
    }
    out.setApplicationData(data_of(holder.application_data));
}

Holder read_holder(wire::Holder::Reader in) {
    Holder holder;
    if (in.getAddProperties().size() > matching::profile_properties_max ||
        in.getSearchProperties().size() > matching::profile_properties_max) {
        throw std::invalid_argument("too many holder properties");
    }
    for (auto property : in.getAddProperties()) {
        holder.add_properties[text(property.getName(), matching::property_name_bytes_max, "name")] =
            property.getValue();
    }
    for (auto property : in.getSearchProperties()) {
        auto values = property.getValues();
        if (values.size() > matching::range_values_max) {
            throw std::invalid_argument("too many range values");
        }
        auto& out = holder.search_properties[text(property.getName(),
                                                  matching::property_name_bytes_max, "name")];
        for (std::int64_t value : values) {
            out.push_back(value);
        }
    }
    holder.application_data = bytes(in.getApplicationData(), 4096, "application data");
    return holder;
}

void write_push(wire::Push::Builder out, const PushEnvelope& push) {
    out.setPushId(push.push_id);
    out.setUserId(push.user.str());
    out.setTicketType(push.ticket_type);
    out.setTicketId(push.ticket_id.str());
    out.setRoomId(push.room_id.str());
    out.setRoomOwner(push.room_owner.str());
    out.setKind(static_cast<wire::Push::Kind>(push.kind));
    out.setVer(push.ver);
    out.setCmd(push.cmd);
    out.setMessage(data_of(push.message));
    out.setReason(static_cast<wire::EndReason>(push.reason));
}

PushEnvelope read_push(wire::Push::Reader in) {
    PushEnvelope push;
    push.push_id = text(in.getPushId(), id_bytes_max, "push ID");
    push.user = UserId(text(in.getUserId(), id_bytes_max, "user ID"));
    push.ticket_type = in.getTicketType();
    push.ticket_id = TicketId(text(in.getTicketId(), id_bytes_max, "ticket ID"));
    push.room_id = TicketId(text(in.getRoomId(), id_bytes_max, "room ID"));
    push.room_owner = UserId(text(in.getRoomOwner(), id_bytes_max, "room owner"));
    const auto kind = static_cast<unsigned>(in.getKind());
    if (kind > static_cast<unsigned>(WireKind::failure)) {
        throw std::invalid_argument("unknown push kind");
    }
    push.kind = static_cast<WireKind>(kind);
    push.ver = in.getVer();
    push.cmd = in.getCmd();
    push.message = bytes(in.getMessage(), message_bytes_max, "message");
    push.reason = end_reason_from_wire(static_cast<unsigned>(in.getReason()));
    return push;
}

template <typename Root, typename Fill>
mesh::Payload build(Fill&& fill) {
    mesh::LocalMessageBuilder message;
    fill(message.initRoot<Root>());
    return mesh::Payload::encode(message);
}

template <typename Root, typename Read>
auto decode(mesh::PayloadView payload, const capnp::ReaderOptions& options, Read&& read)
    -> Decoded<decltype(read(std::declval<typename Root::Reader>()))> {
    try {
        capnp::FlatArrayMessageReader message(kj::arrayPtr(payload.data(), payload.size()),
                                              options);
        return read(message.getRoot<Root>());
    } catch (const std::invalid_argument& invalid) {
        return std::unexpected(std::string(invalid.what()));
    } catch (const kj::Exception& error) {
        return std::unexpected(std::string(error.getDescription().cStr()));
    }
}

}  // namespace

mesh::Payload encode(const JoinMessage& message) {
    const Holder& holder = message.holder;
    return encode(message, HolderView{holder.add_properties, holder.search_properties,
                                      holder.application_data});
}

mesh::Payload encode(const JoinMessage& message, const HolderView& holder) {
    return build<wire::Join>([&](wire::Join::Builder root) {
        root.setAttempt(message.attempt);
        root.setRoomId(message.room_id.str());
        root.setTicketType(message.ticket_type);
        root.setTicketId(message.ticket_id.str());
        auto party = root.initParty(static_cast<unsigned>(message.party.size()));
        for (unsigned i = 0; i < message.party.size(); ++i) {
            write_user(party[i], *message.party[i]);
        }
        write_holder(root.initHolder(), holder);
        root.setFromSearch(message.from_search);
        root.setWaitedMs(static_cast<std::uint32_t>(
            std::clamp<Duration::rep>(message.waited.count(), 0, UINT32_MAX)));
        root.setPushesInReply(message.pushes_in_reply);
        mesh::write_texts(
            root.initSearchProfiles(static_cast<unsigned>(message.search_profiles.size())),
            message.search_profiles);
        mesh::write_texts(root.initSearchTags(static_cast<unsigned>(message.search_tags.size())),
                          message.search_tags);
    });
}

mesh::Payload encode(const JoinReplyMessage& message) {
    return encode(message, message.pushes);
}

mesh::Payload encode(const JoinReplyMessage& message, std::span<const PushEnvelope> pushes) {
    return build<wire::JoinReply>([&](wire::JoinReply::Builder root) {
        root.setAccepted(message.accepted);
        root.setReason(message.reason);
        root.setTaken(message.taken);
        root.setGone(message.gone);
        root.setSeatedIn(message.seated_in.str());
        if (!pushes.empty()) {
            auto list = root.initPushes(static_cast<unsigned>(pushes.size()));
            for (unsigned i = 0; i < pushes.size(); ++i) {
                write_push(list[i], pushes[i]);
            }
        }
    });
}

mesh::Payload encode(const PushEnvelope& message) {
    return build<wire::Push>([&](wire::Push::Builder root) { write_push(root, message); });
}

mesh::Payload encode(const LeaveMessage& message) {
    return build<wire::Leave>([&](wire::Leave::Builder root) {
        root.setRoomId(message.room_id.str());
        root.setUserId(message.user.str());
        root.setTicketType(message.ticket_type);
        root.setReason(static_cast<wire::EndReason>(message.reason));
    });
}

mesh::Payload encode_leave_reply(bool left) {
    return build<wire::LeaveReply>([&](wire::LeaveReply::Builder root) { root.setLeft(left); });
}

mesh::Payload encode(const BroadcastMessage& message) {
    return build<wire::Broadcast>([&](wire::Broadcast::Builder root) {
        root.setRoomId(message.room_id.str());
        root.setUserId(message.user.str());
        root.setTicketType(message.ticket_type);
        root.setVer(message.ver);
        root.setCmd(message.cmd);
        root.setMessage(data_of(message.message));
    });
}

mesh::Payload encode(const ClaimMessage& message) {
    return build<wire::Claim>([&](wire::Claim::Builder root) {
        root.setTicketId(message.ticket_id.str());
        root.setTicketType(message.ticket_type);
        root.setUserId(message.user.str());
        root.setOwner(message.owner.str());
    });
}

mesh::Payload encode(const LocateMessage& message) {
    return build<wire::Locate>(
        [&](wire::Locate::Builder root) { root.setUserId(message.user.str()); });
}

mesh::Payload encode(const LocatedMessage& message) {
    return build<wire::Located>(
        [&](wire::Located::Builder root) { root.setHome(message.home.str()); });
}

std::string_view to_string(JoinRefusal refusal) {
    switch (refusal) {
        case JoinRefusal::room_not_found: return "room not found";
        case JoinRefusal::not_waiting: return "the room is not waiting for members";
        case JoinRefusal::completed: return "the room is complete";
        case JoinRefusal::other_type: return "another ticket type";
        case JoinRefusal::already_member: return "already a member";
        case JoinRefusal::full: return "the room is full";
        case JoinRefusal::not_allowed: return "the owner's rules do not allow this match";
        case JoinRefusal::closed: return "the room closed";
    }
    return "?";
}

JoinReplyMessage refused_join(JoinRefusal refusal) {
    const bool seats_gone = refusal != JoinRefusal::other_type &&
                            refusal != JoinRefusal::already_member &&
                            refusal != JoinRefusal::not_allowed;
    return JoinReplyMessage{false,
                            std::string(to_string(refusal)),
                            seats_gone,
                            refusal == JoinRefusal::room_not_found ||
                                refusal == JoinRefusal::completed,
                            {}};
}

std::string_view to_string(ClaimRefusal refusal) {
    switch (refusal) {
        case ClaimRefusal::none: return "";
        case ClaimRefusal::not_connected: return "not connected here";
        case ClaimRefusal::busy: return "busy";
        case ClaimRefusal::not_accepted: return "not accepted";
    }
    return "?";
}

mesh::Payload encode(const ClaimReplyMessage& message) {
    return build<wire::ClaimReply>([&](wire::ClaimReply::Builder root) {
        root.setClaimed(message.claimed);
        if (message.claimed) {
            write_user(root.initUser(), message.user);
        }
        root.setReason(std::string(to_string(message.refusal)));
        root.setRefusal(static_cast<wire::ClaimRefusal>(message.refusal));
    });
}

mesh::Payload encode(const AckMessage& message) {
    return build<wire::Ack>([&](wire::Ack::Builder root) {
        root.setOk(message.ok);
        root.setReason(message.reason);
    });
}

mesh::Payload encode(const SessionsMessage& message) {
    return build<wire::Sessions>([&](wire::Sessions::Builder root) {
        root.setHome(message.home.str());
        auto users = root.initUsers(static_cast<unsigned>(message.users.size()));
        for (unsigned i = 0; i < message.users.size(); ++i) {
            users[i].setUserId(message.users[i].user.str());
            users[i].setEpoch(message.users[i].epoch);
        }
    });
}

Decoded<SessionsMessage> decode_sessions(mesh::PayloadView payload,
                                         const capnp::ReaderOptions& options) {
    return decode<wire::Sessions>(payload, options, [](wire::Sessions::Reader root) {
        SessionsMessage message{NodeId(text(root.getHome(), id_bytes_max, "home")), {}};
        auto users = root.getUsers();
        if (users.size() > sessions_max) {
            throw std::invalid_argument(fmt::format("{} sessions in one message", users.size()));
        }
        for (auto user : users) {
            message.users.push_back(SessionStart{
                UserId(text(user.getUserId(), id_bytes_max, "user ID")), user.getEpoch()});
        }
        return message;
    });
}

Decoded<JoinMessage> decode_join(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::Join>(payload, options, [](wire::Join::Reader root) {
        JoinMessage message;
        message.attempt = text(root.getAttempt(), id_bytes_max, "attempt");
        message.room_id = TicketId(text(root.getRoomId(), id_bytes_max, "room ID"));
        message.ticket_type = root.getTicketType();
        message.ticket_id = TicketId(text(root.getTicketId(), id_bytes_max, "ticket ID"));
        auto party = root.getParty();
        if (party.size() == 0 || party.size() > party_max) {
            throw std::invalid_argument(fmt::format("a party of {} users", party.size()));
        }
        for (auto user : party) {
            message.party.push_back(std::make_shared<const User>(read_user(user)));
        }
        message.holder = read_holder(root.getHolder());
        message.from_search = root.getFromSearch();
        message.waited = Duration(root.getWaitedMs());
        message.pushes_in_reply = root.getPushesInReply();
        message.search_profiles = read_texts(root.getSearchProfiles(), matching::profiles_max,
                                             matching::profile_id_bytes_max, "search profile");
        message.search_tags = read_texts(root.getSearchTags(), ticket_tags_max,
                                         matching::tag_bytes_max, "search tag");
        return message;
    });
}

Decoded<JoinReplyMessage> decode_join_reply(mesh::PayloadView payload,
                                            const capnp::ReaderOptions& options) {
    return decode<wire::JoinReply>(payload, options, [](wire::JoinReply::Reader root) {
        JoinReplyMessage message{root.getAccepted(),
                                 text(root.getReason(), 1024, "reason"),
                                 root.getTaken(),
                                 root.getGone(),
                                 {},
                                 TicketId(text(root.getSeatedIn(), id_bytes_max, "seated-in room"))};
        if (!message.accepted && !message.seated_in.empty()) {
            throw std::invalid_argument("a refused join seated in another room");
        }
        auto pushes = root.getPushes();
        if (pushes.size() > join_reply_pushes_max || (!message.accepted && pushes.size() != 0)) {
            throw std::invalid_argument(fmt::format("{} pushes on a join's {} answer",
                                                    pushes.size(),
                                                    message.accepted ? "accepted" : "refused"));
        }
        message.pushes.reserve(pushes.size());
        for (auto push : pushes) {
            message.pushes.push_back(read_push(push));
        }
        return message;
    });
}

Decoded<PushEnvelope> decode_push(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::Push>(payload, options, read_push);
}

Decoded<LeaveMessage> decode_leave(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::Leave>(payload, options, [](wire::Leave::Reader root) {
        return LeaveMessage{TicketId(text(root.getRoomId(), id_bytes_max, "room ID")),
                            UserId(text(root.getUserId(), id_bytes_max, "user ID")),
                            root.getTicketType(), leave_reason(root.getReason())};
    });
}

Decoded<bool> decode_leave_reply(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::LeaveReply>(payload, options,
                                    [](wire::LeaveReply::Reader root) { return root.getLeft(); });
}

Decoded<BroadcastMessage> decode_broadcast(mesh::PayloadView payload,
                                           const capnp::ReaderOptions& options) {
    return decode<wire::Broadcast>(payload, options, [](wire::Broadcast::Reader root) {
        return BroadcastMessage{TicketId(text(root.getRoomId(), id_bytes_max, "room ID")),
                                UserId(text(root.getUserId(), id_bytes_max, "user ID")),
                                root.getTicketType(),
                                root.getVer(),
                                root.getCmd(),
                                bytes(root.getMessage(), message_bytes_max, "message")};
    });
}

Decoded<ClaimMessage> decode_claim(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::Claim>(payload, options, [](wire::Claim::Reader root) {
        return ClaimMessage{TicketId(text(root.getTicketId(), id_bytes_max, "ticket ID")),
                            root.getTicketType(),
                            UserId(text(root.getUserId(), id_bytes_max, "user ID")),
                            UserId(text(root.getOwner(), id_bytes_max, "owner"))};
    });
}

Decoded<ClaimReplyMessage> decode_claim_reply(mesh::PayloadView payload,
                                              const capnp::ReaderOptions& options) {
    return decode<wire::ClaimReply>(payload, options, [](wire::ClaimReply::Reader root) {
        ClaimReplyMessage message;
        message.claimed = root.getClaimed();
        if (message.claimed) {
            message.user = read_user(root.getUser());
        }
        // A refusal this version does not know (a newer peer's) is a refusal without a reason.
        const auto refusal = static_cast<unsigned>(root.getRefusal());
        message.refusal = refusal <= static_cast<unsigned>(ClaimRefusal::not_accepted)
                              ? static_cast<ClaimRefusal>(refusal)
                              : ClaimRefusal::none;
        return message;
    });
}

Decoded<LocateMessage> decode_locate(mesh::PayloadView payload,
                                     const capnp::ReaderOptions& options) {
    return decode<wire::Locate>(payload, options, [](wire::Locate::Reader root) {
        return LocateMessage{UserId(text(root.getUserId(), id_bytes_max, "user ID"))};
    });
}

Decoded<LocatedMessage> decode_located(mesh::PayloadView payload,
                                       const capnp::ReaderOptions& options) {
    return decode<wire::Located>(payload, options, [](wire::Located::Reader root) {
        return LocatedMessage{NodeId(text(root.getHome(), id_bytes_max, "home"))};
    });
}

Decoded<AckMessage> decode_ack(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::Ack>(payload, options, [](wire::Ack::Reader root) {
        return AckMessage{root.getOk(), text(root.getReason(), 1024, "reason")};
    });
}

}  // namespace matchmesh::ticket
