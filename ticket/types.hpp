#pragma once
// The ticket module's vocabulary: users, ticket parameters, pushes, errors.

#include <chrono>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "matching/profile.hpp"
#include "matching/value.hpp"
#include "mesh/base/error.hpp"
#include "mesh/base/strong_id.hpp"

namespace capnp {
class MessageBuilder;
}

namespace matchmesh::ticket {

using TicketType = std::uint8_t;
using Bytes = std::vector<std::uint8_t>;

// `message` in Cap'n Proto's flat stream format, as the payloads games see carry it.
[[nodiscard]] Bytes flat_bytes(capnp::MessageBuilder& message);

// A connected user. `home` is the node its session is on; `data` is copied into the rooms it
// joins, so callbacks on other nodes see it.
struct User {
    UserId id;
    std::string session_id;
    NodeId home;
    matching::ValueMap data;
    std::uint64_t epoch = 0;  // when its session began (wall clock ms): the newest one wins
};

// Why a room's node did not seat a join's party.
enum class JoinRefusal : std::uint8_t {
    room_not_found,
    not_waiting,     // searching or closing
    completed,       // its ticket completed: the seats are taken (until a backfill reopens it)
    other_type,      // the room is of another ticket type
    already_member,  // someone in the party is in the room already
    full,
    not_allowed,  // the owner's AllowMatchIf said no
    closed,       // while AllowMatchIf ran
};
inline constexpr std::size_t join_refusals_count =
    static_cast<std::size_t>(JoinRefusal::closed) + 1;
// A short label for the metrics.
[[nodiscard]] std::string_view label_of(JoinRefusal refusal);

// A user as it was when it joined a ticket: one snapshot, shared by every record that needs it.
using SharedUser = std::shared_ptr<const User>;

// A wider search for a ticket that has waited: from `after` (since its start) on, its searches
// use these search properties.
struct SearchStep {
    std::chrono::milliseconds after{};
    matching::RangeProperties search_properties;
};

inline constexpr std::size_t search_steps_max = 8;

// Which of the rooms a search found a ticket tries first.
enum class Prefer : std::uint8_t {
    // The nearest buckets first, drawn from the next few rooms: under load searchers then spread
    // over the rooms instead of all trying the same one.
    spread,
    closest,  // strictly the nearest in the search's order (its values, nearest first)
    oldest,   // strictly the longest waiting, across every bucket searched
};

// What a ticket looks for and offers (the reference's TicketParams).
struct TicketParams {
    std::vector<std::string> profile_ids;         // to add to and search
    std::vector<std::string> add_profile_ids;     // replaces profile_ids for adds, when given
    std::vector<std::string> search_profile_ids;  // replaces profile_ids for searches, when given
    std::vector<std::string> tags;                // tried in order; none means the empty tag
    matching::Properties add_properties;          // at most two properties
    matching::RangeProperties search_properties;  // at most two properties, two of them ranges
    Bytes application_data;
    std::uint8_t max_members = 2;
    std::chrono::seconds ticket_duration{10};
    std::chrono::milliseconds search_interval{300};
    std::chrono::seconds timeout_extension_on_match_join{0};
    // Searches a search_interval apart: the first before the ticket waits (findable), the others
    // while it waits alone in its room; 0: it only waits. A search that found no room at all is
    // followed at once by one more that counts as none (see ticket/README.md).
    std::uint8_t search_tries = 4;
    std::uint8_t empty_searches = 0;  // searches finding nothing before it stops (0: no limit)
    // Searches a waiting ticket makes for other waiting rooms while it is alone in its room once
    // its tries are spent, wait_search_after apart (0: none).
    std::uint8_t wait_searches = 1;
    std::chrono::milliseconds wait_search_after{1000};
    std::uint8_t how_many = 20;            // search results considered per search
    std::vector<SearchStep> search_steps;  // in order of `after`; none: it never widens
    Prefer prefer = Prefer::spread;
};

// Bounds for ticket parameters, from config.
struct ParamLimits {
    std::chrono::seconds ticket_duration_min{10};
    std::chrono::milliseconds search_interval_min{10};
};

inline constexpr std::size_t ticket_properties_max = 2;
inline constexpr std::size_t ticket_tags_max = 8;

// A ticket's add and search properties and application data (the reference's TicketHolder).
struct Holder {
    matching::Properties add_properties;
    matching::RangeProperties search_properties;
    Bytes application_data;
};

// The owner's holder and the candidates', for AllowMatchIf and OnTicketComplete.
struct TicketProperties {
    Holder owner;
    std::map<UserId, Holder> candidates;
};

// An announcement a callback asks to push to every member.
struct Announcement {
    std::uint8_t ver = 0;
    std::uint16_t cmd = 0;
    Bytes message;
};

// Push command IDs of ticket results, all with ver 1.
inline constexpr std::uint8_t push_ver = 1;
inline constexpr std::uint16_t push_timeout = 219;
inline constexpr std::uint16_t push_success = 220;
inline constexpr std::uint16_t push_member_joined = 221;  // the stock node's announcements
inline constexpr std::uint16_t push_member_left = 223;
inline constexpr std::uint16_t push_cancel = 222;
inline constexpr std::uint16_t push_broadcast = 224;
inline constexpr std::uint16_t push_failure = 225;

enum class PushKind { success, timeout, cancel, broadcast, announce, failure };

// Why a user's ticket ended: the reason its terminal push (220, 219, 222) carries, on the mesh
// and to the client, so that a program tells a drain from a cancel or a kick. The values are
// the wire's (ticket.capnp and client.capnp EndReason): append only.
enum class EndReason : std::uint8_t {
    unspecified,   // not a terminal push, or from a node that does not say
    completed,     // 220: the room's ticket completed
    timed_out,     // 219: the room's ticket reached its deadline
    canceled,      // the ticket's owner canceled it
    left,          // the member (or the owner, ending the search) left the room
    kicked,        // the room's owner kicked the member's party out
    disconnected,  // a session of the party ended (the member's own, or its owner's)
    node_gone,     // the node holding the room, or the member's, left the cluster
    draining,      // the node holding the ticket shuts down: start again on another node
};
inline constexpr EndReason end_reason_last = EndReason::draining;
inline constexpr std::size_t end_reasons_count = static_cast<std::size_t>(end_reason_last) + 1;

[[nodiscard]] std::string_view to_string(EndReason reason);
// A reason as read from the wire: one this build does not know (a newer sender's) is unspecified.
[[nodiscard]] EndReason end_reason_from_wire(unsigned value);
// The reason of a terminal push of `kind`: a 220 completed, a 219 timed out, a 222 `canceled`'s.
[[nodiscard]] EndReason end_reason_of(PushKind kind, EndReason canceled);

// The payload of a 222 that the user's own node decided (a room's cancel has none).
inline constexpr const char* cancel_reason_room_gone = "the room's node left the cluster";
inline constexpr const char* cancel_reason_disconnected = "disconnected";
inline constexpr const char* cancel_reason_draining = "the node is draining";

// What a user receives.
struct PushMessage {
    TicketType ticket_type = 0;
    PushKind kind = PushKind::success;
    std::uint8_t ver = push_ver;
    std::uint16_t cmd = 0;
    Bytes payload;
    TicketId ticket_id;  // the user's ticket this push belongs to
    std::string room_id;
    EndReason reason = EndReason::unspecified;  // why, for a terminal push
};

[[nodiscard]] bool is_terminal(PushKind kind);

// Where pushes go: the node hands them to the user's session.
class PushSink {
public:
    virtual ~PushSink() = default;
    virtual void push(const UserId& user, const PushMessage& message) = 0;
};

enum class Errc {
    not_set_up,          // no OnIssueTicket callback for the ticket type
    already_has_ticket,  // a ticket of this type is in progress for the user
    in_previous_room,    // the user is still in a room of this ticket type
    failed_to_create,    // OnIssueTicket gave no parameters
    invalid_params,      // the parameters break a rule (the message says which)
    user_not_found,      // the user is not connected to this node
    ticket_not_found,
    not_owner,
    not_active,  // the ticket has completed or is ending
    room_not_found,
    target_not_found,
    party_unavailable,  // a party member is not connected, or busy with this ticket type
    completed_room_required,
    ticket_exists,  // a ticket (or backfill) is already running for the room
    backfill_not_found,
    join_refused,
    unavailable,  // no node can take the request now
    draining,     // this node is shutting down: start again on another node
};

[[nodiscard]] std::string_view to_string(Errc code);
// The stable name clients receive as an error's category ("already_has_ticket").
[[nodiscard]] std::string_view wire_name(Errc code);

using TicketError = Error<Errc>;

template <typename T>
using Result = std::expected<T, TicketError>;

// Checks parameters against the rules, the limits and the defined profiles (every add and search
// key must be computable); the message names the field.
[[nodiscard]] Result<void> validate_params(const TicketParams& params, const ParamLimits& limits,
                                           std::size_t party_size,
                                           const matching::ProfileRegistry& profiles);

// The profiles a ticket adds to and searches, and the tags it uses.
[[nodiscard]] const std::vector<std::string>& add_profiles(const TicketParams& params);
[[nodiscard]] const std::vector<std::string>& search_profiles(const TicketParams& params);
// No tags is the one empty tag.
[[nodiscard]] std::span<const std::string> tags_of(const TicketParams& params);

// `text`, `separator` and `number` in decimal ("<room>:7"): the IDs made per ticket, item, push
// and join attempt.
[[nodiscard]] std::string numbered(std::string_view text, char separator, std::uint64_t number);

// Ticket (and room) IDs: "<counter>.<incarnation>@<node ID>", unique across restarts, and naming
// the node that holds the ticket.
[[nodiscard]] TicketId make_ticket_id(std::uint64_t counter, std::uint64_t incarnation,
                                      const NodeId& node);
[[nodiscard]] std::optional<NodeId> node_of(std::string_view ticket_or_room_id);
// The same node's ID as text, empty when the ID names none.
[[nodiscard]] std::string_view node_text_of(std::string_view ticket_or_room_id);

// The payload of a ticket-failure push: a message and a code, and back.
[[nodiscard]] Bytes generate_failure_payload(std::string_view message, std::uint16_t code);
struct Failure {
    std::string message;
    std::uint16_t code = 0;
};
[[nodiscard]] std::expected<Failure, std::string> parse_failure_payload(const Bytes& payload);

}  // namespace matchmesh::ticket
