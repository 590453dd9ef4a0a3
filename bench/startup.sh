#!/usr/bin/env bash
# Job start-up time: `knitrun -n 2` (and with --no-offload) of a program that
# only initializes and finalizes (tests/job/nop), median of RUNS runs, next to MPICH's and Open
# MPI's mpirun for MPI_Init/MPI_Finalize when they are installed.
#   bench/startup.sh [--deps] [--runs N] [BUILD]
#   --deps   install mpich and openmpi first (apt-get update; apt-get install)
set -u
deps=0 runs=20 BUILD=build
while [ $# -gt 0 ]; do
    case $1 in
    --deps) deps=1 ;;
    --runs) runs=$2; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) BUILD=$1 ;;
    esac
    shift
done
[ "$runs" -ge 10 ] 2>/dev/null || { echo "startup: --runs must be 10 or more" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KNITRUN=$ROOT/$BUILD/bin/knitrun
NOP=$ROOT/$BUILD/tests/job/nop
for f in "$KNITRUN" "$NOP"; do
    [ -x "$f" ] || { echo "startup: $f is missing: run make BUILD=$BUILD first" >&2; exit 1; }
done

if [ $deps = 1 ]; then
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq mpich openmpi-bin libopenmpi-dev >/dev/null ||
        echo "startup: could not install the MPI packages" >&2
fi

# median_ms CMD...: runs CMD $runs times (after one warm-up), prints the
# median wall time in ms; fails if any run fails.
median_ms() {
    local i t0 t1 times=()
    "$@" >/dev/null 2>&1 || return 1
    for ((i = 0; i < runs; i++)); do
        t0=$EPOCHREALTIME
        "$@" >/dev/null 2>&1 || return 1
        t1=$EPOCHREALTIME
        times+=("$(echo "$t0 $t1" | awk '{printf "%.2f", ($2 - $1) * 1000}')")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/init.c" <<'C'
#include <mpi.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
C

printf '%-34s %s\n' "launcher (2 ranks, init+finalize)" "median of $runs runs"
k=$(median_ms "$KNITRUN" -n 2 "$NOP") && printf '%-34s %s ms\n' "knitrun -n 2" "$k" ||
    { echo "startup: knitrun failed"; exit 1; }
# without the offload daemons (knit-agent per node) that knitrun starts by default
k=$(median_ms "$KNITRUN" -n 2 --no-offload "$NOP") &&
    printf '%-34s %s ms\n' "knitrun -n 2 --no-offload" "$k" || echo "knitrun --no-offload: failed"
if command -v mpirun.mpich >/dev/null && command -v mpicc.mpich >/dev/null &&
    mpicc.mpich -o "$tmp/mpich" "$tmp/init.c" 2>/dev/null; then
    m=$(median_ms mpirun.mpich -n 2 "$tmp/mpich") && printf '%-34s %s ms\n' "mpirun.mpich -n 2" "$m" ||
        echo "mpirun.mpich -n 2: failed to run"
else
    echo "mpirun.mpich: not installed (bench/startup.sh --deps installs it)"
fi
if command -v mpirun.openmpi >/dev/null && command -v mpicc.openmpi >/dev/null &&
    mpicc.openmpi -o "$tmp/ompi" "$tmp/init.c" 2>/dev/null; then
    o=$(median_ms mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 "$tmp/ompi") &&
        printf '%-34s %s ms\n' "mpirun.openmpi -n 2" "$o" || echo "mpirun.openmpi -n 2: failed to run"
else
    echo "mpirun.openmpi: not installed (bench/startup.sh --deps installs it)"
fi
