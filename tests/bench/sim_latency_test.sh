#!/usr/bin/env bash
# matchmesh-bench-sim latency: the links' length it was given is the one it reports, a trip of no
# time leaves no search or join to wait on (virtual time: the same figures on every machine), and
# a length out of range is refused, naming the option, before anything runs.
set -euo pipefail
sim=$1
field() { python3 -c 'import json, sys; r = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

report=$("$sim" latency --rate 1000 --seconds 2 --link-ms 0 2>/dev/null)
[ "$(field 'r["link_ms"]' <<<"$report")" = 0 ]
[ "$(field 'r["fill_rate"] >= 0.99' <<<"$report")" = True ]
[ "$(field 'r["refused_joins_per_match"]' <<<"$report")" = 0.0 ]
report=$("$sim" latency --rate 1000 --seconds 2 --link-ms 3 2>/dev/null)
[ "$(field 'r["link_ms"]' <<<"$report")" = 3 ]

if error=$("$sim" latency --link-ms 1001 2>&1 >/dev/null); then
    echo "a link of 1001 ms was taken" >&2
    exit 1
fi
grep -q -- "--link-ms" <<<"$error"
echo "sim latency: ok"
