#!/usr/bin/env bash
# komp, knit's OpenMP runtime: every program tests/omp/omp_*.c is built
# twice, with gcc -fopenmp (the reference: libgomp) and with knitcc
# -fopenmp (komp).  The komp binary runs under knitrun on NODES emulated
# nodes with T OpenMP threads each, the reference by itself with
# OMP_NUM_THREADS = NODES x T; their standard outputs must be the same,
# byte for byte, and end with "ok".  omp_unsupported_*.c must fail under
# komp (nonzero status) with "not supported" in what it prints.  Before
# that, each reference must print the same lines at 1, 2, 3, 4 and 8
# threads (the programs marked "counts" excepted) and end with "ok".
#
# Lines: PASS/FAIL/SKIP omp.<test>.<layout> (komp against libgomp) and
# omp.<test>.libgomp (the reference's own check).  Without a knitcc that
# gives komp (komp not built yet: knitcc -fopenmp fails, or links libgomp
# so that every rank runs main) the komp lines are SKIP.
#
# Environment: OMP_TEST_LAYOUTS="2x1 1x2" runs only those columns;
# OMP_TEST_ONLY="lock barrier" only those tests; OMP_TEST_BUDGET (seconds,
# default 480): past it, the remaining komp runs are not started (FAIL);
# OMP_REF_CC (default gcc) builds the reference.  selfcheck.sh runs this
# script against a stand-in knitcc/knitrun made of libgomp.
# test-unit: long
set -u
: "${BUILD:=build}"
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN_DIR=${BIN_DIR:-$ROOT/$BUILD/bin}
KNITRUN=$BIN_DIR/knitrun
KNITCC=$BIN_DIR/knitcc
REFCC=${OMP_REF_CC:-gcc}
SRC=$ROOT/tests/omp
BUDGET=${OMP_TEST_BUDGET:-480}
TMP=$(mktemp -d /tmp/knit-omp-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
start=$SECONDS

pass() { echo "PASS omp.$1"; }
fail() { echo "FAIL omp.$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP omp.$1: $2"; }

# The OpenMP settings of whoever runs this are not the tests'.
for v in $(compgen -e); do
    case $v in OMP_TEST_*) ;; OMP_* | GOMP_*) unset "$v" ;; esac
done

# The matrix: a row per test (omp_<program>.c; "program:variant" runs the
# program again under another name, for another environment), a column per
# layout: NxT is N emulated nodes with T threads each (knitrun -n N --nodes
# N -x OMP_NUM_THREADS=T; the reference runs N*T threads), inv2x1 is 2x1
# under KNIT_DSM_PROTOCOL=invalidate; x: run there.  notes: VAR=VALUE set
# for both runs (knitrun -x), "counts": the output depends on the team
# size (the reference is not compared across thread counts).  Every test
# runs at 1x2 and 2x1 (the unsupported ones at 1x1 and 2x1); the other
# columns rotate.  A tests/omp/omp_<name>.c without a row runs at 1x2 and
# 2x1 with no notes.
matrix='
test                  1x1 1x2 2x1 2x2 3x1 4x1 inv2x1 notes
parallel_ids           x   x   x   x   x   x   x     -
parallel_clauses       x   x   x   .   x   .   .     -
parallel_nested        .   x   x   x   .   .   .     -
nthreads               x   x   x   x   x   x   .     counts
api                    x   x   x   .   .   x   .     -
for_static             .   x   x   x   .   .   x     -
for_dynamic            .   x   x   .   x   .   x     -
for_guided             .   x   x   x   .   x   .     -
for_runtime            .   x   x   .   x   .   .     OMP_SCHEDULE=dynamic,4
for_runtime:guided     .   x   x   x   .   .   .     OMP_SCHEDULE=guided,2
for_runtime:static     x   x   x   .   .   .   .     OMP_SCHEDULE=static,3
for_nowait             .   x   x   x   .   .   x     -
for_collapse           .   x   x   .   .   x   .     -
for_ordered            .   x   x   x   x   .   .     -
for_bounds             .   x   x   .   x   .   .     -
for_nonmonotonic       .   x   x   x   .   .   .     -
reduction_int          x   x   x   .   .   x   .     -
reduction_double       .   x   x   x   .   .   x     -
reduction_array        .   x   x   .   x   .   .     -
sections               x   x   x   .   .   x   .     -
single                 .   x   x   x   x   .   .     -
master                 x   x   x   .   .   .   .     -
critical               .   x   x   x   .   x   x     -
atomic_update          .   x   x   x   x   .   x     -
atomic_capture         .   x   x   .   .   x   .     -
atomic_rw              .   x   x   x   .   .   .     -
atomic_flag            .   x   x   x   .   .   .     -
atomic_mixed           .   x   x   x   x   x   x     -
affinity               .   x   x   x   .   .   .     -
lock                   .   x   x   x   x   .   x     -
nest_lock              x   x   x   .   .   x   .     -
barrier                .   x   x   x   x   x   x     -
threadprivate          x   x   x   x   .   .   .     -
task_fib               .   x   x   x   .   x   .     -
task_single            x   x   x   .   x   .   x     -
data_malloc            x   x   x   .   .   x   x     -
data_stack_global      .   x   x   x   x   .   x     -
data_realloc           .   x   x   .   .   .   x     -
data_read              .   x   x   .   x   .   x     -
data_parmalloc         .   x   x   x   .   x   x     -
data_clauses           x   x   x   .   .   .   .     -
unsupported_target     x   .   x   .   .   .   .     -
unsupported_cancel     x   .   x   .   .   .   .     OMP_CANCELLATION=true
'
# layout -> "nodes threads protocol"
declare -A LAYOUT=(
    [1x1]="1 1 -" [1x2]="1 2 -" [2x1]="2 1 -" [2x2]="2 2 -"
    [3x1]="3 1 -" [4x1]="4 1 -" [inv2x1]="2 1 invalidate"
)
REF_THREADS="1 2 3 4 8"

# ---- the table ------------------------------------------------------------
tests=()
declare -A PROG NOTES RUNS
columns=()
while read -r first rest; do
    [ -z "$first" ] && continue
    if [ "$first" = test ]; then
        read -ra columns <<<"$rest"
        unset 'columns[${#columns[@]}-1]' # notes
        continue
    fi
    read -ra cells <<<"$rest"
    name=${first/:/.}
    tests+=("$name")
    PROG[$name]=${first%%:*}
    runs=()
    for ((c = 0; c < ${#columns[@]}; c++)); do
        [ "${cells[c]:-.}" = x ] && runs+=("${columns[c]}")
    done
    RUNS[$name]="${runs[*]}"
    notes=("${cells[@]:${#columns[@]}}")
    [ "${notes[*]:-}" = - ] && notes=()
    NOTES[$name]="${notes[*]:-}"
done <<<"$matrix"
for c in "${columns[@]}"; do
    [ -n "${LAYOUT[$c]:-}" ] || { fail "matrix" "column $c has no layout"; exit 1; }
done
# programs without a row still run, at 1x2 and 2x1
for f in "$SRC"/omp_*.c; do
    p=$(basename "$f" .c)
    p=${p#omp_}
    [ -n "${PROG[$p]:-}" ] && continue
    tests+=("$p")
    PROG[$p]=$p
    RUNS[$p]="1x2 2x1"
    NOTES[$p]=""
done
if [ -n "${OMP_TEST_ONLY:-}" ]; then
    keep=()
    for t in "${tests[@]}"; do
        for o in $OMP_TEST_ONLY; do
            [ "$t" = "$o" ] || [ "${PROG[$t]}" = "$o" ] && { keep+=("$t"); break; }
        done
    done
    tests=("${keep[@]}")
fi
if [ -n "${OMP_TEST_LAYOUTS:-}" ]; then
    for t in "${tests[@]}"; do
        runs=()
        for l in ${RUNS[$t]}; do
            [[ " $OMP_TEST_LAYOUTS " == *" $l "* ]] && runs+=("$l")
        done
        RUNS[$t]="${runs[*]:-}"
    done
fi
is_unsupported() { [[ ${PROG[$1]} == unsupported_* ]]; }
counts() { [[ " ${NOTES[$1]} " == *" counts "* ]]; }
envs() { # the VAR=VALUE notes of test $1
    local n
    for n in ${NOTES[$1]}; do [[ $n == *=* ]] && echo "$n"; done
}

# ---- building -----------------------------------------------------------
# build CC OUT-SUFFIX: every program, two compilers at a time; a failure
# leaves OUT.err
build_all() {
    local cc=$1 sfx=$2 p jobs=0
    local max
    max=$(nproc 2>/dev/null || echo 2)
    for p in $(printf '%s\n' "${tests[@]}" | while read -r t; do echo "${PROG[$t]}"; done | sort -u); do
        [ -f "$SRC/omp_$p.c" ] || continue
        # shellcheck disable=SC2086
        ($cc -O2 -fopenmp -o "$TMP/$p.$sfx" "$SRC/omp_$p.c" >"$TMP/$p.$sfx.err" 2>&1 ||
            rm -f "$TMP/$p.$sfx") &
        jobs=$((jobs + 1))
        if [ "$jobs" -ge "$max" ]; then
            wait -n
            jobs=$((jobs - 1))
        fi
    done
    wait
}

printf 'int main(void){int n=0;\n#pragma omp parallel\n{\n#pragma omp atomic\nn++;}\nreturn n<1;}\n' >"$TMP/probe.c"
have_ref=1
if ! $REFCC -fopenmp -o "$TMP/probe.ref" "$TMP/probe.c" >"$TMP/probe.ref.err" 2>&1; then
    have_ref=0
    ref_why="$REFCC -fopenmp cannot build an OpenMP program: $(head -n 2 "$TMP/probe.ref.err" | tr '\n' ' ')"
fi

# komp: knitcc -fopenmp must build a program whose main runs once across
# the ranks (with libgomp instead, every rank runs main)
have_komp=1
komp_why=
if [ ! -x "$KNITCC" ] || [ ! -x "$KNITRUN" ]; then
    have_komp=0
    komp_why="$KNITCC or $KNITRUN is not built"
else
    cat >"$TMP/kprobe.c" <<'EOF'
#include <omp.h>
#include <stdio.h>
int main(void)
{
    int n = 0;
    printf("main\n");
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("team %d\n", n);
    return 0;
}
EOF
    if ! "$KNITCC" -O2 -fopenmp -o "$TMP/kprobe" "$TMP/kprobe.c" >"$TMP/kprobe.err" 2>&1; then
        have_komp=0
        komp_why="knitcc -fopenmp cannot build an OpenMP program (komp not built?): $(head -n 2 "$TMP/kprobe.err" | tr '\n' ' ')"
    else
        kout=$(cd "$TMP" && timeout -k 5 75 "$KNITRUN" -n 2 --nodes 2 -x OMP_NUM_THREADS=1 --timeout 60 ./kprobe 2>&1)
        if [ "$(grep -c '^main$' <<<"$kout")" -ge 2 ]; then
            have_komp=0
            komp_why="knitcc -fopenmp links libgomp, not komp (main ran in each of 2 ranks)"
        elif [ "$(grep -c '^main$' <<<"$kout")" = 1 ] && grep -q '^team 2$' <<<"$kout"; then
            pass "probe"
        else
            # komp is there but not right: the tests say where
            fail "probe" "2 nodes x 1 thread: expected main once and a team of 2, got '$(head -n 4 <<<"$kout" | tr '\n' '|')'"
        fi
    fi
fi

[ "$have_ref" = 1 ] && build_all "$REFCC" ref
[ "$have_komp" = 1 ] && build_all "$KNITCC" komp

# ---- the reference ------------------------------------------------------
# ref_run TEST THREADS: sets RRC; output in $TMP/<test>.ref.<threads>
declare -A REF_RC
ref_run() {
    local t=$1 n=$2 out=$TMP/$1.ref.$2
    if [ -z "${REF_RC[$t.$n]:-}" ]; then
        # shellcheck disable=SC2046
        (cd "$TMP" && env OMP_NUM_THREADS="$n" $(envs "$t") timeout -k 2 60 "./${PROG[$t]}.ref") >"$out" 2>"$out.err"
        REF_RC[$t.$n]=$?
    fi
    RRC=${REF_RC[$t.$n]}
}
ref_ok() { # TEST THREADS: the reference ran and ended with ok
    ref_run "$1" "$2"
    [ "$RRC" -eq 0 ] && [ "$(tail -n 1 "$TMP/$1.ref.$2")" = ok ]
}

# ---- komp ---------------------------------------------------------------
# komp_run TEST LAYOUT: sets KRC, KMS; output in $TMP/<test>.komp.<layout>
komp_run() {
    local t=$1 l=$2 nodes threads proto xs=() e t0
    read -r nodes threads proto <<<"${LAYOUT[$l]}"
    for e in $(envs "$t"); do xs+=(-x "$e"); done
    [ "$proto" != - ] && xs+=(-x "KNIT_DSM_PROTOCOL=$proto")
    t0=$(date +%s%N)
    (cd "$TMP" && timeout -k 5 75 "$KNITRUN" -n "$nodes" --nodes "$nodes" -x OMP_NUM_THREADS="$threads" \
        "${xs[@]}" --timeout 60 "./${PROG[$t]}.komp") >"$TMP/$t.komp.$l" 2>"$TMP/$t.komp.$l.err"
    KRC=$?
    KMS=$((($(date +%s%N) - t0) / 1000000))
}
oneline() { tail -n "$2" "$1" 2>/dev/null | tr '\n' '|' | cut -c 1-300; }

nruns=0
komp_ms=0
for t in "${tests[@]}"; do
    p=${PROG[$t]}
    if [ ! -f "$SRC/omp_$p.c" ]; then
        fail "$t" "tests/omp/omp_$p.c does not exist (a row of the matrix names it)"
        continue
    fi
    # the reference, checked by itself
    ref=1
    if [ "$have_ref" = 0 ]; then
        skip "$t.libgomp" "$ref_why"
        ref=0
    elif [ ! -x "$TMP/$p.ref" ]; then
        fail "$t.libgomp" "gcc -fopenmp: $(oneline "$TMP/$p.ref.err" 3)"
        ref=0
    else
        why=
        for n in $REF_THREADS; do
            if ! ref_ok "$t" "$n"; then
                why="OMP_NUM_THREADS=$n: status $RRC, '$(oneline "$TMP/$t.ref.$n" 2)' $(oneline "$TMP/$t.ref.$n.err" 2)"
                break
            fi
            if ! counts "$t" && ! cmp -s "$TMP/$t.ref.1" "$TMP/$t.ref.$n"; then
                why="1 and $n threads print different lines: $(diff "$TMP/$t.ref.1" "$TMP/$t.ref.$n" | head -n 4 | tr '\n' '|')"
                break
            fi
        done
        if [ -z "$why" ]; then
            pass "$t.libgomp"
        else
            fail "$t.libgomp" "$why"
            ref=0
        fi
    fi

    # komp, layout by layout
    [ -n "${RUNS[$t]}" ] || continue
    if [ "$have_komp" = 0 ]; then
        skip "$t" "$komp_why"
        continue
    fi
    if [ ! -x "$TMP/$p.komp" ]; then
        if is_unsupported "$t" && grep -q "not supported" "$TMP/$p.komp.err"; then
            pass "$t.build" # refused when built, with the reason
        else
            fail "$t.build" "knitcc -fopenmp: $(oneline "$TMP/$p.komp.err" 3)"
        fi
        continue
    fi
    timed_out=
    for l in ${RUNS[$t]}; do
        name=$t.$l
        read -r nodes threads _ <<<"${LAYOUT[$l]}"
        total=$((nodes * threads))
        if [ -n "$timed_out" ]; then
            skip "$name" "not run: timed out at $timed_out"
            continue
        fi
        if [ $((SECONDS - start)) -ge "$BUDGET" ]; then
            fail "$name" "not run: the time budget (OMP_TEST_BUDGET=$BUDGET s) is spent"
            continue
        fi
        komp_run "$t" "$l"
        nruns=$((nruns + 1))
        komp_ms=$((komp_ms + KMS))
        out=$TMP/$t.komp.$l
        if [ "$KRC" -eq 124 ] || [ "$KRC" -eq 137 ]; then
            timed_out=$l
            fail "$name" "timed out (status $KRC after $KMS ms): '$(oneline "$out" 2)' $(oneline "$out.err" 3)"
            continue
        fi
        if is_unsupported "$t"; then
            if [ "$KRC" -ne 0 ] && cat "$out" "$out.err" | grep -q "not supported"; then
                pass "$name"
            else
                fail "$name" "expected a nonzero status and 'not supported'; status $KRC: '$(oneline "$out" 2)' $(oneline "$out.err" 3)"
            fi
            continue
        fi
        if [ "$ref" = 0 ]; then
            skip "$name" "no reference output (see omp.$t.libgomp)"
            continue
        fi
        if ! ref_ok "$t" "$total"; then
            fail "$name" "the reference at OMP_NUM_THREADS=$total: status $RRC, '$(oneline "$TMP/$t.ref.$total" 2)'"
            continue
        fi
        if [ "$KRC" -eq 0 ] && cmp -s "$TMP/$t.ref.$total" "$out"; then
            pass "$name"
        elif [ "$KRC" -ne 0 ]; then
            fail "$name" "status $KRC after $KMS ms: '$(oneline "$out" 2)' $(oneline "$out.err" 4)"
        else
            fail "$name" "output differs from libgomp at OMP_NUM_THREADS=$total: $(diff "$TMP/$t.ref.$total" "$out" | head -n 6 | tr '\n' '|' | cut -c 1-400)"
        fi
    done
done
echo "omp: $nruns komp runs in $((komp_ms / 1000)) s, $((SECONDS - start)) s in all"
[ "$fails" -eq 0 ]
