#!/usr/bin/env bash
# How MPI jobs end when something is wrong: what knitrun and the ranks
# print, and knitrun's exit status.  Each case checks every line of stderr,
# so that a stray line (a second report of the same error, a warning about
# a connection of a process the job's end stopped) fails it too.
# Lines: PASS/FAIL/SKIP.
SUITE=mpi_exits
source "$(dirname "$0")/lib.sh"
TMP=$(mktemp -d /tmp/knit-mpi-exits.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# expect NAME WANT_RC VERDICT_REGEX [OTHER_STDERR_REGEX] -- command...:
# the command exits WANT_RC, its stderr holds exactly one line from
# knitrun, matching VERDICT_REGEX (grep -E, whole line), and every other
# line of stderr matches OTHER_STDERR_REGEX (default: there is none).
expect() {
    local name=$1 want_rc=$2 verdict=$3 other='^$'
    shift 3
    if [ "$1" != -- ]; then other=$1; shift; fi
    shift
    local rc why=""
    timeout -k 2 120 "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    local v n
    v=$(grep '^knitrun: ' "$TMP/err")
    n=$(grep -c '^knitrun: ' "$TMP/err")
    [ "$rc" -eq "$want_rc" ] || why+="exit status $rc, expected $want_rc; "
    [ "$n" -eq 1 ] || why+="$n lines from knitrun; "
    grep -qxE -- "$verdict" <<<"$v" || why+="verdict '$v' does not match '$verdict'; "
    local stray
    stray=$(grep -v '^knitrun: ' "$TMP/err" | grep -vE -- "$other" | head -n 3)
    [ -z "$stray" ] || why+="stray lines on stderr: '$(tr '\n' '|' <<<"$stray")'; "
    if grep -q 'not reached' "$TMP/out"; then why+="the program went on after the error; "; fi
    if [ -z "$why" ]; then
        pass "$name"
    else
        fail "$name" "$why"
        tail -n 6 "$TMP/err"
    fi
}

# Every rank makes a fatal error at once: the first abort is the verdict;
# the others, and the ranks SIGTERMed meanwhile (their bootstrap
# connections closed while knitrun answered them), add nothing.
for i in 1 2 3 4 5; do
    expect "quiet_abort.$i" 1 "knitrun: rank [0-9] on node [01] aborted \(code 1\): MPI_Send: MPI_ERR_RANK: invalid rank: destination 13 not in \[0, 8\) of MPI_COMM_WORLD" \
        -- "$KNITRUN" -n 8 --nodes 2 "$BIN/mpi_fatal" all
done

# A rank that returns from main without MPI_Finalize is reported with
# MPI's name for the call it skipped (the others wait in MPI_Finalize)
expect nofinalize 1 "knitrun: rank 1 on node 0 exited without calling MPI_Finalize" \
    -- "$KNITRUN" -n 3 "$BIN/mpi_exits" nofinalize

exit $((fails > 0))
