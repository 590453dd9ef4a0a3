#!/usr/bin/env bash
# Install the Debian packages that knit's build and tests need, when missing.
# Idempotent: does nothing (and needs no network) when everything is present.
#   deps.sh        what make and make test need
#   deps.sh fuzz   what make fuzz needs too (clang and libFuzzer)
#   deps.sh soak   what make soak needs too (python3, for its report)
#   deps.sh slurm  only the optional packages below
# Optional packages (every mode but fuzz and soak, unless KNIT_OPTIONAL_DEPS=0):
# Slurm (slurm-wlm; its mpi_pmix plugin dlopens the libpmix.so of
# libpmix-dev, a required package) for the tests under srun (tests/launch/slurm.sh); they are tried
# once the required ones are in, and a failure to get them (no network, no
# root, apt busy) is reported and never fails the build: those tests SKIP.
# Their postinst would start munge/slurmd/slurmctld: a policy-rc.d denies
# that during the install, and any daemon that started anyway is stopped.
set -eu
mode=${1:-}
optional="slurm-wlm"
[ "${KNIT_OPTIONAL_DEPS:-1}" = 0 ] && optional=""
# libpmix-dev: pmix.h for src/boot/pmix.c; Open MPI's mpirun and MPICH's
# mpiexec: the launchers tests/launch runs knit under; their -dev packages
# (mpi.h, which --no-install-recommends leaves out): bench/compare and the
# MPI programs tests/launch builds with mpicc.openmpi and mpicc.mpich;
# gfortran and g++: the Fortran binding and the C++ wrapper
pkgs="gcc make pkg-config libfabric-dev libfabric-bin libseccomp-dev libhwloc-dev libopenblas-dev iproute2 procps libmicrohttpd-dev libpng-dev python3 libpmix-dev openmpi-bin mpich libopenmpi-dev libmpich-dev gfortran g++"
if [ "$mode" = fuzz ]; then
    pkgs="$pkgs clang-14 libclang-rt-14-dev"
    optional=""
fi
if [ "$mode" = soak ]; then
    pkgs="$pkgs python3"
    optional=""
fi
if [ "$mode" = slurm ]; then
    pkgs=""
    optional="slurm-wlm"
fi
missing_of() {
    local p out=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out="$out $p"
    done
    echo "$out"
}
# shellcheck disable=SC2086
missing=$(missing_of $pkgs)
# shellcheck disable=SC2086
opt_missing=$(missing_of $optional)
[ -z "$missing" ] && [ -z "$opt_missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
    if ! command -v sudo >/dev/null; then
        [ -n "$missing" ] && { echo "deps: need root to install:$missing" >&2; exit 1; }
        echo "deps: optional, not installed (needs root):$opt_missing"
        exit 0
    fi
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
updated=0
if [ -n "$missing" ]; then
    echo "deps: installing:$missing"
    $SUDO apt-get update -qq
    updated=1
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
[ -z "$opt_missing" ] && exit 0

# Optional packages: never fail from here on.
set +e
echo "deps: installing (optional):$opt_missing"
daemons="munged slurmd slurmctld slurmstepd"
# shellcheck disable=SC2086
before=$(pidof $daemons 2>/dev/null)
active_before=
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    for u in munge slurmd slurmctld; do
        if systemctl is-active -q "$u" 2>/dev/null; then
            active_before="$active_before $u=active"
        else
            active_before="$active_before $u=inactive"
        fi
    done
fi
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs\nexit 101\n' | $SUDO tee "$policy" >/dev/null &&
        $SUDO chmod 755 "$policy" && made_policy=1
fi
ok=1
if [ "$updated" = 0 ]; then
    timeout 300 $SUDO apt-get update -qq || ok=0
fi
if [ "$ok" = 1 ]; then
    # shellcheck disable=SC2086
    timeout 600 $SUDO apt-get install -y -qq --no-install-recommends $opt_missing >/tmp/knit-deps-optional.$$.log 2>&1 || ok=0
fi
[ "$made_policy" = 1 ] && $SUDO rm -f "$policy"
# a daemon the install started (no policy-rc.d honoured, systemd): stop it
# shellcheck disable=SC2086
for pid in $(pidof $daemons 2>/dev/null); do
    case " $before " in *" $pid "*) continue ;; esac
    # a test's own Slurm (tests/launch/slurm.sh) is not the install's
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q knit-slurm && continue
    echo "deps: stopping $(cat "/proc/$pid/comm" 2>/dev/null) ($pid) the install started"
    $SUDO kill "$pid" 2>/dev/null
done
if [ -n "$active_before" ]; then
    for u in munge slurmd slurmctld; do
        case " $active_before " in *" $u=inactive "*) ;; *) continue ;; esac
        systemctl is-active -q "$u" 2>/dev/null && $SUDO systemctl stop "$u"
    done
fi
if [ "$ok" = 1 ]; then
    rm -f /tmp/knit-deps-optional.$$.log
else
    echo "deps: optional packages not installed (the tests that need them SKIP):$opt_missing"
    tail -n 5 /tmp/knit-deps-optional.$$.log 2>/dev/null | sed 's/^/deps:   /'
    rm -f /tmp/knit-deps-optional.$$.log
fi
exit 0
