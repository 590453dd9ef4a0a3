#!/usr/bin/env bash
# Offload: knit-agent / knit-switch started and stopped with every job,
# modules loaded, called, faulting and refused, on 1, 2 and 4 emulated
# nodes and at every placement (see tests/job/offload_test.c).
source "$(dirname "$0")/lib.sh"

T=$JOBBIN/offload_test
M=$ROOT/$BUILD/modules
NOP=$JOBBIN/nop
for f in "$T" "$NOP" "$M/echo.so" "$ROOT/$BUILD/bin/knit-agent" "$ROOT/$BUILD/bin/knit-switch"; do
    [ -e "$f" ] || { echo "FAIL offload.build: $f is missing"; exit 1; }
done

# A daemon still looking for its store (it died with the rank that ran it,
# under another launcher) ends at SIGTERM at once (its rank's
# PR_SET_PDEATHSIG: nothing else stops it there); before, the signal
# waited, blocked, until the connect gave up (KNIT_BOOT_TIMEOUT)
for d in agent switch; do
    env KNIT_JOBID=j KNIT_COOKIE=0123456789abcdef0123456789abcdef KNIT_SIZE=1 KNIT_NNODES=1 KNIT_NODE_SIZES=1 \
        KNIT_NODE=0 KNIT_BOOT_ADDR="unix:$TMP/no-store.sock" KNIT_BOOT_TIMEOUT=30s \
        "$ROOT/$BUILD/bin/knit-$d" >/dev/null 2>&1 &
    pid=$!
    sleep 0.3
    t0=$(date +%s%N)
    kill -TERM "$pid"
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    if kill -0 "$pid" 2>/dev/null; then
        fail "offload.$d.sigterm_while_connecting" "still running 1 s after SIGTERM"
        kill -9 "$pid"
    else
        pass "offload.$d.sigterm_while_connecting"
    fi
    wait "$pid" 2>/dev/null
done

# Start-up: daemons add little to a job (median of 5, both ways).
median() { sort -n | sed -n 3p; }
with=() without=()
for i in 1 2 3 4 5; do
    run "$KNITRUN" -n 2 "$NOP"; with+=("$MS")
    run "$KNITRUN" -n 2 --no-offload "$NOP"; without+=("$MS")
done
mw=$(printf '%s\n' "${with[@]}" | median)
mo=$(printf '%s\n' "${without[@]}" | median)
echo "startup: knitrun -n 2 nop: ${mw} ms with offload daemons, ${mo} ms without (median of 5)"
if [ "$mw" -le $((mo + 150)) ]; then pass offload.startup; else fail offload.startup "${mw} ms with, ${mo} ms without"; fi

# Round trips 0 B .. 1 MiB, the counter, message paths, every placement
for nodes in 1 2 4; do
    for where in agent switch host; do
        run "$KNITRUN" -n 4 --nodes "$nodes" --timeout 50 "$T" "$M" roundtrip "$where"
        expect_ok "offload.roundtrip.${where}.n${nodes}" roundtrip
        run "$KNITRUN" -n 4 --nodes "$nodes" --timeout 50 "$T" "$M" paths "$where"
        expect_ok "offload.paths.${where}.n${nodes}" paths
    done
done

run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" equiv
expect_ok offload.host_equivalence equiv
run "$KNITRUN" -n 4 --nodes 4 --timeout 50 "$T" "$M" equiv
expect_ok offload.host_equivalence.n4 equiv

# Waiting on a module request drives point-to-point progress
run "$KNITRUN" -n 2 --timeout 50 "$T" "$M" progress
expect_ok offload.p2p_progress progress

# Load / unload cycles leak nothing in the agents (fds, mappings, memory)
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" cycles 60
expect_ok offload.load_cycles cycles

# Faults: each disables its module only, everywhere; echo goes on
for where in agent switch; do
    run "$KNITRUN" -n 4 --nodes 2 --timeout 50 -x KNIT_MODULE_BUDGET=200ms "$T" "$M" faults "$where"
    expect_ok "offload.faults.$where" faults
done

# The budget counts processor time: a module process the machine does not
# run for 5 budgets (stopped) keeps its module; one that waits (sleeps) is
# stopped after 10 budgets (tests/job/test_hostile.sh, 'z').
run "$KNITRUN" -n 2 --timeout 50 -x KNIT_MODULE_BUDGET=200ms "$T" "$M" paused
expect_ok offload.budget_counts_cpu paused

# A tree of switches (KNIT_SWITCH_FANIN): each node's path up to the root,
# as worked out by hand (switches numbered from the root down, level by
# level: 8 nodes at fan-in 2 are 4 + 2 + 1 switches); modules, faults and
# unloads on a tree; a module built for ABI 1 at every placement.
tree_paths() { # name fanin expected-lines...
    local name=$1 fanin=$2; shift 2
    run "$KNITRUN" -n 8 --nodes 8 --timeout 50 -x KNIT_SWITCH_FANIN="$fanin" "$T" "$M" tree
    local got want
    got=$(grep '^path ' "$OUT" | sort)
    want=$(printf 'path %s\n' "$@")
    if [ "$RC" -eq 0 ] && [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "status $RC: $(tr '\n' ',' <<<"$got") $(verdicts)"; fi
}
tree_paths offload.tree.star 32 "0 -1" "1 -1" "2 -1" "3 -1" "4 -1" "5 -1" "6 -1" "7 -1"
tree_paths offload.tree.fanin4 4 "0 -2 -1" "1 -2 -1" "2 -2 -1" "3 -2 -1" "4 -3 -1" "5 -3 -1" "6 -3 -1" "7 -3 -1"
tree_paths offload.tree.fanin2 2 "0 -4 -2 -1" "1 -4 -2 -1" "2 -5 -2 -1" "3 -5 -2 -1" \
    "4 -6 -3 -1" "5 -6 -3 -1" "6 -7 -3 -1" "7 -7 -3 -1"
for where in agent switch; do
    run "$KNITRUN" -n 5 --nodes 5 --timeout 50 -x KNIT_SWITCH_FANIN=2 "$T" "$M" roundtrip "$where"
    expect_ok "offload.tree.roundtrip.$where" roundtrip
    run "$KNITRUN" -n 5 --nodes 5 --timeout 50 -x KNIT_SWITCH_FANIN=2 "$T" "$M" paths "$where"
    expect_ok "offload.tree.paths.$where" paths
    run "$KNITRUN" -n 4 --nodes 4 --timeout 50 -x KNIT_SWITCH_FANIN=2 -x KNIT_MODULE_BUDGET=200ms "$T" "$M" faults "$where"
    expect_ok "offload.tree.faults.$where" faults
    mkdir -p "$TMP/abi1" && ln -sf "$ROOT/$BUILD/tests/modules/abi1.so" "$M/counter.so" "$TMP/abi1/"
    run "$KNITRUN" -n 4 --nodes 4 --timeout 50 -x KNIT_SWITCH_FANIN=2 "$T" "$TMP/abi1" roundtrip "$where" abi1
    expect_ok "offload.abi1.$where" roundtrip
done
# Header handlers (modules/relay.c): each switch's on_header passes a
# message on to its children (on the daemon's thread as it streams in; in
# a module process whole), every agent checks every byte of 0 B to 3 MiB
# (many fragments); a star, trees, the host placement's emulation
for iso in inprocess process; do
    for lay in "2 2" "8 8 2" "5 5 2"; do
        set -- $lay
        run "$KNITRUN" -n "$1" --nodes "$2" --timeout 50 -x KNIT_MODULE_ISOLATION=$iso -x KNIT_SWITCH_FANIN="${3:-32}" \
            "$T" "$M" relay agent
        expect_ok "offload.on_header.relay.$iso.n$2.fanin${3:-32}" relay
    done
done
run "$KNITRUN" -n 4 --nodes 4 --timeout 50 "$T" "$M" relay host
expect_ok offload.on_header.relay.host relay

# Bulk messages between daemons (src/offload/bulk.c, KNIT_AGENT_BULK):
# with 1 every message of a byte or more goes as a descriptor that its
# receiver reads, the small ones after it waiting their turn; with 0 none
# does.  Round trips of 0 B to 1 MiB through the switch, the ring's hops
# and multicast, and the relay's 0 B to 3 MiB down a tree of switches
# (each passed on once read) must all come through whole and in order;
# modules/order.c sends each next agent 240 messages of 32 B to 1 MiB,
# numbered, and the next agent checks their order and bytes.
for b in 128k 1 0; do
    run "$KNITRUN" -n 6 --nodes 3 --timeout 50 -x KNIT_AGENT_BULK=$b "$T" "$M" order
    expect_ok "offload.bulk$b.order.n6.nodes3" order
done
for b in 1 0; do
    for c in "roundtrip switch" "paths agent" "relay agent"; do
        run "$KNITRUN" -n 5 --nodes 5 --timeout 50 -x KNIT_AGENT_BULK=$b -x KNIT_SWITCH_FANIN=2 "$T" "$M" $c
        expect_ok "offload.bulk$b.${c%% *}.n5.fanin2" "${c%% *}"
    done
done

run "$KNITRUN" -n 4 --nodes 4 --timeout 50 -x KNIT_SWITCH_FANIN=1 "$NOP"
if [ "$RC" -ne 0 ] && grep -q "KNIT_SWITCH_FANIN=1: must be at least 2" "$ERR"; then
    pass offload.tree.bad_fanin
else
    fail offload.tree.bad_fanin "status $RC: $(verdicts)"
fi

# Files that are not modules, each refused with its reason
B=$TMP/bad
mkdir -p "$B"
printf 'this is not a module\n' >"$B/text.so"
cp "$M/echo.so" "$B/arm.so"
printf '\xb7\x00' | dd of="$B/arm.so" bs=1 seek=18 conv=notrunc 2>/dev/null # e_machine = EM_AARCH64
cp "$M/bad_nosym.so" "$B/nosym.so"
cp "$M/bad_abi.so" "$B/abi.so"
cp "$M/bad_init.so" "$B/init.so"
for where in agent host; do
    run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" badfiles "$B" "$where"
    expect_ok "offload.bad_files.$where" badfiles
done

# Malformed queue entries written by hand into the ring: refused, the agent goes on
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" garbage
expect_ok offload.bad_queue_entries garbage
if [ "$(grep -c 'malformed queue entry' "$ERR")" -ge 16 ]; then pass offload.bad_queue_entries_logged
else fail offload.bad_queue_entries_logged "$(grep -c 'malformed queue entry' "$ERR") refusals logged"; fi

# Traffic counters, and the report at the end of the job
run "$KNITRUN" -n 2 --timeout 50 -x KNIT_STATS=1 "$T" "$M" stats
expect_ok offload.stats stats
if grep -q 'knit\[agent 0\] stats: rank 1 echo .*agent reads 1 ops 1024.0 KiB, writes 1 ops 1024.0 KiB' "$ERR"; then
    pass offload.stats_report
else
    fail offload.stats_report "no per-module line in: $(grep stats: "$ERR" | tr '\n' '|')"
fi

# Without daemons: agent placement refused, host placement works
run "$KNITRUN" -n 2 --no-offload --timeout 50 "$T" "$M" noagent
expect_ok offload.no_offload noagent

# The daemons end with the job: no process, no shared-memory file left
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" pids
expect_ok offload.pids pids
jobid=$(sed -n 's/.* jobid \(.*\)/\1/p' "$OUT" | head -1)
pids=$(sed -n 's/^agent [0-9]* pid \([0-9]*\) .*/\1/p' "$OUT" | tr '\n' ' ')
left=""
for p in $pids; do [ -e "/proc/$p" ] && left+="$p "; done
shm=$( [ -n "$jobid" ] && shm_left "$jobid")
if [ -n "$pids" ] && [ -z "$left" ] && [ -z "$shm" ]; then pass offload.cleanup
else fail offload.cleanup "pids '$pids' left '$left' shm '$shm'"; fi

# A rank dies with requests in its agent: the job ends with the rank's
# verdict (not the agent's), the agent does not crash
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" dying
if [ "$RC" -eq 3 ] && [ "$(verdicts)" = "knitrun: rank 3 on node 1 exited with status 3" ] &&
    ! grep -q 'agent.*\(died\|error\)' "$ERR"; then
    pass offload.rank_dies
else
    fail offload.rank_dies "status $RC, verdicts '$(verdicts | tr '\n' '|')', stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"
fi

# An agent dies: the job ends with a clear verdict and status 1 (a
# daemon's signal is not the program's: docs/knitrun.md)
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" "$M" killagent
if [ "$RC" -eq 1 ] && [ "$(verdicts)" = "knitrun: agent on node 1 died (killed by SIGKILL)" ] && [ "$MS" -lt 10000 ]; then
    pass offload.agent_dies
else
    fail offload.agent_dies "status $RC, verdicts '$(verdicts | tr '\n' '|')', stderr '$(tail -n 5 "$ERR" | tr '\n' '|')'"
fi

finish
