#!/usr/bin/env bash
# A node paused or cut off under load: every ticket still ends, the cluster heals into one view,
# and the traffic between nodes returns to its idle level.
#
# Three nodes and the load generator each run in a network namespace of their own, joined by veth
# pairs to a bridge in a fifth namespace, with addresses assigned inside those namespaces only.
# `matchmesh-bench` plays 500 players a second (1v1 duels) while, 5 s in, node-3 is either frozen
# (SIGSTOP, then SIGCONT) or cut off from the other two nodes (blackhole routes on both sides; its
# players still reach it) for the given number of seconds. Passes when:
#   - no ticket is lost: every started ticket got its terminal push (the bench's `unfinished`);
#   - every node sees the same three members within the documented bound after the fault ends
#     (for three nodes the README's bound is handshakeTimeoutMs + 5 protocol periods; this test
#     holds the tighter handshakeTimeoutMs + 2 periods, plus 1 s for its polling);
#   - frames between nodes per second, once the load is over, are within 2x their idle level;
#   - no node logged an error.
#   faults_test.sh <matchmesh> <matchmesh-cli> <matchmesh-bench> pause|partition <seconds>
set -euo pipefail
node_binary=$1
cli_binary=$2
bench_binary=$3
fault=$4
fault_s=$5
case "$fault" in pause | partition) ;; *) echo "faults_test: unknown fault '$fault'" >&2; exit 2 ;; esac

if [ "$(id -u)" -ne 0 ] || ! ip netns add "mmprobe$$" 2>/dev/null; then
    echo "faults_test: cannot create network namespaces (needs root and iproute2); skipped" >&2
    exit 77
fi
ip netns del "mmprobe$$"

tag="mm$$"
subnet=10.213.0
work=$(mktemp -d)
pids=()
namespaces=()
cleanup() {
    for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    if [ -n "${MATCHMESH_KEEP_TEST_FILES:-}" ]; then
        echo "faults_test: files kept in $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
say() { echo "faults_test [$fault ${fault_s}s]: $*"; }
fail() {
    echo "faults_test [$fault ${fault_s}s]: FAILED: $*" >&2
    for i in 1 2 3; do
        echo "--- node-$i log (last 25 lines)" >&2
        tail -n 25 "$work/node-$i.log" >&2 || true
    done
    exit 1
}

# --- the network: a bridge in "hub", one namespace per node (.1-.3) and one for the players (.100)
hub="$tag-hub"
ip netns add "$hub"
namespaces+=("$hub")
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
attach() {  # attach <namespace> <host number>
    local ns=$1 host=$2
    ip netns add "$ns"
    namespaces+=("$ns")
    ip link add "v${tag}h$host" type veth peer name "v${tag}b$host" netns "$hub"
    ip link set "v${tag}h$host" netns "$ns"
    ip -n "$hub" link set "v${tag}b$host" master br0 up
    ip -n "$ns" addr add "$subnet.$host/24" dev "v${tag}h$host"
    ip -n "$ns" link set "v${tag}h$host" up
    ip -n "$ns" link set lo up
}
for i in 1 2 3; do attach "$tag-n$i" "$i"; done
attach "$tag-players" 100

# --- the cluster: the stock failure detection (a probe each 500 ms, suspects dead after 3 s)
heartbeat_ms=500
dead_after_ms=3000
handshake_ms=3000
cat >"$work/cluster.json" <<JSON
{"cluster": {"name": "faults", "secret": "faults-test-secret-0123456789",
             "heartbeatIntervalMs": $heartbeat_ms, "deadAfterMs": $dead_after_ms},
 "limits": {"handshakeTimeoutMs": $handshake_ms},
 "matching": {"profiles": {"Duel": {"rank": 100}}},
 "ticketTypes": {"1": {"name": "duel", "profiles": ["Duel"], "maxMembers": 2,
                       "properties": {"rank": {"value": "rating", "searchSpread": 200}},
                       "ticketDurationSeconds": 10, "searchIntervalMs": 200, "searchTries": 3}}}
JSON
for i in 1 2 3; do
    ip netns exec "$tag-n$i" "$node_binary" --config "$work/cluster.json" --id "node-$i" \
        --mesh-listen "$subnet.$i:7100" --client-listen "$subnet.$i:7200" \
        --admin-listen "$subnet.$i:7300" --seeds "$subnet.1:7100" \
        >"$work/node-$i.out" 2>"$work/node-$i.log" </dev/null &
    pids+=($!)
done
node3_pid=${pids[2]}
in_players() { ip netns exec "$tag-players" "$@"; }
members_of() {  # the member IDs node $1 sees, on one line
    in_players "$cli_binary" --node "$subnet.$1:7200" members 2>/dev/null | awk '{print $1}' | tr '\n' ' '
}
one_view() {
    local view
    view=$(members_of 1)
    [ "$view" = "node-1 node-2 node-3 " ] && [ "$(members_of 2)" = "$view" ] && [ "$(members_of 3)" = "$view" ]
}
for _ in $(seq 1 100); do one_view && break; sleep 0.1; done
one_view || fail "the cluster did not form"

frames_out() {  # frames sent between nodes so far, all nodes together
    local total=0 n
    for i in 1 2 3; do
        n=$(in_players curl -s --max-time 2 "http://$subnet.$i:7300/metrics" |
            awk '/^matchmesh_mesh_frames_total\{direction="out"\}/ {printf "%d", $2}')
        total=$((total + ${n:-0}))
    done
    echo "$total"
}
frames_per_second() {  # over the next 3 s
    local before after
    before=$(frames_out)
    sleep 3
    after=$(frames_out)
    echo $(((after - before) / 3))
}
idle=$(frames_per_second)
say "cluster formed; idle traffic $idle frames/s between nodes"

# --- load, and the fault 5 s into it
arrivals_s=$((5 + fault_s + 10))
in_players "$bench_binary" --nodes "$subnet.1:7200,$subnet.2:7200,$subnet.3:7200" \
    --config "$work/cluster.json" --rate 500 --duration "$arrivals_s" --type 1=1 --party 1=1 \
    --grace 40 --seed "$$" --json "$work/report.json" --records "$work/records.jsonl" \
    --quiet >"$work/bench.out" 2>&1 &
bench_pid=$!
pids+=("$bench_pid")
sleep 5
cut() {  # cut add|del: node-3 and the other two nodes lose each other (players still reach all)
    for i in 1 2; do
        ip -n "$tag-n3" route "$1" blackhole "$subnet.$i/32"
        ip -n "$tag-n$i" route "$1" blackhole "$subnet.3/32"
    done
}
if [ "$fault" = pause ]; then
    say "SIGSTOP node-3 for ${fault_s}s under load"
    kill -STOP "$node3_pid"
    sleep "$fault_s"
    kill -CONT "$node3_pid"
else
    say "cutting node-3 off from node-1 and node-2 for ${fault_s}s under load"
    cut add
    sleep "$fault_s"
    cut del
fi
ended=$(date +%s%N)
converged_ms=-1
for _ in $(seq 1 300); do
    if one_view; then
        converged_ms=$((($(date +%s%N) - ended) / 1000000))
        break
    fi
    sleep 0.05
done
bound_ms=$((handshake_ms + 2 * heartbeat_ms + 1000))
[ "$converged_ms" -ge 0 ] || fail "the nodes never agreed on one view: $(members_of 1)| $(members_of 2)| $(members_of 3)"
say "one view on every node ${converged_ms} ms after the fault ended (bound ${bound_ms} ms)"
[ "$converged_ms" -le "$bound_ms" ] || fail "one view took ${converged_ms} ms, over the bound"

wait "$bench_pid" || fail "matchmesh-bench failed: $(tail -n 5 "$work/bench.out")"
read -r started matched timed_out canceled unfinished refused < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["tickets_started"], r["completed"], r["timed_out"], r["canceled"], r["unfinished"], r["refused"])
' "$work/report.json")
say "tickets: started $started, matched $matched, timed out $timed_out, canceled $canceled, lost $unfinished, refused $refused"
if [ "$unfinished" -ne 0 ]; then
    # Each lost ticket's owner and the node it started on, and what the nodes logged of them.
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["outcome"] == 4:  # accepted, and no terminal push: lost
        print(r["user"], r["node"], "accepted at %.3f s" % r["accepted_s"])
' "$work/records.jsonl" | head -n 20 >"$work/lost.txt" || true
    echo "--- lost tickets (user, node)" >&2
    cat "$work/lost.txt" >&2
    while read -r user _; do
        grep -h -- "$user\b" "$work"/node-*.log | head -n 5 >&2 || true
    done <"$work/lost.txt"
    fail "$unfinished tickets got no terminal push"
fi
[ "$matched" -gt 0 ] || fail "nothing matched"

# A node refreshes its metrics once a second, so a scrape can be up to 1 s old: the measurement
# starts 2 s after the last ticket ended, lest the load's final second count as traffic after it.
sleep 2
after=$(frames_per_second)
say "traffic between nodes after the load: $after frames/s (idle before: $idle)"
[ "$after" -le $((2 * idle + 10)) ] || fail "frames/s stayed at $after, idle is $idle"
if grep -h " error \[" "$work"/node-*.log; then
    fail "a node logged an error"
fi
one_view || fail "the view split again: $(members_of 1)| $(members_of 2)| $(members_of 3)"
say "passed"
