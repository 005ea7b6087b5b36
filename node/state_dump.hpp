#pragma once
// What one node holds, for operators: its view of the members, its rooms and tickets, and its
// part of the store, as text (SIGUSR1) or JSON (the `dump` command). Reads only.

#include <iosfwd>

#include <nlohmann/json_fwd.hpp>

#include "mesh/base/time.hpp"
#include "mesh/network.hpp"
#include "node/services.hpp"

namespace matchmesh::node {

void dump_text(const mesh::Network& network, NodeServices& services, Time now, std::ostream& out);
[[nodiscard]] nlohmann::json dump_json(const mesh::Network& network, NodeServices& services,
                                       Time now);

}  // namespace matchmesh::node
