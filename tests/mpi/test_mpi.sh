#!/usr/bin/env bash
# The MPI subset: each program of tests/mpi run through knitrun at several
# process counts on 1 and 2 emulated nodes; the fatal error messages; knitcc
# from the build tree and from an installed tree.  Lines: PASS/FAIL/SKIP.
SUITE=mpi
source "$(dirname "$0")/lib.sh"
TMP=$(mktemp -d /tmp/knit-mpi-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# job NAME NP NODES PROG [ARGS]
job() {
    local name=$1 np=$2 nodes=$3 prog=$4; shift 4
    check_job "$name" "$KNITRUN" --timeout 120 -n "$np" --nodes "$nodes" "$BIN/$prog" "$@"
}

# Two emulated nodes need the network transport: find out once.
two_nodes=1
probe=$("$KNITRUN" --timeout 60 -n 2 --nodes 2 "$BIN/mpi_order" 2>&1)
if [ $? -ne 0 ]; then
    if grep -q "not supported yet" <<<"$probe"; then
        two_nodes=0
    fi
fi

for prog in env errors order persist dtype dtype_big comm attr bsend mprobe cancel modes suite_style win inter topo; do
    for np in 1 2 3 4 8; do
        job "$prog.n$np" "$np" 1 "mpi_$prog"
    done
    for np in 2 4 5; do
        if [ $two_nodes -eq 1 ]; then
            job "$prog.n$np.nodes2" "$np" 2 "mpi_$prog"
        else
            skip "$prog.n$np.nodes2" "communication between nodes is not supported yet"
        fi
    done
done

# a window of more members than the fence's allreduce of counts takes;
# malformed one-sided messages to a fence (on one node: none to send)
job "win_wire.n2" 2 1 "mpi_win_wire"
if [ $two_nodes -eq 1 ]; then
    job "win_many.n66.nodes2" 66 2 "mpi_win_many"
    job "win_wire.n2.nodes2" 2 2 "mpi_win_wire"
else
    skip "win_many.n66.nodes2" "communication between nodes is not supported yet"
    skip "win_wire.n2.nodes2" "communication between nodes is not supported yet"
fi

# the default handler ends the job with "MPI_<Function>: <class>: <detail>"
fatal() { # what expected-text [knitrun options]
    local out rc
    out=$("$KNITRUN" --timeout 60 -n 3 ${3:-} "$BIN/mpi_fatal" "$1" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] && grep -q "rank 2 .*aborted.*$2" <<<"$out" && ! grep -q "not reached" <<<"$out"; then
        pass "fatal.$1"
    else
        fail "fatal.$1" "exit $rc, expected a message with '$2' naming rank 2"
        echo "$out" | tail -n 8
    fi
}
fatal rank "MPI_Send: MPI_ERR_RANK: invalid rank: destination 8"
fatal tag "MPI_Send: MPI_ERR_TAG: invalid tag"
fatal type "MPI_Send: MPI_ERR_TYPE: invalid datatype"
fatal comm "MPI_Send: MPI_ERR_COMM: invalid communicator"
fatal truncate "MPI_Recv: MPI_ERR_TRUNCATE: message truncated"
fatal request "MPI_Wait: MPI_ERR_REQUEST: invalid request"
# accumulates to memory outside the shared heap need the node agents
fatal unsupported "MPI_Accumulate: MPI_ERR_UNSUPPORTED_OPERATION: .*carried by the node agents" --no-offload
fatal topology "MPI_Cart_shift: MPI_ERR_TOPOLOGY: invalid communicator topology: MPI_COMM_WORLD has no process topology"
# an uncommitted datatype is named: by its name, else by handle and maker
fatal uncommitted "MPI_Send: MPI_ERR_TYPE: invalid datatype: datatype 0x[0-9a-f]* (unnamed, MPI_Type_vector of MPI_INT) is not committed"
fatal uncommitted_named "MPI_Send: MPI_ERR_TYPE: invalid datatype: datatype pair_t is not committed"

# knitcc in the build tree: -show, -compile-info, -link-info, a program that
# runs without LD_LIBRARY_PATH
KNITCC=$ROOT/$BUILD/bin/knitcc
if "$KNITCC" -show x.c | grep -q -- "-lknitmpi" && "$KNITCC" -compile-info | grep -q -- "-I" &&
    "$KNITCC" -link-info | grep -q -- "-Wl,-rpath"; then
    pass "knitcc.show"
else
    fail "knitcc.show" "unexpected -show / -compile-info / -link-info output"
fi
if "$KNITCC" -O2 -o "$TMP/env" tests/mpi/mpi_env.c 2>"$TMP/cc.err" &&
    out=$(env -u LD_LIBRARY_PATH "$KNITRUN" --timeout 60 -n 2 "$TMP/env" 2>&1) && grep -q "^ok " <<<"$out"; then
    pass "knitcc.build_tree"
else
    fail "knitcc.build_tree" "$(tail -n 5 "$TMP/cc.err") $out"
fi
if "$ROOT/$BUILD/bin/mpicc" -c -o "$TMP/o.o" tests/mpi/mpi_order.c && [ -s "$TMP/o.o" ]; then
    pass "mpicc.compile_only"
else
    fail "mpicc.compile_only" "mpicc -c failed"
fi

# an installed tree: make install's script, then knitcc from PREFIX
PREFIX=$TMP/inst
if bash scripts/install.sh "$BUILD" "$PREFIX" >"$TMP/inst.log" 2>&1; then
    if "$PREFIX/bin/knitcc" -o "$TMP/env2" tests/mpi/mpi_comm.c 2>"$TMP/cc2.err" &&
        ! "$PREFIX/bin/knitcc" -show x.c | grep -q "$ROOT" &&
        out=$(env -u LD_LIBRARY_PATH "$PREFIX/bin/knitrun" --timeout 60 -n 3 "$TMP/env2" 2>&1) &&
        grep -q "^ok " <<<"$out"; then
        pass "knitcc.installed"
    else
        fail "knitcc.installed" "$(tail -n 5 "$TMP/cc2.err") $out"
    fi
    if [ -f "$PREFIX/lib/pkgconfig/knit.pc" ] && [ -x "$PREFIX/bin/mpicc" ] && [ -f "$PREFIX/include/mpi.h" ]; then
        pass "install.layout"
    else
        fail "install.layout" "missing knit.pc, mpicc or mpi.h under PREFIX"
    fi
else
    fail "install" "$(tail -n 5 "$TMP/inst.log")"
fi
exit $((fails > 0))
