#!/usr/bin/env bash
# The replicated region (include/knit/dsm.h, docs/dsm.md): race-free
# programs give the same bytes on every node, concurrent writers of one
# page, lock-protected counters and producer/consumer, random writes with
# a verifying checksum, the region's allocator, a corrupted frame, an
# address conflict, jobs without agents, a rank killed mid-release (see
# tests/job/dsm_test.c).
# test-unit: long
source "$(dirname "$0")/lib.sh"

T=$JOBBIN/dsm_test
[ -x "$T" ] || { echo "FAIL dsm.build: $T is missing"; exit 1; }

# 1-4 emulated nodes, 1-3 ranks per node, both protocols (invalidate with
# the default 64 KiB home blocks, and 4 KiB: every page's home the next
# node's)
layouts="2:1 2:2 4:2 3:3 6:3 4:4 8:4"
for p in update invalidate invalidate:4k; do
    env=(-x "KNIT_DSM_PROTOCOL=${p%%:*}")
    [ "${p#*:}" != "$p" ] && env+=(-x "KNIT_DSM_HOME_BLOCK=${p#*:}")
    tag=${p/:/.}
    for c in same stress; do
        for l in $layouts; do
            [ "$p" = invalidate ] && [ "$l" != 4:2 ] && [ "$l" != 8:4 ] && continue
            run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 "${env[@]}" "$T" "$c"
            expect_ok "dsm.$tag.$c.n${l%:*}.nodes${l#*:}" "$c"
        done
    done
    for c in counter prodcons alloc errors; do
        for l in 3:1 4:2 6:3 4:4; do
            [ "$p" != update ] && [ "$l" = 3:1 ] && continue
            run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 "${env[@]}" "$T" "$c"
            expect_ok "dsm.$tag.$c.n${l%:*}.nodes${l#*:}" "$c"
        done
    done
    # 64 MiB rewritten by one rank (every page a fault, a twin, a diff),
    # 1 MiB in flight at most (the ring backs up, the release completes)
    run "$KNITRUN" -n 3 --nodes 3 --timeout 90 -x KNIT_DSM_WINDOW=1m "${env[@]}" "$T" big 64m
    expect_ok "dsm.$tag.big.64m.window1m" big
    # a frame whose bytes changed after its crc32c was made: refused,
    # counted, the release fails with KNIT_ERR_IO
    run "$KNITRUN" -n 2 --nodes 2 --timeout 60 -x KNIT_DSM_CORRUPT=1 -x KNIT_DSM_HOME_BLOCK=4k "${env[@]}" "$T" corrupt
    if [ "$RC" -eq 0 ] && [ "$(tail -n 1 "$OUT")" = "ok corrupt" ] && grep -q "failed its crc32c check at node 1" "$ERR"; then
        pass "dsm.$tag.bad_crc_detected"
    else
        fail "dsm.$tag.bad_crc_detected" "status $RC: $(tail -n 3 "$ERR" | tr '\n' '|')"
    fi
done
# threads: several of a rank fault on one page at once, allocate at once;
# threadrel: writer threads open pages while the rank releases all the time
for l in 2:1 4:2 3:3; do
    run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 "$T" threads
    expect_ok "dsm.update.threads.n${l%:*}.nodes${l#*:}" threads
done
for l in 2:2 3:3; do
    run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 "$T" threadrel
    expect_ok "dsm.update.threadrel.n${l%:*}.nodes${l#*:}" threadrel
done

# pushes: what rank 0 wrote reaches the other nodes without a release
for l in 2:2 4:2 3:3; do
    run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 "$T" push
    expect_ok "dsm.update.push.n${l%:*}.nodes${l#*:}" push
done

# invalidate: homes move to their pages' one writer at barriers (and away
# from nodes that keep copies); not with KNIT_DSM_MIGRATE=0
for l in 2:2 4:2 3:3; do
    run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 -x KNIT_DSM_PROTOCOL=invalidate "$T" migrate 1
    expect_ok "dsm.invalidate.migrate.n${l%:*}.nodes${l#*:}" migrate
done
run "$KNITRUN" -n 2 --nodes 2 --timeout 90 -x KNIT_DSM_PROTOCOL=invalidate -x KNIT_DSM_MIGRATE=0 "$T" migrate 0
expect_ok "dsm.invalidate.migrate_off.n2.nodes2" migrate

# a region of 16 GiB (more than /dev/shm may hold): sparse, a page costs
# memory once written; and KNIT_DSM_SIZE sets what init(ctx, 0) maps
for p in update invalidate; do
    run "$KNITRUN" -n 4 --nodes 2 --timeout 60 -x KNIT_DSM_PROTOCOL=$p "$T" sparse 16g
    expect_ok "dsm.$p.sparse.16g" sparse
done
run "$KNITRUN" -n 2 --nodes 2 --timeout 60 -x KNIT_DSM_SIZE=12m "$T" size
expect_ok dsm.size_from_env size

# KNIT_STATS: each node's faults, diffs, frames and bytes
run "$KNITRUN" -n 4 --nodes 2 --timeout 60 -x KNIT_STATS=1 "$T" same
if [ "$RC" -eq 0 ] && [ "$(grep -cE '^knit\[node [01]\] dsm: [1-9][0-9]* faults, [1-9][0-9]* pages diffed, .* frames out [1-9][0-9]* \([0-9]+ B\), in [1-9]' "$ERR")" = 2 ]; then
    pass dsm.stats
else
    fail dsm.stats "status $RC: $(grep 'dsm:' "$ERR" | head -n 2 | tr '\n' '|')"
fi

# the update stream between agents with every message read by its
# receiver (KNIT_AGENT_BULK=1: the token, acknowledgements and lock
# messages too) and with none (0): the same bytes everywhere
for b in 1 0; do
    for l in 4:2 6:3; do
        run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 -x KNIT_AGENT_BULK=$b "$T" stress
        expect_ok "dsm.bulk$b.stress.n${l%:*}.nodes${l#*:}" stress
    done
    run "$KNITRUN" -n 4 --nodes 2 --timeout 90 -x KNIT_AGENT_BULK=$b -x KNIT_DSM_PROTOCOL=invalidate "$T" counter
    expect_ok "dsm.bulk$b.invalidate.counter.n4.nodes2" counter
done

# pages kept writable across releases (KNIT_DSM_KEEP, default 4): none
# (every release protects), and back to protection after one unchanged
# release (kept, unkept and kept again all the time); counter: locks
for k in 0 1; do
    for l in 2:2 4:2; do
        run "$KNITRUN" -n "${l%:*}" --nodes "${l#*:}" --timeout 90 -x KNIT_DSM_KEEP=$k "$T" stress
        expect_ok "dsm.keep$k.stress.n${l%:*}.nodes${l#*:}" stress
    done
    run "$KNITRUN" -n 4 --nodes 2 --timeout 90 -x KNIT_DSM_KEEP=$k "$T" counter
    expect_ok "dsm.keep$k.counter.n4.nodes2" counter
done
run "$KNITRUN" -n 1 --timeout 60 -x KNIT_DSM_KEEP=251 "$T" same
if [ "$RC" -ne 0 ] && grep -q 'KNIT_DSM_KEEP=251: releases in a row, 0 to 250' "$ERR"; then
    pass dsm.keep_bad
else
    fail dsm.keep_bad "status $RC: $(head -n 2 "$ERR" | tr '\n' '|')"
fi

# something already at the region's address in one rank: everyone's init
# fails, the error names the rank and what it has there
run "$KNITRUN" -n 3 --nodes 2 --timeout 60 -x KNIT_DSM_ADDR=0x200000000000 "$T" conflict
if [ "$RC" -eq 0 ] && grep -q "^rank 1 cannot map the region at \[0x200000000000, .*it has 200000002000-200000003000" "$OUT"; then
    pass dsm.address_conflict
else
    fail dsm.address_conflict "status $RC: $(tail -n 2 "$OUT" | tr '\n' '|') $(tail -n 2 "$ERR" | tr '\n' '|')"
fi
run "$KNITRUN" -n 2 --nodes 2 --timeout 60 -x KNIT_DSM_ADDR=12345 "$T" errors
if [ "$RC" -ne 0 ] && grep -q "KNIT_DSM_ADDR=12345 is not a page-aligned address" "$ERR"; then
    pass dsm.bad_address
else
    fail dsm.bad_address "status $RC: $(tail -n 2 "$ERR" | tr '\n' '|')"
fi

# the example, built with knitcc as a user would (the library linked dynamically)
if "$ROOT/$BUILD/bin/knitcc" -O2 -o "$TMP/dsm_primes" "$ROOT/examples/dsm_primes.c" 2>"$TMP/cc"; then
    run "$KNITRUN" -n 4 --nodes 2 --timeout 60 "$TMP/dsm_primes" 100000
    if [ "$RC" -eq 0 ] && grep -q "^primes below 100000: 9592 (.* from 4 ranks on 2 nodes)$" "$OUT"; then
        pass dsm.example.primes
    else
        fail dsm.example.primes "status $RC: $(cat "$OUT") $(tail -n 2 "$ERR" | tr '\n' '|')"
    fi
else
    fail dsm.example.primes "knitcc: $(tail -n 3 "$TMP/cc" | tr '\n' '|')"
fi

# no agents: refused, with the reason
run "$KNITRUN" -n 2 --nodes 2 --no-offload --timeout 60 "$T" refused
if [ "$RC" -eq 0 ] && grep -q "needs the node agents" "$OUT"; then
    pass dsm.refused.no_agents
else
    fail dsm.refused.no_agents "status $RC: $(tail -n 2 "$OUT" | tr '\n' '|')"
fi

# a rank killed while it releases 48 MiB: the job ends with knitrun's
# verdict, promptly, and leaves no file behind
run "$KNITRUN" -n 4 --nodes 2 --timeout 60 "$T" die 128m
job=$(sed -n 's/^job //p' "$OUT" | head -n 1)
if [ "$RC" -eq 137 ] && [ "$(verdicts)" = "knitrun: rank 1 on node 0 killed by SIGKILL" ] && [ "$MS" -lt 30000 ] &&
    [ -n "$job" ] && [ -z "$(shm_left "$job")" ]; then
    pass dsm.rank_dies_mid_release
else
    fail dsm.rank_dies_mid_release "status $RC in $MS ms, job '$job' left '$(shm_left "$job")': $(verdicts | tr '\n' '|')"
fi

# bench/dsm's bandwidth on one node: its point-to-point comparison runs
# between ranks 0 and 1 there (it used to send rank 0's 64 MiB to itself
# and wait forever)
run "$KNITRUN" -n 2 --timeout 60 "$ROOT/$BUILD/bench/dsm" bw 1048576 2
# (any bandwidth above 0: on a loaded machine it can be under 1 GB/s)
if [ "$RC" -eq 0 ] && awk '{for (i = 1; i < NF; i++) if ($i == "p2p_gbs" && $(i + 1) + 0 > 0) ok = 1} END {exit !ok}' "$OUT"; then
    pass dsm.bench_bw_one_node
else
    fail dsm.bench_bw_one_node "status $RC, stdout '$(tail -n 2 "$OUT" | tr '\n' '|')'"
fi
finish
