#!/usr/bin/env bash
# Installs the Debian packages matchmesh builds and runs with, and only those that are missing;
# with --with-web or --with-tests, also the TypeScript SDK's npm packages (node/clients/typescript, from the
# npm registry, as its package-lock.json pins them).
# Idempotent: when everything is present it prints one line and changes nothing.
# Usage: scripts/setup.sh [--with-demo] [--with-web] [--with-bench] [--with-tests] [--with-fuzz]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
packages=(
    build-essential cmake pkg-config
    libasio-dev capnproto libcapnp-dev libxxhash-dev libspdlog-dev doctest-dev
    nlohmann-json3-dev libcli11-dev libssl-dev prometheus-cpp-dev libcivetweb-dev libhiredis-dev
    libjemalloc-dev libboost-dev
)
tools=()
npm_folders=()
web=0
for arg in "$@"; do
    case "$arg" in
        --with-demo) packages+=(gnuplot-nox) ;;
        --with-bench) packages+=(gnuplot-nox redis-server valgrind python3) ;;
        # The fault tests: network namespaces, the nodes' metrics, the load generator's report;
        # the deployment checks read the manifest and the alert rules (python3-yaml).
        # The TypeScript SDK and the playground build with Node.js (a machine without one gets
        # Debian's); their tests also run the playground in Debian's Chromium.
        --with-web) web=1 ;;
        --with-tests) packages+=(iproute2 curl python3 python3-yaml chromium) tools+=(promtool)
            web=1 ;;
        # libFuzzer and its sanitizers come with Clang's runtime (scripts/fuzz.sh).
        --with-fuzz) packages+=(clang-16 libclang-rt-16-dev) ;;
        *) echo "setup.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

if [ $web -eq 1 ]; then
    npm_folders+=(node/clients/typescript)
    command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -q </dev/null
    "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
fi

# promtool (the checker of metrics output and alert rules) for the tests, taken out of Debian's
# prometheus package into build/tools without installing the package: installing it would also
# install and start a Prometheus server on this machine.
for tool in "${tools[@]}"; do
    [ -x "$root/build/tools/$tool" ] && continue
    scratch=$(mktemp -d)
    if ! (cd "$scratch" && apt-get download -q prometheus >/dev/null 2>&1); then
        "${sudo_cmd[@]}" apt-get update -q </dev/null
        (cd "$scratch" && apt-get download -q prometheus >/dev/null)
    fi
    dpkg-deb -x "$scratch"/prometheus_*.deb "$scratch/root"
    install -D -m 0755 "$scratch/root/usr/bin/$tool" "$root/build/tools/$tool"
    rm -rf "$scratch"
    echo "setup.sh: $tool in build/tools (from Debian's prometheus package)"
    missing+=("$tool")
done

# npm packages: installed exactly as the lock file says, again only when it changed since.
for folder in "${npm_folders[@]}"; do
    stamp="$root/$folder/node_modules/.installed-lock.json"
    cmp -s "$root/$folder/package-lock.json" "$stamp" 2>/dev/null && continue
    (cd "$root/$folder" && npm ci --no-audit --no-fund --loglevel=error </dev/null)
    cp "$root/$folder/package-lock.json" "$stamp"
    echo "setup.sh: npm packages of $folder installed"
    missing+=("$folder")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup.sh: all dependencies present"
fi
