#!/usr/bin/env bash
# The comparison in one run, on this machine: matchmesh (3 nodes on loopback, then 1 node) and
# the Redis baseline replay the same 1v1 arrival traces at rising rates; the ideal matcher scores
# each trace; a 3v3 run of mixed parties meets matchmesh and the ideal; the simulated cluster gives
# the costs noise cannot move (bytes per waiting ticket, cost against pool size, cost per match
# against cluster size, and with --instructions instructions per match and per newcomer to a
# waiting pool under callgrind).
#
#   scripts/bench.sh                  the full ramp, 250 to 14,000 arrivals/s and on to
#                                     40,000/s for a system that still keeps up, then past the
#                                     ceiling: a burst and twice the highest sustained rate; a
#                                     pause of every node under load; then one node alone,
#                                     ramped until it fails (about 25 minutes)
#   scripts/bench.sh --quick          three rates, short runs
#   scripts/bench.sh --instructions   also count instructions per match and per newcomer
#                                     (valgrind, slow)
# Then the WebSocket entrance (matchmesh-gateway) against the client port: round trips and CPU
# per command through each.
# Results: bench-results/ (or --out DIR): summary.json, table.md, ttm_cdf.png, ttm_vs_rate.png,
# scale.png, and every run's report under runs/. Installs what is missing (Redis included) and builds Release.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

quick=0
instructions=0
out_dir="$root/bench-results"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --instructions) instructions=1; shift ;;
        --out) out_dir=$2; shift 2 ;;
        *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done

"$root/scripts/setup.sh" --with-bench --with-web
build_dir="$root/build/release"
echo "bench: building (Release) in $build_dir"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target matchmesh matchmesh-cli matchmesh-bench \
    matchmesh-bench-sim matchmesh-bench-summary matchmesh-gateway >/dev/null
(cd "$root/node/clients/typescript" && npm run --silent build >/dev/null)
bin="$build_dir/bin"
export MATCHMESH_BIN_DIR="$bin"

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
rm -rf "$out_dir/runs" "$out_dir/traces"
mkdir -p "$out_dir/runs" "$out_dir/traces"
export MATCHMESH_RUN_DIR="$out_dir/cluster"

# The servers (the three nodes, Redis) get the first half of the CPUs and the load generator the
# other half, so that a ceiling is the server's and not the generator's, and a generator working
# hard past the ceiling does not take the CPU the servers serve with. With one CPU, all share it.
cpus=$(nproc)
if [ "$cpus" -ge 2 ] && command -v taskset >/dev/null; then
    span() { if [ "$1" -eq "$2" ]; then echo "$1"; else echo "$1-$2"; fi; }
    server_cpus=$(span 0 $((cpus / 2 - 1))) player_cpus=$(span $((cpus / 2)) $((cpus - 1)))
    on_players() { MATCHMESH_SERVER_CPUS=$server_cpus taskset -c "$player_cpus" "$@"; }
    pin_servers() { for pid in "$@"; do taskset -a -p -c "$server_cpus" "$pid" >/dev/null; done; }
    placement="servers on CPUs $server_cpus, the load generator on CPUs $player_cpus"
else
    on_players() { "$@"; }
    pin_servers() { :; }
    placement="servers and the load generator share the CPUs"
fi

redis_pid=""
cleanup() {
    # A node stopped by the pause run hears no SIGTERM until it runs again.
    cat "$MATCHMESH_RUN_DIR"/node-*.pid 2>/dev/null | xargs -r kill -CONT 2>/dev/null || true
    "$root/scripts/cluster.sh" stop >/dev/null 2>&1 || true
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Redis on a free loopback port, without persistence; another random port if one is taken.
for _ in 1 2 3 4 5; do
    redis_port=$((20000 + RANDOM % 20000))
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --logfile "$out_dir/redis.log" &
    redis_pid=$!
    pin_servers "$redis_pid"
    for _ in $(seq 1 100); do
        redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
        kill -0 "$redis_pid" 2>/dev/null || break  # it exited: the port was taken
        sleep 0.05
    done
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
done
[ -n "$redis_pid" ] || { echo "bench: redis-server did not start (see $out_dir/redis.log)" >&2; exit 1; }

# The local cluster's ticket types, with ticket durations at the minimum (10 s) so that each
# run's unmatched outliers time out soon after its last arrival.
"$root/scripts/cluster.sh" stop >/dev/null 2>&1 || true
"$root/scripts/cluster.sh" start 1 --base-port 0 >/dev/null
"$root/scripts/cluster.sh" stop >/dev/null
config="$out_dir/bench-config.json"
sed 's/"ticketDurationSeconds": 20/"ticketDurationSeconds": 10/' "$MATCHMESH_RUN_DIR/cluster.json" >"$config"
"$root/scripts/cluster.sh" start 3 --base-port 0 --config "$config" | grep "ready:"
pin_servers $(cat "$MATCHMESH_RUN_DIR"/node-*.pid)
address_of() { sed -n "s/.* $1 \([^ ]*\) .*/\1/p" "$MATCHMESH_RUN_DIR/node-$2.out"; }
nodes="$(address_of client 1),$(address_of client 2),$(address_of client 3)"
admins="$(address_of admin 1),$(address_of admin 2),$(address_of admin 3)"
sleep 1

if [ $quick -eq 1 ]; then
    rates=(250 500 1000) duration=5
else
    rates=(250 500 1000 2000 3000 4000 5000 6000 7000 8500 10500 14000) duration=8
fi
common=(--quiet --config "$config" --type 1 --rating-mean 1500 --rating-sd 300 --grace 15)
# A step's arrivals, made once per rate and replayed by every system, with the ideal's run on it.
make_trace() {
    local trace="$out_dir/traces/1v1-$1.jsonl"
    [ -f "$trace" ] && return 0
    "$bin/matchmesh-bench" "${common[@]}" --backend ideal --rate "$1" --duration "$duration" \
        --seed "$1" --trace-out "$trace" --samples "$out_dir/runs/ideal-$1.samples" \
        --json "$out_dir/runs/ideal-$1.json" >/dev/null
}
# matchmesh (runs/SYSTEM-RATE.json) at a rate, through the given client and admin addresses.
# Above 10,000 players a second they are split over processes (one may hold ~20,000 connections).
run_matchmesh() {
    echo "bench: $2 arrivals/s: $1"
    on_players "$bin/matchmesh-bench" "${common[@]}" --trace "$out_dir/traces/1v1-$2.jsonl" \
        --nodes "$3" --admin "$4" --processes $((($2 + 9999) / 10000)) \
        --samples "$out_dir/runs/$1-$2.samples" --json "$out_dir/runs/$1-$2.json" |
        grep -E "^all|server CPU|frames between nodes|load generator CPU" || true
}
run_redis() {
    echo "bench: $1 arrivals/s: Redis baseline"
    on_players "$bin/matchmesh-bench" "${common[@]}" --trace "$out_dir/traces/1v1-$1.jsonl" \
        --backend redis --redis "127.0.0.1:$redis_port" \
        --samples "$out_dir/runs/redis-$1.samples" --json "$out_dir/runs/redis-$1.json" |
        grep -E "^all|server CPU|load generator CPU" || true
}
# Whether a run (its report) sustained its rate, by the summary's criteria.
sustains() { "$bin/matchmesh-bench-summary" --sustains "$out_dir/runs/$1-$2.json" --rate "$2" >/dev/null 2>&1; }

for rate in "${rates[@]}"; do
    make_trace "$rate"
    run_matchmesh matchmesh "$rate" "$nodes" "$admins"
    run_redis "$rate"
done
# Past the listed rates, a system that sustained the last one goes on rising until it fails or
# reaches 40,000 arrivals a second, so that its ceiling is found rather than the ramp's top.
if [ $quick -eq 1 ]; then more_rates=(); else more_rates=(20000 28000 40000); fi
last=${rates[${#rates[@]} - 1]}
rising=()
for system in matchmesh redis; do
    if sustains "$system" "$last"; then rising+=("$system"); fi
done
for rate in "${more_rates[@]}"; do
    [ ${#rising[@]} -gt 0 ] || break
    make_trace "$rate"
    still=()
    for system in "${rising[@]}"; do
        if [ "$system" = redis ]; then run_redis "$rate"; else run_matchmesh matchmesh "$rate" "$nodes" "$admins"; fi
        if sustains "$system" "$rate"; then still+=("$system"); fi
    done
    rising=("${still[@]}")
done

# Team matches against the same cluster: 3v3 (type 3) of solos (70%), pairs (20%) and trios (10%),
# 600 players a second (the generator's rate counts parties: 600 / 1.4 players a party = 429),
# with the ideal on the same trace. Every match the cluster reports is checked against the rules.
team=(--quiet --config "$config" --type 3 --party 3:1=0.7 --party 3:2=0.2 --party 3:3=0.1
    --rating-mean 1500 --rating-sd 300 --grace 15)
if [ $quick -eq 1 ]; then team_duration=5; else team_duration=20; fi
trace="$out_dir/traces/3v3.jsonl"
"$bin/matchmesh-bench" "${team[@]}" --backend ideal --rate 429 --duration "$team_duration" \
    --seed 33 --trace-out "$trace" --json "$out_dir/runs/team-ideal.json" >/dev/null
echo "bench: 3v3, 600 players/s (429 parties/s) for ${team_duration}s: matchmesh"
on_players "$bin/matchmesh-bench" "${team[@]}" --trace "$trace" --nodes "$nodes" --admin "$admins" \
    --json "$out_dir/runs/team-matchmesh.json" | grep -E "^3 |^teams|^unfinished" || true

# Past the ceiling, against matchmesh: a burst of ten times the highest sustained rate for 4 s,
# then 200/s for 20 s; and a step at twice that rate. Players refused as overloaded try again
# after the node's hint, for up to 30 s; three player processes share the arrivals (one may hold
# at most ~20,000 connections here). A phase planned above 40,000 new players a second is capped
# to it; the summary records both rates, and the rate the players really arrived at.
"$bin/matchmesh-bench-summary" "$out_dir" >/dev/null
max_rate=$(python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))["matchmesh"]["max_rate"]))' \
    "$out_dir/summary.json")
offer_max=40000
offered() { echo $(($1 < offer_max ? $1 : offer_max)); }
if [ "$max_rate" -gt 0 ]; then
    burst_s=4 calm_s=20
    burst_rate=$(offered $((10 * max_rate)))
    step_rate=$(offered $((2 * max_rate)))
    printf '{"burst": {"planned_rate": %d, "offered_rate": %d}, "overload_2x": {"planned_rate": %d, "offered_rate": %d}}\n' \
        $((10 * max_rate)) "$burst_rate" $((2 * max_rate)) "$step_rate" >"$out_dir/runs/overload-rates.json"
    [ $quick -eq 1 ] && burst_s=2 calm_s=5
    overload=(--nodes "$nodes" --admin "$admins" --processes 3 --retry-patience 30)
    "$bin/matchmesh-bench" "${common[@]}" --backend ideal --rate "$burst_rate" \
        --duration "$burst_s" --seed 901 --trace-out "$out_dir/traces/burst-a.jsonl" >/dev/null
    "$bin/matchmesh-bench" "${common[@]}" --backend ideal --rate 200 --duration "$calm_s" \
        --seed 902 --trace-out "$out_dir/traces/burst-b.jsonl" >/dev/null
    python3 - "$out_dir/traces" <<'PY'
import json, sys
folder = sys.argv[1]
burst = open(f"{folder}/burst-a.jsonl").readlines()
offset = json.loads(burst[-1])["at"]  # the calm begins after the burst's last arrival
with open(f"{folder}/burst.jsonl", "w") as out:
    out.writelines(burst)
    for line in open(f"{folder}/burst-b.jsonl"):
        arrival = json.loads(line)
        arrival["at"] = round(arrival["at"] + offset, 6)
        out.write(json.dumps(arrival) + "\n")
PY
    echo "bench: burst: ${burst_rate}/s (planned $((10 * max_rate))/s) for ${burst_s}s, then 200/s for ${calm_s}s"
    on_players "$bin/matchmesh-bench" "${common[@]}" --trace "$out_dir/traces/burst.jsonl" "${overload[@]}" \
        --json "$out_dir/runs/burst.json" |
        grep -E "^all|lost|tried again|goodput|accepted arrivals" || true
    trace="$out_dir/traces/overload-2x.jsonl"
    "$bin/matchmesh-bench" "${common[@]}" --backend ideal --rate "$step_rate" \
        --duration "$duration" --seed 903 --trace-out "$trace" >/dev/null
    echo "bench: twice the highest sustained rate: ${step_rate}/s (planned $((2 * max_rate))/s) for ${duration}s"
    on_players "$bin/matchmesh-bench" "${common[@]}" --trace "$trace" "${overload[@]}" \
        --json "$out_dir/runs/overload_2x.json" |
        grep -E "^all|lost|tried again|goodput|accepted arrivals" || true
fi

# A pause of every node under load: at 70% of the highest sustained rate, the three nodes are
# stopped (SIGSTOP) for 200 ms about two seconds into an 8 s step, as when the host takes their
# CPU; the players arriving meanwhile queue in the nodes' accept queues. What a pause that short
# should cost is its own length plus draining what queued behind it.
if [ "$max_rate" -gt 0 ]; then
    pause_rate=$((max_rate * 7 / 1000 * 100))
    [ "$pause_rate" -ge 100 ] || pause_rate=100
    pause_ms=200
    make_trace "$pause_rate"
    printf '{"rate": %d, "pause_ms": %d}\n' "$pause_rate" "$pause_ms" >"$out_dir/runs/pause-plan.json"
    echo "bench: every node paused for ${pause_ms} ms at ${pause_rate}/s"
    pids=$(cat "$MATCHMESH_RUN_DIR"/node-*.pid)
    # The player process starts arriving about a second after it starts.
    pause_s=$(awk -v ms="$pause_ms" 'BEGIN { print ms / 1000 }')
    (sleep 3; kill -STOP $pids; sleep "$pause_s"; kill -CONT $pids) &
    pauser=$!
    on_players "$bin/matchmesh-bench" "${common[@]}" --trace "$out_dir/traces/1v1-$pause_rate.jsonl" \
        --nodes "$nodes" --admin "$admins" --json "$out_dir/runs/pause.json" |
        grep -E "^all|tried again|frames between|joins refused|server CPU" || true
    wait "$pauser" || kill -CONT $pids 2>/dev/null || true
fi
"$root/scripts/cluster.sh" stop >/dev/null

# One node alone, on the same CPUs and traces: its ramp rises until a rate fails (or 40,000/s).
if [ $quick -eq 1 ]; then single_rates=(500 1000); else single_rates=(2000 4000 7000 10500 14000 20000 28000 40000); fi
"$root/scripts/cluster.sh" start 1 --base-port 0 --config "$config" | grep "ready:"
pin_servers $(cat "$MATCHMESH_RUN_DIR"/node-*.pid)
sleep 1
for rate in "${single_rates[@]}"; do
    make_trace "$rate"
    run_matchmesh single_node "$rate" "$(address_of client 1)" "$(address_of admin 1)"
    sustains single_node "$rate" || break
done
"$root/scripts/cluster.sh" stop >/dev/null

echo "bench: remote searches with 20-item answers between two nodes"
"$bin/matchmesh-bench-mesh" --items 20 --json "$out_dir/mesh.json" | grep -E "pipelined|CPU per"

echo "bench: simulated cluster: memory per waiting ticket, cost against pool size"
"$bin/matchmesh-bench-sim" memory >"$out_dir/sim-memory.json"
pool_sizes=1000,10000,100000  # the pool run's, and its instruction counts' (--instructions)
"$bin/matchmesh-bench-sim" pool --sizes "$pool_sizes" >"$out_dir/sim-pool.json"
"$bin/matchmesh-bench-sim" matches >"$out_dir/sim-matches.json"
echo "bench: simulated cluster: time to match against the ideal, in virtual time"
"$bin/matchmesh-bench-sim" latency >"$out_dir/sim-latency.json"
echo "bench: simulated cluster: cost per match as the cluster grows"
if [ $quick -eq 1 ]; then scale_sizes=3,6,12,24; else scale_sizes=3,6,12,24,48,96,192; fi
"$bin/matchmesh-bench-sim" scale --nodes "$scale_sizes" >"$out_dir/sim-scale.json"
rm -f "$out_dir/instructions.txt" "$out_dir/scale-instructions.txt" "$out_dir/pool-instructions.txt"
if [ $instructions -eq 1 ]; then
    echo "bench: instructions per match (callgrind)"
    valgrind --tool=callgrind --toggle-collect='*run_matches*' --callgrind-out-file="$out_dir/callgrind.out" \
        "$bin/matchmesh-bench-sim" matches >/dev/null 2>"$out_dir/callgrind.log"
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out_dir/callgrind.out" >"$out_dir/instructions.txt"
    # The same per cluster size: CPU time on a shared machine drifts by half from run to run,
    # instructions do not. Only the arrivals' window counts, membership upkeep included, as
    # in cpu_us_per_match.
    echo "bench: instructions per match against cluster size (callgrind)"
    for nodes in ${scale_sizes//,/ }; do
        valgrind --tool=callgrind --toggle-collect='*SimulatedCluster::play*' \
            --callgrind-out-file="$out_dir/callgrind-each.out" \
            "$bin/matchmesh-bench-sim" scale --nodes "$nodes" >/dev/null 2>"$out_dir/callgrind.log"
        echo "$nodes $(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out_dir/callgrind-each.out")"
    done >"$out_dir/scale-instructions.txt"
    # And the newcomers' windows at each pool size: how a newcomer's own cost grows with the pool.
    echo "bench: instructions per newcomer against the waiting pool (callgrind)"
    for pool in ${pool_sizes//,/ }; do
        valgrind --tool=callgrind --toggle-collect='*measure_newcomer*' \
            --callgrind-out-file="$out_dir/callgrind-each.out" \
            "$bin/matchmesh-bench-sim" pool --sizes "$pool" >/dev/null 2>"$out_dir/callgrind.log"
        echo "$pool $(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out_dir/callgrind-each.out")"
    done >"$out_dir/pool-instructions.txt"
    rm -f "$out_dir/callgrind-each.out"
fi

# The WebSocket entrance (matchmesh-gateway) against the client port: the same commands at the
# same rate through each, round trips and CPU per command.
echo "bench: the WebSocket entrance against the client port"
on_players node "$root/node/clients/typescript/bench/entrance.mjs" --json "$out_dir/entrance.json" |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print("round trip p50 {} ms over TCP, {} ms over WebSocket; CPU per command: node {} us, gateway {} us".format(r["tcp"]["round_trip_ms"]["p50"], r["websocket"]["round_trip_ms"]["p50"], r["tcp"]["node_cpu_us_per_command"], r["websocket"]["gateway_cpu_us_per_command"]))'

placement="$cpus vCPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)): $placement"
"$bin/matchmesh-bench-summary" "$out_dir" --placement "$placement" --cdf-rate 1000
for chart in ttm_vs_rate ttm_cdf scale; do
    if [ -f "$out_dir/$chart.gp" ]; then
        gnuplot "$out_dir/$chart.gp" 2>/dev/null && echo "chart: $out_dir/$chart.png"
    fi
done
echo "summary: $out_dir/summary.json"
