#!/usr/bin/env bash
# Fuzzes the decoders with libFuzzer: the mesh's frames, a client's command stream against a
# simulated cluster, and the config loader (tests/fuzz/).
#   scripts/fuzz.sh [--seconds N] [--merge] [target...]
#     targets: mesh_frames client_session config (default: all, one after another)
#     --seconds N  how long each target runs (default 600)
#     --merge      afterwards, add the inputs that reached new code to tests/fuzz/corpus/<target>
# Builds build/fuzz with Clang 16 (installed from Debian if missing), ASan and UBSan. Each target
# starts from its committed corpus and keeps what it finds in run/fuzz/<target>/; an input that
# breaks a rule is written to run/fuzz/crash-<target>-* and the script exits non-zero. Prints each
# target's executions, coverage and corpus size.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=600
merge=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --merge) merge=1; shift ;;
        mesh_frames | client_session | config) targets+=("$1"); shift ;;
        *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(mesh_frames client_session config)

"$root/scripts/setup.sh" --with-fuzz
build_dir="$root/build/fuzz"
CC=clang-16 CXX=clang++-16 cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    -DMATCHMESH_FUZZ=ON -DMATCHMESH_BUILD_BENCHMARKS=OFF -DMATCHMESH_INSTALL=OFF >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for target in "${targets[@]}"; do
    work="$root/run/fuzz/$target"
    mkdir -p "$work"
    log="$root/run/fuzz/$target.log"
    echo "fuzz: $target for ${seconds}s (log: $log)"
    # -rss_limit_mb: a target's own limits keep it far below this; -timeout: one input over 10 s
    # is a hang.
    if ! "$build_dir/bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$root/run/fuzz/crash-$target-" \
        "$work" "$root/tests/fuzz/corpus/$target" >"$log" 2>&1; then
        echo "fuzz: $target FAILED; the input is in run/fuzz/crash-$target-*" >&2
        tail -40 "$log" >&2
        status=1
        continue
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    corpus=$(find "$work" -type f | wc -l)
    echo "fuzz: $target clean: $runs inputs in ${seconds}s, $coverage, $corpus inputs kept"
    if [ "$merge" = 1 ]; then
        "$build_dir/bin/fuzz_$target" -merge=1 -max_len=65536 \
            "$root/tests/fuzz/corpus/$target" "$work" >>"$log" 2>&1
        echo "fuzz: $target corpus now $(find "$root/tests/fuzz/corpus/$target" -type f | wc -l) inputs"
    fi
done
exit "$status"
