# Shared by tests/mpi/test_*.sh (set SUITE, the prefix of the test names,
# before sourcing).  Lines: PASS/FAIL/SKIP.
set -u
: "${BUILD:=build}"
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$ROOT"
KNITRUN=$ROOT/$BUILD/bin/knitrun
BIN=$ROOT/$BUILD/tests/mpi
fails=0

pass() { echo "PASS $SUITE.$1"; }
fail() { echo "FAIL $SUITE.$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $SUITE.$1: $2"; }

# check_job NAME COMMAND...: passes when the command exits 0 and rank 0
# printed "ok"
check_job() {
    local name=$1; shift
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "^ok " <<<"$out"; then
        pass "$name"
    else
        fail "$name" "exit $rc"
        echo "$out" | tail -n 12
    fi
}
