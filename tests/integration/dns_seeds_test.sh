#!/usr/bin/env bash
# Seeds by DNS name: a name that resolves to several addresses (as a Kubernetes headless
# Service's name resolves to its pods) is enough for nodes to find each other. Three nodes on
# 127.0.0.1, 127.0.0.2 and 127.0.0.3, each given only "matchmesh-peers.test:PORT" as its seed,
# must form one cluster. The name is mapped in /etc/hosts inside a private mount namespace, so
# the machine's own resolver configuration is never touched.
#   dns_seeds_test.sh <matchmesh binary> <matchmesh-cli binary>
set -euo pipefail
node_binary=$1
cli_binary=$2

if [ "${3:-}" != "--inside" ]; then
    if ! unshare -m true 2>/dev/null; then
        echo "dns_seeds_test: cannot create a mount namespace (needs root); skipped" >&2
        exit 77
    fi
    exec unshare -m "$0" "$node_binary" "$cli_binary" --inside
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 1 40); do
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.05
    done
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

printf '127.0.0.1 localhost\n127.0.0.1 matchmesh-peers.test\n127.0.0.2 matchmesh-peers.test\n127.0.0.3 matchmesh-peers.test\n' \
    >"$work/hosts"
mount --bind "$work/hosts" /etc/hosts
cat >"$work/cluster.json" <<JSON
{"cluster": {"name": "dns", "secret": "dns-seeds-test-secret-0123456789",
             "heartbeatIntervalMs": 100, "deadAfterMs": 800}}
JSON

# Every node uses the same mesh port (as pods of one StatefulSet do); try a few random ports.
start_nodes() {
    local port=$1
    pids=()
    for i in 1 2 3; do
        "$node_binary" --config "$work/cluster.json" --id "node-$i" --mesh-listen "127.0.0.$i:$port" \
            --client-listen "127.0.0.$i:0" --admin-listen none --seeds "matchmesh-peers.test:$port" \
            >"$work/node-$i.out" 2>"$work/node-$i.log" </dev/null &
        pids+=($!)
    done
    for i in 1 2 3; do
        for _ in $(seq 1 200); do
            grep -q "ready:" "$work/node-$i.out" 2>/dev/null && break
            kill -0 "${pids[$((i - 1))]}" 2>/dev/null || return 1
            sleep 0.05
        done
        grep -q "ready:" "$work/node-$i.out" || return 1
    done
}
started=0
for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 30000))
    if start_nodes "$port"; then
        started=1
        break
    fi
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
done
[ $started -eq 1 ] || { echo "dns_seeds_test: the nodes did not start" >&2; cat "$work"/node-*.log >&2; exit 1; }

members_seen_by() {
    local client
    client=$(sed -n 's/.* client \([^ ]*\) .*/\1/p' "$work/node-$1.out")
    "$cli_binary" --node "$client" members 2>/dev/null | wc -l
}
for _ in $(seq 1 150); do
    if [ "$(members_seen_by 1)" -eq 3 ] && [ "$(members_seen_by 2)" -eq 3 ] && [ "$(members_seen_by 3)" -eq 3 ]; then
        echo "dns_seeds_test: three nodes seeded by one name formed one cluster"
        client=$(sed -n 's/.* client \([^ ]*\) .*/\1/p' "$work/node-1.out")
        "$cli_binary" --node "$client" members
        exit 0
    fi
    sleep 0.1
done
echo "dns_seeds_test: the nodes did not all see each other" >&2
for i in 1 2 3; do echo "--- node-$i sees $(members_seen_by "$i") members" >&2; tail -n 15 "$work/node-$i.log" >&2; done
exit 1
