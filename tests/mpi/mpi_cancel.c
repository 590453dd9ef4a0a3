/* Cancel: an unmatched receive is cancelled (Test_cancelled true, nothing
 * written); a matched one completes normally; a cancelled send still
 * arrives (knit does not take sends back: the cancel fails, as MPI allows). */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    MPI_Status st;
    int flag, x = -5;
    MPI_Request r;
    OK(MPI_Irecv(&x, 1, MPI_INT, left, 1234, MPI_COMM_WORLD, &r));
    OK(MPI_Cancel(&r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 1);
    CHECK_EQ(x, -5);
    /* persistent receive cancelled, then reused */
    MPI_Request p;
    OK(MPI_Recv_init(&x, 1, MPI_INT, left, 1235, MPI_COMM_WORLD, &p));
    OK(MPI_Start(&p));
    OK(MPI_Cancel(&p));
    OK(MPI_Wait(&p, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 1);
    /* nobody sends tag 1235 before every rank cancelled the first
     * incarnation: a message already there would match it (the cancel
     * then fails, as MPI allows) */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int v = 100 + mt_rank;
    OK(MPI_Start(&p));
    OK(MPI_Send(&v, 1, MPI_INT, right, 1235, MPI_COMM_WORLD));
    OK(MPI_Wait(&p, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 0);
    CHECK_EQ(x, 100 + left);
    OK(MPI_Request_free(&p));
    /* a matched receive: cancel fails, data arrives */
    OK(MPI_Send(&v, 1, MPI_INT, right, 1236, MPI_COMM_WORLD));
    OK(MPI_Probe(left, 1236, MPI_COMM_WORLD, &st));
    OK(MPI_Irecv(&x, 1, MPI_INT, left, 1236, MPI_COMM_WORLD, &r));
    OK(MPI_Cancel(&r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 0);
    CHECK_EQ(x, 100 + left);
    /* a send: the cancel does not take it back */
    OK(MPI_Isend(&v, 1, MPI_INT, right, 1237, MPI_COMM_WORLD, &r));
    OK(MPI_Cancel(&r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 0);
    OK(MPI_Recv(&x, 1, MPI_INT, left, 1237, MPI_COMM_WORLD, &st));
    CHECK_EQ(x, 100 + left);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request inactive;
    OK(MPI_Send_init(&v, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &inactive));
    CHECK_EQ(MPI_Cancel(&inactive), MPI_ERR_REQUEST);
    OK(MPI_Request_free(&inactive));
    return mt_finish("cancel");
}
