#!/usr/bin/env bash
# A node's shared memory is O(ranks) and capped (docs/guide.md, "Memory"):
# 128 ranks on one node (2 cpus here) run, and their /dev/shm stays under
# 256 MiB, measured; a job that cannot fit is refused with one line, by
# knitrun before anything starts, or by knit_init under another launcher.
# Jobs whose /dev/shm is measured or filled run in a private tmpfs mounted
# over /dev/shm (a mount namespace), which holds their files only.
set -u
. "$(dirname "$0")/lib.sh"
SCALE=$JOBBIN/shm_scale
PEAK=$JOBBIN/shm_peak
HELLO=$JOBBIN/hello
MIB=$((1024 * 1024))

# run_private SIZE SCRIPT: run (lib.sh) of SCRIPT in sh with a fresh tmpfs
# of SIZE at /dev/shm; what is left there at its end goes to $TMP/left
run_private() {
    local size=$1 script=$2
    run unshare -m sh -c "mount -t tmpfs -o size=$size tmpfs /dev/shm || exit 99; $script; rc=\$?; \
        ls -A /dev/shm > $TMP/left; exit \$rc"
}
have_ns=0
if unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm' 2>/dev/null; then
    have_ns=1
fi

# ---- 128 ranks on one node: ring stream (fast boxes), every pair, all-to-alls
if [ $have_ns = 1 ]; then
    RUN_LIMIT=120 run_private 1g "$PEAK /dev/shm $TMP/peak $KNITRUN --timeout 100 -n 128 $SCALE"
else
    RUN_LIMIT=120 run "$KNITRUN" --timeout 100 -n 128 "$SCALE"
fi
expect_ok shm.scale.n128 shm_scale
if [ $have_ns = 1 ]; then
    read -r peak samples secs < "$TMP/peak"
    echo "# shm.scale.n128: /dev/shm peak $((peak / 1024)) KiB ($samples samples), job $secs s"
    # the 41 MiB allocated at start must show (the measure works), and all
    # of it, boxes and segments handed out later included, stays capped
    if [ "$RC" = 0 ] && [ "$peak" -ge $((40 * MIB)) ] && [ "$peak" -le $((256 * MIB)) ]; then
        pass shm.peak.n128_under_256MiB
    else
        fail shm.peak.n128_under_256MiB "status $RC, peak $peak bytes"
    fi
    if [ -s "$TMP/left" ]; then
        fail shm.scale.n128_leaves_nothing "left in /dev/shm: $(tr '\n' ' ' < "$TMP/left")"
    else
        pass shm.scale.n128_leaves_nothing
    fi
else
    echo "SKIP shm.peak.n128_under_256MiB: no mount namespace here (unshare -m) to measure a private /dev/shm"
fi

# ---- refused: the cap.  The program would leave a file per rank started.
STARTER="sh -c 'touch $TMP/started.\$KNIT_RANK'"
rm -f "$TMP"/started.*
if [ $have_ns = 1 ]; then
    run_private 64m "KNIT_SHM_MAX=4m $KNITRUN -n 16 $STARTER"
else
    run env KNIT_SHM_MAX=4m "$KNITRUN" -n 16 sh -c "touch $TMP/started.\$KNIT_RANK"
fi
line="knitrun: 16 ranks on a node need at least [0-9.]+ MiB of shared memory \(/dev/shm\), more than KNIT_SHM_MAX=4 MiB allows: set KNIT_SHM_MAX=[0-9]+m or more, or run fewer ranks per node"
if [ "$RC" != 0 ] && [ "$(wc -l < "$ERR")" = 1 ] && grep -Eqx "$line" "$ERR" && [ ! -s "$OUT" ] &&
    ! ls "$TMP"/started.* >/dev/null 2>&1 && [ "$MS" -lt 5000 ]; then
    pass shm.refused.cap
else
    fail shm.refused.cap "status $RC in $MS ms, stderr '$(tr '\n' '|' < "$ERR")', started: $(ls "$TMP" | grep -c started)"
fi
if [ $have_ns = 1 ]; then
    if [ -s "$TMP/left" ]; then
        fail shm.refused.cap_leaves_nothing "left in /dev/shm: $(tr '\n' ' ' < "$TMP/left")"
    else
        pass shm.refused.cap_leaves_nothing
    fi
    # the suggested cap is enough
    want=$(grep -o 'KNIT_SHM_MAX=[0-9]*m' "$ERR")
    run env "$want" "$KNITRUN" --timeout 60 -n 16 "$HELLO"
    if [ "$RC" = 0 ] && [ "$(grep -c '^rank ' "$OUT")" = 16 ]; then
        pass shm.refused.cap_suggestion_runs
    else
        fail shm.refused.cap_suggestion_runs "$want: status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"
    fi
fi

# ---- refused: the free space of /dev/shm (4 MiB here), then its suggestion
if [ $have_ns = 1 ]; then
    rm -f "$TMP"/started.*
    run_private 4m "$KNITRUN -n 16 $STARTER"
    line="knitrun: the job needs [0-9.]+ MiB of shared memory at start \(/dev/shm, 16 ranks; up to [0-9.]+ MiB with its collectives' segment and every fast box\), but /dev/shm has 4 MiB free: set KNIT_SHM_BUFFER=[0-9]+k or less, or free space in /dev/shm"
    if [ "$RC" != 0 ] && [ "$(wc -l < "$ERR")" = 1 ] && grep -Eqx "$line" "$ERR" &&
        ! ls "$TMP"/started.* >/dev/null 2>&1 && [ ! -s "$TMP/left" ]; then
        pass shm.refused.free
    else
        fail shm.refused.free "status $RC, stderr '$(tr '\n' '|' < "$ERR")', left '$(cat "$TMP/left")'"
    fi
    want=$(grep -o 'KNIT_SHM_BUFFER=[0-9]*k' "$ERR")
    run_private 4m "$KNITRUN --timeout 60 -n 16 -x $want $HELLO"
    if [ "$RC" = 0 ] && [ "$(grep -c '^rank ' "$OUT")" = 16 ] && [ ! -s "$TMP/left" ]; then
        pass shm.refused.free_suggestion_runs
    else
        fail shm.refused.free_suggestion_runs "$want: status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"
    fi
else
    echo "SKIP shm.refused.free: no mount namespace here (unshare -m) for a small private /dev/shm"
fi

# ---- refused by knit_init (as under another launcher: knitrun's own check
# saw the default cap, the ranks see 1 MiB): local rank 0 says it, once
run "$KNITRUN" --timeout 60 -n 8 sh -c "KNIT_SHM_MAX=1m exec $HELLO"
if [ "$RC" != 0 ] && [ "$(grep -c 'need at least .* more than KNIT_SHM_MAX=1 MiB allows' "$ERR")" = 1 ] &&
    grep -q '^knit\[rank 0\] error: 8 ranks on a node need at least' "$ERR"; then
    pass shm.refused.at_init
else
    fail shm.refused.at_init "status $RC, stderr '$(head -n 5 "$ERR" | tr '\n' '|')'"
fi

# ---- the collectives' share of the cap: a cap that leaves room for the
# world's segment only (4 ranks, no fast boxes then): a second communicator
# alive beside the world keeps messages, and every result is right; with
# the default cap it gets a segment
min=$(KNIT_SHM_FASTBOXES=0 "$(dirname "$KNITRUN")/knit-info" --shm 4 | awk '$1 == "minimum" {print $4}')
if [ -n "$min" ]; then
    run "$KNITRUN" --timeout 120 -n 4 -x KNIT_SHM_MAX="$min" -x KNIT_LOG_LEVEL=info "$JOBBIN/coll_test" user
    if [ "$RC" = 0 ] && grep -q "^ok user" "$OUT" && grep -q "collectives of 4 ranks share a segment" "$ERR" &&
        grep -q "collectives keep messages: a segment of [0-9]* bytes would pass what KNIT_SHM_MAX leaves" "$ERR"; then
        pass shm.coll_budget
    else
        fail shm.coll_budget "cap $min: status $RC, stderr '$(tail -n 4 "$ERR" | tr '\n' '|')'"
    fi
    run "$KNITRUN" --timeout 120 -n 4 -x KNIT_LOG_LEVEL=info "$JOBBIN/coll_test" user
    if [ "$RC" = 0 ] && grep -q "collectives of 2 ranks share a segment" "$ERR"; then
        pass shm.coll_budget_default
    else
        fail shm.coll_budget_default "status $RC, stderr '$(tail -n 4 "$ERR" | tr '\n' '|')'"
    fi
else
    fail shm.coll_budget "knit-info --shm 4 gave no minimum"
fi
finish
