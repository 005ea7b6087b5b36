// matchmesh: one node of a matchmaking cluster.
#include <unistd.h>
#include <cstdio>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <matchmesh/version.hpp>

#include "config/config.hpp"
#include "node/log_format.hpp"
#include "node/node.hpp"

namespace {

std::string host_name() {
    char name[256] = {};
    return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("matchmesh");
}

// What the command line overrides in the config file.
struct Overrides {
    std::string id;
    std::string node_type;
    std::string mesh_listen;
    std::string mesh_advertise;
    std::string client_listen;
    std::vector<std::string> seeds;
    std::string admin_listen;
    std::string log_format;
};

void apply(const Overrides& given, matchmesh::config::Config& config) {
    const auto set = [](std::string& field, const std::string& value) {
        if (!value.empty()) {
            field = value;
        }
    };
    set(config.node.id, given.id);
    if (config.node.id.empty()) {
        config.node.id = host_name();
    }
    set(config.node.node_type, given.node_type);
    set(config.node.mesh_listen, given.mesh_listen);
    set(config.node.mesh_advertise, given.mesh_advertise);
    set(config.node.client_listen, given.client_listen);
    if (!given.admin_listen.empty()) {
        config.node.admin_listen = given.admin_listen == "none" ? "" : given.admin_listen;
    }
    if (!given.seeds.empty()) {
        config.cluster.seeds = given.seeds;
    }
    if (!given.log_format.empty()) {
        config.node.log_format = *matchmesh::config::log_format_named(given.log_format);
    }
}

// The ready line names the node's ports on stdout, where scripts and tests wait for it; it is
// formatted as the log is, so that a collector reading both streams reads one format.
void print_ready_line(const matchmesh::config::Config& config, matchmesh::node::Node& node) {
    const std::string admin = node.admin_address().empty() ? "none" : node.admin_address();
    spdlog::logger out("matchmesh", std::make_shared<spdlog::sinks::stdout_sink_mt>());
    out.set_formatter(matchmesh::node::make_log_formatter(config.node.log_format, config.node.id));
    matchmesh::node::log_event(out, spdlog::level::info,
                               {"ready",
                                {{"mesh", node.mesh_address()},
                                 {"client", node.client_address()},
                                 {"admin", admin},
                                 {"cluster", config.cluster.name}}},
                               "matchmesh node {} ready: mesh {} client {} admin {} cluster {}",
                               config.node.id, node.mesh_address(), node.client_address(), admin,
                               config.cluster.name);
    out.flush();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"matchmesh node: serves a share of the cluster's matchmaking store"};
    app.set_version_flag("--version", matchmesh::version_line("matchmesh"));
    std::string config_path;
    Overrides given;
    std::string log_level = "info";
    app.add_option("--config", config_path, "JSON config file")->required();
    app.add_option("--id", given.id, "node ID (overrides node.id; default: the host name)");
    app.add_option("--node-type", given.node_type, "node type (overrides node.nodeType)");
    app.add_option("--mesh-listen", given.mesh_listen,
                   "host:port of the mesh port (node.meshListen)");
    app.add_option("--mesh-advertise", given.mesh_advertise,
                   "host:port peers use to reach this node (node.meshAdvertise)");
    app.add_option("--client-listen", given.client_listen,
                   "host:port of the client port (node.clientListen)");
    app.add_option("--admin-listen", given.admin_listen,
                   "host:port of the metrics port (node.adminListen); 'none' for no port");
    app.add_option("--seeds", given.seeds, "seed nodes, host:port (overrides cluster.seeds)")
        ->delimiter(',');
    app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
    app.add_option("--log-format", given.log_format,
                   "text or json, one object a line (overrides node.logFormat)")
        ->check(CLI::Validator(
            [](const std::string& name) {
                auto format = matchmesh::config::log_format_named(name);
                return format ? std::string() : format.error();
            },
            "text|json"));
    CLI11_PARSE(app, argc, argv);

    auto loaded = matchmesh::config::load_file(config_path);
    if (!loaded) {
        std::fprintf(stderr, "matchmesh: %s\n", loaded.error().message.c_str());
        return 1;
    }
    matchmesh::config::Config config = std::move(*loaded);
    apply(given, config);
    if (auto valid = matchmesh::config::validate(config, config_path); !valid) {
        std::fprintf(stderr, "matchmesh: %s\n", valid.error().message.c_str());
        return 1;
    }

    auto log = std::make_shared<spdlog::logger>("matchmesh",
                                                std::make_shared<spdlog::sinks::stderr_sink_mt>());
    log->set_formatter(matchmesh::node::make_log_formatter(config.node.log_format, config.node.id));
    log->set_level(spdlog::level::from_str(log_level));

    auto node = matchmesh::node::Node::create(config, log);
    if (!node) {
        log->critical("matchmesh: {}", node.error());
        return 1;
    }
    print_ready_line(config, **node);
    return (*node)->run();
}
