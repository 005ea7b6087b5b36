#pragma once
// One valid message of each kind nodes send one another, named, with the envelope each travels
// in: the seeds of the mesh_frames fuzz target and the samples the decoder robustness test
// mutates. Built in one place, so that a new message kind is added once.

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "matching/wire.hpp"
#include "mesh/control.hpp"
#include "mesh/frame.hpp"
#include "ticket/wire.hpp"

namespace test_support {

struct SampleMessage {
    std::string name;
    matchmesh::mesh::ServiceId service = 0;  // 0: a mesh control message
    matchmesh::mesh::MethodId method = 0;
    matchmesh::mesh::EnvelopeKind kind = matchmesh::mesh::EnvelopeKind::request;
    matchmesh::mesh::Payload payload;

    // The message as a peer would send it.
    [[nodiscard]] matchmesh::mesh::Frame frame() const {
        if (service == matchmesh::mesh::mesh_service) {
            return matchmesh::mesh::control_frame(method, payload);
        }
        return matchmesh::mesh::encode_frame({service, method, 7, kind, 0, {}}, payload.words());
    }
};

inline std::vector<SampleMessage> mesh_control_samples() {
    using namespace matchmesh;
    const mesh::MemberInfo member{NodeId("node-1"), "127.0.0.1:7100", "HTTP", 42};
    const mesh::ProbeMessage ping{member, 3, 9, member, {mesh::MemberUpdate{member, {}, 2}}};
    return {
        {"sync", 0, 4, {}, mesh::encode(mesh::SyncMessage{member, {member}})},
        {"ping", 0, 7, {}, mesh::encode(ping)},
        {"challenge", 0, 1, {}, mesh::encode(mesh::ChallengeMessage{"c", {}})},
        {"hello", 0, 2, {}, mesh::encode(mesh::HelloMessage{"c", member, {}, {}})},
        {"welcome", 0, 3, {}, mesh::encode(mesh::WelcomeMessage{member, {}})},
        {"leave", 0, 5, {}, mesh::encode(mesh::LeaveMessage{NodeId("node-1"), 42})},
        {"rejected", 0, 6, {}, mesh::encode_rejected(42)},
    };
}

inline std::vector<SampleMessage> store_samples() {
    using namespace matchmesh;
    const matching::AddedItem item{"RankMatch",
                                   "RankMatch\t\t3",
                                   "u1",
                                   {{"room", std::string("r1")}, {"n", std::int64_t{2}}},
                                   std::chrono::seconds(30)};
    const std::vector<std::string_view> keys{"RankMatch\t\t3", "RankMatch\t\t4"};
    const std::vector<std::string> unique_ids{"u1", "u2"};
    using Kind = mesh::EnvelopeKind;
    return {
        {"add", 1, 1, Kind::one_way, matching::encode_add(std::span(&item, 1))},
        {"remove", 1, 2, Kind::one_way, matching::encode_remove("RankMatch", unique_ids)},
        {"search", 1, 3, Kind::request,
         matching::encode_search(keys, 20, matching::Handout{5, Duration(10)})},
    };
}

// A 220 from room 1.1@node-1 to user u1 at node-2.
inline matchmesh::ticket::PushEnvelope sample_push() {
    using namespace matchmesh;
    return ticket::PushEnvelope{"p1",
                                UserId("u1"),
                                1,
                                TicketId("2.1@node-2"),
                                TicketId("1.1@node-1"),
                                UserId("u2"),
                                ticket::WireKind::success,
                                1,
                                220,
                                {9},
                                ticket::EndReason::completed};
}

inline std::vector<SampleMessage> ticket_samples() {
    using namespace matchmesh;
    using Kind = mesh::EnvelopeKind;
    const auto user = std::make_shared<const ticket::User>(
        ticket::User{UserId("u1"), "s1", NodeId("node-2"), {{"rating", std::int64_t{1500}}}, 3});
    const ticket::JoinMessage join{
        "a/1",  TicketId("1.1@node-1"),
        1,      TicketId("2.1@node-2"),
        {user}, {{{"rating", 1500}}, {{"rating", {1500, 1400, 1600}}}, {1, 2}},
        true};
    const ticket::PushEnvelope push = sample_push();
    const ticket::SessionsMessage sessions{NodeId("node-1"),
                                           {{UserId("u1"), 7}, {UserId("u2"), 8}}};
    return {
        {"join", 2, 1, Kind::request, ticket::encode(join)},
        {"join_reply", 2, 1, Kind::response,
         ticket::encode(ticket::JoinReplyMessage{false, "full", true, false, {}})},
        {"join_reply_pushes", 2, 1, Kind::response,
         ticket::encode(ticket::JoinReplyMessage{true, {}, false, false, {push, push}})},
        {"push", 2, 2, Kind::request, ticket::encode(push)},
        {"ticket_leave", 2, 3, Kind::request,
         ticket::encode(ticket::LeaveMessage{TicketId("1.1@node-1"), UserId("u1"), 1})},
        {"broadcast", 2, 4, Kind::request,
         ticket::encode(
             ticket::BroadcastMessage{TicketId("1.1@node-1"), UserId("u1"), 1, 1, 224, {1, 2, 3}})},
        {"claim", 2, 5, Kind::request,
         ticket::encode(
             ticket::ClaimMessage{TicketId("1.1@node-1"), 3, UserId("u2"), UserId("u1")})},
        {"claim_reply", 2, 5, Kind::response,
         ticket::encode(ticket::ClaimReplyMessage{true, *user, ticket::ClaimRefusal::none})},
        {"ack", 2, 6, Kind::response, ticket::encode(ticket::AckMessage{true, {}})},
        {"sessions", 2, 7, Kind::one_way, ticket::encode(sessions)},
    };
}

// Every sample above.
inline std::vector<SampleMessage> peer_samples() {
    std::vector<SampleMessage> all = mesh_control_samples();
    for (auto part : {store_samples(), ticket_samples()}) {
        all.insert(all.end(), part.begin(), part.end());
    }
    return all;
}

}  // namespace test_support
