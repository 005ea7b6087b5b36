#!/usr/bin/env bash
# Builds matchmesh and runs every test through CTest; exits non-zero on any failure.
#   scripts/test.sh            Release build in build/release
#   scripts/test.sh --asan     AddressSanitizer + UndefinedBehaviorSanitizer build in build/asan,
#                              then 30 s of fuzzing per fuzz target (scripts/fuzz.sh)
# Further arguments go to ctest (e.g. -R matching -V; then no fuzzing). With CI set, warnings are
# errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

mode=release
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
fuzz=0
if [ "${1:-}" = "--asan" ]; then
    shift
    mode=asan
    [ $# -gt 0 ] || fuzz=1
    # -O1 and line tables only: the sanitizers' reports keep file and line, and the build takes
    # half the time of -O2 -g (the WebSocket gateway's translation unit alone: 6 minutes to 3).
    cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
        -DMATCHMESH_SANITIZE=ON)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # The sanitizers make the simulated soak several times slower; a quarter of its tickets still
    # crosses every fault it injects.
    export MATCHMESH_SOAK_TICKETS=${MATCHMESH_SOAK_TICKETS:-5000}
    # The real-process fault tests (minutes of load with pauses and partitions) exercise no code
    # the other tests miss, and the package test builds the example outside the tree (two
    # minutes of compiling, no code of ours run); the release build runs them.
    set -- -LE "faults|package" "$@"
fi
if [ -n "${CI:-}" ]; then
    cmake_args+=(-DMATCHMESH_WERROR=ON)
fi

"$root/scripts/setup.sh" --with-demo --with-bench --with-tests
build_dir="$root/build/$mode"
jobs=$(nproc)
cmake -S "$root" -B "$build_dir" "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j"$jobs"
if [ "$mode" = release ]; then
    ln -sf "build/release/compile_commands.json" "$root/compile_commands.json"
fi
ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" "$@"
if [ "$fuzz" = 1 ]; then
    "$root/scripts/fuzz.sh" --seconds "${MATCHMESH_FUZZ_SECONDS:-30}"
fi
