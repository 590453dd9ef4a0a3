#!/usr/bin/env bash
# Jobs that outlive every timeout of the runtime.  Each timeout is
# shortened through its tunable, then a job runs for several times the
# longest one, with phases in which some process makes no knit call at all
# (tests/job/long.c): no start-up bound may end a job that runs.
# test-unit: long
source "$(dirname "$0")/lib.sh"

T=$JOBBIN/long
M=$ROOT/$BUILD/modules
[ -x "$T" ] || { echo "FAIL long.build: $T is missing"; exit 1; }

# Every time-valued tunable of the runtime (knit-info -e lists them): all
# short.  Start-up itself must still fit in them on a loaded machine.
SHORT=(-x KNIT_BOOT_TIMEOUT=2s -x KNIT_NET_TIMEOUT=2s -x KNIT_MODULE_BUDGET=250ms
       -x KNIT_KILL_GRACE=500ms -x KNIT_YIELD_TIME=1ms -x KNIT_AGENT_SPIN=10us)
# Each of the 5 phases lasts PHASE seconds: 3 times the longest timeout.
PHASE=6

for layout in "1 2" "2 4"; do
    set -- $layout
    nodes=$1 n=$2
    RUN_LIMIT=120 run "$KNITRUN" -n "$n" --nodes "$nodes" "${SHORT[@]}" "$T" "$M" "$PHASE"
    expect_ok "long.outlives_timeouts.n${nodes}" long
    if grep -q '^knit\[' "$ERR"; then
        fail "long.quiet.n${nodes}" "the runtime complained: $(grep '^knit\[' "$ERR" | head -3 | tr '\n' '|')"
    fi
    if [ "$RC" -eq 0 ] && [ "$MS" -lt $((5 * PHASE * 1000)) ]; then
        fail "long.ran_long.n${nodes}" "the job took ${MS} ms: its phases did not last ${PHASE} s each"
    fi
done
exit $FAILED
