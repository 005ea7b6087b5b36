#pragma once
// matchmesh's embedding API: game logic links matchmesh::node, includes this header, and runs a
// node of the cluster inside its own process, with its own callbacks per ticket type.
//
//     auto config = matchmesh::config::load_file("cluster.json");   // or load_string(json, name)
//     auto node = matchmesh::node::Node::create(*config, logger);   // binds every port
//     (*node)->tickets().set_callbacks(duel, callbacks);            // before run(), or on the loop
//     (*node)->on_push([](const UserId& user, const PushMessage& push) { ... });
//     return (*node)->run();                                        // until shutdown() or SIGTERM
//
// This header only gathers the module headers that make up the API; each of them documents its
// part in full. In-tree and installed alike they are included by their path in the repository
// ("ticket/service.hpp"), and with CMake, find_package(matchmesh) + matchmesh::node brings them
// and every library they need.
//
// Threading: a node owns one io_context and runs everything on the thread that calls run() (the
// loop thread). Every callback runs there, without any lock held, and must not block. Only
// Node::post() is safe from any other thread; everything else below — tickets(), store(),
// scheduler(), on_push(), shutdown(), set_callbacks() — is for the loop thread (from a callback,
// a timer, or a posted task), or for the thread that created the node before it calls run().

// --- Configuration -------------------------------------------------------------------------------
// config::load_file(path) / config::load_string(text, source) parse and check a JSON config, and
// config::validate(config, source) checks it after the program changed fields (node.id,
// node.meshListen, ...). Errors name the file, the JSON path and the reason. Listening on port 0
// ("127.0.0.1:0") lets the system pick a free port; Node::mesh_address() tells which.
#include "config/config.hpp"

// --- The node ------------------------------------------------------------------------------------
// node::Node::create(config, logger) wires the mesh, the store, the tickets and the client port
// and binds their ports (or says why it cannot). Its handles:
//   tickets()  the TicketService below               (loop thread only)
//   store()    the MatchingService below             (loop thread only)
//   scheduler() the loop's clock and timers          (loop thread only)
//   on_push()  hears every push to users connected to this node  (loop thread, or before run())
//   run()      serves until shutdown() or SIGTERM/SIGINT, drains, and returns the exit code
//   shutdown() starts that drain                     (loop thread only; post() it from others)
//   post(task) runs `task` on the loop thread        (any thread)
#include "node/node.hpp"

// --- Tickets -------------------------------------------------------------------------------------
// ticket::TicketService: set_callbacks(type, Callbacks) registers the game's callbacks for a
// ticket type (on_issue_ticket is required: it turns a user into TicketParams); connect_user /
// disconnect_user; start_ticket, cancel_ticket, mark_ticket_as_complete, backfill, broadcast,
// reservations, ticket properties and queries. All on the loop thread.
#include "ticket/callbacks.hpp"
#include "ticket/service.hpp"
#include "ticket/types.hpp"

// --- The distributed store -----------------------------------------------------------------------
// matching::MatchingService: add / search / search_with_range / remove of search items across the
// cluster, and profiles(). Searches answer later, on the loop thread. All on the loop thread.
#include "matching/service.hpp"
#include "mesh/scheduler.hpp"
