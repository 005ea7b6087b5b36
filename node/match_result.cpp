#include "node/match_result.hpp"

#include <algorithm>
#include <cstring>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include "mesh/frame.hpp"
#include "node/client.capnp.h"

namespace matchmesh::node {
namespace {

constexpr std::size_t result_bytes_max = 1024 * 1024;

// The value a type's matches are judged by: the sides' rating, else what its search spans.
std::string rating_value_of(const config::TicketTypeConfig& type) {
    if (type.teams) {
        return type.teams->rating;
    }
    if (!type.properties.empty()) {
        return type.properties.begin()->second.value;
    }
    return type.allow_match ? type.allow_match->value : std::string();
}

matching::Properties integer_values(const ticket::User& user) {
    matching::Properties values;
    for (const auto& [name, value] : user.data) {
        if (const auto* integer = std::get_if<std::int64_t>(&value)) {
            values.emplace(name, *integer);
        }
    }
    return values;
}

}  // namespace

ticket::TeamRules team_rules(const config::TeamsRule& teams) {
    ticket::TeamRules rules;
    rules.count = teams.count;
    rules.size = teams.size;
    rules.rating = teams.rating;
    rules.party_bonus = teams.party_bonus;
    rules.max_spread = teams.max_spread;
    rules.max_team_difference = teams.max_team_difference;
    rules.premade_parity = teams.premade_parity;
    return rules;  // no newcomer reach: the config alone does not say who can find a room
}

MatchResult match_result(const std::string& room_id, const config::TicketTypeConfig& type,
                         const std::vector<ticket::Member>& members, const RelaxedLimits& limits,
                         Time now) {
    MatchResult result;
    result.relax_step = limits.step;
    result.room_id = room_id;
    result.ticket_type = static_cast<ticket::TicketType>(type.type);
    for (const ticket::Member& member : members) {
        result.members.push_back(MatchedPlayer{
            member.user->id, member.ticket_id, -1, integer_values(*member.user),
            std::chrono::duration_cast<std::chrono::milliseconds>(now - member.since).count()});
    }
    const std::string rating = rating_value_of(type);
    std::int64_t lowest = INT64_MAX;
    std::int64_t highest = INT64_MIN;
    for (const MatchedPlayer& player : result.members) {
        if (auto found = player.values.find(rating); found != player.values.end()) {
            lowest = std::min(lowest, found->second);
            highest = std::max(highest, found->second);
        }
    }
    result.spread = lowest > highest ? 0 : highest - lowest;
    if (!type.teams) {
        return result;
    }
    ticket::TeamRules rules = team_rules(*type.teams);
    rules.max_team_difference = limits.max_team_difference;
    std::vector<std::size_t> firsts;
    const auto parties = ticket::parties_of(members, {}, rules, &firsts);
    const auto split = ticket::split_teams(parties, rules);
    if (!split) {
        return result;  // a room completed short of its sides (the game completed it early)
    }
    for (std::size_t party = 0; party < parties.size(); ++party) {
        for (std::size_t player = 0; player < parties[party].size(); ++player) {
            result.members[firsts[party] + player].side = split->side_of[party];
        }
    }
    for (const double side_rating : split->side_ratings) {
        result.sides.push_back(MatchSide{side_rating, rules.size});
    }
    result.spread = split->spread;
    result.side_difference = split->difference;
    return result;
}

ticket::Bytes encode_match_result(const MatchResult& result) {
    // Built in the thread's scratch segment.
    mesh::LocalMessageBuilder message;
    auto root = message.initRoot<wire::MatchResult>();
    root.setRoomId(result.room_id);
    root.setTicketType(result.ticket_type);
    auto members = root.initMembers(static_cast<unsigned>(result.members.size()));
    for (unsigned i = 0; i < members.size(); ++i) {
        const MatchedPlayer& player = result.members[i];
        members[i].setUser(player.user.str());
        members[i].setParty(player.party.str());
        members[i].setSide(static_cast<std::int16_t>(player.side));
        members[i].setWaitMs(static_cast<std::uint32_t>(
            std::clamp<std::int64_t>(player.wait_ms, 0, UINT32_MAX)));
        auto values = members[i].initValues(static_cast<unsigned>(player.values.size()));
        unsigned k = 0;
        for (const auto& [name, value] : player.values) {
            values[k].setName(name);
            values[k].setValue(value);
            ++k;
        }
    }
    auto sides = root.initSides(static_cast<unsigned>(result.sides.size()));
    for (unsigned i = 0; i < sides.size(); ++i) {
        sides[i].setRating(result.sides[i].rating);
        sides[i].setPlayers(static_cast<std::uint16_t>(result.sides[i].players));
    }
    auto quality = root.initQuality();
    quality.setSpread(result.spread);
    quality.setSideDifference(result.side_difference);
    quality.setRelaxStep(static_cast<std::int8_t>(result.relax_step));
    return ticket::flat_bytes(message);
}

std::expected<MatchResult, std::string> decode_match_result(const ticket::Bytes& payload) {
    if (payload.empty() || payload.size() % sizeof(capnp::word) != 0 ||
        payload.size() > result_bytes_max) {
        return std::unexpected("not a match result");
    }
    std::vector<capnp::word> words(payload.size() / sizeof(capnp::word));
    std::memcpy(static_cast<void*>(words.data()), payload.data(), payload.size());
    try {
        capnp::FlatArrayMessageReader message(kj::arrayPtr(words.data(), words.size()));
        auto root = message.getRoot<wire::MatchResult>();
        MatchResult result;
        result.room_id = root.getRoomId().cStr();
        result.ticket_type = root.getTicketType();
        for (auto player : root.getMembers()) {
            MatchedPlayer& out = result.members.emplace_back();
            out.user = UserId(std::string(player.getUser().cStr()));
            out.party = TicketId(std::string(player.getParty().cStr()));
            out.side = player.getSide();
            out.wait_ms = player.getWaitMs();
            for (auto value : player.getValues()) {
                out.values[value.getName().cStr()] = value.getValue();
            }
        }
        for (auto side : root.getSides()) {
            result.sides.push_back(MatchSide{side.getRating(), side.getPlayers()});
        }
        result.spread = root.getQuality().getSpread();
        result.side_difference = root.getQuality().getSideDifference();
        result.relax_step = root.getQuality().getRelaxStep();
        return result;
    } catch (const kj::Exception& error) {
        return std::unexpected(std::string(error.getDescription().cStr()));
    }
}

}  // namespace matchmesh::node
