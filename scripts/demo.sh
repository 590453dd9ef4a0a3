#!/usr/bin/env bash
# make run: a small knit job, 4 ranks on 2 emulated nodes, each saying
# where it runs.  Grows into the showcase as knit grows.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KNITRUN=$ROOT/$BUILD/bin/knitrun
HELLO=$ROOT/$BUILD/tests/job/hello
for f in "$KNITRUN" "$HELLO"; do
    [ -x "$f" ] || { echo "demo: $f is missing: run make first" >&2; exit 1; }
done
echo "\$ knitrun -n 4 --nodes 2 --tag-output $BUILD/tests/job/hello"
out=$("$KNITRUN" -n 4 --nodes 2 --tag-output "$HELLO")
rc=$?
sort <<<"$out"
if [ $rc -ne 0 ]; then
    echo "demo: the job failed (exit status $rc)"
    exit $rc
fi
nodes=$(sed -n 's/.* on node \([0-9]*\) of.*/\1/p' <<<"$out" | sort -u | tr '\n' ' ')
echo
echo "demo: knitrun started 4 ranks as 2 emulated nodes (nodes: ${nodes% }), block-wise:"
echo "      ranks 0-1 on node 0 and ranks 2-3 on node 1, each with its local rank;"
echo "      every rank joined the job through knitrun's bootstrap store (knit_init)"
echo "      and left it together with the others (knit_finalize)."
