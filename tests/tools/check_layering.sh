#!/usr/bin/env bash
# Checks that every module includes only the modules it may depend on (DESIGN.md):
#   node -> ticket -> matching -> mesh, and config (used by node) -> mesh/base; and Asio, sockets,
#   the real clock and unseeded randomness only in mesh/asio and the node's shell.
# Prints each offending include and exits non-zero if there is one.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

allowed_for() {
    case "$1" in
        mesh) echo "mesh" ;;
        config) echo "config mesh/base" ;;
        matching) echo "matching mesh" ;;
        ticket) echo "ticket matching mesh" ;;
        node) echo "node ticket matching mesh config" ;;
    esac
}

status=0
for module in mesh config matching ticket node; do
    [ -d "$module" ] || continue
    allowed=$(allowed_for "$module")
    while IFS= read -r line; do
        file=${line%%:*}
        target=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
        ok=0
        for prefix in $allowed; do
            case "$target" in
                "$prefix"/*) ok=1 ;;
            esac
        done
        # Generated Cap'n Proto headers and same-folder includes are the module's own.
        case "$target" in
            */*) ;;
            *) ok=1 ;;
        esac
        if [ $ok -eq 0 ]; then
            echo "layering: $file includes \"$target\", which $module/ may not depend on"
            status=1
        fi
    done < <(grep -rn --include='*.hpp' --include='*.cpp' --include='*.h' '#include "' "$module" || true)
done
# The runtime (Asio, sockets, the real clock, unseeded randomness) lives in mesh/asio and node's
# shell; the core and the simulation take Network, Scheduler and a seed instead.
core=(mesh matching ticket config node/admission.* node/client_commands.* node/client_protocol.*
    node/services.* node/session.* node/state_dump.* node/ticket_types.* node/token.*)
while IFS= read -r file; do
    echo "layering: $file includes Asio outside mesh/asio and node's shell"
    status=1
done < <(grep -rl --include='*.hpp' --include='*.cpp' '#include <asio' "${core[@]}" |
    grep -v '^mesh/asio/' || true)
while IFS= read -r line; do
    echo "layering: $line: the real clock, sockets or unseeded randomness in the core"
    status=1
done < <(grep -rnE --include='*.hpp' --include='*.cpp' \
    '[A-Za-z_]+_clock::now\(|random_device|#include <(sys/socket|netinet/|arpa/inet|netdb)' \
    "${core[@]}" | grep -v '^mesh/asio/' || true)
[ $status -eq 0 ] && echo "layering: every include follows the module direction"
exit $status
