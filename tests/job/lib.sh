# Helpers for the job tests (sourced by tests/job/test_*.sh and
# tests/netns/test_*.sh).  Each check prints "PASS name" or "FAIL name: why".
set -u
: "${BUILD:=build}"
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KNITRUN=$ROOT/$BUILD/bin/knitrun
JOBBIN=$ROOT/$BUILD/tests/job
TMP=$(mktemp -d /tmp/knit-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILED=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; FAILED=1; }

# run NAME [env...] -- command...: runs with a hard bound, sets
# OUT, ERR (file names), RC and MS (elapsed milliseconds).
run() {
    local t0 t1
    OUT=$TMP/out ERR=$TMP/err
    t0=$(date +%s%N)
    timeout -k 2 "${RUN_LIMIT:-60}" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(date +%s%N)
    MS=$(( (t1 - t0) / 1000000 ))
}

# expect_ok NAME CASE: after run, the status is 0 and the last line of
# stdout is "ok CASE".
expect_ok() {
    local name=$1 case_=$2
    if [ "$RC" -eq 0 ] && [ "$(tail -n 1 "$OUT")" = "ok $case_" ]; then
        pass "$name"
    else
        fail "$name" "status $RC, stdout '$(tail -n 2 "$OUT" | tr '\n' '|')', stderr '$(tail -n 5 "$ERR" | tr '\n' '|')'"
    fi
}

# What knitrun itself said (its own one-line verdicts).
verdicts() { grep '^knitrun: ' "$ERR"; }

# Every pid in the given files is gone (they are not even zombies: knitrun
# reaps what it adopts).  Prints the survivors.
alive_pids() {
    local f p
    for f in "$@"; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        if [ -e "/proc/$p" ]; then
            echo -n "$p($(cat /proc/$p/comm 2>/dev/null)) "
        fi
    done
}

# Files of job $1 left in /dev/shm.
shm_left() { ls /dev/shm 2>/dev/null | grep -F "knit-$1-" | tr '\n' ' '; }

# Wait (bounded, $2 seconds) until $1 files matching a glob exist.
wait_files() {
    local glob=$1 want=$2 limit=$3 i
    for ((i = 0; i < limit * 20; i++)); do
        # shellcheck disable=SC2086
        [ "$(ls $glob 2>/dev/null | wc -l)" -ge "$want" ] && return 0
        sleep 0.05
    done
    return 1
}

# The usual ending: exit status 1 when any check failed.
finish() { exit $FAILED; }
