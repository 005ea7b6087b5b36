// The client protocol, a client's side: requests encoded, replies and pushes decoded.
#include <capnp/serialize.h>
#include <kj/exception.h>

#include "matching/wire.hpp"
#include "mesh/text.hpp"
#include "node/client.capnp.h"
#include "node/client_protocol.hpp"

namespace matchmesh::node {
namespace {

void write_properties(capnp::List<wire::Property>::Builder list,
                      const matching::Properties& properties) {
    unsigned i = 0;
    for (const auto& [name, value] : properties) {
        list[i].setName(name);
        list[i].setValue(value);
        ++i;
    }
}

using RequestBuilder = wire::Request::Builder;

void write(RequestBuilder root, const AddCommand& command) {
    auto add = root.initAdd();
    add.setProfileId(command.profile_id);
    add.setUniqueId(command.unique_id);
    add.setTag(command.tag);
    write_properties(add.initProperties(static_cast<unsigned>(command.properties.size())),
                     command.properties);
    matching::write_value(add.initValue(static_cast<unsigned>(command.value.size())),
                          command.value);
    add.setTtlSeconds(static_cast<std::uint8_t>(command.ttl.count()));
}

void write(RequestBuilder root, const SearchCommand& command) {
    auto search = root.initSearch();
    mesh::write_texts(search.initProfileIds(static_cast<unsigned>(command.profile_ids.size())),
                      command.profile_ids);
    search.setTag(command.tag);
    write_properties(search.initProperties(static_cast<unsigned>(command.properties.size())),
                     command.properties);
    search.setLimit(static_cast<std::uint32_t>(command.limit));
}

void write(RequestBuilder root, const RangeSearchCommand& command) {
    auto search = root.initSearchWithRange();
    mesh::write_texts(search.initProfileIds(static_cast<unsigned>(command.profile_ids.size())),
                      command.profile_ids);
    mesh::write_texts(search.initTags(static_cast<unsigned>(command.tags.size())), command.tags);
    auto list = search.initProperties(static_cast<unsigned>(command.properties.size()));
    unsigned i = 0;
    for (const auto& [name, values] : command.properties) {
        list[i].setName(name);
        auto out = list[i].initValues(static_cast<unsigned>(values.size()));
        for (unsigned j = 0; j < values.size(); ++j) {
            out.set(j, values[j]);
        }
        ++i;
    }
    search.setLimit(static_cast<std::uint32_t>(command.limit));
}

void write(RequestBuilder root, const RemoveCommand& command) {
    auto remove = root.initRemove();
    remove.setProfileId(command.profile_id);
    mesh::write_texts(remove.initUniqueIds(static_cast<unsigned>(command.unique_ids.size())),
                      command.unique_ids);
}

void write(RequestBuilder root, const MembersCommand&) {
    root.setMembers();
}

void write(RequestBuilder root, const DumpCommand&) {
    root.setDump();
}

void write(RequestBuilder root, const HelloCommand& command) {
    auto hello = root.initHello();
    hello.setUserId(command.user.str());
    hello.setToken(command.token);
    matching::write_value(hello.initData(static_cast<unsigned>(command.data.size())), command.data);
}

void write(RequestBuilder root, const StartTicketCommand& command) {
    auto start = root.initStartTicket();
    start.setTicketType(command.ticket_type);
    write_properties(start.initValues(static_cast<unsigned>(command.values.size())),
                     command.values);
    auto party = start.initParty(static_cast<unsigned>(command.party.size()));
    for (unsigned i = 0; i < command.party.size(); ++i) {
        party.set(i, command.party[i].str());
    }
    start.setApplicationData(
        kj::arrayPtr(command.application_data.data(), command.application_data.size()));
}

void write(RequestBuilder root, const TicketCommand& command) {
    switch (command.action) {
        case TicketAction::cancel:
            root.initCancelTicket().setTicketType(command.ticket_type);
            break;
        case TicketAction::leave: root.initLeave().setTicketType(command.ticket_type); break;
        case TicketAction::mark_complete:
            root.initMarkComplete().setTicketType(command.ticket_type);
            break;
        case TicketAction::mark_complete_when_expire:
            root.initMarkCompleteWhenExpire().setTicketType(command.ticket_type);
            break;
        case TicketAction::start_backfill:
            root.initStartBackfill().setTicketType(command.ticket_type);
            break;
        case TicketAction::stop_backfill:
            root.initStopBackfill().setTicketType(command.ticket_type);
            break;
        case TicketAction::members:
            root.initTicketMembers().setTicketType(command.ticket_type);
            break;
    }
}

void write(RequestBuilder root, const AcceptPartyCommand& command) {
    auto accept = root.initAcceptParty();
    accept.setTicketType(command.ticket_type);
    accept.setOwner(command.owner.str());
}

void write(RequestBuilder root, const KickCommand& command) {
    auto kick = root.initKick();
    kick.setTicketType(command.ticket_type);
    kick.setTarget(command.target.str());
}

void write(RequestBuilder root, const BroadcastCommand& command) {
    auto broadcast = root.initBroadcast();
    broadcast.setTicketType(command.ticket_type);
    broadcast.setVer(command.ver);
    broadcast.setCmd(command.cmd);
    broadcast.setMessage(kj::arrayPtr(command.message.data(), command.message.size()));
}

void write(RequestBuilder root, const SetPropertiesCommand& command) {
    auto set = root.initSetTicketProperties();
    set.setTicketType(command.ticket_type);
    matching::write_value(set.initValues(static_cast<unsigned>(command.values.size())),
                          command.values);
}

void write(RequestBuilder root, const GetPropertiesCommand& command) {
    auto get = root.initGetTicketProperties();
    get.setTicketType(command.ticket_type);
    mesh::write_texts(get.initKeys(static_cast<unsigned>(command.keys.size())), command.keys);
}

// Fills `out` in place (GCC 12 warns falsely when such a reply is moved around).
void read_reply(wire::Reply::Reader reply, ClientReply& out) {
    out.id = reply.getId();
    switch (reply.which()) {
        case wire::Reply::OK: out.body = std::monostate{}; break;
        case wire::Reply::ERROR:
            out.body = ReplyError{reply.getError().getCategory().cStr(),
                                  reply.getError().getMessage().cStr(),
                                  reply.getError().getRetryAfterMs()};
            break;
        case wire::Reply::ITEMS: {
            matching::SearchOutcome outcome;
            outcome.keys_unanswered = reply.getItems().getKeysUnanswered();
            for (auto item : reply.getItems().getItems()) {
                outcome.items.push_back(
                    outcome.keep_copy(item.getProfileId().cStr(), item.getUniqueId().cStr(),
                                      matching::read_value(item.getValue()),
                                      std::chrono::seconds(item.getTtlSeconds()),
                                      Duration(item.getRemainingMs()), item.getOrigin().cStr()));
            }
            out.body = std::move(outcome);
            break;
        }
        case wire::Reply::MEMBERS: {
            std::vector<mesh::MemberInfo> members;
            for (auto member : reply.getMembers()) {
                members.push_back({NodeId(member.getId().cStr()), member.getAddress().cStr(),
                                   member.getNodeType().cStr(), member.getIncarnation()});
            }
            out.body = std::move(members);
            break;
        }
        case wire::Reply::DUMP: out.body = std::string(reply.getDump().cStr()); break;
        case wire::Reply::PROPERTIES: out.body = matching::read_value(reply.getProperties()); break;
        case wire::Reply::MEMBER_IDS: {
            std::vector<UserId> ids;
            for (auto id : reply.getMemberIds()) {
                ids.emplace_back(std::string(id.cStr()));
            }
            out.body = std::move(ids);
            break;
        }
        default: throw std::invalid_argument("unknown reply kind");
    }
}

}  // namespace

mesh::Frame encode_request(const ClientRequest& request) {
    mesh::LocalMessageBuilder message;
    auto root = message.initRoot<wire::Request>();
    root.setId(request.id);
    std::visit([&root](const auto& command) { write(root, command); }, request.command);
    return mesh::encode_message_frame(message);
}

std::expected<ServerMessage, std::string> decode_server_message(
    std::span<const capnp::word> body, const capnp::ReaderOptions& options) {
    try {
        capnp::FlatArrayMessageReader message(kj::arrayPtr(body.data(), body.size()), options);
        auto root = message.getRoot<wire::ServerMessage>();
        // Built in place: GCC 12 warns falsely about a temporary converted into the expected.
        std::expected<ServerMessage, std::string> result;
        if (root.isReply()) {
            read_reply(root.getReply(), result->emplace<ClientReply>());
            return result;
        }
        auto push = root.getPush();
        const auto kind = static_cast<unsigned>(push.getKind());
        if (kind > static_cast<unsigned>(ticket::PushKind::failure)) {
            return std::unexpected("unknown push kind");
        }
        auto payload = push.getPayload();
        auto& out = result->emplace<ticket::PushMessage>();
        out.ticket_type = push.getTicketType();
        out.kind = static_cast<ticket::PushKind>(kind);
        out.ver = push.getVer();
        out.cmd = push.getCmd();
        out.payload.assign(payload.begin(), payload.end());
        out.ticket_id = TicketId(std::string(push.getTicketId().cStr()));
        out.room_id = push.getRoomId().cStr();
        out.reason = ticket::end_reason_from_wire(static_cast<unsigned>(push.getReason()));
        return result;
    } catch (const std::exception& error) {
        return std::unexpected(std::string(error.what()));
    } catch (const kj::Exception& error) {
        return std::unexpected(std::string(error.getDescription().cStr()));
    }
}

std::expected<ClientReply, std::string> decode_reply(std::span<const capnp::word> body,
                                                     const capnp::ReaderOptions& options) {
    auto message = decode_server_message(body, options);
    if (!message) {
        return std::unexpected(message.error());
    }
    if (auto* reply = std::get_if<ClientReply>(&*message)) {
        return std::move(*reply);
    }
    return std::unexpected("a push where a reply was expected");
}

}  // namespace matchmesh::node
