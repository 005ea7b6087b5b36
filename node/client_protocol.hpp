#pragma once
// The client protocol (client.capnp) as plain C++ values: strict decoding of what clients send,
// and encoding of requests and replies (the node uses one direction, tools the other).

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "matching/profile.hpp"
#include "matching/service.hpp"
#include "matching/value.hpp"
#include "mesh/frame.hpp"
#include "mesh/network.hpp"
#include "ticket/types.hpp"

namespace matchmesh::node {

// What one request may carry; a request past any of these is refused as malformed, naming it.
inline constexpr std::size_t request_list_max = 64;    // profile IDs, tags, unique IDs per request
inline constexpr std::size_t user_id_bytes_max = 128;  // a user ID, a party member
inline constexpr std::size_t token_bytes_max = 512;    // a hello's token
inline constexpr std::size_t application_data_bytes_max = 4096;  // a startTicket's data
inline constexpr std::size_t broadcast_bytes_max = 16 * 1024;    // a broadcast's message

struct AddCommand {
    std::string profile_id;
    std::string unique_id;
    std::string tag;
    matching::Properties properties;
    matching::ValueMap value;
    std::chrono::seconds ttl{0};
};

struct SearchCommand {
    std::vector<std::string> profile_ids;
    std::string tag;
    matching::Properties properties;
    std::size_t limit = 0;
};

struct RangeSearchCommand {
    std::vector<std::string> profile_ids;
    std::vector<std::string> tags;
    matching::RangeProperties properties;
    std::size_t limit = 0;
};

struct RemoveCommand {
    std::string profile_id;
    std::vector<std::string> unique_ids;
};

struct MembersCommand {};
struct DumpCommand {};

struct HelloCommand {
    UserId user;
    std::string token;
    matching::ValueMap data;
};

struct StartTicketCommand {
    ticket::TicketType ticket_type = 0;
    matching::Properties values;
    std::vector<UserId> party;
    ticket::Bytes application_data;
};

// The ticket commands that name only a ticket type.
enum class TicketAction {
    cancel,
    leave,
    mark_complete,
    mark_complete_when_expire,
    start_backfill,
    stop_backfill,
    members
};

struct TicketCommand {
    TicketAction action = TicketAction::cancel;
    ticket::TicketType ticket_type = 0;
};

struct AcceptPartyCommand {
    ticket::TicketType ticket_type = 0;
    UserId owner;  // empty: in no party
};

struct KickCommand {
    ticket::TicketType ticket_type = 0;
    UserId target;
};

struct BroadcastCommand {
    ticket::TicketType ticket_type = 0;
    std::uint8_t ver = 0;
    std::uint16_t cmd = 0;
    ticket::Bytes message;
};

struct SetPropertiesCommand {
    ticket::TicketType ticket_type = 0;
    matching::ValueMap values;
};

struct GetPropertiesCommand {
    ticket::TicketType ticket_type = 0;
    std::vector<std::string> keys;
};

using Command =
    std::variant<AddCommand, SearchCommand, RangeSearchCommand, RemoveCommand, MembersCommand,
                 DumpCommand, HelloCommand, StartTicketCommand, TicketCommand, KickCommand,
                 BroadcastCommand, SetPropertiesCommand, GetPropertiesCommand, AcceptPartyCommand>;

struct ClientRequest {
    std::uint64_t id = 0;
    Command command;
};

// Why the node itself refused a request (the modules' refusals carry matching::Errc and
// ticket::Errc). Clients branch on the stable wire name of each.
enum class ClientErrc : std::uint8_t {
    invalid_argument,       // hello without a user, or a second hello on one connection
    unauthenticated,        // a ticket command before a player's hello
    invalid_token,          // the hello's token is expired, forged or malformed
    forbidden,              // store commands, members and dump need an admin session
    draining,               // the node is shutting down
    overloaded,             // past capacity: try again after retry_after_ms
    rate_limited,           // more commands per second than the session may send
    search_too_costly,      // buckets x results over limits.searchCostMax
    too_many_range_values,  // a range property with more values than limits.rangeValuesMax
    unknown_ticket_type,    // not configured on this node
    invalid_params,         // a startTicket value breaks the ticket type's rules
    ticket_not_found,       // no such ticket (or room) of this type for this user
    malformed_request,      // a frame that is not a valid request
    frame_too_large,        // a frame over the client port's limit (the connection closes)
    too_many_connections,   // the client port is full (the connection closes)
};

[[nodiscard]] std::string_view wire_name(ClientErrc code);

struct ReplyError {
    std::string category;  // a wire name: ClientErrc, matching::Errc or ticket::Errc
    std::string message;
    std::uint32_t retry_after_ms = 0;  // set with `overloaded`
};

[[nodiscard]] ReplyError error_of(ClientErrc code, std::string message,
                                  std::uint32_t retry_after_ms = 0);

struct ClientReply {
    std::uint64_t id = 0;
    std::variant<std::monostate, ReplyError, matching::SearchOutcome, std::vector<mesh::MemberInfo>,
                 std::string, matching::ValueMap,
                 std::vector<UserId>>
        body;  // ok, error, search results, members, dump, properties, member IDs
};

// What a client receives: a reply, or a push.
using ServerMessage = std::variant<ClientReply, ticket::PushMessage>;

// A request that could not be read: the id when it was readable, and why.
struct RequestError {
    std::uint64_t id = 0;
    std::string message;
};

[[nodiscard]] std::expected<ClientRequest, RequestError> decode_request(
    std::span<const capnp::word> body, const capnp::ReaderOptions& options);
[[nodiscard]] mesh::Frame encode_request(const ClientRequest& request);

[[nodiscard]] mesh::Frame encode_reply(const ClientReply& reply);
[[nodiscard]] mesh::Frame encode_push(const ticket::PushMessage& push);
[[nodiscard]] std::expected<ServerMessage, std::string> decode_server_message(
    std::span<const capnp::word> body, const capnp::ReaderOptions& options);
// A server message that must be a reply.
[[nodiscard]] std::expected<ClientReply, std::string> decode_reply(
    std::span<const capnp::word> body, const capnp::ReaderOptions& options);

// A module's refusal as a reply carries it.
template <typename Code>
[[nodiscard]] ReplyError error_of(const Error<Code>& error) {
    return ReplyError{std::string(wire_name(error.code)), error.message};
}

}  // namespace matchmesh::node
