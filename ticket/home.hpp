#pragma once
// Home: the home node's side of the users connected here: their participations (one per user and
// ticket type), the pushes delivered to them (each once; a terminal push ends the participation,
// a 220 keeps it until the room closes or the user leaves), their joins by room ID, broadcasts
// and leaves, and what a node's death means for them. Also the way every push leaves a room: to
// its member's home, here or over the courier. A party's claims are PartyClaims' (claims.hpp).
//
// Owns: the participations of users connected here. Owned by TicketService; on the node's loop
// thread. Reaches a ticket owned here through Tickets (a push can settle its join) and the rooms
// held here through Rooms (a join or leave of a room on this node).

#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "mesh/base/assert.hpp"
#include "ticket/context.hpp"
#include "ticket/participations.hpp"
#include "ticket/state.hpp"
#include "ticket/wire.hpp"

namespace matchmesh::ticket {

class Rooms;
class Tickets;

class Home {
public:
    Home(Context& context, PushSink& sink, Tickets& tickets, Rooms& rooms)
        : context_(context), sink_(sink), tickets_(tickets), rooms_(rooms) {}
    Home(const Home&) = delete;
    Home& operator=(const Home&) = delete;

    [[nodiscard]] Participations& participations() { return participations_; }
    [[nodiscard]] const Participations& participations() const { return participations_; }

    // Sends a push to its member's home: this node (on a later turn) or another one.
    void deliver(const NodeId& home, PushEnvelope push);
    // Runs `run`, holding back the pushes it sends to `node` (another node); returns them in
    // order, for the caller to send another way (on a join's answer).
    template <typename Run>
    [[nodiscard]] std::vector<PushEnvelope> hold_pushes_for(const NodeId& node, Run&& run) {
        MM_ASSERT(holding_for_ == nullptr && node != context_.self());
        holding_for_ = &node;
        struct Release {
            const NodeId*& holding;
            ~Release() { holding = nullptr; }
        } release{holding_for_};
        run();
        return std::exchange(held_, {});
    }
    // A push for a user connected here, from its room's node.
    void receive_push(const PushEnvelope& push);
    // The pushes a join's answer carried, in order.
    void receive_pushes(std::span<const PushEnvelope> pushes) {
        for (const PushEnvelope& push : pushes) {
            receive_push(push);
        }
    }
    // Ends the user's participation of this type here, telling it why (222) unless it completed.
    void cancel_participation(const UserId& user, TicketType type, EndReason why);
    // The user joins room `room` on `node` directly, as ticket `id` (JoinRoomByID).
    void join_room(TicketType type, const TicketId& room, const NodeId& node, SharedUser user,
                   const TicketId& id, std::function<void(Result<void>)> done);
    // A message from the user to every member of the room it is in, wherever that room is held.
    [[nodiscard]] Result<void> broadcast(TicketType type, const UserId& user, std::uint8_t ver,
                                         std::uint16_t cmd, Bytes message);
    // The user leaves the room it is in (with its party), wherever that room is held; the room
    // tells the party why.
    void leave_room_of(const UserId& user, TicketType type, EndReason why,
                       std::function<void(Result<void>)> done);

    // Node `node` is gone: users connected here in rooms held there are out (222).
    void end_participations_on(const NodeId& node);
    // Node `node` is gone: the other homes of parties from here that joined a room there hear it.
    void tell_parties_joined_at(const NodeId& node);

private:
    void receive_end(const PushEnvelope& push, Participation& participation);
    void deliver_locally(const PushEnvelope& push);

    Context& context_;
    PushSink& sink_;
    Tickets& tickets_;
    Rooms& rooms_;
    Participations participations_;  // of users connected here
    const NodeId* holding_for_ = nullptr;  // during hold_pushes_for: pushes to it wait in held_
    std::vector<PushEnvelope> held_;
};

}  // namespace matchmesh::ticket
