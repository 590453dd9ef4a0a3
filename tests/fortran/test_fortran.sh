#!/usr/bin/env bash
# Fortran and C++ (docs/mpi.md, "Fortran and C++"): the programs of
# tests/fortran (use mpi: f_p2p, f_coll; include 'mpif.h', fixed form:
# f_fixed) at 1 to 4 ranks on one node and on two emulated nodes; the
# applications bench/stencil3d and bench/cg3d (Fortran) and bench/ring (C++); the
# wrappers' options and their refusals; the binding's generator against
# mpi.h; and an installed tree building the programs with its own
# mpif90 / mpicxx.  Lines: PASS/FAIL/SKIP.
SUITE=fortran
source "$(dirname "$0")/../mpi/lib.sh"
BIN=$ROOT/$BUILD/tests/fortran
BENCH=$ROOT/$BUILD/bench
TMP=$(mktemp -d /tmp/knit-fortran-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$BIN/f_p2p" ] || [ ! -x "$ROOT/$BUILD/bin/knitfort" ]; then
    skip build "the Fortran programs are not built (make BUILD=$BUILD)"
    exit 0
fi

# job NAME NP NODES PROG [ARGS]: passes when the job exits 0 and rank 0
# printed "ok ..." (check_job), or for the applications " ok" at the end
job() {
    local name=$1 np=$2 nodes=$3 prog=$4; shift 4
    check_job "$name" "$KNITRUN" --timeout 60 -n "$np" --nodes "$nodes" "$prog" "$@"
}
app() {
    local name=$1; shift
    local out rc
    out=$("$KNITRUN" --timeout 60 "$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q " ok *$" <<<"$out"; then
        pass "$name"
    else
        fail "$name" "exit $rc"
        echo "$out" | tail -n 8
    fi
}

for prog in f_p2p f_coll f_fixed; do
    for np in 1 2 3 4; do
        job "$prog.n$np" "$np" 1 "$BIN/$prog"
    done
    for np in 2 4; do
        job "$prog.n$np.nodes2" "$np" 2 "$BIN/$prog"
    done
done
app stencil3d.n4 -n 4 "$BENCH/stencil3d" 20 8
app stencil3d.n3.nodes2 -n 3 --nodes 2 "$BENCH/stencil3d" 17 5
app cg3d.n4 -n 4 "$BENCH/cg3d" 16 40
app cg3d.n4.nodes2 -n 4 --nodes 2 "$BENCH/cg3d" 16 40
app ring.n3 -n 3 "$BENCH/ring" 1000 3
app ring.n4.nodes2 -n 4 --nodes 2 "$BENCH/ring" 100 2

# a wrong result is caught: a test program that checks a value the
# binding would have to get wrong fails loudly
cat > "$TMP/wrong.f90" <<'EOF'
program wrong
  use mpi
  integer :: ierr, x, y
  call MPI_Init(ierr)
  x = 1
  call MPI_Allreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (y /= 3) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  print '(a)', 'ok wrong'
  call MPI_Finalize(ierr)
end program
EOF
if "$ROOT/$BUILD/bin/knitfort" -J "$TMP" -o "$TMP/wrong" "$TMP/wrong.f90" 2>"$TMP/wrong.err"; then
    out=$("$KNITRUN" --timeout 60 -n 3 "$TMP/wrong" 2>&1) && n3=0 || n3=$?
    out2=$("$KNITRUN" --timeout 60 -n 2 "$TMP/wrong" 2>&1) && n2=0 || n2=$?
    if [ "$n3" -eq 0 ] && [ "$n2" -ne 0 ] && grep -q "aborted" <<<"$out2"; then
        pass "checks_can_fail"
    else
        fail "checks_can_fail" "3 ranks: exit $n3, 2 ranks: exit $n2 (expected 0 and an abort)"
    fi
else
    fail "checks_can_fail" "$(tail -n 3 "$TMP/wrong.err")"
fi

# the wrappers: options, MPI names, refusals
KF=$ROOT/$BUILD/bin/knitfort KX=$ROOT/$BUILD/bin/knitc++
if "$KF" -show x.f90 | grep -q -- "gfortran .*-lknitmpif .*-lknitmpi" &&
    "$KF" -compile-info | grep -q -- "-I.*/include" && "$KF" -link-info | grep -q -- "-Wl,-rpath" &&
    "$KX" -show x.cpp | grep -q -- "^g++ .*-lknitmpi" && "$KX" -compile-info | grep -q -- "-I" &&
    [ "$(readlink "$ROOT/$BUILD/bin/mpif90")" = knitfort ] && [ "$(readlink "$ROOT/$BUILD/bin/mpifort")" = knitfort ] &&
    [ "$(readlink "$ROOT/$BUILD/bin/mpicxx")" = knitc++ ] && [ "$(readlink "$ROOT/$BUILD/bin/mpic++")" = knitc++ ]; then
    pass "wrappers.show"
else
    fail "wrappers.show" "unexpected -show / -compile-info / -link-info output or links"
fi
if ! "$KF" -fdefault-integer-8 -c -o "$TMP/x.o" tests/fortran/f_p2p.f90 2>"$TMP/i8.err" &&
    grep -q "not supported yet" "$TMP/i8.err" &&
    ! "$KX" -fopenmp -c -o "$TMP/x.o" bench/ring.cpp 2>"$TMP/omp.err" && grep -q "not supported yet" "$TMP/omp.err"; then
    pass "wrappers.refuse"
else
    fail "wrappers.refuse" "-fdefault-integer-8 / knitc++ -fopenmp not refused with 'not supported yet'"
fi

# the generator: every function of mpi.h is bound (a rule or a row for
# each), and the built binding is current
if python3 src/mpi/fortran/gen.py include/mpi.h "$TMP/gen" >"$TMP/gen.log" 2>&1 &&
    cmp -s "$TMP/gen/mpif.h" "$ROOT/$BUILD/include/mpif.h" &&
    cmp -s "$TMP/gen/mpif_wrap.c" "$ROOT/$BUILD/gen/fortran/mpif_wrap.c"; then
    # each function mpi.h declares (its lines start with the return type)
    grep -oE '^(int|double|MPI_Aint) MPI_[A-Za-z0-9_]+\(' include/mpi.h | grep -v '_FN($' |
        sed -e 's/^[A-Za-z_]* //' -e 's/($/_/' | tr 'A-Z' 'a-z' | sort -u >"$TMP/want"
    nm -D --defined-only "$ROOT/$BUILD/lib/libknitmpif.so" | awk '{print $3}' | sort -u >"$TMP/have"
    missing=$(comm -23 "$TMP/want" "$TMP/have" | tr '\n' ' ')
    if [ -z "$missing" ] && [ "$(wc -l <"$TMP/want")" -gt 250 ]; then
        pass "binding.complete"
    else
        fail "binding.complete" "no Fortran symbol for: $missing"
    fi
else
    fail "binding.complete" "gen.py failed or the build is stale: $(tail -n 2 "$TMP/gen.log")"
fi

# an installed tree builds and runs them with its own wrappers
PREFIX=$TMP/inst
if bash scripts/install.sh "$BUILD" "$PREFIX" >"$TMP/inst.log" 2>&1; then
    ok=1
    "$PREFIX/bin/mpif90" -O2 -J "$TMP" -o "$TMP/f_coll" tests/fortran/f_coll.f90 2>"$TMP/f.err" || ok=0
    "$PREFIX/bin/mpifort" -O2 -o "$TMP/f_fixed" tests/fortran/f_fixed.f 2>>"$TMP/f.err" || ok=0
    "$PREFIX/bin/mpicxx" -O2 -std=c++17 -o "$TMP/ring" bench/ring.cpp 2>>"$TMP/f.err" || ok=0
    if [ $ok -eq 1 ] && ! "$PREFIX/bin/mpif90" -show x.f90 | grep -q "$ROOT" &&
        out=$(env -u LD_LIBRARY_PATH "$PREFIX/bin/knitrun" --timeout 60 -n 3 "$TMP/f_coll" 2>&1) &&
        grep -q "^ok f_coll" <<<"$out" &&
        out=$(env -u LD_LIBRARY_PATH "$PREFIX/bin/knitrun" --timeout 60 -n 2 --nodes 2 "$TMP/f_fixed" 2>&1) &&
        grep -q "^ok f_fixed" <<<"$out" &&
        out=$(env -u LD_LIBRARY_PATH "$PREFIX/bin/knitrun" --timeout 60 -n 2 "$TMP/ring" 500 2 2>&1) &&
        grep -q " ok$" <<<"$out"; then
        pass "installed"
    else
        fail "installed" "$(tail -n 5 "$TMP/f.err") $out"
    fi
else
    fail "installed" "install.sh failed: $(tail -n 3 "$TMP/inst.log")"
fi

exit $((fails > 0))
