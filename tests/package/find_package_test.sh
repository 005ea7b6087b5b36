#!/usr/bin/env bash
# Proves the installed package is complete and usable on its own: installs this build tree into a
# temporary prefix, builds node/examples against it the way a game's project would
# (find_package(matchmesh) + matchmesh::node), and runs the example, which exits 0 only if its
# callbacks decided the matches.
#   find_package_test.sh <cmake> <build dir> <source dir> <build type> <C compiler> <C++ compiler>
#                        [<sanitizer flags>]
# The sanitizer flags are those the build tree was compiled with (empty if none): the example is
# compiled and linked with them too.
set -euo pipefail
cmake=$1 build_dir=$2 source_dir=$3 build_type=$4 c_compiler=$5 cxx_compiler=$6
sanitizer_flags=${7:-}

work=$(mktemp -d "${TMPDIR:-/tmp}/matchmesh-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

step() {
    local name=$1
    shift
    echo "== $name"
    if ! "$@" >"$work/$name.log" 2>&1; then
        cat "$work/$name.log"
        echo "find_package_test: $name failed"
        exit 1
    fi
}

step install "$cmake" --install "$build_dir" --prefix "$prefix"

# The package must not point back into the trees it was built from.
package_dir=$(find "$prefix" -type d -path '*/cmake/matchmesh')
if grep -rlF -e "$source_dir/" -e "$build_dir/" "$package_dir"; then
    echo "find_package_test: the installed package refers to the source or build tree"
    exit 1
fi

configure=(-S "$source_dir/node/examples" -B "$work/build"
    -DCMAKE_BUILD_TYPE="$build_type"
    -DCMAKE_C_COMPILER="$c_compiler" -DCMAKE_CXX_COMPILER="$cxx_compiler"
    -DCMAKE_PREFIX_PATH="$prefix"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if [ -n "$sanitizer_flags" ]; then
    configure+=(-DCMAKE_C_FLAGS="$sanitizer_flags" -DCMAKE_CXX_FLAGS="$sanitizer_flags"
        -DCMAKE_EXE_LINKER_FLAGS="$sanitizer_flags")
fi
step configure "$cmake" "${configure[@]}"
found=$(sed -n 's/^matchmesh_DIR:PATH=//p' "$work/build/CMakeCache.txt")
case "$found" in
    "$prefix"/*) echo "found the package in $found" ;;
    *) echo "find_package_test: found matchmesh in '$found', not in $prefix"; exit 1 ;;
esac
step build "$cmake" --build "$work/build" -j2

echo "== run"
"$work/build/region_match"
