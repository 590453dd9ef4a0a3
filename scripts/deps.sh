#!/usr/bin/env bash
# Install the Debian packages that knit's build and tests need, when missing.
# Idempotent: does nothing (and needs no network) when everything is present.
#   deps.sh        what make and make test need
#   deps.sh fuzz   what make fuzz needs too (clang and libFuzzer)
#   deps.sh soak   what make soak needs too (python3, for its report)
set -eu
pkgs="gcc make pkg-config libfabric-dev libfabric-bin libseccomp-dev libhwloc-dev libopenblas-dev iproute2 procps libmicrohttpd-dev libpng-dev python3 gfortran g++"
if [ "${1:-}" = fuzz ]; then
    pkgs="$pkgs clang-14 libclang-rt-14-dev"
fi
if [ "${1:-}" = soak ]; then
    pkgs="$pkgs python3"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing"
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
    command -v sudo >/dev/null || { echo "deps: need root to install:$missing" >&2; exit 1; }
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
