#include "ticket/types.hpp"

#include <array>
#include <charconv>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>

#include "mesh/network.hpp"
#include "ticket/ticket.capnp.h"

namespace matchmesh::ticket {
namespace {

constexpr std::size_t application_data_bytes_max = 4096;
constexpr std::chrono::seconds ticket_duration_max{3600};
constexpr std::chrono::milliseconds search_interval_max{60000};
constexpr std::size_t how_many_max = 100;

Result<void> invalid(std::string message) {
    return fail(Errc::invalid_params, std::move(message));
}

}  // namespace

bool is_terminal(PushKind kind) {
    return kind == PushKind::success || kind == PushKind::timeout || kind == PushKind::cancel;
}

std::string_view label_of(JoinRefusal refusal) {
    switch (refusal) {
        case JoinRefusal::room_not_found: return "room_not_found";
        case JoinRefusal::not_waiting: return "not_waiting";
        case JoinRefusal::completed: return "completed";
        case JoinRefusal::other_type: return "other_type";
        case JoinRefusal::already_member: return "already_member";
        case JoinRefusal::full: return "full";
        case JoinRefusal::not_allowed: return "not_allowed";
        case JoinRefusal::closed: return "closed";
    }
    return "other";
}

std::string_view to_string(EndReason reason) {
    switch (reason) {
        case EndReason::unspecified: return "unspecified";
        case EndReason::completed: return "completed";
        case EndReason::timed_out: return "timed_out";
        case EndReason::canceled: return "canceled";
        case EndReason::left: return "left";
        case EndReason::kicked: return "kicked";
        case EndReason::disconnected: return "disconnected";
        case EndReason::node_gone: return "node_gone";
        case EndReason::draining: return "draining";
    }
    return "unknown";
}

EndReason end_reason_from_wire(unsigned value) {
    return value > static_cast<unsigned>(end_reason_last) ? EndReason::unspecified
                                                          : static_cast<EndReason>(value);
}

EndReason end_reason_of(PushKind kind, EndReason canceled) {
    switch (kind) {
        case PushKind::success: return EndReason::completed;
        case PushKind::timeout: return EndReason::timed_out;
        case PushKind::cancel: return canceled;
        default: return EndReason::unspecified;
    }
}

std::string_view to_string(Errc code) {
    switch (code) {
        case Errc::not_set_up: return "not set up";
        case Errc::already_has_ticket: return "already has a ticket";
        case Errc::in_previous_room: return "in a previous room";
        case Errc::failed_to_create: return "failed to create a ticket";
        case Errc::invalid_params: return "invalid ticket parameters";
        case Errc::user_not_found: return "user not found";
        case Errc::ticket_not_found: return "ticket not found";
        case Errc::not_owner: return "not the owner";
        case Errc::not_active: return "ticket not active";
        case Errc::room_not_found: return "room not found";
        case Errc::target_not_found: return "target not found";
        case Errc::party_unavailable: return "party member unavailable";
        case Errc::completed_room_required: return "completed room required";
        case Errc::ticket_exists: return "ticket exists";
        case Errc::backfill_not_found: return "backfill ticket not found";
        case Errc::join_refused: return "join refused";
        case Errc::unavailable: return "unavailable";
        case Errc::draining: return "draining";
    }
    return "ticket error";
}

std::string_view wire_name(Errc code) {
    switch (code) {
        case Errc::not_set_up: return "not_set_up";
        case Errc::already_has_ticket: return "already_has_ticket";
        case Errc::in_previous_room: return "in_previous_room";
        case Errc::failed_to_create: return "failed_to_create";
        case Errc::invalid_params: return "invalid_params";
        case Errc::user_not_found: return "user_not_found";
        case Errc::ticket_not_found: return "ticket_not_found";
        case Errc::not_owner: return "not_owner";
        case Errc::not_active: return "not_active";
        case Errc::room_not_found: return "room_not_found";
        case Errc::target_not_found: return "target_not_found";
        case Errc::party_unavailable: return "party_unavailable";
        case Errc::completed_room_required: return "completed_room_required";
        case Errc::ticket_exists: return "ticket_exists";
        case Errc::backfill_not_found: return "backfill_not_found";
        case Errc::join_refused: return "join_refused";
        case Errc::unavailable: return "unavailable";
        case Errc::draining: return "draining";
    }
    return "error";
}

const std::vector<std::string>& add_profiles(const TicketParams& params) {
    return params.add_profile_ids.empty() ? params.profile_ids : params.add_profile_ids;
}

const std::vector<std::string>& search_profiles(const TicketParams& params) {
    return params.search_profile_ids.empty() ? params.profile_ids : params.search_profile_ids;
}

std::span<const std::string> tags_of(const TicketParams& params) {
    static const std::string no_tag;
    return params.tags.empty() ? std::span(&no_tag, 1) : std::span(params.tags);
}

namespace {

// Each step's searches must be computable with the ticket's profiles, like its first ones.
Result<void> validate_search_steps(const TicketParams& params,
                                   const matching::ProfileRegistry& profiles) {
    if (params.search_steps.size() > search_steps_max) {
        return invalid(fmt::format("SearchSteps has {} steps, at most {} allowed",
                                   params.search_steps.size(), search_steps_max));
    }
    std::chrono::milliseconds previous{0};
    for (std::size_t i = 0; i < params.search_steps.size(); ++i) {
        const SearchStep& step = params.search_steps[i];
        if (step.after <= previous || step.after > ticket_duration_max) {
            return invalid(fmt::format(
                "SearchSteps[{}] starts after {} ms: steps must start later one by one, "
                "after 0 and within {} s",
                i, step.after.count(), ticket_duration_max.count()));
        }
        previous = step.after;
        if (auto ok = profiles.count_range_search_keys(search_profiles(params), tags_of(params),
                                                       step.search_properties);
            !ok) {
            return invalid(fmt::format("SearchSteps[{}]: {}", i, ok.error().message));
        }
    }
    return {};
}

}  // namespace

Result<void> validate_params(const TicketParams& params, const ParamLimits& limits,
                             std::size_t party_size, const matching::ProfileRegistry& profiles) {
    if (add_profiles(params).empty() || search_profiles(params).empty()) {
        return invalid("ProfileIDs (or AddProfileIDs and SearchProfileIDs) must name a profile");
    }
    if (params.add_properties.size() > ticket_properties_max) {
        return invalid(fmt::format("AddProperties has {} properties, at most {} allowed",
                                   params.add_properties.size(), ticket_properties_max));
    }
    if (params.search_properties.size() > ticket_properties_max) {
        return invalid(fmt::format("SearchProperties has {} properties, at most {} allowed",
                                   params.search_properties.size(), ticket_properties_max));
    }
    if (params.max_members < 2) {
        return invalid(fmt::format("MaxMembers must be at least 2, got {}", params.max_members));
    }
    if (party_size >= params.max_members) {
        return invalid(fmt::format("a party of {} leaves no seat with MaxMembers {}", party_size,
                                   params.max_members));
    }
    if (params.ticket_duration < limits.ticket_duration_min ||
        params.ticket_duration > ticket_duration_max) {
        return invalid(fmt::format("TicketDuration must be {}..{} s, got {} s",
                                   limits.ticket_duration_min.count(), ticket_duration_max.count(),
                                   params.ticket_duration.count()));
    }
    if (params.search_interval < limits.search_interval_min ||
        params.search_interval > search_interval_max) {
        return invalid(fmt::format("SearchInterval must be {}..{} ms, got {} ms",
                                   limits.search_interval_min.count(), search_interval_max.count(),
                                   params.search_interval.count()));
    }
    if (params.timeout_extension_on_match_join < std::chrono::seconds(0) ||
        params.timeout_extension_on_match_join > ticket_duration_max) {
        return invalid("TimeoutExtensionOnMatchJoin must be 0..3600 s");
    }
    if (params.how_many < 1 || params.how_many > how_many_max) {
        return invalid(fmt::format("HowMany must be 1..{}, got {}", how_many_max, params.how_many));
    }
    if (params.tags.size() > ticket_tags_max) {
        return invalid(
            fmt::format("Tags has {} tags, at most {} allowed", params.tags.size(), ticket_tags_max));
    }
    if (params.application_data.size() > application_data_bytes_max) {
        return invalid(fmt::format("ApplicationData is {} bytes, at most {} allowed",
                                   params.application_data.size(), application_data_bytes_max));
    }
    // Every key the ticket will add and search must be computable with these profiles.
    for (const std::string& tag : tags_of(params)) {
        for (const std::string& profile : add_profiles(params)) {
            if (auto ok = profiles.check_item(profile, tag, params.add_properties); !ok) {
                return invalid(
                    fmt::format("AddProperties on profile '{}': {}", profile, ok.error().message));
            }
        }
    }
    if (auto ok = profiles.count_range_search_keys(search_profiles(params), tags_of(params),
                                                   params.search_properties);
        !ok) {
        return invalid(fmt::format("SearchProperties: {}", ok.error().message));
    }
    return validate_search_steps(params, profiles);
}

std::string numbered(std::string_view text, char separator, std::uint64_t number) {
    std::array<char, 21> suffix{separator};
    const auto written = std::to_chars(suffix.data() + 1, suffix.data() + suffix.size(), number);
    std::string out;
    out.reserve(text.size() + static_cast<std::size_t>(written.ptr - suffix.data()));  // exact
    out.append(text);
    out.append(suffix.data(), written.ptr);
    return out;
}

TicketId make_ticket_id(std::uint64_t counter, std::uint64_t incarnation, const NodeId& node) {
    std::string id = numbered(std::to_string(counter), '.', incarnation);  // short: kept inline
    id.reserve(id.size() + 1 + node.str().size());
    id.push_back('@');
    id.append(node.str());
    return TicketId(std::move(id));
}

std::string_view node_text_of(std::string_view ticket_or_room_id) {
    const auto at = ticket_or_room_id.find('@');
    return at == std::string_view::npos ? std::string_view() : ticket_or_room_id.substr(at + 1);
}

std::optional<NodeId> node_of(std::string_view ticket_or_room_id) {
    const std::string_view node = node_text_of(ticket_or_room_id);
    if (node.empty()) {
        return std::nullopt;
    }
    return NodeId(node);
}

Bytes flat_bytes(capnp::MessageBuilder& message) {
    Bytes bytes(capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word));
    mesh::write_flat(message, std::as_writable_bytes(std::span(bytes)));
    return bytes;
}

Bytes generate_failure_payload(std::string_view message, std::uint16_t code) {
    capnp::MallocMessageBuilder builder;
    auto failure = builder.initRoot<wire::Failure>();
    failure.setMessage(std::string(message));
    failure.setCode(code);
    return flat_bytes(builder);
}

std::expected<Failure, std::string> parse_failure_payload(const Bytes& payload) {
    if (payload.empty() || payload.size() % sizeof(capnp::word) != 0) {
        return std::unexpected("not a ticket-failure payload");
    }
    std::vector<capnp::word> words(payload.size() / sizeof(capnp::word));
    std::memcpy(static_cast<void*>(words.data()), payload.data(), payload.size());
    try {
        capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()));
        auto failure = reader.getRoot<wire::Failure>();
        return Failure{std::string(failure.getMessage().cStr()), failure.getCode()};
    } catch (const kj::Exception& error) {
        return std::unexpected(std::string(error.getDescription().cStr()));
    }
}

}  // namespace matchmesh::ticket
