#!/usr/bin/env bash
# Point-to-point within a node, through knitrun, over several layouts and
# mechanisms.  Each line: PASS/FAIL <name>.
set -u
BUILD=${BUILD:-build}
KNITRUN=${BIN_DIR:-$BUILD/bin}/knitrun
PROG=$BUILD/tests/job/p2p_test
fails=0

run() { # name timeout knitrun-args... -- prog-args
    local name=$1 t=$2; shift 2
    local out
    out=$("$KNITRUN" --timeout "$t" "$@" 2>&1)
    local rc=$?
    if [ $rc -eq 0 ] && grep -q "^ok " <<<"$out"; then
        echo "PASS p2p.$name"
    else
        echo "FAIL p2p.$name: exit $rc"
        echo "$out" | tail -n 15
        fails=$((fails + 1))
    fi
}

# sizes up to 64 MiB between two ranks, every mechanism
run sizes.n2 120 -n 2 "$PROG" sizes 64m
run sizes.n2.cma_off 120 -n 2 -x KNIT_CMA=off "$PROG" sizes 64m
run sizes.n2.small_thresholds 120 -n 2 -x KNIT_EAGER_MAX=1k -x KNIT_CMA_MIN=100k -x KNIT_SHM_BUFFER=16k \
    -x KNIT_INLINE_MAX=8 -x KNIT_BULK_CHUNK=64k "$PROG" sizes 1m
run sizes.n4 120 -n 4 "$PROG" sizes 1m
run sizes.n8.oversubscribed 180 -n 8 "$PROG" sizes 256k
# the shared heap (docs/guide.md): off (every large copy by cross-memory
# attach), and buffers outside it on one side or on some ranks (memcpy
# and cross-memory attach in one job, cooperative copies among them)
run sizes.n2.heap_off 120 -n 2 -x KNIT_HEAP=0 "$PROG" sizes 64m
for m in send recv odd; do
    run "sizes.n3.heap_mixed_$m" 120 -n 3 -x P2P_MMAP=$m "$PROG" sizes 4m
done
# which copy moved them: the debug line of the first mapping of a peer's
# heap.  Large copies map it only where both blocks are in a heap; a
# message of 1-8 KiB sent from one is offered from it (KNIT_HEAP_RNDV_MIN)
# to any receive buffer: with rank 1's buffers outside its heap, rank 1
# maps rank 0's for those (1), and nobody maps without the offers (0).
heap_line() { "$KNITRUN" --timeout 60 -n 2 -x KNIT_LOG_LEVEL=debug "$@" "$PROG" sizes 1m 2>&1 | grep -c "shared heap is mapped"; }
on=$(heap_line) off=$(heap_line -x KNIT_HEAP=0) mapped=$(heap_line -x P2P_MMAP=odd -x KNIT_HEAP_RNDV_MIN=0)
offered=$(heap_line -x P2P_MMAP=odd)
if "${BIN_DIR:-$BUILD/bin}/knit-info" 2>/dev/null | grep -q "shared heap.*not in this build"; then
    echo "SKIP p2p.heap_used_where_both_blocks_are_in_it: no shared heap in this build (sanitizer)"
elif [ "$on" = 2 ] && [ "$off" = 0 ] && [ "$mapped" = 0 ] && [ "$offered" = 1 ]; then
    echo "PASS p2p.heap_used_where_both_blocks_are_in_it"
else
    echo "FAIL p2p.heap_used_where_both_blocks_are_in_it: mappings $on (want 2), off $off, one side outside" \
        "$mapped (want 0), the same with small messages offered from the heap $offered (want 1)"
    fails=$((fails + 1))
fi
# the offers off: 1-8 KiB eager again, whatever the buffers
run sizes.n2.heap_offers_off 120 -n 2 -x KNIT_HEAP_RNDV_MIN=0 "$PROG" sizes 1m
run truncate.n2.heap_offers_low 60 -n 2 -x KNIT_HEAP_RNDV_MIN=64 "$PROG" truncate
for c in truncate match many self probe partial args; do
    run "$c.n2" 60 -n 2 "$PROG" "$c"
    run "$c.n4" 60 -n 4 "$PROG" "$c"
done
run match.n8 120 -n 8 "$PROG" match
# within a node the receiver pulls; the sender's push into announced
# receives (the default between nodes) is kept working here too
run sizes.n2.push 120 -n 2 -x KNIT_RNDV_PUSH=on "$PROG" sizes 64m
for c in truncate match many probe; do
    run "$c.n4.push" 60 -n 4 -x KNIT_RNDV_PUSH=on "$PROG" "$c"
done
run truncate.cma_off 60 -n 2 -x KNIT_CMA=off "$PROG" truncate
run probe.cma_off 60 -n 2 -x KNIT_CMA=off "$PROG" probe
run flood.n3 120 -n 3 "$PROG" flood 10000
run flood.n4.small_ring 120 -n 4 -x KNIT_SHM_RING=4 -x KNIT_SHM_BUFFER=8k -x KNIT_EAGER_MAX=2k "$PROG" flood 3000
for w in spin yield block; do
    run "many.wait_$w" 60 -n 4 -x KNIT_WAIT=$w "$PROG" many
done
# every receive sleeps at once: the doorbell, with senders that skip the
# fence (membarrier on the sleeper's side) and with the full fence
for mb in 1 0; do
    run "wakes.n3.membarrier_$mb" 120 -n 3 -x KNIT_WAIT=block -x KNIT_SPIN_COUNT=1 -x KNIT_YIELD_TIME=0 \
        -x KNIT_SHM_MEMBARRIER=$mb "$PROG" wakes 3000
done
# packets through the inbound queues only (no fast boxes), and through
# fast boxes from the first packet on
for q in "queue_only KNIT_SHM_FASTBOXES=0" "boxes_at_once KNIT_SHM_FASTBOX_AFTER=0"; do
    set -- $q
    run "sizes.n4.$1" 120 -n 4 -x "$2" "$PROG" sizes 1m
    run "match.n4.$1" 60 -n 4 -x "$2" "$PROG" match
    run "flood.n4.$1.small_queue" 120 -n 4 -x "$2" -x KNIT_SHM_QUEUE=4 -x KNIT_SHM_RING=4 -x KNIT_SHM_BUFFER=8k \
        -x KNIT_EAGER_MAX=2k "$PROG" flood 3000
    run "wakes.n3.$1" 120 -n 3 -x "$2" -x KNIT_WAIT=block -x KNIT_SPIN_COUNT=1 -x KNIT_YIELD_TIME=0 \
        "$PROG" wakes 3000
done
# cross-memory attach forbidden (as by a container's seccomp profile):
# one warning line, then the pipelined copy does the work
NOCMA=$BUILD/tests/job/nocma
out=$("$KNITRUN" --timeout 60 -n 3 "$NOCMA" "$PROG" sizes 1m 2>&1)
if [ $? -eq 0 ] && grep -q "^ok sizes" <<<"$out" && [ "$(grep -c 'cross-memory attach unavailable' <<<"$out")" = 1 ] &&
    grep -q "Fix:" <<<"$out"; then
    echo "PASS p2p.cma_forbidden_falls_back_with_one_warning"
else
    echo "FAIL p2p.cma_forbidden_falls_back_with_one_warning"; echo "$out" | tail -5; fails=$((fails + 1))
fi
out=$("$KNITRUN" --timeout 60 -n 2 -x KNIT_CMA=on "$NOCMA" "$PROG" self 2>&1)
if [ $? -ne 0 ] && grep -q "KNIT_CMA=on but cross-memory attach" <<<"$out"; then
    echo "PASS p2p.cma_forbidden_with_cma_on_fails_clearly"
else
    echo "FAIL p2p.cma_forbidden_with_cma_on_fails_clearly"; echo "$out" | tail -5; fails=$((fails + 1))
fi
run singleton.sizes 60 -n 1 "$PROG" sizes 1m
if "$PROG" self >/dev/null 2>&1; then echo "PASS p2p.singleton_without_knitrun"; else echo "FAIL p2p.singleton_without_knitrun"; fails=$((fails+1)); fi
exit $((fails > 0))
