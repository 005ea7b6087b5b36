#!/usr/bin/env bash
# matchmesh under load on this machine, in one command:
#   installs what is missing, builds Release, starts a 3-node cluster on loopback, runs
#   matchmesh-bench with simulated players (1v1 duels and 5-player free-for-all, ratings around
#   1500 +- 300, 500 arrivals per second for 30 s), prints the summary and where the report and
#   the chart are, and stops the cluster (also on Ctrl-C or failure).
#
#   scripts/demo.sh            the full run (about a minute, with the build already done)
#   scripts/demo.sh --quick    a short, lighter run (used by the test suite)
#   scripts/demo.sh --web      the cluster and the playground: prints the page's address and
#                              serves until Ctrl-C (with --quick: checks the page and stops)
#   --port P                   the playground's port with --web (default 7300; 0: any free one)
# Results go to run/demo/ (or --out DIR). With MATCHMESH_BIN_DIR set, its binaries are used
# as they are (no install, no build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

quick=0
web=0
port=7300
out_dir="$root/run/demo"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --web) web=1; shift ;;
        --port) port=$2; shift 2 ;;
        --out) out_dir=$2; shift 2 ;;
        *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done

sdk="$root/node/clients/typescript"
if [ -z "${MATCHMESH_BIN_DIR:-}" ]; then
    if [ $web -eq 1 ]; then "$root/scripts/setup.sh" --with-web; else "$root/scripts/setup.sh" --with-demo; fi
    build_dir="$root/build/release"
    echo "demo: building (Release) in $build_dir"
    cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build_dir" -j"$(nproc)" --target matchmesh matchmesh-cli matchmesh-bench \
        $([ $web -eq 1 ] && echo matchmesh-gateway) >/dev/null
    export MATCHMESH_BIN_DIR="$build_dir/bin"
fi
if [ $web -eq 1 ]; then
    echo "demo: building the playground (the TypeScript SDK and its page)"
    (cd "$sdk" && npm run --silent build >/dev/null)
fi
bench="$MATCHMESH_BIN_DIR/matchmesh-bench"

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
export MATCHMESH_RUN_DIR="$out_dir/cluster"
cluster() { "$root/scripts/cluster.sh" "$@"; }
trap 'cluster stop >/dev/null 2>&1 || true' EXIT
cluster stop >/dev/null 2>&1 || true
echo "demo: starting 3 nodes on loopback"
cluster start 3 --base-port 0 | grep "ready:"

address_of() {  # address_of <client|admin> <node number>
    sed -n "s/.* $1 \([^ ]*\) .*/\1/p" "$MATCHMESH_RUN_DIR/node-$2.out"
}
nodes="$(address_of client 1),$(address_of client 2),$(address_of client 3)"
admins="$(address_of admin 1),$(address_of admin 2),$(address_of admin 3)"
# Give the three nodes a moment to see each other before players arrive.
for _ in $(seq 1 100); do
    [ "$("$MATCHMESH_BIN_DIR/matchmesh-cli" --node "$(address_of client 3)" members | wc -l)" -ge 3 ] && break
    sleep 0.05
done

if [ $web -eq 1 ]; then
    gateway_pid=""
    trap '[ -n "$gateway_pid" ] && kill "$gateway_pid" 2>/dev/null; cluster stop >/dev/null 2>&1 || true' EXIT
    "$MATCHMESH_BIN_DIR/matchmesh-gateway" --listen "127.0.0.1:$port" --nodes "$nodes" \
        --admin "$admins" --web-root "$sdk/web" >"$out_dir/gateway.out" 2>"$out_dir/gateway.log" &
    gateway_pid=$!
    for _ in $(seq 1 100); do
        grep -q "ready:" "$out_dir/gateway.out" 2>/dev/null && break
        kill -0 "$gateway_pid" 2>/dev/null || { cat "$out_dir/gateway.log" >&2; exit 1; }
        sleep 0.05
    done
    page=$(sed -n 's/.* http \([^ ]*\).*/\1/p' "$out_dir/gateway.out")
    echo "demo: the playground is at $page (WebSocket ${page/http/ws}ws); gateway log: $out_dir/gateway.log"
    if [ $quick -eq 1 ]; then
        grep -q "matchmesh playground" <<<"$(curl -sf "$page")"
        for _ in $(seq 1 50); do  # every node's metrics, once each sees the other two
            [ "$(curl -sf "${page}cluster" | grep -c "^matchmesh_members_alive 3$")" -eq 3 ] && break
            sleep 0.1
        done
        [ "$(curl -sf "${page}cluster" | grep -c "^matchmesh_members_alive 3$")" -eq 3 ]
        echo "demo: the page and the cluster's metrics answer"
        exit 0
    fi
    echo "demo: Ctrl-C stops the playground and the cluster"
    wait "$gateway_pid"
    exit 0
fi

if [ $quick -eq 1 ]; then
    rate=100 duration=5
else
    rate=500 duration=30
fi
echo "demo: $rate players/s for $duration s (type 1: 1v1 duel, type 2: 5-player free-for-all)"
"$bench" --nodes "$nodes" --admin "$admins" --rate "$rate" --duration "$duration" \
    --type 1=0.7 --type 2=0.3 --party 2:1=0.8 --party 2:2=0.2 \
    --rating-mean 1500 --rating-sd 300 --grace 30 --config "$MATCHMESH_RUN_DIR/cluster.json" \
    --json "$out_dir/report.json" --chart "$out_dir/time_to_match.png"

cluster stop >/dev/null
trap - EXIT
echo "demo: cluster stopped; node logs in $MATCHMESH_RUN_DIR"
