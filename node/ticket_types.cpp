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

// The ticket's start, for completeWhen and relax; and with completeWhen its check: if nobody
// else joins within the wait, the ticket completes with whoever is there. Both belong to this
// ticket: they are dropped when it ends, and a later ticket of the same user has its own.
void ConfiguredTicketTypes::remember_issue(const UserId& owner,
                                           const config::TicketTypeConfig& type,
                                           ticket::TicketService& tickets) {
    const auto ticket_type = static_cast<ticket::TicketType>(type.type);
    Issued& issued = issued_[{owner, ticket_type}];
    scheduler_.cancel(issued.complete_timer);  // a previous ticket's, if its end went unheard
    issued.complete_timer = 0;
    issued.at = scheduler_.now();
    issued.serial = ++issued_count_;
    if (type.complete_when) {
        check_completion_after(owner, type, std::chrono::seconds(type.complete_when->after_seconds),
                               tickets);
    }
}

// At `waited` the ticket completes if it has the members the limits then in force ask for; if
// not, a later relax step that lowers minMembers looks again.
void ConfiguredTicketTypes::check_completion_after(const UserId& owner,
                                                   const config::TicketTypeConfig& type,
                                                   Duration waited,
                                                   ticket::TicketService& tickets) {
    const auto ticket_type = static_cast<ticket::TicketType>(type.type);
    Issued& issued = issued_.at({owner, ticket_type});
    const std::uint64_t serial = issued.serial;
    const auto* rules = &type;
    issued.complete_timer = scheduler_.run_after(
        issued.at + waited - scheduler_.now(), [this, &tickets, owner, rules, ticket_type, serial] {
            auto current = issued_.find({owner, ticket_type});
            if (current == issued_.end() || current->second.serial != serial) {
                return;  // that ticket ended
            }
            current->second.complete_timer = 0;
            auto members = tickets.get_ticket_member_ids(ticket_type, owner);
            if (tickets.has_ticket(ticket_type, owner) && members &&
                completes(*rules, owner, members->size())) {
                (void)tickets.mark_ticket_as_complete(ticket_type, owner);
                return;
            }
            const Duration now_waited = scheduler_.now() - current->second.at;
            for (const config::RelaxStep& step : rules->relax) {
                if (step.min_members && std::chrono::seconds(step.after_seconds) > now_waited) {
                    check_completion_after(owner, *rules, std::chrono::seconds(step.after_seconds),
                                           tickets);
                    return;
                }
            }
        });
}

bool ConfiguredTicketTypes::completes(const config::TicketTypeConfig& type, const UserId& owner,
                                      std::size_t members) const {
    auto issued = issued_.find({owner, static_cast<ticket::TicketType>(type.type)});
    if (issued == issued_.end() || !type.complete_when) {
        return false;
    }
    const Duration waited = scheduler_.now() - issued->second.at;
    const auto minimum = limits_in_force(type, waited).min_members;
    return waited >= std::chrono::seconds(type.complete_when->after_seconds) && minimum &&
           members >= static_cast<std::size_t>(*minimum);
}

RelaxedLimits ConfiguredTicketTypes::in_force(const config::TicketTypeConfig& type,
                                              const UserId& owner) const {
    auto issued = issued_.find({owner, static_cast<ticket::TicketType>(type.type)});
    return limits_in_force(type, issued == issued_.end() ? Duration(0)
                                                         : scheduler_.now() - issued->second.at);
}

void ConfiguredTicketTypes::forget(const UserId& user) {
    for (const auto& [number, type] : types_) {
        forget(user, static_cast<ticket::TicketType>(number));
    }
}

std::int64_t ConfiguredTicketTypes::spread(int amount) {
    return amount <= 0 ? 0 : std::uniform_int_distribution<std::int64_t>(-amount, amount)(random_);
}

// value, value - w, value + w, value - 2w, ...: the nearest buckets first, up to `spread` away.
std::vector<std::int64_t> ConfiguredTicketTypes::search_values(std::int64_t value,
                                                                std::int64_t spread,
                                                                std::int64_t width) const {
    width = std::max<std::int64_t>(width, 1);
    std::vector<std::int64_t> values;
    const auto steps = static_cast<std::size_t>(std::max<std::int64_t>(spread, 0) / width);
    values.reserve(std::min(range_values_max_, 1 + 2 * steps));
    values.push_back(value);
    for (std::int64_t offset = width; offset <= spread && values.size() + 2 <= range_values_max_;
         offset += width) {
        values.push_back(value - offset);
        values.push_back(value + offset);
    }
    return values;
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
        params.search_properties[property] = search_values(value, rule.search_spread, width);
        std::optional<std::int64_t> spread;
        for (const config::RelaxStep& step : type.relax) {
            spread = step.search_spread ? step.search_spread : spread;
            if (!step.search_spread) {
                continue;  // this step widens no search
            }
            auto found = std::find_if(
                params.search_steps.begin(), params.search_steps.end(),
                [&](const ticket::SearchStep& s) { return s.after.count() == step.after_seconds * 1000; });
            if (found == params.search_steps.end()) {
                params.search_steps.push_back(
                    ticket::SearchStep{std::chrono::seconds(step.after_seconds), {}});
                found = std::prev(params.search_steps.end());
            }
            found->search_properties[property] = search_values(value, *spread, width);
        }
    }
    params.prefer = type.prefer == "oldest"    ? ticket::Prefer::oldest
                    : type.prefer == "closest" ? ticket::Prefer::closest
                                               : ticket::Prefer::spread;
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
        std::int64_t spread = rule.search_spread;  // the widest any relax step reaches
        for (const config::RelaxStep& step : type.relax) {
            spread = std::max(spread, step.search_spread.value_or(0));
        }
        const std::int64_t steps =
            std::min<std::int64_t>(std::max<std::int64_t>(spread, 0) / width,
                                   static_cast<std::int64_t>((range_values_max_ - 1) / 2));
        std::int64_t widest = width;
        for (const std::string& profile : type.profiles) {
            widest = std::max(widest, bucket_width(profile, property));
        }
        const std::int64_t reach = steps * width + widest;
        rules.newcomer_reach = std::min(rules.newcomer_reach.value_or(reach), reach);
    }
    if (type.allow_match && type.allow_match->value == type.teams->rating) {
        std::int64_t reach = type.allow_match->max_difference;
        for (const config::RelaxStep& step : type.relax) {
            reach = std::max(reach, step.max_difference.value_or(0));
        }
        rules.newcomer_reach = std::min(rules.newcomer_reach.value_or(reach), reach);
    }
    return rules;
}

ticket::Callbacks ConfiguredTicketTypes::callbacks_for(const config::TicketTypeConfig& type,
                                                       ticket::TicketService& tickets) {
    ticket::Callbacks callbacks;
    const auto ticket_type = static_cast<ticket::TicketType>(type.type);
    const auto* rules = &type;  // lives in types_ as long as this object
    callbacks.on_issue_ticket = [this, rules, ticket_type, &tickets](const ticket::User& owner) {
        if (rules->complete_when || !rules->relax.empty()) {
            remember_issue(owner.id, *rules, tickets);
        }
        auto params = params_for(*rules, owner);
        application_data_.erase({owner.id, ticket_type});  // it travels with this ticket only
        return std::optional(std::move(params));
    };
    if (type.allow_match) {
        callbacks.allow_match_if = [this, rules](const ticket::TicketProperties&,
                                                 const ticket::User* owner,
                                                 const ticket::User* candidate) {
            if (owner == nullptr || candidate == nullptr) {
                return false;
            }
            const std::string& value = rules->allow_match->value;
            auto a = integer_of(owner->data, value);
            auto b = integer_of(candidate->data, value);
            const auto limit = in_force(*rules, owner->id).max_difference;
            return a && b && limit && std::llabs(*a - *b) <= *limit;
        };
    }
    if (type.teams) {
        callbacks.allow_party_if = [this, rules, base = team_rules_for(type)](
                                       const std::vector<ticket::Member>& members,
                                       const std::vector<ticket::SharedUser>& party) {
            ticket::TeamRules now = base;
            if (!members.empty()) {
                now.max_team_difference =
                    in_force(*rules, members.front().user->id).max_team_difference;
            }
            return ticket::can_still_form(ticket::parties_of(members, party, now), now);
        };
    }
    callbacks.on_match_complete = [this, rules](const std::string& room_id,
                                                const std::vector<ticket::Member>& members,
                                                const ticket::User*) {
        const RelaxedLimits limits =
            members.empty() ? RelaxedLimits{} : in_force(*rules, members.front().user->id);
        const MatchResult result =
            match_result(room_id, *rules, members, limits, scheduler_.now());
        if (match_observer_) {
            match_observer_(result);
        }
        return encode_match_result(result);
    };
    if (type.announce_members) {
        // Pushed to every member: 221 when a player joins, 223 when one leaves; the message is
        // that player's user ID.
        const auto announce = [](std::uint16_t cmd, const ticket::User* user) {
            std::optional<ticket::Announcement> announcement;
            if (user != nullptr) {
                const std::string& id = user->id.str();
                announcement = ticket::Announcement{ticket::push_ver, cmd,
                                                    ticket::Bytes(id.begin(), id.end())};
            }
            return announcement;
        };
        callbacks.member_joined_announce = [announce](const ticket::TicketView&,
                                                      const ticket::User* joined,
                                                      const ticket::User*,
                                                      const std::vector<UserId>&) {
            return announce(ticket::push_member_joined, joined);
        };
        callbacks.member_leave_announce = [announce](const ticket::TicketView&,
                                                     const ticket::User* left, const ticket::User*,
                                                     const std::vector<UserId>&) {
            return announce(ticket::push_member_left, left);
        };
    }
    if (type.complete_when) {
        callbacks.on_ticket_match = [this, rules](const ticket::TicketView&, const ticket::User*,
                                                  const ticket::User* owner, const std::string&,
                                                  const std::vector<UserId>& members) {
            return owner != nullptr && completes(*rules, owner->id, members.size());
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
