#!/usr/bin/env bash
# The MPI collectives (src/mpi/coll.c): tests/mpi/mpi_coll*.c run through
# knitrun at 1..8 ranks on 1, 2 and 3 emulated nodes, and with the native
# algorithms forced one by one.  Lines: PASS/FAIL/SKIP.
SUITE=mpi_coll
source "$(dirname "$0")/lib.sh"

# job NAME NP NODES PROG [KNITRUN-OPTIONS]
job() {
    local name=$1 np=$2 nodes=$3 prog=$4; shift 4
    check_job "$name" "$KNITRUN" --timeout 120 -n "$np" --nodes "$nodes" "$@" "$BIN/$prog"
}

for prog in coll coll_nb coll_err; do
    if [ ! -x "$BIN/mpi_$prog" ]; then
        fail "$prog" "$BIN/mpi_$prog is not built"
        exit 1
    fi
done

# Several emulated nodes need the network transport: find out once.
multi=1
probe=$("$KNITRUN" --timeout 60 -n 2 --nodes 2 "$BIN/mpi_coll_err" 2>&1)
if [ $? -ne 0 ] && grep -q "not supported yet" <<<"$probe"; then
    multi=0
fi
multi_job() {
    if [ $multi -eq 1 ]; then
        job "$@"
    else
        skip "$1" "communication between nodes is not supported yet"
    fi
}

for np in 1 2 3 4 8; do
    job "coll.n$np" "$np" 1 mpi_coll
    job "coll_nb.n$np" "$np" 1 mpi_coll_nb
done
for np in 1 3 8; do
    job "coll_err.n$np" "$np" 1 mpi_coll_err
done
for np in 2 5; do
    multi_job "coll.n$np.nodes2" "$np" 2 mpi_coll
    multi_job "coll_nb.n$np.nodes2" "$np" 2 mpi_coll_nb
done
multi_job "coll_err.n4.nodes2" 4 2 mpi_coll_err
multi_job "coll.n6.nodes3" 6 3 mpi_coll
multi_job "coll_nb.n7.nodes3" 7 3 mpi_coll_nb

# The native algorithms forced: the ones that split vectors (ring,
# rabenseifner) must keep user ops' elements whole and non-commutative ops
# in order; bruck and scatter+allgather for the movement collectives;
# node-aware forms on one node (one leader) and on two.
ring="-x KNIT_COLL_ALLREDUCE=ring -x KNIT_COLL_REDUCE=rabenseifner -x KNIT_COLL_REDUCE_SCATTER=ring"
ring="$ring -x KNIT_COLL_ALLGATHER=bruck -x KNIT_COLL_ALLTOALL=bruck -x KNIT_COLL_BCAST=scatter_allgather"
ring="$ring -x KNIT_COLL_GATHER=binomial"
# shellcheck disable=SC2086
job "coll.n5.split_algorithms" 5 1 mpi_coll $ring
# shellcheck disable=SC2086
job "coll_nb.n6.split_algorithms" 6 1 mpi_coll_nb $ring
rd="-x KNIT_COLL_ALLREDUCE=rabenseifner -x KNIT_COLL_ALLGATHER=recursive_doubling -x KNIT_COLL_ALLTOALL=pairwise"
# shellcheck disable=SC2086
job "coll.n4.rd_pairwise" 4 1 mpi_coll $rd
# the flat forms (crowded hosts), with Allgatherv, in place and user ops
lin="-x KNIT_COLL_ALLGATHER=linear -x KNIT_COLL_ALLTOALL=linear -x KNIT_COLL_BCAST=linear"
lin="$lin -x KNIT_COLL_REDUCE=linear -x KNIT_COLL_ALLREDUCE=linear"
# shellcheck disable=SC2086
job "coll.n5.linear_forms" 5 1 mpi_coll $lin
# through rank 0 (crowded hosts, tiny blocks), in place included
# shellcheck disable=SC2086
job "coll.n6.leader_forms" 6 1 mpi_coll -x KNIT_COLL_ALLGATHER=leader -x KNIT_COLL_ALLTOALL=leader
node="-x KNIT_COLL_ALLREDUCE=node -x KNIT_COLL_REDUCE=node -x KNIT_COLL_BCAST=node -x KNIT_COLL_BARRIER=node"
# shellcheck disable=SC2086
job "coll.n3.node_forms" 3 1 mpi_coll $node
# shellcheck disable=SC2086
multi_job "coll.n5.nodes2.node_forms" 5 2 mpi_coll -x KNIT_COLL_NODE_AWARE=on $node
# barrier and allreduce in the network (KNIT_COLL_OFFLOAD=on): MPI's
# communicators, disjoint ones from one split sharing a context id among them
job "coll.n3.offload" 3 1 mpi_coll -x KNIT_COLL_OFFLOAD=on
multi_job "coll.n4.nodes2.offload" 4 2 mpi_coll -x KNIT_COLL_OFFLOAD=on
multi_job "coll.n7.nodes3.offload" 7 3 mpi_coll -x KNIT_COLL_OFFLOAD=on
multi_job "coll_nb.n5.nodes2.offload" 5 2 mpi_coll_nb -x KNIT_COLL_OFFLOAD=on
multi_job "coll_err.n4.nodes2.offload" 4 2 mpi_coll_err -x KNIT_COLL_OFFLOAD=on
exit $((fails > 0))
