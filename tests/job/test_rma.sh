#!/usr/bin/env bash
# One-sided operations (include/knit/rma.h, docs/rma.md): every method on
# one node and across emulated nodes, atomics and concurrent accumulates,
# a target that makes no knit calls, bad calls, and an agent killed
# mid-transfer (see tests/job/rma_test.c).
# test-unit: long
source "$(dirname "$0")/lib.sh"

T=$JOBBIN/rma_test
[ -x "$T" ] || { echo "FAIL rma.build: $T is missing"; exit 1; }

# Every shape x put/get/acc x blocking/nonblocking, to the next rank and to oneself
for m in direct agent pack auto; do
    for nodes in 1 2; do
        run "$KNITRUN" -n 2 --nodes "$nodes" --timeout 110 "$T" sweep "$m"
        expect_ok "rma.sweep.$m.nodes$nodes" sweep
    done
done
# more ranks than cpus, on two nodes: two targets per node
run "$KNITRUN" -n 4 --nodes 2 --timeout 110 "$T" sweep auto
expect_ok rma.sweep.auto.n4.nodes2 sweep
# the default method from the environment
run "$KNITRUN" -n 2 --nodes 2 --timeout 110 -x KNIT_RMA_METHOD=pack "$T" sweep default
expect_ok rma.sweep.env_pack.nodes2 sweep

# every rank puts into every other, then one fence: complete at the target
# means in place (8 ranks on 2 nodes: the barrier does not pass every writer)
for m in direct agent pack; do
    run "$KNITRUN" -n 8 --nodes 2 --timeout 90 "$T" alltoall "$m"
    expect_ok "rma.alltoall.$m.n8.nodes2" alltoall
done

# puts and accumulates that complete locally (KNIT_RMA_LOCAL): the source is
# reused at once, the fence brings the rest and an error that came late
for m in agent pack auto; do
    run "$KNITRUN" -n 4 --nodes 2 --timeout 60 "$T" local "$m"
    expect_ok "rma.local_completion.$m" local
done

# puts to other nodes held for the next synchronization (docs/rma.md, Puts
# held for the barrier): the barrier's messages, a fence's agents, a get
# right after, knit_win_free; with a small KNIT_RMA_DEFER_MAX sent on as
# they fill; on one node nothing is held
run "$KNITRUN" -n 4 --nodes 2 --timeout 90 "$T" held
expect_ok rma.held.n4.nodes2 held
run "$KNITRUN" -n 4 --nodes 2 --timeout 90 -x KNIT_RMA_DEFER_MAX=512 "$T" held small
expect_ok rma.held.small.n4.nodes2 held
run "$KNITRUN" -n 3 --nodes 1 --timeout 90 "$T" held
expect_ok rma.held.n3.nodes1 held
# past 64 members the barrier adds up the messages with a reduce-scatter
run "$KNITRUN" -n 66 --nodes 2 --timeout 200 "$T" held
expect_ok rma.held.n66.nodes2 held

# more requests in flight than the agent's queue holds, tested as they go
for m in direct agent pack; do
    run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" many "$m"
    expect_ok "rma.many_in_flight.$m" many
done

# auto follows the cost model's file (KNIT_RMA_MODEL_CACHE): expensive
# cross-memory attach -> pack the small blocks; expensive copies -> agent
printf 'knit-rma-model 1\nts_cma 1000000\ntn_cma 0.05\nts_cp 1\ntm 0.03\n' >"$TMP/model-cma"
printf 'knit-rma-model 1\nts_cma 300\ntn_cma 0.05\nts_cp 1000\ntm 1000\n' >"$TMP/model-copy"
run "$KNITRUN" -n 2 --nodes 2 --timeout 50 -x KNIT_RMA_MODEL_CACHE="$TMP/model-cma" "$T" model pack
expect_ok rma.model.cache_says_pack model
run "$KNITRUN" -n 2 --nodes 2 --timeout 50 -x KNIT_RMA_MODEL_CACHE="$TMP/model-copy" "$T" model agent
expect_ok rma.model.cache_says_agent model
KNIT_RMA_MODEL_CACHE="$TMP/fresh" "$ROOT/$BUILD/bin/knit-info" --rma >"$TMP/info" 2>&1
if grep -q "^knit-rma-model 1" "$TMP/fresh" 2>/dev/null && [ "$(grep -cE '^(ts_cma|tn_cma|ts_cp|tm) [0-9.]+$' "$TMP/fresh")" = 4 ] &&
    grep -q "written to $TMP/fresh" "$TMP/info"; then
    pass rma.model.knit_info_writes_the_cache
else
    fail rma.model.knit_info_writes_the_cache "$(head -c 300 "$TMP/fresh" 2>&1) $(head -n 2 "$TMP/info")"
fi

# fetch-and-add from every rank, a lock by compare-and-swap, 4 (and 8)
# ranks accumulating into one region at once
for lay in "4 1" "4 2" "8 2" "8 4"; do
    set -- $lay
    run "$KNITRUN" -n "$1" --nodes "$2" --timeout 110 "$T" atomics
    expect_ok "rma.atomics.n$1.nodes$2" atomics
done

# passive target: rank 1 computes 2 s without knit calls
for m in direct agent pack auto; do
    run "$KNITRUN" -n 2 --timeout 50 "$T" passive "$m"
    expect_ok "rma.passive.$m.same_node" passive
done
for m in agent pack auto; do
    run "$KNITRUN" -n 2 --nodes 2 --timeout 50 "$T" passive "$m"
    expect_ok "rma.passive.$m.other_node" passive
done

# bad descriptors and buffers give errors, the job goes on
for nodes in 1 2; do
    run "$KNITRUN" -n 4 --nodes "$nodes" --timeout 50 "$T" errors
    expect_ok "rma.errors.nodes$nodes" errors
done

# a window over part of the job before any over all of it: the agents'
# module is not there yet unless KNIT_RMA_LOAD=init
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" subcomm
expect_ok rma.subcomm.load_first subcomm
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 -x KNIT_RMA_LOAD=init "$T" subcomm
expect_ok rma.subcomm.load_init subcomm

# without agents: put and get work directly, accumulates to others say why they cannot
run "$KNITRUN" -n 2 --no-offload --timeout 50 "$T" sweep direct
expect_ok rma.no_agents.direct sweep
# within a node, memory in the shared heap takes atomics without agents
# (processor atomics: rma_mod.h); across nodes only the agents do them
run "$KNITRUN" -n 2 --no-offload --timeout 50 "$T" atomics
expect_ok rma.no_agents.atomics_in_node atomics
run "$KNITRUN" -n 2 --nodes 2 --no-offload --timeout 50 "$T" atomics
if [ "$RC" -ne 0 ] && grep -q "accumulates and atomics are done by the node agents, but this job has no node agents" "$ERR"; then
    pass rma.no_agents.atomics_refused
else
    fail rma.no_agents.atomics_refused "status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"
fi

# the target's agent killed in the middle of transfers: knitrun's verdict, no hang
run "$KNITRUN" -n 4 --nodes 2 --timeout 50 "$T" killagent
if [ "$RC" -eq 1 ] && [ "$(verdicts)" = "knitrun: agent on node 1 died (killed by SIGKILL)" ] && [ "$MS" -lt 20000 ]; then
    pass rma.agent_killed_mid_transfer
else
    fail rma.agent_killed_mid_transfer "status $RC after $MS ms, verdicts '$(verdicts | tr '\n' '|')'"
fi
finish
