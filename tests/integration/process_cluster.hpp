#pragma once
// The real-process harness of the integration tests: a cluster of real nodes sharing one config,
// client sessions that said hello, and bounded waits for replies and pushes. Every wait has a
// deadline in seconds; a failed REQUIRE unwinds the Cluster, whose NodeProcesses kill their nodes.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "node/blocking_client.hpp"
#include "node_process.hpp"

namespace integration {

using ReplyOrError = std::expected<matchmesh::node::ClientReply, std::string>;

inline std::size_t member_count(const std::string& client_address,
                                const std::string& tls_ca_file = "") {
    auto client = matchmesh::node::BlockingClient::connect(client_address, std::chrono::seconds(5),
                                                           tls_ca_file);
    if (!client) {
        return 0;
    }
    auto reply = client->call(matchmesh::node::MembersCommand{});
    if (!reply) {
        return 0;
    }
    auto* members = std::get_if<std::vector<matchmesh::mesh::MemberInfo>>(&reply->body);
    return members == nullptr ? 0 : members->size();
}

// `count` nodes with one config; the first is every other's seed. Ready once each sees all.
// With `tls_ca_file`, the client ports speak TLS and that CA signed the nodes' certificates.
class Cluster {
public:
    Cluster(const std::string& config_text, std::size_t count, const std::string& tls_ca_file = "")
        : config_(folder_.write("cluster.json", config_text)) {
        nodes_.push_back(NodeProcess::start(folder_, "node-a", config_));
        const std::string names = "bcdefgh";
        for (std::size_t i = 1; i < count; ++i) {
            nodes_.push_back(NodeProcess::start(folder_, std::string("node-") + names[i - 1],
                                                config_,
                                                {"--seeds", nodes_.front().mesh_address()}));
        }
        for (const NodeProcess& node : nodes_) {
            REQUIRE_MESSAGE(
                eventually(
                    [&] { return member_count(node.client_address(), tls_ca_file) == count; },
                    std::chrono::seconds(10)),
                node.id(), " does not see ", count, " members; log:\n", node.log_text());
        }
    }

    [[nodiscard]] const NodeProcess& node(std::size_t i) const { return nodes_.at(i); }
    [[nodiscard]] NodeProcess& node(std::size_t i) { return nodes_.at(i); }
    [[nodiscard]] const std::string& client_address(std::size_t i) const {
        return nodes_.at(i).client_address();
    }
    [[nodiscard]] const TestFolder& folder() const { return folder_; }

private:
    TestFolder folder_;
    std::filesystem::path config_;
    std::vector<NodeProcess> nodes_;
};

// "ok", "error <category>: <message>", or what else came back: for checks and their messages.
inline std::string describe(const ReplyOrError& reply) {
    if (!reply) {
        return "no reply: " + reply.error();
    }
    if (std::holds_alternative<std::monostate>(reply->body)) {
        return "ok";
    }
    if (auto* error = std::get_if<matchmesh::node::ReplyError>(&reply->body)) {
        return fmt::format("error {}: {}", error->category, error->message);
    }
    return fmt::format("a reply of kind {}", reply->body.index());
}

// The error category of a reply, or describe() of anything that is not an error.
inline std::string category(const ReplyOrError& reply) {
    if (reply) {
        if (auto* error = std::get_if<matchmesh::node::ReplyError>(&reply->body)) {
            return error->category;
        }
    }
    return describe(reply);
}

inline std::string error_message(const ReplyOrError& reply) {
    if (reply) {
        if (auto* error = std::get_if<matchmesh::node::ReplyError>(&reply->body)) {
            return error->message;
        }
    }
    return describe(reply);
}

inline matchmesh::node::BlockingClient connect_to(const std::string& address) {
    auto client = matchmesh::node::BlockingClient::connect(address);
    REQUIRE_MESSAGE(client.has_value(), "cannot connect to ", address);
    return std::move(*client);
}

// A connection that said hello as `user` (with `token` when the node checks tokens).
inline matchmesh::node::BlockingClient session(const std::string& address, const std::string& user,
                                               const std::string& token = "") {
    auto client = connect_to(address);
    auto hello = client.call(matchmesh::node::HelloCommand{matchmesh::UserId(user), token, {}});
    REQUIRE_MESSAGE(describe(hello) == "ok", "hello as ", user, ": ", describe(hello));
    return client;
}

inline ReplyOrError start_ticket(matchmesh::node::BlockingClient& client,
                                 matchmesh::ticket::TicketType type, std::int64_t rating) {
    return client.call(matchmesh::node::StartTicketCommand{type, {{"rating", rating}}, {}, {}});
}

inline ReplyOrError ticket_command(matchmesh::node::BlockingClient& client,
                                   matchmesh::node::TicketAction action,
                                   matchmesh::ticket::TicketType type) {
    return client.call(matchmesh::node::TicketCommand{action, type});
}

// The room's member IDs as its owner sees them; empty when the reply is an error.
inline std::vector<std::string> room_members(matchmesh::node::BlockingClient& owner,
                                             matchmesh::ticket::TicketType type) {
    auto reply = ticket_command(owner, matchmesh::node::TicketAction::members, type);
    std::vector<std::string> ids;
    if (reply) {
        if (auto* members = std::get_if<std::vector<matchmesh::UserId>>(&reply->body)) {
            for (const auto& id : *members) {
                ids.push_back(id.str());
            }
        }
    }
    return ids;
}

inline std::string kind_name(matchmesh::ticket::PushKind kind) {
    using matchmesh::ticket::PushKind;
    switch (kind) {
        case PushKind::success: return "success";
        case PushKind::timeout: return "timeout";
        case PushKind::cancel: return "cancel";
        case PushKind::broadcast: return "broadcast";
        case PushKind::announce: return "announce";
        case PushKind::failure: return "failure";
    }
    return "?";
}

// The next push, which must be of `kind` with the command that kind carries.
inline matchmesh::ticket::PushMessage expect_push(matchmesh::node::BlockingClient& client,
                                                  matchmesh::ticket::PushKind kind,
                                                  std::chrono::milliseconds timeout) {
    // FAIL, not REQUIRE_MESSAGE: a message's expressions are evaluated lazily, at any later
    // failure in the scope, when push.error() would no longer be valid.
    auto push = client.next_push(timeout);
    if (!push) {
        FAIL("no ", kind_name(kind), " push: ", push.error());
    }
    if (push->kind != kind) {
        FAIL("expected a ", kind_name(kind), " push, got ", kind_name(push->kind), " (cmd ",
             push->cmd, ", room ", push->room_id, ")");
    }
    return std::move(*push);
}

// Nothing at all arrives within `window` (no push, no stray reply).
inline bool silent_for(matchmesh::node::BlockingClient& client, std::chrono::milliseconds window) {
    auto push = client.next_push(window);
    if (push) {
        MESSAGE("unexpected push: ", kind_name(push->kind), " cmd ", push->cmd, " room ",
                push->room_id);
        return false;
    }
    if (push.error() != "nothing received in time") {
        MESSAGE("unexpected: ", push.error());
        return false;
    }
    return true;
}

// How many items an exact search through `address` finds for this tag and rating: a waiting
// room's item is visible to searchers once this is positive.
inline std::size_t rooms_visible(const std::string& address, const std::string& tag,
                                 std::int64_t rating, const std::string& tls_ca_file = "") {
    auto client =
        matchmesh::node::BlockingClient::connect(address, std::chrono::seconds(5), tls_ca_file);
    if (!client) {
        return 0;
    }
    auto reply =
        client->call(matchmesh::node::SearchCommand{{"RankMatch"}, tag, {{"rank", rating}}, 100});
    if (!reply) {
        return 0;
    }
    auto* outcome = std::get_if<matchmesh::matching::SearchOutcome>(&reply->body);
    return outcome == nullptr ? 0 : outcome->items.size();
}

// Waits until `count` rooms with this tag and rating are visible through `address`.
inline void wait_for_rooms(const std::string& address, const std::string& tag, std::int64_t rating,
                           std::size_t count = 1) {
    REQUIRE_MESSAGE(eventually([&] { return rooms_visible(address, tag, rating) >= count; },
                               std::chrono::seconds(5)),
                    count, " waiting room(s) tagged '", tag, "' never became visible");
}

// A node's ticket counts, from its JSON dump (`in_progress`, `searching`, `waiting`, `users`).
inline std::int64_t ticket_count(const std::string& address, const std::string& which) {
    auto client = matchmesh::node::BlockingClient::connect(address);
    if (!client) {
        return -1;
    }
    auto reply = client->call(matchmesh::node::DumpCommand{});
    if (!reply) {
        return -1;
    }
    auto* text = std::get_if<std::string>(&reply->body);
    if (text == nullptr) {
        return -1;
    }
    const nlohmann::json dump = nlohmann::json::parse(*text);
    return dump["tickets"][which].get<std::int64_t>();
}

inline matchmesh::ticket::Bytes bytes_of_text(const std::string& text) {
    return {text.begin(), text.end()};
}

}  // namespace integration
