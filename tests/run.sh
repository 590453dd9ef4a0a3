#!/usr/bin/env bash
# Runs every test of knit and prints one line per test, then the summary
#   N passed, N failed[, N skipped]
# Exit status: nonzero when any test failed.
#
# Test units: unit-test binaries (build/tests/unit/test_*), and scripts
# tests/*/test_*.sh.  Each prints lines "PASS name", "FAIL name: why",
# "SKIP name: why"; a unit that exits nonzero without printing FAIL counts
# as one failure.  TESTS=pattern runs only units whose path matches.
# The "time:" line names the slowest units (the suite must stay under 15
# minutes on a 2-core machine).
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export BUILD ROOT BIN_DIR="$ROOT/$BUILD/bin"
export PATH="$ROOT/$BUILD/bin:$PATH"
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
# ASAN=1 builds: leaks libfabric keeps on purpose are not ours
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/lsan.supp:print_suppressions=0}
pattern=${TESTS:-}

pass=0 fail=0 skip=0
failures=()
times=()
start=$(date +%s)

run_unit() {
    local name=$1; shift
    local out rc t0
    out=$(mktemp)
    t0=$(date +%s)
    timeout -k 5 "$UNIT_TIMEOUT" "$@" >"$out" 2>"$out.err"
    rc=$?
    times+=("$(( $(date +%s) - t0 )) $name")
    local p f s
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
        tail -n 40 "$out.err"
        echo "----"
    fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    rm -f "$out" "$out.err"
}

for bin in "$BUILD"/tests/unit/test_*; do
    [ -x "$bin" ] || continue
    [ -n "$pattern" ] && [[ "$bin" != *$pattern* ]] && continue
    run_unit "$bin" "$bin"
done
for script in tests/*/test_*.sh; do
    [ -f "$script" ] || continue
    [ -n "$pattern" ] && [[ "$script" != *$pattern* ]] && continue
    run_unit "$script" bash "$script"
done

echo "time: $(( $(date +%s) - start ))s; slowest units:" \
    "$(printf '%s\n' "${times[@]}" | sort -rn | head -n 6 | sed 's/^\([0-9]*\) \(.*\)/\2 \1s/' | paste -sd, - | sed 's/,/, /g')"
if [ "${#failures[@]}" -gt 0 ]; then
    echo "failed units: ${failures[*]}"
fi
if [ "$skip" -gt 0 ]; then
    echo "$pass passed, $fail failed, $skip skipped"
else
    echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
