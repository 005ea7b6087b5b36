#!/usr/bin/env bash
# Installs the Debian packages matchmesh builds and runs with, and only those that are missing.
# Idempotent: when everything is present it prints one line and changes nothing.
# Usage: scripts/setup.sh [--with-demo] [--with-bench] [--with-tests] [--with-fuzz]
set -euo pipefail

packages=(
    build-essential cmake pkg-config
    libasio-dev capnproto libcapnp-dev libxxhash-dev libspdlog-dev doctest-dev
    nlohmann-json3-dev libcli11-dev libssl-dev prometheus-cpp-dev libcivetweb-dev libhiredis-dev
)
for arg in "$@"; do
    case "$arg" in
        --with-demo) packages+=(gnuplot-nox) ;;
        --with-bench) packages+=(gnuplot-nox redis-server valgrind python3) ;;
        # The fault tests: network namespaces, the nodes' metrics, the load generator's report.
        --with-tests) packages+=(iproute2 curl python3) ;;
        # libFuzzer and its sanitizers come with Clang's runtime (scripts/fuzz.sh).
        --with-fuzz) packages+=(clang-16 libclang-rt-16-dev) ;;
        *) echo "setup.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup.sh: all dependencies present"
    exit 0
fi

echo "setup.sh: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q </dev/null
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
