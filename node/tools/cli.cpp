// matchmesh-cli: runs one command against a node's client port and prints the answer.
//
//   matchmesh-cli --node 127.0.0.1:7200 add RankMatch user-1 --prop rank=12 --value room=r1
//   matchmesh-cli --node 127.0.0.1:7200 search RankMatch --prop rank=12 --limit 10
//   matchmesh-cli --node 127.0.0.1:7200 range RankMatch --prop rank=10,20,30 --tags eu,us
//   matchmesh-cli --node 127.0.0.1:7200 remove RankMatch user-1
//   matchmesh-cli --node 127.0.0.1:7200 --admin-secret-file admin.txt members | dump
//   matchmesh-cli --node 127.0.0.1:7200 --user alice start 1 --value rating=1500 --wait 30
//   matchmesh-cli token --secret-file secret.txt --user alice --ttl 3600
// Ticket commands speak for --user (with --token when the cluster checks tokens); a ticket lives
// as long as the connection, so `start` waits (--wait seconds) and prints the pushes it gets.
// Once the cluster checks tokens, the store commands, members and dump need an operator's
// session: --admin-secret-file signs one for the command. A node whose client port speaks TLS
// needs --tls-ca, the CA that signed its certificate.
// Add --json for JSON output. Exit status: 0 ok, 1 the node refused, 2 usage, 3 connection.

#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>
#include <nlohmann/json.hpp>

#include "matching/value.hpp"
#include "node/blocking_client.hpp"
#include "node/token.hpp"

namespace {

using namespace matchmesh;
using namespace matchmesh::node;

std::pair<std::string, std::string> split_assignment(const std::string& text) {
    const auto equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
        throw CLI::ValidationError(fmt::format("'{}' is not name=value", text));
    }
    return {text.substr(0, equals), text.substr(equals + 1)};
}

std::int64_t to_integer(const std::string& text) {
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
        throw CLI::ValidationError(fmt::format("'{}' is not an integer", text));
    }
    return value;
}

matching::Value to_value(const std::string& text) {
    std::int64_t integer = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), integer);
    if (error == std::errc() && end == text.data() + text.size()) {
        return integer;
    }
    if (text == "true" || text == "false") {
        return text == "true";
    }
    char* parsed_end = nullptr;
    const double number = std::strtod(text.c_str(), &parsed_end);
    if (!text.empty() && parsed_end == text.c_str() + text.size()) {
        return number;
    }
    return text;
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, ',')) {
        parts.push_back(part);
    }
    return parts;
}

const char* kind_name(ticket::PushKind kind) {
    switch (kind) {
        case ticket::PushKind::success: return "matched";
        case ticket::PushKind::timeout: return "timed_out";
        case ticket::PushKind::cancel: return "canceled";
        case ticket::PushKind::broadcast: return "broadcast";
        case ticket::PushKind::announce: return "announce";
        case ticket::PushKind::failure: return "failure";
    }
    return "?";
}

nlohmann::json push_json(const ticket::PushMessage& push) {
    return {{"push", kind_name(push.kind)},
            {"cmd", push.cmd},
            {"ticket_type", push.ticket_type},
            {"ticket", push.ticket_id.str()},
            {"room", push.room_id},
            {"reason", ticket::to_string(push.reason)},
            {"payload",
             std::string(reinterpret_cast<const char*>(push.payload.data()), push.payload.size())}};
}

nlohmann::json to_json(const ClientReply& reply) {
    return std::visit(
        [](const auto& body) -> nlohmann::json {
            using T = std::decay_t<decltype(body)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return {{"ok", true}};
            } else if constexpr (std::is_same_v<T, ReplyError>) {
                nlohmann::json error = {{"category", body.category}, {"message", body.message}};
                if (body.retry_after_ms > 0) {
                    error["retryAfterMs"] = body.retry_after_ms;
                }
                return {{"error", error}};
            } else if constexpr (std::is_same_v<T, matching::SearchOutcome>) {
                auto items = nlohmann::json::array();
                for (const auto& item : body.items) {
                    items.push_back(
                        {{"profile", item.profile_id},
                         {"id", item.unique_id},
                         {"value", matching::value_to_json(matching::to_value_map(item.value))},
                         {"ttl_s", item.ttl.count()},
                         {"remaining_ms", item.remaining.count()},
                         {"origin", item.origin}});
                }
                return {{"items", items}, {"keys_unanswered", body.keys_unanswered}};
            } else if constexpr (std::is_same_v<T, std::vector<mesh::MemberInfo>>) {
                auto members = nlohmann::json::array();
                for (const auto& member : body) {
                    members.push_back({{"id", member.id.str()},
                                       {"address", member.address},
                                       {"node_type", member.node_type},
                                       {"incarnation", member.incarnation}});
                }
                return {{"members", members}};
            } else if constexpr (std::is_same_v<T, matching::ValueMap>) {
                return {{"properties", matching::value_to_json(body)}};
            } else if constexpr (std::is_same_v<T, std::vector<UserId>>) {
                auto ids = nlohmann::json::array();
                for (const auto& id : body) {
                    ids.push_back(id.str());
                }
                return {{"members", ids}};
            } else {
                const auto parsed = nlohmann::json::parse(body);
                return parsed;
            }
        },
        reply.body);
}

void print_text(const ClientReply& reply) {
    std::visit(
        [](const auto& body) {
            using T = std::decay_t<decltype(body)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                std::printf("ok\n");
            } else if constexpr (std::is_same_v<T, ReplyError>) {
                std::printf("error %s: %s\n", body.category.c_str(), body.message.c_str());
                if (body.retry_after_ms > 0) {
                    std::printf("retry after %u ms\n", body.retry_after_ms);
                }
            } else if constexpr (std::is_same_v<T, matching::SearchOutcome>) {
                for (const auto& item : body.items) {
                    std::printf("%s %s %s ttl=%llds remaining=%lldms origin=%s\n",
                                std::string(item.profile_id).c_str(),
                                std::string(item.unique_id).c_str(),
                                matching::value_to_text(matching::to_value_map(item.value)).c_str(),
                                static_cast<long long>(item.ttl.count()),
                                static_cast<long long>(item.remaining.count()),
                                std::string(item.origin).c_str());
                }
                std::printf("%zu items", body.items.size());
                if (body.keys_unanswered > 0) {
                    std::printf(" (%zu keys unanswered: results may be incomplete)",
                                body.keys_unanswered);
                }
                std::printf("\n");
            } else if constexpr (std::is_same_v<T, std::vector<mesh::MemberInfo>>) {
                for (const auto& member : body) {
                    std::printf("%s %s %s %llu\n", member.id.str().c_str(), member.address.c_str(),
                                member.node_type.c_str(),
                                static_cast<unsigned long long>(member.incarnation));
                }
            } else if constexpr (std::is_same_v<T, matching::ValueMap>) {
                std::printf("%s\n", matching::value_to_text(body).c_str());
            } else if constexpr (std::is_same_v<T, std::vector<UserId>>) {
                for (const auto& id : body) {
                    std::printf("%s\n", id.str().c_str());
                }
            } else {
                const auto parsed = nlohmann::json::parse(body);
                std::printf("%s\n", parsed.dump(2).c_str());
            }
        },
        reply.body);
}

int print_reply(const ClientReply& reply, bool json) {
    if (json) {
        std::printf("%s\n", to_json(reply).dump(2).c_str());
    } else {
        print_text(reply);
    }
    std::fflush(stdout);
    return std::holds_alternative<ReplyError>(reply.body) ? 1 : 0;
}

void print_push(const ticket::PushMessage& push, bool json) {
    if (json) {
        std::printf("%s\n", push_json(push).dump().c_str());
    } else {
        std::printf("push %u %s type %u ticket %s room %s%s%.*s\n", push.cmd, kind_name(push.kind),
                    push.ticket_type, push.ticket_id.str().c_str(), push.room_id.c_str(),
                    push.payload.empty() ? "" : ": ", static_cast<int>(push.payload.size()),
                    reinterpret_cast<const char*>(push.payload.data()));
    }
    std::fflush(stdout);
}

// After a ticket started: prints pushes until the ticket ends or `seconds` pass.
int wait_for_end(BlockingClient& client, int seconds, bool json) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        auto push = client.next_push(std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now()));
        if (!push) {
            std::fprintf(stderr, "matchmesh-cli: %s\n", push.error().c_str());
            return 3;
        }
        print_push(*push, json);
        if (ticket::is_terminal(push->kind)) {
            return push->kind == ticket::PushKind::success ? 0 : 1;
        }
    }
    return 1;
}

std::string read_secret(const std::string& path) {
    std::ifstream file(path);
    std::string secret;
    std::getline(file, secret);
    if (!file && secret.empty()) {
        throw CLI::ValidationError(fmt::format("cannot read a secret from {}", path));
    }
    return secret;
}

// What the command line says.
struct Args {
    std::string node_address = "127.0.0.1:7200";
    bool json = false;
    std::string user;
    std::string token;
    std::string tls_ca_file;
    std::string admin_secret_file;
    std::string profile;
    std::string unique_id;
    std::string tag;
    std::vector<std::string> props;
    std::vector<std::string> values;
    std::vector<std::string> ids;
    std::string tags;
    int ttl = 30;
    std::size_t limit = 20;
    int ticket_type = 0;
    int wait_seconds = 60;
    std::string party;
    std::string secret_file;
};

struct Subcommands {
    CLI::App* add = nullptr;
    CLI::App* search = nullptr;
    CLI::App* range = nullptr;
    CLI::App* remove = nullptr;
    CLI::App* members = nullptr;
    CLI::App* dump = nullptr;
    CLI::App* start = nullptr;
    CLI::App* token = nullptr;
};

void define_options(CLI::App& app, Args& args) {
    app.require_subcommand(1);
    app.fallthrough();  // --node, --user, --token and --json may also follow the subcommand
    app.add_option("--node", args.node_address, "the node's client port, host:port");
    app.add_flag("--json", args.json, "print JSON");
    app.add_option("--user", args.user, "say hello as this user first (ticket commands need it)");
    app.add_option("--token", args.token, "the user's token, when the cluster checks them");
    app.add_option("--tls-ca", args.tls_ca_file,
                   "speak TLS, and require the node's certificate to be signed by this CA (PEM)");
    app.add_option("--admin-secret-file", args.admin_secret_file,
                   "file holding cluster.adminSecret: say hello as an operator first (the store "
                   "commands, members and dump need it once the cluster checks tokens)");
}

Subcommands define_store_subcommands(CLI::App& app, Args& args) {
    Subcommands sub;
    sub.add = app.add_subcommand("add", "add or refresh a search item");
    sub.add->add_option("profile", args.profile, "profile ID")->required();
    sub.add->add_option("id", args.unique_id, "unique ID")->required();
    sub.add->add_option("--tag", args.tag, "tag");
    sub.add->add_option("--prop", args.props, "property, name=value (repeat)");
    sub.add->add_option("--value", args.values, "value entry, name=value (repeat)");
    sub.add->add_option("--ttl", args.ttl, "seconds, 1..60");
    sub.search = app.add_subcommand("search", "exact search");
    sub.search->add_option("profiles", args.profile, "profile IDs, comma-separated")->required();
    sub.search->add_option("--tag", args.tag, "tag");
    sub.search->add_option("--prop", args.props, "property, name=value (repeat)");
    sub.search->add_option("--limit", args.limit, "at most this many results");
    sub.range = app.add_subcommand("range", "range search (with tags)");
    sub.range->add_option("profiles", args.profile, "profile IDs, comma-separated")->required();
    sub.range->add_option("--tags", args.tags, "tags, comma-separated (none: the empty tag)");
    sub.range->add_option("--prop", args.props, "property, name=v1,v2,... (repeat)");
    sub.range->add_option("--limit", args.limit, "at most this many results");
    sub.remove = app.add_subcommand("remove", "remove items by unique ID");
    sub.remove->add_option("profile", args.profile, "profile ID")->required();
    sub.remove->add_option("ids", args.ids, "unique IDs")->required();
    sub.members = app.add_subcommand("members", "live members as the node sees them");
    sub.dump = app.add_subcommand("dump", "the node's items, tickets, rooms and members (JSON)");
    return sub;
}

void define_ticket_subcommands(CLI::App& app, Args& args, Subcommands& sub) {
    sub.start = app.add_subcommand("start", "start a ticket for --user and print its pushes");
    sub.start->add_option("type", args.ticket_type, "ticket type")->required();
    sub.start->add_option("--value", args.values, "the player's value, name=integer (repeat)");
    sub.start->add_option("--party", args.party,
                          "other users in the party, comma-separated (each must have accepted "
                          "it on its own session: acceptParty)");
    sub.start->add_option("--wait", args.wait_seconds,
                          "print pushes for at most this many seconds");
    sub.token = app.add_subcommand("token", "print a token for --user (no node needed)");
    sub.token
        ->add_option("--secret-file", args.secret_file, "file holding the cluster's tokenSecret")
        ->required();
    sub.token->add_option("--ttl", args.ttl, "seconds the token is valid");
}

std::uint64_t unix_seconds() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

Command search_command(const Args& args) {
    SearchCommand out{split_list(args.profile), args.tag, {}, args.limit};
    for (const auto& prop : args.props) {
        auto [name, text] = split_assignment(prop);
        out.properties[name] = to_integer(text);
    }
    return out;
}

Command range_command(const Args& args) {
    RangeSearchCommand out{split_list(args.profile), split_list(args.tags), {}, args.limit};
    if (out.tags.empty()) {
        out.tags.push_back("");
    }
    for (const auto& prop : args.props) {
        auto [name, text] = split_assignment(prop);
        for (const auto& value : split_list(text)) {
            out.properties[name].push_back(to_integer(value));
        }
    }
    return out;
}

Command add_command(const Args& args) {
    AddCommand out{args.profile, args.unique_id, args.tag, {}, {}, std::chrono::seconds(args.ttl)};
    for (const auto& prop : args.props) {
        auto [name, text] = split_assignment(prop);
        out.properties[name] = to_integer(text);
    }
    for (const auto& entry : args.values) {
        auto [name, text] = split_assignment(entry);
        out.value[name] = to_value(text);
    }
    return out;
}

Command start_command(const Args& args) {
    if (args.user.empty()) {
        throw CLI::ValidationError("start: --user is required");
    }
    if (args.ticket_type < 0 || args.ticket_type > 255) {
        throw CLI::ValidationError("start: the ticket type is 0..255");
    }
    StartTicketCommand out;
    out.ticket_type = static_cast<ticket::TicketType>(args.ticket_type);
    for (const auto& entry : args.values) {
        auto [name, text] = split_assignment(entry);
        out.values[name] = to_integer(text);
    }
    for (const auto& member : split_list(args.party)) {
        out.party.emplace_back(member);
    }
    return out;
}

// The command the parsed subcommand asks for (dump prints JSON).
Command command_of(const Subcommands& sub, Args& args) {
    if (sub.add->parsed()) {
        return add_command(args);
    }
    if (sub.search->parsed()) {
        return search_command(args);
    }
    if (sub.range->parsed()) {
        return range_command(args);
    }
    if (sub.remove->parsed()) {
        return RemoveCommand{args.profile, args.ids};
    }
    if (sub.dump->parsed()) {
        args.json = true;
        return DumpCommand{};
    }
    if (sub.start->parsed()) {
        return start_command(args);
    }
    return MembersCommand{};
}

// Says hello when asked to, sends the command, prints the reply (and a ticket's pushes).
int run(const Args& args, Command command) {
    auto client =
        BlockingClient::connect(args.node_address, std::chrono::seconds(5), args.tls_ca_file);
    if (!client) {
        std::fprintf(stderr, "matchmesh-cli: %s\n", client.error().c_str());
        return 3;
    }
    if (!args.user.empty()) {
        auto hello = client->call(HelloCommand{UserId(args.user), args.token, {}});
        if (!hello) {
            std::fprintf(stderr, "matchmesh-cli: %s\n", hello.error().c_str());
            return 3;
        }
        if (std::holds_alternative<ReplyError>(hello->body)) {
            return print_reply(*hello, args.json);
        }
    }
    const bool started = std::holds_alternative<StartTicketCommand>(command);
    auto reply = client->call(std::move(command));
    if (!reply) {
        std::fprintf(stderr, "matchmesh-cli: %s\n", reply.error().c_str());
        return 3;
    }
    const int status = print_reply(*reply, args.json);
    if (status != 0 || !started) {
        return status;
    }
    return wait_for_end(*client, args.wait_seconds, args.json);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"matchmesh-cli: commands against a matchmesh node"};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh-cli"));
    Args args;
    define_options(app, args);
    Subcommands sub = define_store_subcommands(app, args);
    define_ticket_subcommands(app, args, sub);
    Command command;
    try {
        app.parse(argc, argv);
        if (sub.token->parsed()) {
            if (args.user.empty()) {
                throw CLI::ValidationError("token: --user is required");
            }
            std::printf("%s\n", make_token(read_secret(args.secret_file), args.user,
                                           unix_seconds() + static_cast<std::uint64_t>(args.ttl))
                                    .c_str());
            return 0;
        }
        command = command_of(sub, args);
        if (!args.admin_secret_file.empty()) {
            // An operator's token of a few minutes, for this one command.
            args.user = args.user.empty() ? "matchmesh-cli" : args.user;
            args.token =
                make_token(read_secret(args.admin_secret_file), args.user, unix_seconds() + 300);
        }
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : 2;
    }
    return run(args, std::move(command));
}
