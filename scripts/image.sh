#!/usr/bin/env bash
# Builds the matchmesh container image from Debian packages, without a container registry: a
# root file system holding only the libraries that `matchmesh`, `matchmesh-cli` and
# `matchmesh-gateway` link (the Debian packages that own them, found with ldd and dpkg -S on this
# machine, unpacked by mmdebstrap from the same Debian release), the programs installed from the
# build folder, and
# the non-root user the Kubernetes manifest runs as (10001). No shell, no package manager.
#
# It writes run/image/matchmesh-<version>-rootfs.tar, then imports it as matchmesh:<version> with
# podman, with the node as its entrypoint, and runs `matchmesh --version` in a container. The
# tarball imports on any other machine too:
#     podman import --change 'ENTRYPOINT ["/usr/local/bin/matchmesh"]' \
#         --change 'USER 10001:10001' run/image/matchmesh-0.1.0-rootfs.tar matchmesh:0.1.0
#
# Usage: scripts/image.sh [--build DIR] [--mirror URL] [--no-import]
#   --build DIR   the build folder to install from (default build/release; built if missing)
#   --mirror URL  the Debian mirror (default http://deb.debian.org/debian)
#   --no-import   write the tarball only
# Needs mmdebstrap (apt-get install mmdebstrap), and podman to import. Run as root it
# unpacks as root; otherwise in a user namespace (mmdebstrap's unshare mode).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir="$root/build/release"
mirror="http://deb.debian.org/debian"
import=1
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build_dir=$(realpath "$2"); shift 2 ;;
        --mirror) mirror=$2; shift 2 ;;
        --no-import) import=0; shift ;;
        *) echo "image.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
uid=10001  # runAsUser and runAsGroup in scripts/k8s/matchmesh.yaml
out_dir="$root/run/image"

if ! command -v mmdebstrap >/dev/null; then
    echo "image.sh: mmdebstrap is missing: apt-get install mmdebstrap" >&2
    exit 1
fi
# The programs link this machine's libraries, so the image comes from this machine's release.
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ "$(. /etc/os-release && echo "$ID")" != debian ] || [ -z "$suite" ]; then
    echo "image.sh: this machine is not Debian: the image takes the libraries of the release" \
        "the programs were built on" >&2
    exit 1
fi
programs=(matchmesh matchmesh-cli matchmesh-gateway)
for program in "${programs[@]}"; do
    if [ ! -x "$build_dir/bin/$program" ]; then
        cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
        nice -n 19 cmake --build "$build_dir" --target "${programs[@]}"
        break
    fi
done
version=$("$build_dir/bin/matchmesh" --version | awk '{print $2}')

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The installed programs (the install rules also put the library and its headers in place: the
# image keeps only bin/), stripped.
cmake --install "$build_dir" --prefix "$stage/install" --strip >/dev/null
mkdir -p "$stage/root/usr/local/bin" "$stage/root/etc"
install -m 0755 "${programs[@]/#/$stage/install/bin/}" "$stage/root/usr/local/bin/"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' >"$stage/root/etc/passwd"
printf 'matchmesh:x:%s:%s:matchmesh:/nonexistent:/usr/sbin/nologin\n' "$uid" "$uid" \
    >>"$stage/root/etc/passwd"
printf 'root:x:0:\nmatchmesh:x:%s:\n' "$uid" >"$stage/root/etc/group"

# The Debian package owning each library the programs load (the loader included). With merged
# /usr a library's path may be registered with or without the /usr prefix.
owner_of() {
    local path owner
    for path in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
        if owner=$(dpkg-query -S "$path" 2>/dev/null); then
            echo "${owner%%:*}"
            return
        fi
    done
    echo "image.sh: no Debian package owns $1" >&2
    return 1
}
libraries=$(ldd "${programs[@]/#/$stage/root/usr/local/bin/}" |
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u)
packages=$(for library in $libraries; do owner_of "$library"; done | sort -u | paste -sd, -)
echo "image.sh: $suite packages: $packages"

mode=root
if [ "$(id -u)" -ne 0 ]; then
    mode=unshare
fi
mkdir -p "$out_dir"
tarball="$out_dir/matchmesh-$version-rootfs.tar"
# extract: these packages' files only, no maintainer scripts and none of Debian's essential set
# (the customize stage does not run in this variant: the extract hooks do the rest). The last hook
# runs the node in the finished tree, which fails if a library is missing.
SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s) \
    nice -n 19 mmdebstrap --quiet --mode="$mode" --variant=extract --include="$packages" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --skip=output/dev \
    --extract-hook="sync-in '$stage/root' /" \
    --extract-hook='rm -rf "$1"/usr/share/doc "$1"/usr/share/man "$1"/usr/share/lintian \
        "$1"/usr/share/gdb "$1"/usr/share/gcc' \
    --extract-hook='chroot "$1" /usr/local/bin/matchmesh --version' \
    "$suite" "$tarball" "$mirror"
echo "image.sh: image root in $tarball ($(du -h "$tarball" | cut -f1))"

[ "$import" -eq 1 ] || exit 0
image="matchmesh:$version"
import_with_podman() {
    podman import --change 'ENTRYPOINT ["/usr/local/bin/matchmesh"]' --change "USER $uid:$uid" \
        --change 'EXPOSE 7100' --change 'EXPOSE 7200' --change 'EXPOSE 7300' \
        --change "LABEL org.opencontainers.image.version=$version" "$tarball" "$image" ||
        return 1
    # The tree was checked above; a container that cannot start here (a sandbox without
    # cgroups or rlimits to give) says something about this machine, not the image.
    if ! podman run --rm "$image" --version; then
        echo "image.sh: imported, but podman could not start a container on this machine" \
            "(its error is above)" >&2
    fi
}
if ! command -v podman >/dev/null; then
    echo "image.sh: podman is not installed: the tarball above is the image's root, to import" \
        "where it is (see the top of this script)" >&2
    exit 0
fi
if ! import_with_podman; then
    echo "image.sh: podman import failed (its error is above): the tarball above is the" \
        "image's root, to import on a machine where it works" >&2
    exit 3
fi
echo "image.sh: imported as $image"
