#!/usr/bin/env bash
# knit's ARMCI: the ARMCI programs of tests/armci (built by make with the
# build tree's knitcc) through knitrun, on one node and on two emulated
# nodes; ARMCI_Init without MPI_Init; a call before ARMCI_Init; knitcc
# from an installed tree.  Each program prints "PASS check" / "FAIL
# check: why" per check; this script names them
# armci.<program>.<check>.<layout>.  Lines: PASS/FAIL/SKIP.
set -u
: "${BUILD:=build}"
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$ROOT"
KNITRUN=$ROOT/$BUILD/bin/knitrun
KNITCC=$ROOT/$BUILD/bin/knitcc
BIN=$ROOT/$BUILD/tests/armci
TMP=$(mktemp -d /tmp/knit-armci-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0

pass() { echo "PASS armci.$1"; }
fail() { echo "FAIL armci.$1: $2"; fails=$((fails + 1)); }

progs=(contig strided sync)

for p in "${progs[@]}" noinit; do
    if [ ! -x "$BIN/armci_$p" ]; then
        fail "$p.build" "$BIN/armci_$p was not built (make)"
    fi
done

# job PROG LAYOUT KNITRUN-ARGS...: the program's own lines, renamed
job() {
    local prog=$1 layout=$2; shift 2
    [ -x "$BIN/armci_$prog" ] || return
    local out rc
    out=$("$KNITRUN" --timeout 120 "$@" "$BIN/armci_$prog" 2>"$TMP/err")
    rc=$?
    local npass nfail
    npass=$(grep -c '^PASS ' <<<"$out")
    nfail=$(grep -c '^FAIL ' <<<"$out")
    while read -r verdict name rest; do
        case $verdict in
        PASS) pass "$prog.$name.$layout" ;;
        FAIL) fail "$prog.${name%:}.$layout" "$rest" ;;
        esac
    done < <(grep -E '^(PASS|FAIL) ' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ] || [ "$npass" -eq 0 ]; then
        fail "$prog.$layout" "exit $rc after $npass checks passed: $(grep -v '^armci: rank' "$TMP/err" | tail -n 4 | tr '\n' '|')"
    elif [ "$nfail" -gt 0 ]; then
        grep -v '^armci: rank' "$TMP/err" | tail -n 8
    fi
}


for p in "${progs[@]}"; do
    job "$p" n4 -n 4
    job "$p" n4.nodes2 -n 4 --nodes 2
done
# more processes than cores: the mutexes and atomics must not starve
job sync n6 -n 6
job sync n5.nodes2 -n 5 --nodes 2

# ARMCI_Init starts knit itself (MPI_Init) when the program did not
job noinit n3 -n 3
job noinit n2.nodes2 -n 2 --nodes 2

# a call before ARMCI_Init ends the job with a message naming it
out=$("$KNITRUN" --timeout 60 -n 2 "$BIN/armci_noinit" early 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "ARMCI_Put: called before ARMCI_Init" <<<"$out" && ! grep -q "not reached" <<<"$out"; then
    pass "call_before_init"
else
    fail "call_before_init" "exit $rc, output '$(tail -n 3 <<<"$out" | tr '\n' '|')'"
fi

# knitcc links libknitarmci; an installed tree builds and runs an ARMCI program
if "$KNITCC" -show x.c | grep -q -- "-lknitarmci -lknitmpi"; then
    pass "knitcc.links_armci"
else
    fail "knitcc.links_armci" "knitcc -show: $("$KNITCC" -show x.c)"
fi
PREFIX=$TMP/inst
if bash scripts/install.sh "$BUILD" "$PREFIX" >"$TMP/inst.log" 2>&1; then
    if [ -f "$PREFIX/include/armci.h" ] && [ -f "$PREFIX/include/armci_msg.h" ] &&
        [ -f "$PREFIX/lib/libknitarmci.a" ] && [ -e "$PREFIX/lib/libknitarmci.so.0" ] &&
        "$PREFIX/bin/knitcc" -o "$TMP/noinit" tests/armci/armci_noinit.c 2>"$TMP/cc.err" &&
        out=$(env -u LD_LIBRARY_PATH "$PREFIX/bin/knitrun" --timeout 60 -n 2 "$TMP/noinit" 2>&1) &&
        grep -q "^PASS init_without_mpi" <<<"$out"; then
        pass "installed_tree"
    else
        fail "installed_tree" "$(ls "$PREFIX/include" "$PREFIX/lib" | tr '\n' ' ') $(tail -n 3 "$TMP/cc.err") ${out:-}"
    fi
else
    fail "installed_tree" "install.sh: $(tail -n 3 "$TMP/inst.log")"
fi
exit $((fails > 0))
