#!/usr/bin/env bash
# Asynchronous progress of offloaded collectives (tests/job/coll_test.c,
# case async): its own unit, since it measures what the agents get done
# while the ranks compute, and another unit's jobs beside it would take
# the cpus the agents preempt.
# test-unit: alone (timing: the agents must preempt computing ranks)
source "$(dirname "$0")/lib.sh"
PROG=$JOBBIN/coll_test
fails=0
if ! "$KNITRUN" --timeout 30 -n 2 --nodes 2 "$JOBBIN/hello" >/dev/null 2>&1; then
    echo "SKIP coll.offload.async_progress: knitrun --nodes 2 does not run a job here"
    exit 0
fi
# asynchronous progress: started, 10 ms of computing without a knit
# call, then one test finds every offloaded one complete (the agents
# completed them; with short time slices they preempt the computing
# ranks on these 2 cpus); the hosts' algorithms, as a check that the
# case can fail, leave some of them open
async_first() { grep -o '^async: [0-9]* of [0-9]*' <<<"$1" | awk '{print $2, $4}'; }
# (up to 3 tries: a wake-up of an agent can miss the 10 ms on a 2-cpu VM)
for try in 1 2 3; do
    on=$("$KNITRUN" --timeout 60 -n 2 --nodes 2 -x KNIT_COLL_OFFLOAD=on -x KNIT_AGENT_SLICE=300us "$PROG" async 2>&1)
    read -r on_done on_all <<<"$(async_first "$on")"
    [ -n "$on_all" ] && [ "$on_done" = "$on_all" ] && break
done
off=$("$KNITRUN" --timeout 60 -n 2 --nodes 2 -x KNIT_COLL_OFFLOAD=off "$PROG" async 2>&1)
read -r off_done off_all <<<"$(async_first "$off")"
if grep -q "^ok " <<<"$on" && grep -q "^ok " <<<"$off" && [ -n "$on_all" ] && [ "$on_done" = "$on_all" ] &&
    [ -n "$off_all" ] && [ "$off_done" -lt "$off_all" ]; then
    echo "PASS coll.offload.async_progress ($on_done of $on_all offloaded, $off_done of $off_all on the hosts)"
else
    echo "FAIL coll.offload.async_progress"; tail -n 4 <<<"$on"; tail -n 4 <<<"$off"; fails=$((fails + 1))
fi
exit $((fails > 0))
