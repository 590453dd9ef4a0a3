#!/usr/bin/env bash
# knitrun failure paths: a rank that segfaults, exits 3, aborts, ignores
# SIGTERM, hangs past --timeout; SIGINT/SIGTERM to knitrun.  Each must end
# the whole job quickly with the exact one-line verdict and exit status,
# and leave no process (ranks and the grandchildren they started in
# sessions of their own) and no /dev/shm/knit-<jobid>-* file behind.
source "$(dirname "$0")/lib.sh"

NP=4
# check NAME WANT_RC WANT_VERDICT MAX_MS DIR
check() {
    local name=$1 want_rc=$2 want=$3 max_ms=$4 dir=$5 why=""
    local n_pids jobid left alive
    n_pids=$(ls "$dir"/pid.* 2>/dev/null | wc -l)
    jobid=$(cat "$dir/jobid" 2>/dev/null)
    [ "$RC" -eq "$want_rc" ] || why+="exit status $RC, expected $want_rc; "
    [ "$(verdicts | wc -l)" -eq 1 ] || why+="$(verdicts | wc -l) verdict lines; "
    [ "$(verdicts)" = "$want" ] || why+="verdict '$(verdicts | head -1)', expected '$want'; "
    [ "$MS" -le "$max_ms" ] || why+="took ${MS} ms (limit $max_ms); "
    [ "$n_pids" -eq "$NP" ] || why+="only $n_pids of $NP ranks recorded themselves; "
    alive=$(alive_pids "$dir"/pid.* "$dir"/gpid.*)
    [ -z "$alive" ] || why+="left running: $alive; "
    if [ -z "$jobid" ]; then why+="no jobid recorded; "
    else left=$(shm_left "$jobid"); [ -z "$left" ] || why+="left in /dev/shm: $left; "; fi
    if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
    # never leave anything behind for the next test, even on failure
    for p in $alive; do kill -9 "${p%%(*}" 2>/dev/null; done
}

# case NAME RC VERDICT MAX_MS [env...] -- knitrun args...
case_() {
    local name=$1 rc=$2 verdict=$3 max=$4; shift 4
    local dir=$TMP/$name
    mkdir -p "$dir"
    run env FAIL_DIR="$dir" "$@"
    check "$name" "$rc" "$verdict" "$max" "$dir"
}

F=$JOBBIN/fail
# A failure stops the rest within 2 s; a SIGTERM-proof rank needs the SIGKILL
# after KNIT_KILL_GRACE (1 s).  The limits include start-up on a busy machine.
case_ failure.segv 139 "knitrun: rank 3 on node 1 killed by SIGSEGV" 2500 \
    "$KNITRUN" -n $NP --nodes 2 "$F" segv 3
case_ failure.exit3 3 "knitrun: rank 1 on node 0 exited with status 3" 2500 \
    "$KNITRUN" -n $NP --nodes 2 "$F" exit 1 3
case_ failure.abort 7 "knitrun: rank 2 on node 1 aborted (code 7): test abort requested" 2500 \
    "$KNITRUN" -n $NP --nodes 2 "$F" abort 2 7
case_ failure.no_finalize 1 "knitrun: rank 1 on node 0 exited without calling knit_finalize" 2500 \
    "$KNITRUN" -n $NP --nodes 2 "$F" nofinalize 1
case_ failure.sigterm_ignored 139 "knitrun: rank 0 on node 0 killed by SIGSEGV" 3000 \
    FAIL_IGNORE_TERM=1 "$KNITRUN" -n $NP "$F" segv 0
case_ failure.timeout 124 "knitrun: job timed out after 2 s" 4500 \
    "$KNITRUN" -n $NP --nodes 2 --timeout 2 "$F" hang 0

# Signals to knitrun: start in the background, wait (bounded) until every
# rank is ready, signal, and time the way down from there.
for sig in INT TERM; do
    name=failure.sig$sig
    dir=$TMP/$name
    mkdir -p "$dir"
    FAIL_DIR=$dir "$KNITRUN" -n $NP --nodes 2 "$F" hang 0 >"$TMP/out" 2>"$TMP/err" &
    krun=$!
    if ! wait_files "$dir/ready.*" $NP 20; then
        fail "$name" "ranks not ready within 20 s"
        kill -9 $krun; wait $krun
        continue
    fi
    t0=$(date +%s%N)
    kill -s $sig $krun
    wait $krun
    RC=$?
    MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    ERR=$TMP/err
    num=$(kill -l $sig); want_rc=$((128 + num))
    check "$name" $want_rc "knitrun: job interrupted by SIG$sig" 2000 "$dir"
done

finish
