#!/usr/bin/env bash
# make run: a short tour of knit on two emulated nodes of this machine.
#   1. knitrun places 4 ranks on 2 nodes; each says where it runs
#   2. point-to-point: latency and bandwidth within a node and between nodes
#   3. an ordinary MPI program built with knitcc, run by knitrun (and by
#      MPICH's mpiexec, where it is installed)
#   4. offload: a module loaded into the per-node agents and called
#   5. one-sided: strided put, get, accumulate and an atomic to a rank on
#      the other node while it computes without calling knit
#   6. the replicated region: a table in memory every node shares
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/$BUILD
KNITRUN=$B/bin/knitrun
for f in "$KNITRUN" "$B/tests/job/hello" "$B/bench/pingpong" "$B/bench/bw" "$B/bin/knitcc"; do
    [ -x "$f" ] || { echo "demo: $f is missing: run make first" >&2; exit 1; }
done
step() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }

step "1. four ranks on two emulated nodes"
show "knitrun -n 4 --nodes 2 --tag-output hello"
out=$("$KNITRUN" -n 4 --nodes 2 --tag-output "$B/tests/job/hello") || { echo "demo: the job failed"; exit 1; }
sort <<<"$out"
echo "   block-wise placement: ranks 0-1 share node 0, ranks 2-3 node 1; each joined"
echo "   through knitrun's bootstrap store and left together with the others."

step "2. point-to-point (cross-memory attach here: $("$B/bin/knit-info" | sed -n 's/^  cross-memory attach  *//p' | head -1))"
lat() { "$KNITRUN" "$@" "$B/bench/pingpong" --sizes 8,1048576 --quick 2>/dev/null |
            awk '/^result/ {printf "%s B: %s us   ", $3, $5}'; }
bw() { "$KNITRUN" "$@" "$B/bench/bw" --sizes 1048576 --quick 2>/dev/null |
           awk '/^result/ {printf "%s MB/s", $5}'; }
echo "   same node (shared memory; cross-memory attach above the eager size):"
echo "     latency  $(lat -n 2)"
echo "     1 MiB windowed bandwidth  $(bw -n 2)"
echo "   two nodes (libfabric: $("$B/bin/knit-info" | sed -n 's/^  network transport *\([^,]*\),.*/\1/p')):"
echo "     latency  $(lat -n 2 --nodes 2)"
echo "     1 MiB windowed bandwidth  $(bw -n 2 --nodes 2)"

step "3. an MPI program, unchanged: examples/pi.c"
mkdir -p "$B/examples"
show "knitcc -O2 -o $BUILD/examples/pi examples/pi.c -lm"
"$B/bin/knitcc" -O2 -o "$B/examples/pi" "$ROOT/examples/pi.c" -lm || { echo "demo: knitcc failed"; exit 1; }
show "knitrun -n 4 --nodes 2 $BUILD/examples/pi"
"$KNITRUN" -n 4 --nodes 2 "$B/examples/pi" || { echo "demo: the MPI job failed"; exit 1; }
if command -v mpiexec.mpich >/dev/null; then
    # the same binary under a cluster's launcher (docs/knitrun.md, Other launchers)
    show "mpiexec.mpich -n 4 $BUILD/examples/pi      # MPICH's launcher, knit's MPI (PMI-2)"
    mpiexec.mpich -n 4 "$B/examples/pi" || { echo "demo: the job under mpiexec.mpich failed"; exit 1; }
fi

if [ -x "$B/tests/job/offload_test" ] && [ -f "$B/modules/echo.so" ]; then
    step "4. offload: the echo module in every node's agent"
    show "knitrun -n 4 --nodes 2 offload_test $BUILD/modules echo"
    out=$("$KNITRUN" -n 4 --nodes 2 "$B/tests/job/offload_test" "$B/modules" echo 2>&1) ||
        { echo "$out" | tail -n 5; echo "demo: the offload job failed"; exit 1; }
    echo "$out" | tail -n 3
fi
if [ -x "$B/tests/job/rma_test" ]; then
    step "5. one-sided: rank 0 puts, gets, accumulates into rank 1 on the other node while rank 1 computes for 2 s"
    show "knitrun -n 2 --nodes 2 rma_test passive auto"
    out=$("$KNITRUN" -n 2 --nodes 2 "$B/tests/job/rma_test" passive auto 2>&1) ||
        { echo "$out" | tail -n 5; echo "demo: the one-sided job failed"; exit 1; }
    echo "   $(grep '^passive' <<<"$out")"
    echo "   the node agents carried them (docs/rma.md); the target made no call."
fi
step "6. replicated memory: examples/dsm_primes.c fills a table in the region from both nodes"
show "knitcc -O2 -o $BUILD/examples/dsm_primes examples/dsm_primes.c"
"$B/bin/knitcc" -O2 -o "$B/examples/dsm_primes" "$ROOT/examples/dsm_primes.c" || { echo "demo: knitcc failed"; exit 1; }
show "knitrun -n 4 --nodes 2 $BUILD/examples/dsm_primes"
"$KNITRUN" -n 4 --nodes 2 "$B/examples/dsm_primes" || { echo "demo: the region's job failed"; exit 1; }
echo "   one region at the same address in every rank; writes reach the other node at"
echo "   unlock and barrier, carried around a ring of the node agents (docs/dsm.md)."

step "7. OpenMP across nodes: examples/omp/mandel.c, unchanged, with knitcc -fopenmp"
show "knitcc -O2 -fopenmp -o $BUILD/examples/omp/mandel examples/omp/mandel.c \$(pkg-config --libs libmicrohttpd libpng) -lm"
show "knitrun -n 2 --nodes 2 -x OMP_NUM_THREADS=1 $BUILD/examples/omp/mandel -s 1024x1024 -o $BUILD/mandel.png"
out=$("$KNITRUN" -n 2 --nodes 2 -x OMP_NUM_THREADS=1 "$B/examples/omp/mandel" -q -s 1024x1024 -o "$B/mandel.png" 2>&1) ||
    { echo "$out" | tail -n 5; echo "demo: the OpenMP job failed"; exit 1; }
grep -E '^(nodes|rows per node|time|wrote)' <<<"$out" | sed 's/^/   /'
echo "   one process per node runs the threads of a dynamic loop; the program's globals, heap"
echo "   and stacks are in the replicated region (docs/openmp.md). --serve 8080 shows the"
echo "   picture filling in live, rows in the color of the node that computed them."
echo
echo "demo: done. More: make test, make bench, docs/guide.md"
