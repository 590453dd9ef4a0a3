#!/usr/bin/env bash
# Runs every test of knit and prints one line per test, then the summary
#   N passed, N failed[, N skipped]
# Exit status: nonzero when any test failed.
#
# Test units: unit-test binaries (build/tests/unit/test_*), and scripts
# tests/*/test_*.sh.  Each prints lines "PASS name", "FAIL name: why",
# "SKIP name: why"; a unit that exits nonzero without printing FAIL counts
# as one failure.  TESTS=pattern runs only units whose path matches.
#
# KNIT_TEST_JOBS units run at once (default 2: a unit's jobs leave a core
# idle for a third of the time, asleep in start-up and waits); a unit's
# lines appear together when it ends.  A script with the line
#   # test-unit: alone
# runs first, with no other unit beside it (it measures time, or owns
# something of the host's, such as network namespaces); one with
#   # test-unit: long
# starts before the others, so that no long unit runs by itself at the end.
# The "time:" line names the slowest units (the suite must stay under 15
# minutes on a 2-core machine); $BUILD/test-times.txt has every unit's.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export BUILD ROOT BIN_DIR="$ROOT/$BUILD/bin"
export PATH="$ROOT/$BUILD/bin:$PATH"
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
JOBS=${KNIT_TEST_JOBS:-2}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "KNIT_TEST_JOBS=$JOBS: expected a count of 1 or more" >&2; exit 2; }
# ASAN=1 builds: leaks libfabric keeps on purpose are not ours
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/lsan.supp:print_suppressions=0}
pattern=${TESTS:-}
RES=$(mktemp -d)
trap 'rm -rf "$RES"' EXIT

pass=0 fail=0 skip=0
failures=()
times=()
start=$(date +%s)

names=() cmds=() alone=()
add_unit() { # name alone command...
    names+=("$1"); alone+=("$2"); shift 2
    cmds+=("$(printf '%q ' "$@")")
}
# alone, then the unit binaries (quick), long, and the others
scripts_long=() scripts_other=()
for script in tests/*/test_*.sh; do
    [ -f "$script" ] || continue
    [ -n "$pattern" ] && [[ "$script" != *$pattern* ]] && continue
    if grep -q '^# test-unit: alone' "$script"; then add_unit "$script" 1 bash "$script"
    elif grep -q '^# test-unit: long' "$script"; then scripts_long+=("$script")
    else scripts_other+=("$script"); fi
done
for bin in "$BUILD"/tests/unit/test_*; do
    [ -x "$bin" ] || continue
    [ -n "$pattern" ] && [[ "$bin" != *$pattern* ]] && continue
    add_unit "$bin" 0 "$bin"
done
for script in "${scripts_long[@]}" "${scripts_other[@]}"; do
    add_unit "$script" 0 bash "$script"
done

# start I: runs unit I in the background; its results in $RES/I.*
start_unit() {
    local i=$1
    (
        t0=$(date +%s)
        eval "timeout -k 5 $UNIT_TIMEOUT ${cmds[$i]}" >"$RES/$i.out" 2>"$RES/$i.err"
        rc=$?
        echo "$(( $(date +%s) - t0 ))" >"$RES/$i.secs"
        echo "$rc" >"$RES/$i.rc.tmp" && mv "$RES/$i.rc.tmp" "$RES/$i.rc"
    ) &
}

# report I: the lines of a unit that has ended, and the counts
report() {
    local i=$1 name=${names[$1]} out=$RES/$1.out rc p f s
    rc=$(cat "$RES/$i.rc")
    times+=("$(cat "$RES/$i.secs") $name")
    p=$(grep -c '^PASS ' "$out")
    f=$(grep -c '^FAIL ' "$out")
    s=$(grep -c '^SKIP ' "$out")
    grep -E '^(PASS|FAIL|SKIP) ' "$out"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        if [ "$rc" -eq 124 ]; then
            echo "FAIL $name: timed out after ${UNIT_TIMEOUT}s"
        else
            echo "FAIL $name: exited with status $rc"
        fi
        f=1
    fi
    if [ "$f" -gt 0 ]; then
        failures+=("$name")
        echo "---- $name: output ----"
        grep -vE '^(PASS|SKIP) ' "$out" | tail -n 40
        tail -n 40 "$RES/$i.err"
        echo "----"
    fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
}

running=()
# reap: reports the running units that have ended; with "all", waits for
# every one, else for at least one
reap() {
    local want=$1 i left
    while :; do
        left=()
        for i in "${running[@]}"; do
            if [ -f "$RES/$i.rc" ]; then report "$i"; else left+=("$i"); fi
        done
        local ended=$(( ${#running[@]} - ${#left[@]} ))
        running=("${left[@]}")
        [ "${#running[@]}" -eq 0 ] && return
        [ "$want" = one ] && [ "$ended" -gt 0 ] && return
        wait -n 2>/dev/null || sleep 0.2
    done
}

for i in "${!names[@]}"; do
    if [ "${alone[$i]}" = 1 ]; then
        reap all
        start_unit "$i"; running=("$i")
        reap all
        continue
    fi
    while [ "${#running[@]}" -ge "$JOBS" ]; do reap one; done
    start_unit "$i"; running+=("$i")
done
reap all

printf '%s\n' "${times[@]}" | sort -rn >"$BUILD/test-times.txt"
echo "time: $(( $(date +%s) - start ))s; slowest units:" \
    "$(head -n 6 "$BUILD/test-times.txt" | sed 's/^\([0-9]*\) \(.*\)/\2 \1s/' | paste -sd, - | sed 's/,/, /g')"
if [ "${#failures[@]}" -gt 0 ]; then
    echo "failed units: ${failures[*]}"
fi
if [ "$skip" -gt 0 ]; then
    echo "$pass passed, $fail failed, $skip skipped"
else
    echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
