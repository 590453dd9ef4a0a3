#!/usr/bin/env bash
# Start-up under other launchers (issue 28): wall time of a 4-rank program
# that only calls MPI_Init and MPI_Finalize, built with knitcc and with the
# launcher's own MPI, run alternately under the same launcher, median of
# RUNS runs each (after a warm-up):
#   mpirun.openmpi -n 4   knit vs Open MPI
#   mpiexec.mpich -n 4    knit vs MPICH
#   srun --mpi=pmix -n 4  knit vs Open MPI   (a throwaway Slurm, tests/launch/slurm.sh)
#   srun --mpi=pmi2 -n 4  knit vs MPICH
# knit runs with its defaults (the offload daemons started), and once more
# with KNIT_OFFLOAD=0.  Prints a markdown table; the target is knit at most
# 1.10x the launcher's own MPI.
#   bench/launchers.sh [--runs N] [--ranks N] [BUILD]
set -u
runs=15 n=4 BUILD=build
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift ;;
    --ranks) n=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) BUILD=$1 ;;
    esac
    shift
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$ROOT/$BUILD/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
cat >"$tmp/init.c" <<'C'
#include <mpi.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
C
knitcc -O2 -o "$tmp/knit" "$tmp/init.c" || { echo "launchers: knitcc failed" >&2; exit 1; }
mpicc.openmpi -O2 -o "$tmp/ompi" "$tmp/init.c" 2>/dev/null || echo "launchers: no Open MPI (mpicc.openmpi)" >&2
mpicc.mpich -O2 -o "$tmp/mpich" "$tmp/init.c" 2>/dev/null || echo "launchers: no MPICH (mpicc.mpich)" >&2

ms() { # CMD...: one run's wall time in ms, or "fail"
    local t0=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 || { echo fail; return; }
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f\n", (b - a) * 1000}'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# row LABEL NATIVE-NAME NATIVE-PROG LAUNCHER...: alternate knit, knit
# without daemons and the native MPI under LAUNCHER
row() {
    local label=$1 nname=$2 nprog=$3 i k o x
    shift 3
    [ -x "$nprog" ] || { echo "| \`$label\` | - | - | - ($nname missing) | |"; return; }
    local ks=() os=() xs=()
    "$@" "$tmp/knit" >/dev/null 2>&1; "$@" "$nprog" >/dev/null 2>&1 # warm-up
    for ((i = 0; i < runs; i++)); do
        k=$(ms "$@" "$tmp/knit")
        o=$(KNIT_OFFLOAD=0 ms "$@" "$tmp/knit")
        x=$(ms "$@" "$nprog")
        [ "$k" = fail ] || [ "$o" = fail ] || [ "$x" = fail ] && { echo "| \`$label\` | failed | | | |"; return; }
        ks+=("$k"); os+=("$o"); xs+=("$x")
    done
    k=$(printf '%s\n' "${ks[@]}" | median)
    o=$(printf '%s\n' "${os[@]}" | median)
    x=$(printf '%s\n' "${xs[@]}" | median)
    echo "| \`$label\` | $k | $o | $x ($nname) | $(awk -v k="$k" -v x="$x" 'BEGIN {printf "%.2f", k / x}') |"
}

echo "start-up of $n ranks, MPI_Init + MPI_Finalize, median of $runs runs each, alternated (ms)"
echo
echo "| launcher | knit | knit, KNIT_OFFLOAD=0 | the launcher's own MPI | knit / own |"
echo "|---|---|---|---|---|"
row "mpirun.openmpi -n $n" "Open MPI" "$tmp/ompi" mpirun.openmpi -n "$n"
row "mpiexec.mpich -n $n" "MPICH" "$tmp/mpich" mpiexec.mpich -n "$n"
# shellcheck source=../tests/launch/slurm.sh
source "$ROOT/tests/launch/slurm.sh"
if slurm_available && slurm_start 2>/dev/null; then
    slurm_has_mpi pmix && row "srun --mpi=pmix -n $n" "Open MPI" "$tmp/ompi" srun --mpi=pmix -n "$n"
    row "srun --mpi=pmi2 -n $n" "MPICH" "$tmp/mpich" srun --mpi=pmi2 -n "$n"
    slurm_stop
else
    echo "| srun | skipped: ${SLURM_WHY:-no Slurm} | | | |"
fi
printf '| `knitrun -n %s` (for comparison) | %s | %s | | |\n' "$n" \
    "$(for ((i = 0; i < runs; i++)); do ms knitrun -n "$n" "$tmp/knit"; done | median)" \
    "$(for ((i = 0; i < runs; i++)); do ms knitrun --no-offload -n "$n" "$tmp/knit"; done | median)"
rm -rf "$tmp"
