#!/usr/bin/env bash
# Modules that try to take their daemon down (tests/job/hostile_test.c,
# tests/modules/): exit, _exit, abort, a signal mask with every signal
# blocked and a loop, a handler that sleeps forever, threads, scribbles over its own memory and over the
# rings to its daemon, kill, exec and file creation, constructors that
# crash, exit or take the fault signals, a descriptor function returning a
# wild pointer.  Under process isolation (the default) each ends its own
# module only; the daemon serves the others (echo keeps answering) and the
# job ends well, leaving no process and no file.  In-process isolation
# catches the calls it intercepts.
source "$(dirname "$0")/lib.sh"

T=$JOBBIN/hostile_test
M=$ROOT/$BUILD/modules
TM=$ROOT/$BUILD/tests/modules
for f in "$T" "$TM/hostile.so" "$ROOT/$BUILD/bin/knit-modhost"; do
    [ -e "$f" ] || { echo "FAIL hostile.build: $f is missing"; exit 1; }
done

# Nothing of the job is left: no process (module hosts included) and no
# file in /dev/shm.
left_behind() {
    local jobid=$1 p procs=""
    [ -n "$jobid" ] || { echo "no jobid"; return; }
    for p in /proc/[0-9]*; do
        grep -qaxz "KNIT_JOBID=$jobid" "$p/environ" 2>/dev/null &&
            procs+="${p#/proc/}($(cat "$p/comm" 2>/dev/null)) "
    done
    local shm
    shm=$(shm_left "$jobid")
    [ -n "$procs$shm" ] && echo "processes '$procs' files '$shm'"
}

hostile() { # name isolation knitrun-args... -- hostile_test args
    local name=$1 iso=$2; shift 2
    RUN_LIMIT=90 run env KNIT_MODULE_ISOLATION="$iso" "$KNITRUN" --timeout 80 -x KNIT_MODULE_BUDGET=300ms "$@"
    expect_ok "$name" hostile
    local jobid left
    jobid=$(sed -n 's/^jobid //p' "$OUT" | head -1)
    left=$(left_behind "$jobid")
    if [ -n "$left" ]; then fail "$name.nothing_left" "$left"; else pass "$name.nothing_left"; fi
    if grep -q 'agent.*died\|switch died' "$ERR"; then fail "$name.daemons_live" "$(verdicts)"; fi
}

hostile hostile.process.agent process -n 2 "$T" "$M" "$TM" agent x_abtzsrkew
hostile hostile.process.agent.n2 process -n 4 --nodes 2 "$T" "$M" "$TM" agent xbrs
hostile hostile.process.switch process -n 4 --nodes 2 "$T" "$M" "$TM" switch xbrsk
hostile hostile.inprocess.agent inprocess -n 2 "$T" "$M" "$TM" agent x_abtz
exit $FAILED
