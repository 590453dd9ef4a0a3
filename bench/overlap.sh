#!/usr/bin/env bash
# The overlap of a nonblocking allreduce with computing (bench/overlap.c,
# OSU's osu_iallreduce method), knit against Open MPI and MPICH in one run:
# the same source built with each mpicc, the runs alternating, medians of
# REPS.  Layout: N ranks on N emulated nodes (knit), N ranks over TCP on
# loopback (Open MPI, MPICH: what bench/compare runs for several nodes).
#
#   bash bench/overlap.sh [BUILD] [N] [REPS] [SIZES]
#   (make bench-overlap runs it with the defaults: build 4 5 8,1k,64k)
set -u
BUILD=${1:-build} N=${2:-4} REPS=${3:-5} SIZES=${4:-8,1k,64k}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=$(mktemp -d /tmp/knit-overlap.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
ARGS=(--sizes "$SIZES" --iters 100 --batches 3 --bind none)
CFLAGS=(-std=gnu11 -O2 -g -D_GNU_SOURCE)
SRC=(bench/overlap.c bench/common.c bench/bp_mpi.c)

# rows: a name, then the command
declare -a NAMES CMDS
row() { NAMES+=("$1"); shift; CMDS+=("$*"); }
row "knit hosts" "$BUILD/bin/knitrun -n $N --nodes $N -x KNIT_COLL_OFFLOAD=off $BUILD/bench/overlap ${ARGS[*]}"
row "knit offloaded" "$BUILD/bin/knitrun -n $N --nodes $N -x KNIT_COLL_OFFLOAD=on $BUILD/bench/overlap ${ARGS[*]}"
row "knit offloaded, KNIT_AGENT_SLICE=300us" \
    "$BUILD/bin/knitrun -n $N --nodes $N -x KNIT_COLL_OFFLOAD=on -x KNIT_AGENT_SLICE=300us $BUILD/bench/overlap ${ARGS[*]}"
if command -v mpicc.openmpi >/dev/null && mpicc.openmpi "${CFLAGS[@]}" -DBP_IMPL_NAME='"openmpi"' -o "$OUT/ompi" "${SRC[@]}"; then
    row "Open MPI (TCP)" "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi -n $N \
        --oversubscribe --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo $OUT/ompi ${ARGS[*]}"
fi
if command -v mpicc.mpich >/dev/null && mpicc.mpich "${CFLAGS[@]}" -DBP_IMPL_NAME='"mpich"' -o "$OUT/mpich" "${SRC[@]}"; then
    row "MPICH (TCP)" "env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo mpirun.mpich -n $N $OUT/mpich ${ARGS[*]}"
fi

for rep in $(seq 1 "$REPS"); do
    for i in "${!CMDS[@]}"; do
        # a run that takes over RUN_LIMIT seconds counts as failed (MPICH
        # has been seen to spin for minutes in one Iallreduce here)
        timeout "${RUN_LIMIT:-120}" ${CMDS[$i]} 2>/dev/null | grep '^result ' >>"$OUT/row$i" ||
            echo "warning: ${NAMES[$i]} failed or took over ${RUN_LIMIT:-120} s (rep $rep)" >&2
    done
done

median() { sort -n | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
echo "# overlap of Iallreduce with computing, $N ranks ($N emulated nodes / TCP), median of $REPS runs"
echo "# (overlap %: 100 = done while computing; pure / total: us)  bash bench/overlap.sh $BUILD $N $REPS $SIZES"
printf '| %-40s |' "row"
IFS=, read -ra SZ <<<"$SIZES"
for s in "${SZ[@]}"; do printf ' %s: overlap %% | pure | total |' "$s"; done
echo
for i in "${!CMDS[@]}"; do
    printf '| %-40s |' "${NAMES[$i]}"
    for s in "${SZ[@]}"; do
        b=$(numfmt --from=iec "${s^^}")
        for m in overlap overlap-pure overlap-total; do
            v=$(awk -v b="$b" -v m="$m" '$2 == m && $3 == b {print $5}' "$OUT/row$i" 2>/dev/null | median)
            printf ' %s |' "${v:--}"
        done
    done
    echo
done
