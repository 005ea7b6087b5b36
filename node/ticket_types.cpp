#include "node/ticket_types.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "mesh/base/assert.hpp"
#include "node/match_result.hpp"

namespace matchmesh::node {
namespace {

static_assert(config::tag_bytes_max == matching::tag_bytes_max,
              "the config checks sameValue tags against the store's limit");

std::optional<std::int64_t> integer_of(const matching::ValueMap& data, const std::string& name) {
    auto found = data.find(name);
    if (found == data.end() || !std::holds_alternative<std::int64_t>(found->second)) {
        return std::nullopt;
    }
    return std::get<std::int64_t>(found->second);
}

}  // namespace

ConfiguredTicketTypes::ConfiguredTicketTypes(const std::map<int, config::TicketTypeConfig>& types,
                                             const matching::ProfileRegistry& profiles,
                                             mesh::Scheduler& scheduler,
                                             std::size_t range_values_max, std::uint64_t seed)
    : types_(types),
      profiles_(profiles),
      scheduler_(scheduler),
      range_values_max_(range_values_max),
      random_(seed) {}

const config::TicketTypeConfig* ConfiguredTicketTypes::find(ticket::TicketType type) const {
    auto found = types_.find(type);
    return found == types_.end() ? nullptr : &found->second;
}

std::expected<void, std::string> ConfiguredTicketTypes::check_start(
    ticket::TicketType type, const matching::Properties& values, std::size_t party_size) const {
    const config::TicketTypeConfig* config = find(type);
    if (config == nullptr) {
        return std::unexpected(fmt::format("ticket type {} is not configured", type));
    }
    const auto needs = [&](const std::string& value) {
        return std::unexpected(fmt::format("ticket type {} ({}) needs the player's value '{}'",
                                           type, config->name, value));
    };
    for (const auto& [property, rule] : config->properties) {
        if (!values.contains(rule.value)) {
            return needs(rule.value);
        }
    }
    if (config->allow_match && !values.contains(config->allow_match->value)) {
        return needs(config->allow_match->value);
    }
    if (config->teams && !values.contains(config->teams->rating)) {
        return needs(config->teams->rating);
    }
    for (const std::string& name : config->same_value) {
        if (!values.contains(name)) {
            return needs(name);
        }
    }
    for (const auto& [name, rule] : config->values) {
        auto found = values.find(name);
        if (found == values.end()) {
            if (rule.required) {
                return needs(name);
            }
            continue;
        }
        if (found->second < rule.min || found->second > rule.max) {
            const std::string range = rule.min == INT64_MIN ? fmt::format("at most {}", rule.max)
                                      : rule.max == INT64_MAX
                                          ? fmt::format("at least {}", rule.min)
                                          : fmt::format("from {} to {}", rule.min, rule.max);
            return std::unexpected(
                fmt::format("ticket type {} ({}) takes the value '{}' {}, not {}", type,
                            config->name, name, range, found->second));
        }
    }
    const auto largest =
        static_cast<std::size_t>(config->party_max == 0 ? config->max_members : config->party_max);
    if (party_size < static_cast<std::size_t>(config->party_min) || party_size > largest) {
        return std::unexpected(
            fmt::format("ticket type {} ({}) takes parties of {} to {} players, not {}", type,
                        config->name, config->party_min, largest, party_size));
    }
    return {};
}

void ConfiguredTicketTypes::set_application_data(const UserId& user, ticket::TicketType type,
                                                 ticket::Bytes data) {
    if (data.empty()) {
        application_data_.erase({user, type});
    } else {
        application_data_[{user, type}] = std::move(data);
    }
}

ConfiguredTicketTypes::~ConfiguredTicketTypes() {
    for (const auto& [key, issued] : issued_) {
        scheduler_.cancel(issued.complete_timer);
    }
}

void ConfiguredTicketTypes::forget(const UserId& user, ticket::TicketType type) {
    application_data_.erase({user, type});
    if (auto issued = issued_.find({user, type}); issued != issued_.end()) {
        scheduler_.cancel(issued->second.complete_timer);
        issued_.erase(issued);
    }
}

// If nobody else joins within the wait, the ticket completes with whoever is there. The wait
// belongs to this ticket: it is canceled when the ticket ends, and a later ticket of the same
// user has a wait of its own.
void ConfiguredTicketTypes::wait_to_complete(const UserId& owner, ticket::TicketType type,
                                             config::CompleteWhenRule rule,
                                             ticket::TicketService& tickets) {
    Issued& issued = issued_[{owner, type}];
    scheduler_.cancel(issued.complete_timer);  // a previous ticket's, if its end went unheard
    issued.at = scheduler_.now();
    const std::uint64_t serial = ++issued_count_;
    issued.serial = serial;
    issued.complete_timer = scheduler_.run_after(
        std::chrono::seconds(rule.after_seconds), [this, &tickets, owner, type, rule, serial] {
            auto current = issued_.find({owner, type});
            if (current == issued_.end() || current->second.serial != serial) {
                return;  // that ticket ended
            }
            current->second.complete_timer = 0;
            auto members = tickets.get_ticket_member_ids(type, owner);
            if (tickets.has_ticket(type, owner) && members &&
                members->size() >= static_cast<std::size_t>(rule.min_members)) {
                (void)tickets.mark_ticket_as_complete(type, owner);
            }
        });
}

void ConfiguredTicketTypes::forget(const UserId& user) {
    for (const auto& [number, type] : types_) {
        forget(user, static_cast<ticket::TicketType>(number));
    }
}

std::int64_t ConfiguredTicketTypes::spread(int amount) {
    return amount <= 0 ? 0 : std::uniform_int_distribution<std::int64_t>(-amount, amount)(random_);
}

ticket::TicketParams ConfiguredTicketTypes::params_for(const config::TicketTypeConfig& type,
                                                       const ticket::User& owner) {
    ticket::TicketParams params;
    params.profile_ids = type.profiles;
    params.tags = type.tags;
    if (!type.same_value.empty()) {
        // Values all members share are part of the tag: such tickets only ever meet each other.
        std::string shared;
        for (const std::string& name : type.same_value) {
            shared += fmt::format("/{}={}", name, integer_of(owner.data, name).value_or(0));
        }
        if (params.tags.empty()) {
            params.tags.emplace_back();
        }
        for (std::string& tag : params.tags) {
            tag += shared;
        }
    }
    for (const auto& [property, rule] : type.properties) {
        const std::int64_t value = integer_of(owner.data, rule.value).value_or(0);
        params.add_properties[property] = value;
        const std::int64_t width = bucket_width(type.profiles.front(), property);
        // value, value - w, value + w, value - 2w, ...: the nearest buckets first.
        auto& search = params.search_properties[property];
        const auto steps = static_cast<std::size_t>(std::max<std::int64_t>(rule.search_spread, 0) /
                                                    std::max<std::int64_t>(width, 1));
        search.reserve(std::min(range_values_max_, 1 + 2 * steps));
        search.push_back(value);
        for (std::int64_t offset = width;
             offset <= rule.search_spread && search.size() + 2 <= range_values_max_;
             offset += width) {
            search.push_back(value - offset);
            search.push_back(value + offset);
        }
    }
    params.max_members = static_cast<std::uint8_t>(type.max_members);
    params.ticket_duration = std::chrono::seconds(std::max<std::int64_t>(
        1, type.ticket_duration_seconds + spread(type.randomize_ticket_duration_seconds)));
    params.search_interval = std::chrono::milliseconds(std::max<std::int64_t>(
        10, type.search_interval_ms + spread(type.randomize_search_interval_ms)));
    params.search_tries = static_cast<std::uint8_t>(
        std::clamp<std::int64_t>(type.search_tries + spread(type.randomize_search_tries), 0, 255));
    params.empty_searches = static_cast<std::uint8_t>(type.empty_searches);
    params.wait_searches = static_cast<std::uint8_t>(type.wait_searches);
    params.wait_search_after = std::chrono::milliseconds(type.wait_search_after_ms);
    params.how_many = static_cast<std::uint8_t>(type.how_many);
    params.timeout_extension_on_match_join = std::chrono::seconds(type.timeout_extension_seconds);
    if (auto data = application_data_.find({owner.id, static_cast<ticket::TicketType>(type.type)});
        data != application_data_.end()) {
        params.application_data = data->second;
    }
    return params;
}

std::int64_t ConfiguredTicketTypes::bucket_width(const std::string& profile_id,
                                                 const std::string& property) const {
    const matching::Profile* profile = profiles_.find(profile_id);
    if (profile != nullptr) {
        for (const auto& defined : profile->properties) {
            if (defined.name == property) {
                return std::max<std::int64_t>(defined.width, 1);
            }
        }
    }
    return 1;
}

// A searcher asks for the buckets of its own rating and of `steps` first-profile widths each
// side (params_for), under each of the type's profiles: whoever finds a room is rated less than
// steps widths plus one bucket of the widest profile from the rating the room's owner added it
// under. A room that no player within that reach could complete is refused a party that would
// leave it so, rather than waiting out its ticket (ticket/teams.hpp).
ticket::TeamRules ConfiguredTicketTypes::team_rules_for(
    const config::TicketTypeConfig& type) const {
    MM_ASSERT(type.teams.has_value());
    ticket::TeamRules rules = team_rules(*type.teams);
    for (const auto& [property, rule] : type.properties) {
        if (rule.value != type.teams->rating) {
            continue;
        }
        const std::int64_t width = bucket_width(type.profiles.front(), property);
        const std::int64_t steps =
            std::min<std::int64_t>(std::max<std::int64_t>(rule.search_spread, 0) / width,
                                   static_cast<std::int64_t>((range_values_max_ - 1) / 2));
        std::int64_t widest = width;
        for (const std::string& profile : type.profiles) {
            widest = std::max(widest, bucket_width(profile, property));
        }
        const std::int64_t reach = steps * width + widest;
        rules.newcomer_reach = std::min(rules.newcomer_reach.value_or(reach), reach);
    }
    if (type.allow_match && type.allow_match->value == type.teams->rating) {
        const std::int64_t reach = type.allow_match->max_difference;
        rules.newcomer_reach = std::min(rules.newcomer_reach.value_or(reach), reach);
    }
    return rules;
}

ticket::Callbacks ConfiguredTicketTypes::callbacks_for(const config::TicketTypeConfig& type,
                                                       ticket::TicketService& tickets) {
    ticket::Callbacks callbacks;
    const auto ticket_type = static_cast<ticket::TicketType>(type.type);
    callbacks.on_issue_ticket = [this, type, ticket_type, &tickets](const ticket::User& owner) {
        if (type.complete_when) {
            wait_to_complete(owner.id, ticket_type, *type.complete_when, tickets);
        }
        auto params = params_for(type, owner);
        application_data_.erase({owner.id, ticket_type});  // it travels with this ticket only
        return std::optional(std::move(params));
    };
    if (type.allow_match) {
        const auto [value, max_difference] = *type.allow_match;
        callbacks.allow_match_if = [value, max_difference](const ticket::TicketProperties&,
                                                           const ticket::User* owner,
                                                           const ticket::User* candidate) {
            if (owner == nullptr || candidate == nullptr) {
                return false;
            }
            auto a = integer_of(owner->data, value);
            auto b = integer_of(candidate->data, value);
            return a && b && std::llabs(*a - *b) <= max_difference;
        };
    }
    if (type.teams) {
        callbacks.allow_party_if = ticket::team_admission(team_rules_for(type));
    }
    callbacks.on_match_complete = [type](const std::string& room_id,
                                         const std::vector<ticket::Member>& members,
                                         const ticket::User*) {
        return encode_match_result(match_result(room_id, type, members));
    };
    if (type.complete_when) {
        const auto [min_members, after] = *type.complete_when;
        callbacks.on_ticket_match = [this, ticket_type, min_members, after](
                                        const ticket::TicketView&, const ticket::User*,
                                        const ticket::User* owner, const std::string&,
                                        const std::vector<UserId>& members) {
            if (owner == nullptr || members.size() < static_cast<std::size_t>(min_members)) {
                return false;
            }
            auto issued = issued_.find({owner->id, ticket_type});
            return issued != issued_.end() &&
                   scheduler_.now() - issued->second.at >= std::chrono::seconds(after);
        };
    }
    return callbacks;
}

void ConfiguredTicketTypes::install(ticket::TicketService& tickets) {
    for (const auto& [number, type] : types_) {
        tickets.set_callbacks(static_cast<ticket::TicketType>(number),
                              callbacks_for(type, tickets));
    }
}

}  // namespace matchmesh::node
