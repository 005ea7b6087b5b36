#!/usr/bin/env bash
# Runs a local matchmesh cluster on loopback.
#   scripts/cluster.sh start N [--base-port P] [--config FILE]   start N nodes (default P = 7100)
#   scripts/cluster.sh status                                    which nodes run, and the members
#   scripts/cluster.sh stop                                      stop the nodes this script started
# Node i listens for the mesh on P+i, for clients on P+100+i and for metrics on P+200+i; with
# P = 0 the system picks free ports (each node's ready line in node-i.out names them). Logs,
# outputs, pids and the generated config live in run/cluster/ (or $MATCHMESH_RUN_DIR); `stop`
# signals only the processes recorded there. Binaries come from build/release (or
# $MATCHMESH_BIN_DIR, which must hold matchmesh and matchmesh-cli).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
run_dir="${MATCHMESH_RUN_DIR:-$root/run/cluster}"
build_dir="$root/build/release"
bin_dir="${MATCHMESH_BIN_DIR:-$build_dir/bin}"
node_binary="$bin_dir/matchmesh"
cli_binary="$bin_dir/matchmesh-cli"

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

ensure_built() {
    if [ ! -x "$node_binary" ] || [ ! -x "$cli_binary" ]; then
        "$root/scripts/setup.sh"
        cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
        cmake --build "$build_dir" -j"$(nproc)" --target matchmesh matchmesh-cli
    fi
}

# Whether pid file $1 names a live matchmesh process started from this run folder.
ours() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--config $run_dir/"
}

write_config() {
    local secret
    secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    cat >"$run_dir/cluster.json" <<JSON
{
  "cluster": {"name": "local", "secret": "$secret"},
  "matching": {
    "distributionRate": 50,
    "profiles": {"RankMatch": {"rank": 100}, "LevelMatch": {"level": 10},
                 "Duel": {"rank": 100}, "Arena": {"rank": 200}, "Team": {"rank": 100}}
  },
  "ticketTypes": {
    "1": {"name": "duel", "profiles": ["Duel"], "maxMembers": 2,
          "properties": {"rank": {"value": "rating", "searchSpread": 200}},
          "allowMatch": {"value": "rating", "maxDifference": 300},
          "ticketDurationSeconds": 20, "searchIntervalMs": 100, "searchTries": 1,
          "randomize": {"searchIntervalMs": 30, "searchTries": 1}},
    "2": {"name": "ffa5", "profiles": ["Arena"], "maxMembers": 5,
          "properties": {"rank": {"value": "rating", "searchSpread": 400}},
          "completeWhen": {"minMembers": 3, "afterSeconds": 8},
          "ticketDurationSeconds": 20, "searchIntervalMs": 150, "searchTries": 2,
          "randomize": {"searchIntervalMs": 50, "searchTries": 1}},
    "3": {"name": "3v3", "profiles": ["Team"],
          "properties": {"rank": {"value": "rating", "searchSpread": 400}},
          "teams": {"count": 2, "size": 3, "rating": "rating", "partyBonus": {"2": 20, "3": 40},
                    "maxTeamDifference": 100, "premadeParity": true},
          "partySize": {"max": 3},
          "ticketDurationSeconds": 20, "searchIntervalMs": 150, "searchTries": 2,
          "randomize": {"searchIntervalMs": 50, "searchTries": 1}}
  }
}
JSON
}

start() {
    local count=$1 base=$2 config=$3
    [[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le 50 ] ||
        { echo "cluster.sh: N must be 1..50" >&2; exit 2; }
    if compgen -G "$run_dir/node-*.pid" >/dev/null; then
        for pid_file in "$run_dir"/node-*.pid; do
            if ours "$pid_file"; then
                echo "cluster.sh: a cluster is already running (scripts/cluster.sh stop)" >&2
                exit 1
            fi
        done
    fi
    ensure_built
    mkdir -p "$run_dir"
    rm -f "$run_dir"/node-*
    if [ -n "$config" ]; then
        cp "$config" "$run_dir/cluster.json"
    else
        write_config
    fi
    # Node-1 seeds itself (fixed ports) or nobody (ports picked free): either way it is a cluster
    # of one until the others join through it.
    local seeds=()
    [ "$base" -ne 0 ] && seeds=(--seeds "127.0.0.1:$((base + 1))")
    for i in $(seq 1 "$count"); do
        local mesh=0 client=0 admin=0
        if [ "$base" -ne 0 ]; then
            mesh=$((base + i)) client=$((base + 100 + i)) admin=$((base + 200 + i))
        fi
        nohup "$node_binary" --config "$run_dir/cluster.json" --id "node-$i" \
            --mesh-listen "127.0.0.1:$mesh" --client-listen "127.0.0.1:$client" \
            --admin-listen "127.0.0.1:$admin" \
            "${seeds[@]}" >"$run_dir/node-$i.out" 2>"$run_dir/node-$i.log" </dev/null &
        echo $! >"$run_dir/node-$i.pid"
        for attempt in $(seq 1 401); do
            grep -q "ready:" "$run_dir/node-$i.out" 2>/dev/null && break
            if [ "$attempt" -eq 401 ]; then
                echo "cluster.sh: node-$i did not get ready in 20 s:" >&2
                tail -n 20 "$run_dir/node-$i.log" >&2
                stop
                exit 1
            fi
            if ! kill -0 "$(cat "$run_dir/node-$i.pid")" 2>/dev/null; then
                echo "cluster.sh: node-$i failed to start:" >&2
                cat "$run_dir/node-$i.log" >&2
                stop
                exit 1
            fi
            sleep 0.05
        done
        cat "$run_dir/node-$i.out"
        if [ "$base" -eq 0 ] && [ "$i" -eq 1 ]; then  # the others join through node-1
            seeds=(--seeds "$(sed -n 's/.* mesh \([^ ]*\) .*/\1/p' "$run_dir/node-1.out")")
        fi
    done
    echo "cluster of $count nodes running; logs in $run_dir"
    echo "try: $cli_binary --node $(sed -n 's/.* client \([^ ]*\) .*/\1/p' "$run_dir/node-1.out") members"
}

status() {
    local first=""
    if ! compgen -G "$run_dir/node-*.pid" >/dev/null; then
        echo "no cluster started from $run_dir"
        return 0
    fi
    for pid_file in "$run_dir"/node-*.pid; do
        local name
        name=$(basename "$pid_file" .pid)
        if ours "$pid_file"; then
            local client
            client=$(sed -n 's/.*client \([^ ]*\).*/\1/p' "$run_dir/$name.out")
            echo "$name running (pid $(cat "$pid_file"), client $client)"
            [ -z "$first" ] && first=$client
        else
            echo "$name stopped"
        fi
    done
    if [ -n "$first" ]; then
        echo "members seen by $first:"
        "$cli_binary" --node "$first" members || true
    fi
}

stop() {
    compgen -G "$run_dir/node-*.pid" >/dev/null || { echo "no cluster to stop"; return 0; }
    local pids=()
    for pid_file in "$run_dir"/node-*.pid; do
        if ours "$pid_file"; then
            pids+=("$(cat "$pid_file")")
        fi
    done
    if [ ${#pids[@]} -gt 0 ]; then
        kill -TERM "${pids[@]}" 2>/dev/null || true
        for _ in $(seq 1 100); do
            local alive=0
            for pid in "${pids[@]}"; do
                kill -0 "$pid" 2>/dev/null && alive=1
            done
            [ $alive -eq 0 ] && break
            sleep 0.05
        done
        for pid in "${pids[@]}"; do
            kill -KILL "$pid" 2>/dev/null || true
        done
    fi
    rm -f "$run_dir"/node-*.pid
    echo "stopped ${#pids[@]} nodes"
}

command=${1:-}
[ -n "$command" ] || usage
shift
case "$command" in
    start)
        count=${1:-}
        [ -n "$count" ] || usage
        shift
        base=7100
        config=""
        while [ $# -gt 0 ]; do
            case "$1" in
                --base-port) base=$2; shift 2 ;;
                --config) config=$2; shift 2 ;;
                *) usage ;;
            esac
        done
        start "$count" "$base" "$config"
        ;;
    status) status ;;
    stop) stop ;;
    *) usage ;;
esac
