/* Matched probes: Mprobe/Mrecv and Improbe/Imrecv take exactly the probed
 * message even when a later receive could match it; MPI_PROC_NULL gives
 * MPI_MESSAGE_NO_PROC. */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    MPI_Status st;
    MPI_Message m;
    int flag, n;
    for (int i = 0; i < 3; i++) {
        int v[3] = {mt_rank, i, i * i};
        OK(MPI_Send(v, 1 + i, MPI_INT, right, 4, MPI_COMM_WORLD));
    }
    OK(MPI_Mprobe(left, 4, MPI_COMM_WORLD, &m, &st));
    CHECK(m != MPI_MESSAGE_NULL);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK_EQ(n, 1);
    /* a plain receive now gets the second message, not the probed one */
    int w[3] = {-1, -1, -1};
    OK(MPI_Recv(w, 3, MPI_INT, left, 4, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 2 && w[1] == 1);
    w[0] = -1; /* the probed message must land here */
    OK(MPI_Mrecv(w, 1, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL);
    CHECK(w[0] == left);
    do {
        OK(MPI_Improbe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st));
    } while (!flag);
    CHECK_EQ(st.MPI_SOURCE, left);
    MPI_Request r;
    OK(MPI_Imrecv(w, 3, MPI_INT, &m, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(w[2] == 4 && st.MPI_TAG == 4);
    OK(MPI_Improbe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &flag, &m, &st));
    CHECK_EQ(flag, 0);
    /* a non-contiguous receive of a probed message */
    double d[10];
    for (int i = 0; i < 10; i++)
        d[i] = mt_rank + i * 0.5;
    OK(MPI_Send(d, 5, MPI_DOUBLE, right, 6, MPI_COMM_WORLD));
    MPI_Datatype every2;
    OK(MPI_Type_vector(5, 1, 2, MPI_DOUBLE, &every2));
    OK(MPI_Type_commit(&every2));
    double e[10] = {0};
    OK(MPI_Mprobe(left, 6, MPI_COMM_WORLD, &m, &st));
    OK(MPI_Mrecv(e, 1, every2, &m, &st));
    CHECK(e[8] == left + 2.0 && e[1] == 0);
    OK(MPI_Type_free(&every2));
    /* MPI_PROC_NULL */
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
    CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Mrecv(w, 3, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK_EQ(n, 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_EQ(MPI_Mrecv(w, 1, MPI_INT, &m, &st), MPI_ERR_REQUEST); /* MPI_MESSAGE_NULL */
    return mt_finish("mprobe");
}
