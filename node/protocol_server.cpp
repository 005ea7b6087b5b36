// The client protocol, the node's side: requests decoded strictly (bounded texts and lists),
// replies and pushes encoded.
#include <stdexcept>

#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>

#include "matching/store.hpp"
#include "matching/wire.hpp"
#include "mesh/text.hpp"
#include "node/client.capnp.h"
#include "node/client_protocol.hpp"

namespace matchmesh::node {
namespace {

std::string text_of(capnp::Text::Reader text, std::size_t bytes_max, const char* field) {
    return mesh::read_text(text, {.bytes_max = bytes_max}, field);
}

template <typename List>
void check_count(const List& list, std::size_t max, const char* what) {
    if (list.size() > max) {
        throw std::invalid_argument(
            fmt::format("{} {}, at most {} allowed", list.size(), what, max));
    }
}

std::vector<std::string> texts_of(capnp::List<capnp::Text>::Reader list, std::size_t bytes_max,
                                  const char* what) {
    check_count(list, request_list_max, what);
    std::vector<std::string> texts;
    for (auto text : list) {
        texts.push_back(text_of(text, bytes_max, what));
    }
    return texts;
}

matching::Properties properties_of(capnp::List<wire::Property>::Reader list) {
    check_count(list, matching::profile_properties_max, "properties");
    matching::Properties properties;
    for (auto property : list) {
        auto name = text_of(property.getName(), matching::property_name_bytes_max, "property name");
        if (!properties.emplace(name, property.getValue()).second) {
            throw std::invalid_argument(fmt::format("property '{}' is given twice", name));
        }
    }
    return properties;
}

matching::RangeProperties range_properties_of(capnp::List<wire::RangeProperty>::Reader list) {
    check_count(list, matching::profile_properties_max, "properties");
    matching::RangeProperties properties;
    for (auto property : list) {
        auto name = text_of(property.getName(), matching::property_name_bytes_max, "property name");
        auto values = property.getValues();
        check_count(values, matching::range_values_max, "values");
        std::vector<std::int64_t> list;
        list.reserve(values.size());
        for (std::int64_t value : values) {
            list.push_back(value);
        }
        if (!properties.emplace(name, std::move(list)).second) {
            throw std::invalid_argument(fmt::format("property '{}' is given twice", name));
        }
    }
    return properties;
}

// The store commands (and members, dump), or nothing for another kind.
std::optional<Command> store_command_of(wire::Request::Reader request) {
    switch (request.which()) {
        case wire::Request::ADD: {
            auto add = request.getAdd();
            return AddCommand{
                text_of(add.getProfileId(), matching::profile_id_bytes_max, "profile ID"),
                text_of(add.getUniqueId(), matching::unique_id_bytes_max, "unique ID"),
                text_of(add.getTag(), matching::tag_bytes_max, "tag"),
                properties_of(add.getProperties()),
                matching::read_value(add.getValue()),
                std::chrono::seconds(add.getTtlSeconds())};
        }
        case wire::Request::SEARCH: {
            auto search = request.getSearch();
            return SearchCommand{
                texts_of(search.getProfileIds(), matching::profile_id_bytes_max, "profile IDs"),
                text_of(search.getTag(), matching::tag_bytes_max, "tag"),
                properties_of(search.getProperties()), search.getLimit()};
        }
        case wire::Request::SEARCH_WITH_RANGE: {
            auto search = request.getSearchWithRange();
            return RangeSearchCommand{
                texts_of(search.getProfileIds(), matching::profile_id_bytes_max, "profile IDs"),
                texts_of(search.getTags(), matching::tag_bytes_max, "tags"),
                range_properties_of(search.getProperties()), search.getLimit()};
        }
        case wire::Request::REMOVE: {
            auto remove = request.getRemove();
            return RemoveCommand{
                text_of(remove.getProfileId(), matching::profile_id_bytes_max, "profile ID"),
                texts_of(remove.getUniqueIds(), matching::unique_id_bytes_max, "unique IDs")};
        }
        case wire::Request::MEMBERS: return MembersCommand{};
        case wire::Request::DUMP: return DumpCommand{};
        default: return std::nullopt;
    }
}

// The ticket commands, or nothing for another kind.
std::optional<Command> ticket_command_of(wire::Request::Reader request) {
    switch (request.which()) {
        case wire::Request::START_TICKET: {
            auto start = request.getStartTicket();
            StartTicketCommand command{
                start.getTicketType(), properties_of(start.getValues()), {}, {}};
            for (const std::string& member :
                 texts_of(start.getParty(), user_id_bytes_max, "party members")) {
                command.party.emplace_back(member);
            }
            auto data = start.getApplicationData();
            if (data.size() > application_data_bytes_max) {
                throw std::invalid_argument(fmt::format("application data is larger than {} bytes",
                                                        application_data_bytes_max));
            }
            command.application_data.assign(data.begin(), data.end());
            return command;
        }
        case wire::Request::CANCEL_TICKET:
            return TicketCommand{TicketAction::cancel, request.getCancelTicket().getTicketType()};
        case wire::Request::LEAVE:
            return TicketCommand{TicketAction::leave, request.getLeave().getTicketType()};
        case wire::Request::MARK_COMPLETE:
            return TicketCommand{TicketAction::mark_complete,
                                 request.getMarkComplete().getTicketType()};
        case wire::Request::MARK_COMPLETE_WHEN_EXPIRE:
            return TicketCommand{TicketAction::mark_complete_when_expire,
                                 request.getMarkCompleteWhenExpire().getTicketType()};
        case wire::Request::START_BACKFILL:
            return TicketCommand{TicketAction::start_backfill,
                                 request.getStartBackfill().getTicketType()};
        case wire::Request::STOP_BACKFILL:
            return TicketCommand{TicketAction::stop_backfill,
                                 request.getStopBackfill().getTicketType()};
        case wire::Request::TICKET_MEMBERS:
            return TicketCommand{TicketAction::members, request.getTicketMembers().getTicketType()};
        case wire::Request::ACCEPT_PARTY: {
            auto accept = request.getAcceptParty();
            return AcceptPartyCommand{
                accept.getTicketType(),
                UserId(text_of(accept.getOwner(), user_id_bytes_max, "party owner"))};
        }
        case wire::Request::KICK: {
            auto kick = request.getKick();
            return KickCommand{kick.getTicketType(),
                               UserId(text_of(kick.getTarget(), user_id_bytes_max, "target"))};
        }
        case wire::Request::BROADCAST: {
            auto broadcast = request.getBroadcast();
            auto message = broadcast.getMessage();
            if (message.size() > broadcast_bytes_max) {
                throw std::invalid_argument(
                    fmt::format("broadcast message is larger than {} bytes", broadcast_bytes_max));
            }
            return BroadcastCommand{broadcast.getTicketType(), broadcast.getVer(),
                                    broadcast.getCmd(),
                                    ticket::Bytes(message.begin(), message.end())};
        }
        case wire::Request::SET_TICKET_PROPERTIES: {
            auto set = request.getSetTicketProperties();
            return SetPropertiesCommand{set.getTicketType(), matching::read_value(set.getValues())};
        }
        case wire::Request::GET_TICKET_PROPERTIES: {
            auto get = request.getGetTicketProperties();
            return GetPropertiesCommand{get.getTicketType(),
                                        texts_of(get.getKeys(), matching::value_bytes_max, "keys")};
        }
        default: return std::nullopt;
    }
}

Command command_of(wire::Request::Reader request) {
    if (request.isHello()) {
        auto hello = request.getHello();
        return HelloCommand{UserId(text_of(hello.getUserId(), user_id_bytes_max, "user ID")),
                            text_of(hello.getToken(), token_bytes_max, "token"),
                            matching::read_value(hello.getData())};
    }
    if (auto command = store_command_of(request)) {
        return std::move(*command);
    }
    if (auto command = ticket_command_of(request)) {
        return std::move(*command);
    }
    throw std::invalid_argument("unknown request kind (a newer client?)");
}

}  // namespace

std::string_view wire_name(ClientErrc code) {
    switch (code) {
        case ClientErrc::invalid_argument: return "invalid_argument";
        case ClientErrc::unauthenticated: return "unauthenticated";
        case ClientErrc::invalid_token: return "invalid_token";
        case ClientErrc::forbidden: return "forbidden";
        case ClientErrc::draining: return "draining";
        case ClientErrc::overloaded: return "overloaded";
        case ClientErrc::rate_limited: return "rate_limited";
        case ClientErrc::search_too_costly: return "search_too_costly";
        case ClientErrc::too_many_range_values: return "too_many_range_values";
        case ClientErrc::unknown_ticket_type: return "unknown_ticket_type";
        case ClientErrc::invalid_params: return "invalid_params";
        case ClientErrc::ticket_not_found: return "ticket_not_found";
        case ClientErrc::malformed_request: return "malformed_request";
        case ClientErrc::frame_too_large: return "frame_too_large";
        case ClientErrc::too_many_connections: return "too_many_connections";
    }
    return "error";
}

ReplyError error_of(ClientErrc code, std::string message, std::uint32_t retry_after_ms) {
    return ReplyError{std::string(wire_name(code)), std::move(message), retry_after_ms};
}

std::expected<ClientRequest, RequestError> decode_request(std::span<const capnp::word> body,
                                                          const capnp::ReaderOptions& options) {
    std::uint64_t id = 0;
    try {
        capnp::FlatArrayMessageReader message(kj::arrayPtr(body.data(), body.size()), options);
        auto request = message.getRoot<wire::Request>();
        id = request.getId();
        return ClientRequest{id, command_of(request)};
    } catch (const std::invalid_argument& invalid) {
        return std::unexpected(RequestError{id, invalid.what()});
    } catch (const kj::Exception& error) {
        return std::unexpected(RequestError{
            id, fmt::format("undecodable request: {}", error.getDescription().cStr())});
    }
}

mesh::Frame encode_reply(const ClientReply& reply) {
    mesh::LocalMessageBuilder message;
    auto out = message.initRoot<wire::ServerMessage>().initReply();
    out.setId(reply.id);
    std::visit(
        [&out](const auto& body) {
            using T = std::decay_t<decltype(body)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                out.setOk();
            } else if constexpr (std::is_same_v<T, ReplyError>) {
                auto error = out.initError();
                error.setCategory(body.category);
                error.setMessage(body.message);
                error.setRetryAfterMs(body.retry_after_ms);
            } else if constexpr (std::is_same_v<T, matching::SearchOutcome>) {
                auto items = out.initItems();
                items.setKeysUnanswered(static_cast<std::uint32_t>(body.keys_unanswered));
                auto list = items.initItems(static_cast<unsigned>(body.items.size()));
                for (unsigned i = 0; i < body.items.size(); ++i) {
                    const matching::Found& found = body.items[i];
                    list[i].setProfileId(mesh::text_field(found.profile_id));
                    list[i].setUniqueId(mesh::text_field(found.unique_id));
                    matching::write_value(
                        list[i].initValue(static_cast<unsigned>(found.value.size())), found.value);
                    list[i].setTtlSeconds(static_cast<std::uint8_t>(found.ttl.count()));
                    list[i].setRemainingMs(static_cast<std::uint32_t>(
                        std::max<std::int64_t>(0, found.remaining.count())));
                    list[i].setOrigin(mesh::text_field(found.origin));
                }
            } else if constexpr (std::is_same_v<T, std::vector<mesh::MemberInfo>>) {
                auto list = out.initMembers(static_cast<unsigned>(body.size()));
                for (unsigned i = 0; i < body.size(); ++i) {
                    list[i].setId(body[i].id.str());
                    list[i].setAddress(body[i].address);
                    list[i].setNodeType(body[i].node_type);
                    list[i].setIncarnation(body[i].incarnation);
                }
            } else if constexpr (std::is_same_v<T, matching::ValueMap>) {
                matching::write_value(out.initProperties(static_cast<unsigned>(body.size())), body);
            } else if constexpr (std::is_same_v<T, std::vector<UserId>>) {
                auto list = out.initMemberIds(static_cast<unsigned>(body.size()));
                for (unsigned i = 0; i < body.size(); ++i) {
                    list.set(i, body[i].str());
                }
            } else {
                out.setDump(body);
            }
        },
        reply.body);
    return mesh::encode_message_frame(message);
}

mesh::Frame encode_push(const ticket::PushMessage& push) {
    mesh::LocalMessageBuilder message;
    auto out = message.initRoot<wire::ServerMessage>().initPush();
    out.setTicketType(push.ticket_type);
    out.setKind(static_cast<wire::Push::Kind>(push.kind));
    out.setVer(push.ver);
    out.setCmd(push.cmd);
    out.setPayload(kj::arrayPtr(push.payload.data(), push.payload.size()));
    out.setTicketId(push.ticket_id.str());
    out.setRoomId(push.room_id);
    out.setReason(static_cast<wire::EndReason>(push.reason));
    return mesh::encode_message_frame(message);
}

}  // namespace matchmesh::node
