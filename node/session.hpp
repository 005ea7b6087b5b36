#pragma once
// Session: one client connection as the node's command semantics see it: who it speaks for
// (after hello), whether it is an operator's, and its command budget. ClientHandler: what the
// client port hands each request to. No sockets here: the client port (the shell) owns the
// connection, and the simulation and the fuzz targets make sessions of their own.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mesh/base/time.hpp"
#include "node/client_protocol.hpp"
#include "ticket/types.hpp"

namespace matchmesh::node {

// One client connection: who it speaks for (after hello), and its command budget.
struct Session {
    std::uint64_t id = 0;
    std::optional<UserId> user;
    bool admin = false;  // said hello with an operator's token (store commands, members, dump)
    std::string remote;
    double budget = 0;  // commands it may send now (a token bucket)
    std::chrono::steady_clock::time_point refilled;
    // When its ticket of each type started, for the time-to-match metric: a user has one or two
    // at a time, so a short list rather than a map per node.
    std::vector<std::pair<ticket::TicketType, Time>> ticket_starts;

    // The ticket of this type started at `at` (the latest start of a type counts).
    void started(ticket::TicketType type, Time at) {
        if (auto known = start_of(type); known != ticket_starts.end()) {
            known->second = at;
        } else {
            ticket_starts.emplace_back(type, at);
        }
    }
    // Its ticket of this type ended: when it started, if this session started it.
    std::optional<Time> ended(ticket::TicketType type) {
        auto known = start_of(type);
        if (known == ticket_starts.end()) {
            return std::nullopt;
        }
        const Time at = known->second;
        ticket_starts.erase(known);
        return at;
    }

    // A command that costs as much as several: its later commands wait for the bucket to refill.
    void charge(double commands) { budget -= commands; }

private:
    std::vector<std::pair<ticket::TicketType, Time>>::iterator start_of(ticket::TicketType type) {
        return std::find_if(ticket_starts.begin(), ticket_starts.end(),
                            [type](const auto& start) { return start.first == type; });
    }
};

class ClientHandler {
public:
    using Reply = std::function<void(ClientReply)>;
    virtual ~ClientHandler() = default;
    // Handles one request; `reply` is called once, now or later, on the loop thread.
    virtual void handle(const std::shared_ptr<Session>& session, ClientRequest request,
                        Reply reply) = 0;
    // The connection is gone (closed by either side).
    virtual void session_closed(const std::shared_ptr<Session>& session) = 0;
    // A connection was refused for the connection limit: when its client may try again.
    [[nodiscard]] virtual std::chrono::milliseconds turned_away() = 0;
};

}  // namespace matchmesh::node
