#!/usr/bin/env bash
# Collectives through knitrun: every collective against local references,
# 1 to 8 ranks, sub-communicators, user ops, determinism, nonblocking
# overlapped with p2p, every algorithm forced by its tunable, and 2 and 3
# emulated nodes when knitrun --nodes works.  Each line: PASS/FAIL <name>.
# test-unit: long
set -u
BUILD=${BUILD:-build}
KNITRUN=${KNIT_BIN:-$BUILD/bin}/knitrun
PROG=$BUILD/tests/job/coll_test
fails=0
TMP=$(mktemp -d /tmp/knit-coll.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# name want knitrun-args...: passes, and its output (info level) says want
run_says() {
    local name=$1 want=$2; shift 2
    local out
    out=$("$@" 2>&1)
    local rc=$?
    if [ $rc -eq 0 ] && grep -q "^ok " <<<"$out" && grep -qF "$want" <<<"$out"; then
        echo "PASS coll.$name"
    else
        echo "FAIL coll.$name: exit $rc (expected: $want)"
        grep -v " info: " <<<"$out" | tail -n 15
        fails=$((fails + 1))
    fi
}

run() { # name timeout knitrun-args... (the program and its args included)
    local name=$1 t=$2; shift 2
    local out
    out=$("$KNITRUN" --timeout "$t" "$@" 2>&1)
    local rc=$?
    if [ $rc -eq 0 ] && grep -q "^ok " <<<"$out"; then
        echo "PASS coll.$name"
    else
        echo "FAIL coll.$name: exit $rc"
        echo "$out" | tail -n 15
        fails=$((fails + 1))
    fi
}

# sizes: up to 16 MiB at 1-2 ranks, less as the (oversubscribed) rank count grows
run suite.n1 120 -n 1 "$PROG" suite 16m
run suite.n2 120 -n 2 "$PROG" suite 16m
run suite.n3 120 -n 3 "$PROG" suite 4m
run suite.n4 120 -n 4 "$PROG" suite 4m
run suite.n5 120 -n 5 "$PROG" suite 1m
run suite.n6 120 -n 6 "$PROG" suite 256k
run suite.n7 120 -n 7 "$PROG" suite 256k
run suite.n8 120 -n 8 "$PROG" suite 1m
# every packet through the ranks' inbound queues (no fast boxes), and
# fast boxes too few for every pair of 8
run suite.n7.queue_only 120 -n 7 -x KNIT_SHM_FASTBOXES=0 "$PROG" suite 256k
run suite.n8.two_boxes 120 -n 8 -x KNIT_SHM_FASTBOXES=2 -x KNIT_SHM_FASTBOX_AFTER=0 "$PROG" suite 256k
for n in 3 5 8; do
    run "sub.n$n" 120 -n $n "$PROG" sub 16k
done
for c in user determinism errors; do
    for n in 1 2 3 5 8; do
        run "$c.n$n" 120 -n $n "$PROG" $c
    done
done
for n in 1 2 3 4 8; do
    run "nb.n$n" 120 -n $n "$PROG" nb 20
done
run nb.n4.block 120 -n 4 -x KNIT_WAIT=block "$PROG" nb 5

# the shared-segment forms of small blocking collectives (KNIT_COLL_SHM_MAX):
# waiters asleep are woken by whoever publishes (a lost wake-up costs 1 s);
# without them the message algorithms serve small sizes; with the largest
# slots they serve everything up to 64 KiB
run late.n2.block 120 -n 2 -x KNIT_WAIT=block "$PROG" late 2.5
run late.n5.block 120 -n 5 -x KNIT_WAIT=block "$PROG" late 3.5
for n in 4 7; do
    run "suite.noshm.n$n" 120 -n $n -x KNIT_COLL_SHM_MAX=0 -x KNIT_COLL_DIRECT_MIN=0 -x KNIT_COLL_STAGED_MAX=0 \
        -x KNIT_COLL_STAGED_PAIR_MAX=0 \
        "$PROG" suite 256k
    run "suite.shm64k.n$n" 120 -n $n -x KNIT_COLL_SHM_MAX=64k "$PROG" suite 128k
done
run sub.shm64k.n6 120 -n 6 -x KNIT_COLL_SHM_MAX=64k "$PROG" sub 64k
# broadcasts and allgathers in pieces through the segment (staged) forced at
# every size: odd sizes, one piece and many, every root, non-temporal copies
# at every size (unaligned heads and tails), sub-communicators, and the late
# broadcasts above with sleeping waiters
for n in 2 5 8; do
    run "suite.staged.n$n" 120 -n $n -x KNIT_COLL_BCAST=staged -x KNIT_COLL_ALLGATHER=staged "$PROG" suite 1m
done
run suite.staged.nt.n3 120 -n 3 -x KNIT_COLL_BCAST=staged -x KNIT_COLL_ALLGATHER=staged -x KNIT_COLL_STAGED_NT_MIN=1 \
    "$PROG" suite 1m
run sub.staged.n6 120 -n 6 -x KNIT_COLL_BCAST=staged -x KNIT_COLL_ALLGATHER=staged "$PROG" sub 64k
run late.staged.n4.block 120 -n 4 -x KNIT_WAIT=block -x KNIT_COLL_BCAST=staged -x KNIT_COLL_ALLGATHER=staged \
    "$PROG" late 3.5
# large ones copied straight from the ranks' buffers (KNIT_COLL_DIRECT_MIN),
# moved down so that every size above 64-byte slots goes that way; without
# cross-memory attach rank 0 says they keep messages
for n in 2 5 8; do
    run "suite.direct.n$n" 120 -n $n -x KNIT_COLL_SHM_MAX=64 -x KNIT_COLL_DIRECT_MIN=1 "$PROG" suite 256k
done
run sub.direct.n6 120 -n 6 -x KNIT_COLL_SHM_MAX=0 -x KNIT_COLL_DIRECT_MIN=1 "$PROG" sub 64k
for c in user determinism; do
    run "$c.direct.n5" 120 -n 5 -x KNIT_COLL_SHM_MAX=0 -x KNIT_COLL_DIRECT_MIN=1 "$PROG" $c
done
for cma in on off; do
    want="copy straight from the ranks' buffers"
    [ $cma = off ] && want="copy by messages: a member cannot read another's memory"
    run_says "direct.cma_$cma.n3" "$want" "$KNITRUN" --timeout 60 -n 3 -x KNIT_CMA=$cma \
        -x KNIT_COLL_DIRECT_MIN=1 -x KNIT_LOG_LEVEL=info "$PROG" suite 16k
done
# no room in /dev/shm for the collectives' segment (a private 2 MiB tmpfs:
# the transport's 1.1 MiB at start and the agent's queue fit, 2 MiB of
# 64 KiB slots do not, nor do fast boxes):
# rank 0 says so and the communicator keeps messages
if unshare -m true 2>/dev/null; then
    # shellcheck disable=SC2016
    run_says shm_full.n4 "collectives keep messages" \
        unshare -m sh -c 'mount -t tmpfs -o size=2m tmpfs /dev/shm && exec "$@"' sh "$KNITRUN" --timeout 60 \
        -n 4 -x KNIT_COLL_SHM_MAX=64k -x KNIT_LOG_LEVEL=info "$PROG" suite 64k
else
    echo "SKIP coll.shm_full.n4: no mount namespace here"
fi

# every algorithm forced, at process counts with and without remainders
forced=(BARRIER=dissemination BARRIER=node
        BCAST=binomial BCAST=scatter_allgather BCAST=node BCAST=linear
        REDUCE=binomial REDUCE=rabenseifner REDUCE=node REDUCE=linear
        ALLREDUCE=recursive_doubling ALLREDUCE=rabenseifner ALLREDUCE=ring ALLREDUCE=node ALLREDUCE=linear
        ALLGATHER=recursive_doubling ALLGATHER=bruck ALLGATHER=ring ALLGATHER=linear ALLGATHER=leader ALLGATHER=node
        ALLTOALL=pairwise ALLTOALL=bruck ALLTOALL=linear ALLTOALL=leader
        GATHER=binomial GATHER=linear
        REDUCE_SCATTER=ring REDUCE_SCATTER=reduce_scatterv)
for f in "${forced[@]}"; do
    name=$(tr 'A-Z=' 'a-z.' <<<"$f")
    for n in 4 7; do
        run "forced.$name.n$n" 120 -n $n -x "KNIT_COLL_$f" "$PROG" suite 16k
    done
    case $f in REDUCE*|ALLREDUCE*) run "forced.$name.user.n6" 120 -n 6 -x "KNIT_COLL_$f" "$PROG" user;; esac
done
# the auto thresholds moved down, so every switch point is crossed by small sizes
run thresholds.low.n5 120 -n 5 -x KNIT_COLL_BCAST_LONG=1k -x KNIT_COLL_REDUCE_LONG=1k \
    -x KNIT_COLL_ALLREDUCE_SHORT=256 -x KNIT_COLL_ALLREDUCE_LONG=4k -x KNIT_COLL_ALLGATHER_SHORT=256 \
    -x KNIT_COLL_ALLGATHER_LONG=4k -x KNIT_COLL_ALLTOALL_SHORT=16 -x KNIT_COLL_ALLTOALL_LONG=1k \
    -x KNIT_COLL_GATHER_SHORT=1k -x KNIT_COLL_REDUCE_SCATTER_LONG=1k "$PROG" suite 64k
run small_eager.n4 120 -n 4 -x KNIT_EAGER_MAX=1k -x KNIT_CMA=off "$PROG" suite 256k

# emulated nodes (the network path and the node-aware algorithms)
if "$KNITRUN" --timeout 30 -n 2 --nodes 2 "$PROG" errors >/dev/null 2>&1; then
    for lay in "4 2" "5 2" "7 3" "8 3"; do
        set -- $lay
        run "nodes$2.suite.n$1" 180 -n "$1" --nodes "$2" "$PROG" suite 64k
        run "nodes$2.sub.n$1" 180 -n "$1" --nodes "$2" "$PROG" sub 16k
        run "nodes$2.user.n$1" 180 -n "$1" --nodes "$2" "$PROG" user
        run "nodes$2.nb.n$1" 180 -n "$1" --nodes "$2" "$PROG" nb 5
    done
    run nodes2.determinism.n6 180 -n 6 --nodes 2 "$PROG" determinism
    run nodes2.suite.n4.16m 180 -n 4 --nodes 2 "$PROG" suite 4m
    # the two-level forms: nodes of 3 and of 2 ranks (7 on 3 nodes below:
    # uneven, they fall back; user ops: not commutative, allreduce falls back)
    for f in ALLGATHER=cross ALLREDUCE=cross; do
        name=$(tr 'A-Z=' 'a-z.' <<<"$f")
        run "nodes2.forced.$name.n6" 180 -n 6 --nodes 2 -x "KNIT_COLL_$f" "$PROG" suite 64k
        run "nodes3.forced.$name.n6" 180 -n 6 --nodes 3 -x "KNIT_COLL_$f" "$PROG" suite 64k
        run "nodes3.forced.$name.nb.n6" 180 -n 6 --nodes 3 -x "KNIT_COLL_$f" "$PROG" nb 5
    done
    run nodes2.forced.allreduce.cross.user.n4 180 -n 4 --nodes 2 -x KNIT_COLL_ALLREDUCE=cross "$PROG" user
    for f in ALLREDUCE=ring ALLREDUCE=cross ALLGATHER=node ALLGATHER=cross NODE_AWARE=off NODE_AWARE=on; do
        name=$(tr 'A-Z=' 'a-z.' <<<"$f")
        run "nodes3.forced.$name.n7" 180 -n 7 --nodes 3 -x "KNIT_COLL_$f" "$PROG" suite 16k
    done
    # in the network (KNIT_COLL_OFFLOAD=on): barrier, bcast, reduce and allreduce through
    # the agents and the switch, 1 to 8 nodes, 1 to 3 ranks a node, uneven
    # nodes, sub-communicators, user ops (on the hosts), floating point
    # identical on every rank and run, vectors past the module's limit
    for lay in "2 1" "4 2" "4 4" "7 3" "8 8"; do
        set -- $lay
        run "offload.nodes$2.suite.n$1" 180 -n "$1" --nodes "$2" -x KNIT_COLL_OFFLOAD=on "$PROG" suite 64k
    done
    run offload.nodes3.sub.n7 180 -n 7 --nodes 3 -x KNIT_COLL_OFFLOAD=on "$PROG" sub 16k
    run offload.nodes2.user.n5 180 -n 5 --nodes 2 -x KNIT_COLL_OFFLOAD=on "$PROG" user
    run offload.nodes3.determinism.n6 180 -n 6 --nodes 3 -x KNIT_COLL_OFFLOAD=on "$PROG" determinism
    run offload.nodes2.suite.n4.2m 180 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=on "$PROG" suite 2m
    # in segments (KN_COLL_MOD_SEG, 64 KiB) up to 16 MiB: counts around a segment, many segments
    run offload.nodes2.suite.n4.16m 180 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=on "$PROG" suite 16m
    # through a tree of switches: fan-in 2 (8 nodes: three levels), fan-in 4
    run offload.tree.fanin2.suite.n8 180 -n 8 --nodes 8 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=2 "$PROG" suite 64k
    run offload.tree.fanin2.sub.n11 180 -n 11 --nodes 7 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=2 "$PROG" sub 16k
    run offload.tree.fanin2.determinism.n8 180 -n 8 --nodes 5 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=2 "$PROG" determinism
    run offload.tree.fanin4.nb.n8 180 -n 8 --nodes 8 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=4 "$PROG" nb 5
    # (4 MiB: 64 segments up the tree; the many-segment counts are the 16 MiB run above)
    run offload.tree.fanin2.nodes4.suite.n8.4m 180 -n 8 --nodes 4 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=2 "$PROG" suite 4m
    # it is the agents that did them: the module's traffic, per rank
    out=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=on -x KNIT_STATS=1 "$PROG" suite 1k 2>&1)
    if grep -q "^ok " <<<"$out" && [ "$(grep -c 'stats: rank [0-3] *coll  *queue in [1-9]' <<<"$out")" = 4 ]; then
        echo "PASS coll.offload.through_the_agents"
    else
        echo "FAIL coll.offload.through_the_agents"; tail -n 8 <<<"$out"; fails=$((fails + 1))
    fi
    # the bus report (KNIT_STATS): every rank's traffic with the network
    # and with its agent; offloaded, the agent's share appears
    bus_ok() { [ "$(grep -c "knit\[rank [0-3]\] stats: bus: network out $2" <<<"$1")" = 4 ] &&
        [ "$(grep -c "knit\[rank [0-3]\] stats: bus: .*; agent out $3" <<<"$1")" = 4 ]; }
    off=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=off -x KNIT_STATS=1 "$PROG" suite 1k 2>&1)
    on=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=on -x KNIT_STATS=1 "$PROG" suite 1k 2>&1)
    if grep -q "^ok " <<<"$off" && grep -q "^ok " <<<"$on" && bus_ok "$off" "[1-9]" "0 B, in 0 B" &&
        bus_ok "$on" "." "[1-9]"; then
        echo "PASS coll.offload.bus_report"
    else
        echo "FAIL coll.offload.bus_report"; grep "bus:" <<<"$off$on"; fails=$((fails + 1))
    fi
    # KNIT_COLL_OFFLOAD=auto takes the offloaded form exactly where the
    # measured table says it won: here allreduce up to 1 KiB and bcast up
    # to 8 B from 2 nodes, barrier never (20 of the 50 collectives of
    # `choose` per rank); no table, or a table that never offloads: none
    # (the module is not even loaded); a malformed table: one warning
    offloaded() { sed -n 's/.*stats: rank 0 coll *queue in \([0-9]*\) ops.*/\1/p' <<<"$1"; }
    T1=$TMP/xover.tsv T2=$TMP/never.tsv T3=$TMP/bad.tsv
    printf '# a test table\nallreduce 2 0 1k\nbcast 2 0 8\nbarrier 2 -\nreduce 1 0 1m\n' >"$T1"
    printf 'allreduce 2 -\nbarrier 2 -\n' >"$T2"
    printf 'allreduce 2 0\n' >"$T3"
    on=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=on -x KNIT_STATS=1 "$PROG" choose 2>&1)
    auto=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD_TABLE="$T1" -x KNIT_STATS=1 "$PROG" choose 2>&1)
    never=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD_TABLE="$T2" -x KNIT_STATS=1 "$PROG" choose 2>&1)
    bad=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD_TABLE="$T3" "$PROG" choose 2>&1)
    n_on=$(offloaded "$on") n_auto=$(offloaded "$auto")
    if grep -q "^ok choose" <<<"$on$auto$never$bad" && [ -n "$n_on" ] && [ -n "$n_auto" ] &&
        [ "$n_auto" = 20 ] && [ "$n_on" -gt 50 ] && [ -z "$(offloaded "$never")" ] &&
        [ "$(grep -c "bad.tsv:1: expected: collective, nodes, then a size range" <<<"$bad")" = 1 ] &&
        [ "$(grep -c '^ok choose' <<<"$on$auto$never$bad")" = 4 ]; then
        echo "PASS coll.offload.auto_follows_measurements ($n_on offloaded with on, $n_auto with the table)"
    else
        echo "FAIL coll.offload.auto_follows_measurements: on '$n_on', auto '$n_auto', never '$(offloaded "$never")'"
        grep -E "warn|error|FAIL|check" <<<"$on$auto$never$bad" | head -5; fails=$((fails + 1))
    fi
    # an agent killed while the others are inside an offloaded allreduce:
    # the job ends at once, naming it (a star, and a tree of switches)
    for lay in "6 3 32" "8 4 2"; do
        set -- $lay
        out=$("$KNITRUN" --timeout 60 -n "$1" --nodes "$2" -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN="$3" \
            "$PROG" killagent 200 2>&1)
        rc=$?
        if [ "$rc" = 1 ] && [ "$(grep '^knitrun: ' <<<"$out")" = "knitrun: agent on node $(($2 - 1)) died (killed by SIGKILL)" ]; then
            echo "PASS coll.offload.agent_killed_mid_allreduce.nodes$2.fanin$3"
        else
            echo "FAIL coll.offload.agent_killed_mid_allreduce.nodes$2.fanin$3: status $rc"; tail -n 4 <<<"$out"
            fails=$((fails + 1))
        fi
    done
    # the module faults mid-job (injected at the agent of rank 0 of the
    # 3rd, 20th offloaded collective): one warning, the collective that
    # faulted and every one after done on the hosts
    for f in "3 4 2" "20 6 3"; do
        set -- $f
        out=$("$KNITRUN" --timeout 120 -n "$2" --nodes "$3" -x KNIT_COLL_OFFLOAD=on -x KNIT_COLL_OFFLOAD_FAULT="$1" \
            "$PROG" suite 4k 2>&1)
        if grep -q "^ok " <<<"$out" && [ "$(grep -c 'collectives module faulted' <<<"$out")" = 1 ]; then
            echo "PASS coll.offload.fault_falls_back.at$1.n$2"
        else
            echo "FAIL coll.offload.fault_falls_back.at$1.n$2"; tail -n 8 <<<"$out"; fails=$((fails + 1))
        fi
    done
    # nonblocking, interleaved with the hosts' collectives and p2p
    run offload.nodes3.nb.n6 180 -n 6 --nodes 3 -x KNIT_COLL_OFFLOAD=on "$PROG" nb 5
    # three communicators' collectives in flight together, finished in
    # changing orders (a star, and a tree of fan-in 2)
    run offload.nodes3.comms.n6 180 -n 6 --nodes 3 -x KNIT_COLL_OFFLOAD=on "$PROG" comms
    run offload.tree.fanin2.comms.n8 180 -n 8 --nodes 8 -x KNIT_COLL_OFFLOAD=on -x KNIT_SWITCH_FANIN=2 "$PROG" comms
    # asynchronous progress: tests/job/test_coll_async.sh (a unit that runs alone)
    # a fault on a nonblocking one (the 4th offloaded collective of the
    # async case: an iallreduce of 64 KiB) falls back too
    out=$("$KNITRUN" --timeout 120 -n 4 --nodes 2 -x KNIT_COLL_OFFLOAD=on -x KNIT_COLL_OFFLOAD_FAULT=4 \
        "$PROG" async 1 2>&1)
    if grep -q "^ok " <<<"$out" && [ "$(grep -c 'collectives module faulted' <<<"$out")" = 1 ]; then
        echo "PASS coll.offload.fault_falls_back.nonblocking"
    else
        echo "FAIL coll.offload.fault_falls_back.nonblocking"; tail -n 8 <<<"$out"; fails=$((fails + 1))
    fi
    # no daemons: one warning, and the hosts do them
    out=$("$KNITRUN" --timeout 60 -n 4 --nodes 2 --no-offload -x KNIT_COLL_OFFLOAD=on "$PROG" suite 1k 2>&1)
    if grep -q "^ok " <<<"$out" && [ "$(grep -c 'collectives module could not be loaded' <<<"$out")" = 1 ]; then
        echo "PASS coll.offload.no_daemons_warns_once"
    else
        echo "FAIL coll.offload.no_daemons_warns_once"; tail -n 8 <<<"$out"; fails=$((fails + 1))
    fi
else
    echo "SKIP coll.nodes: knitrun --nodes 2 does not run a job here"
fi
exit $((fails > 0))
