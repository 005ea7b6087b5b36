#!/usr/bin/env bash
# matchmesh-bench-summary: whether one run sustained its rate (the ramp's stop rule in bench.sh),
# the single node's ceiling and first failed rate in the summary of a run's folder (with what each
# step's tail is made of), and the remote searches' figures, the instructions per match against
# cluster size and per newcomer against the waiting pool beside them.
set -euo pipefail
summary=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/runs"
# A step's report: rate, p99, arrivals per second, goodput against the ideal's, generator share.
report() {
    cat >"$dir/runs/$1.json" <<JSON
{"unfinished": 0, "ttm_ms": {"p50": 2, "p99": $2}, "fill_rate": 1.0, "arrivals_per_s": $3,
 "goodput_per_s": $4, "cpu_s_per_1k_matches": 0.2, "generator_cpu_share": $5,
 "ideal": {"fill_rate": 1.0, "goodput_per_s": 1000, "ttm_ms": {"p50": 0, "p99": 4}}}
JSON
}
report single_node-2000 40 2000 1000 0.4
report single_node-4000 90 3990 990 0.7
report single_node-7000 30 5600 700 1.0   # the players arrived at 80% of the rate
report redis-7000 3 7000 1000 0.2
# A step's tail: players turned away who came back, joins spent on rooms already taken.
sed -i 's/"unfinished": 0,/"unfinished": 0, "refused_joins_per_match": 0.4, "players_retried": 12, "wakeups_per_match": 7.5,/' \
    "$dir/runs/single_node-4000.json"

"$summary" --sustains "$dir/runs/single_node-4000.json" --rate 4000 | grep -qx "sustained"
if "$summary" --sustains "$dir/runs/single_node-7000.json" --rate 7000; then
    echo "a step whose players arrived at 80% of its rate counted as sustained" >&2
    exit 1
fi
if "$summary" --sustains "$dir/runs/missing.json" --rate 7000 2>/dev/null; then
    echo "a missing report counted as sustained" >&2
    exit 1
fi
echo '{"pipelined_searches_per_s": 150000, "pipelined_cpu_us_per_search_searcher": 6.5}' \
    >"$dir/mesh.json"
# Cost against cluster size, with instructions counted for two of its three sizes.
cat >"$dir/sim-scale.json" <<'JSON'
{"rate": 500, "seconds": 10, "scale": [
 {"nodes": 3, "matches": 100, "frames_per_match": 8, "membership_frames_per_node_s": 4,
  "cpu_us_per_match": 80, "capacity": 37500},
 {"nodes": 6, "matches": 100, "frames_per_match": 12, "membership_frames_per_node_s": 4,
  "cpu_us_per_match": 90, "capacity": 66666},
 {"nodes": 96, "matches": 50, "frames_per_match": 18, "membership_frames_per_node_s": 4,
  "cpu_us_per_match": 180, "capacity": 533333}]}
JSON
printf '3 20000000\n96 16000000\n' >"$dir/scale-instructions.txt"
# Cost against the waiting pool, with instructions that grow tenfold over a hundredfold pool.
cat >"$dir/sim-pool.json" <<'JSON'
{"mode": "pool", "pool_growth_exponent": 0.2, "runs": [
 {"pool": 1000, "newcomers": 100, "cpu_us_per_newcomer": 20},
 {"pool": 100000, "newcomers": 100, "cpu_us_per_newcomer": 50}]}
JSON
printf '1000 10000000\n100000 100000000\n' >"$dir/pool-instructions.txt"
echo '{"mode": "latency", "ttm_ms": {"p99": 13}, "ideal_ttm_ms": {"p99": 3}, "ttm_p99_over_ideal_ms": 10,
      "refused_joins_per_match_by_reason": {"completed": 0.8}}' \
    >"$dir/sim-latency.json"
"$summary" "$dir" >/dev/null
python3 - "$dir/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["remote_searches"]["pipelined_searches_per_s"] == 150000, summary
single = summary["single_node"]
assert single["max_rate"] == 4000, single
assert single["failed_at_rate"] == 7000, single
assert single["generator_cpu_share_there"] == 1.0, single
assert summary["single_node_rate_ratio"] == round(4000 / 7000, 2), summary
steps = {step["rate"]: step for step in single["by_rate"]}
assert steps[4000]["refused_joins_per_match"] == 0.4, steps
assert steps[4000]["players_retried"] == 12, steps
assert steps[4000]["wakeups_per_match"] == 7.5, steps
assert "refused_joins_per_match" not in steps[2000], steps
scale = {size["nodes"]: size for size in summary["scale"]}
assert scale[3]["instructions_per_match"] == 200000, scale
assert scale[96]["instructions_per_match"] == 320000, scale
assert scale[3]["capacity_vs_smallest_by_instructions"] == 1.0, scale
assert scale[96]["capacity_vs_smallest_by_instructions"] == 20.0, scale
assert "instructions_per_match" not in scale[6], scale
pool = {run["pool"]: run for run in summary["sim_pool"]["runs"]}
assert pool[1000]["instructions_per_newcomer"] == 100000, pool
assert pool[100000]["instructions_per_newcomer"] == 1000000, pool
assert summary["pool_growth_exponent_by_instructions"] == 0.5, summary
assert summary["pool_growth_exponent"] == 0.2, summary
assert summary["sim_latency"]["ttm_p99_over_ideal_ms"] == 10, summary
assert summary["sim_latency"]["refused_joins_per_match_by_reason"] == {"completed": 0.8}, summary
PY
echo "summary: ok"
