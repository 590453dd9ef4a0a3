#!/usr/bin/env bash
# Offload across two "hosts" (network namespaces): the proxies start a
# knit-agent on each host and the knit-switch on the first; the daemons
# talk over the bridge; modules loaded on rank 0's host only (the other
# host never opens the file) run on both.
# test-unit: alone (network namespaces, a bridge and addresses of the host's)
source "$(dirname "$0")/../job/lib.sh"
source "$(dirname "$0")/lib.sh"
netns_setup netns.offload 3 || exit 0
trap 'netns_cleanup; rm -rf "$TMP"' EXIT

H1=${NETNS_HOSTS[0]} H2=${NETNS_HOSTS[1]} H3=${NETNS_HOSTS[2]}
export KNIT_LAUNCH='ip netns exec {host}'
T=$JOBBIN/offload_test
M=$ROOT/$BUILD/modules


for where in agent switch host; do
    run "$KNITRUN" --hosts "$H1,$H2" -n 4 --timeout 50 "$T" "$M" paths "$where"
    expect_ok "netns.offload.paths.$where" paths
done
run "$KNITRUN" --hosts "$H1,$H2" -n 4 --timeout 50 "$T" "$M" roundtrip agent
expect_ok netns.offload.roundtrip roundtrip
run "$KNITRUN" --hosts "$H1,$H2" -n 4 --timeout 50 -x KNIT_MODULE_BUDGET=200ms "$T" "$M" faults agent
expect_ok netns.offload.faults faults

# collectives in the network across hosts: a star, and a tree of three
# switches over three hosts (fan-in 2)
run "$KNITRUN" --hosts "$H1,$H2" -n 4 --timeout 90 -x KNIT_COLL_OFFLOAD=on "$JOBBIN/coll_test" suite 64k
expect_ok netns.offload.coll suite
run "$KNITRUN" --hosts "$H1,$H2,$H3" -n 5 --timeout 90 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=2 -x KNIT_STATS=1 \
    "$JOBBIN/coll_test" suite 16k
if [ "$RC" -eq 0 ] && grep -q "^ok suite" "$OUT" && [ "$(grep -c 'stats: rank [0-4] coll *queue in [1-9]' "$ERR")" = 5 ]; then
    pass netns.offload.coll.tree
else
    fail netns.offload.coll.tree "status $RC: $(grep -c 'coll *queue in' "$ERR") ranks through the agents; $(verdicts)"
fi

# one-sided operations across hosts: every method, atomics and concurrent
# accumulates, a target that computes without knit calls
for m in direct agent pack auto; do
    run "$KNITRUN" --hosts "$H1,$H2" -n 2 --timeout 110 "$JOBBIN/rma_test" sweep "$m"
    expect_ok "netns.rma.sweep.$m" sweep
done
run "$KNITRUN" --hosts "$H1,$H2,$H3" -n 6 --timeout 90 "$JOBBIN/rma_test" atomics
expect_ok netns.rma.atomics atomics
run "$KNITRUN" --hosts "$H1,$H2" -n 2 --timeout 50 "$JOBBIN/rma_test" passive auto
expect_ok netns.rma.passive passive

# the replicated region across hosts: both protocols, writers of every
# page on both hosts, random writes checked against a reference
for p in update invalidate; do
    for c in same stress counter; do
        run "$KNITRUN" --hosts "$H1,$H2" -n 4 --timeout 90 -x KNIT_DSM_PROTOCOL=$p -x KNIT_DSM_HOME_BLOCK=4k \
            "$JOBBIN/dsm_test" "$c"
        expect_ok "netns.dsm.$p.$c" "$c"
    done
done

# OpenMP across hosts (docs/openmp.md): a dynamic loop's picture, its
# checksum as one process alone computes it, rows from both hosts
MANDEL=$ROOT/$BUILD/examples/omp/mandel
ref=$(OMP_NUM_THREADS=2 "$MANDEL" -q -s 256x256 -i 300 -o "$TMP/ref.png" | grep '^checksum')
for p in update invalidate; do
    run "$KNITRUN" --hosts "$H1,$H2" -n 2 --timeout 90 -x OMP_NUM_THREADS=1 -x KNIT_DSM_PROTOCOL=$p \
        "$MANDEL" -q -s 256x256 -i 300 -o "$TMP/m.png"
    if [ "$RC" -eq 0 ] && [ -n "$ref" ] && grep -qx "$ref" "$OUT" && grep -Eq '^rows per node: [1-9][0-9]* [1-9]' "$OUT"; then
        pass "netns.omp.mandel.$p"
    else
        fail "netns.omp.mandel.$p" "status $RC, want '$ref': $(grep -E '^(checksum|rows)' "$OUT" | tr '\n' ' ') $(tail -n 2 "$ERR")"
    fi
done

# OpenMP constructs across hosts, each program's output as libgomp's with
# as many threads (tests/omp: test_omp.sh has the whole table)
for t in reduction_double critical lock for_dynamic single data_stack_global data_read; do
    src=$ROOT/tests/omp/omp_$t.c
    if ! gcc -O2 -fopenmp -o "$TMP/$t.gomp" "$src" 2>"$TMP/cc.err" ||
        ! "$ROOT/$BUILD/bin/knitcc" -O2 -fopenmp -o "$TMP/$t.komp" "$src" 2>>"$TMP/cc.err"; then
        fail "netns.omp.$t" "build: $(tail -n 2 "$TMP/cc.err")"
        continue
    fi
    OMP_NUM_THREADS=4 "$TMP/$t.gomp" >"$TMP/$t.want" 2>&1
    run "$KNITRUN" --hosts "$H1,$H2" -n 2 --timeout 60 -x OMP_NUM_THREADS=2 "$TMP/$t.komp"
    if [ "$RC" -eq 0 ] && cmp -s "$OUT" "$TMP/$t.want"; then
        pass "netns.omp.$t"
    else
        fail "netns.omp.$t" "status $RC: $(diff "$TMP/$t.want" "$OUT" | head -n 3 | tr '\n' '|') $(tail -n 2 "$ERR")"
    fi
done

# the daemons talked over the bridge, and nothing is left in the namespaces
run env KNIT_LOG_LEVEL=info "$KNITRUN" --hosts "$H1,$H2" -n 2 --timeout 50 "$T" "$M" paths agent
inns=$(ip netns pids "$H1"; ip netns pids "$H2")
if [ "$RC" -eq 0 ] && grep -q "daemon 1 connected from 198.18.0.2:" "$ERR" && [ -z "$inns" ]; then
    pass netns.offload.daemons
else
    fail netns.offload.daemons "status $RC, left: '$inns', $(grep -c 'daemon' "$ERR") daemon lines"
fi

# KNIT_STATS: both hosts' agents report at the end of the job (the second
# one's report travels through its proxy once knitrun has hung up)
run "$KNITRUN" --hosts "$H1,$H2" -n 2 --timeout 50 -x KNIT_STATS=1 "$T" "$M" stats
if [ "$RC" -eq 0 ] && grep -q 'knit\[agent 0\] stats: rank 0 ' "$ERR" && grep -q 'knit\[agent 1\] stats: rank 1 ' "$ERR"; then
    pass netns.offload.stats
else
    fail netns.offload.stats "status $RC, reports: '$(grep 'stats:' "$ERR" | tr '\n' '|')'"
fi

# an agent on the second host dies: the job ends saying so
run "$KNITRUN" --hosts "$H1,$H2" -n 4 --timeout 50 "$T" "$M" killagent
if [ "$RC" -ne 0 ] && [ "$(verdicts)" = "knitrun: agent on node 1 died (lost its connection to knitrun)" ]; then
    pass netns.offload.agent_dies
else
    fail netns.offload.agent_dies "status $RC, verdicts '$(verdicts | tr '\n' '|')'"
fi
finish
