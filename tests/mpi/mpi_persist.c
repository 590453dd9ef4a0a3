/* Persistent requests, and the corner cases of Waitany/Waitsome/Testany/
 * Testsome/Testall: all MPI_REQUEST_NULL, inactive persistent requests,
 * Request_get_status, Request_free on an active request. */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Status st, sts[4];
    int idx, flag, out, ind[4];
    MPI_Request nulls[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    OK(MPI_Waitany(3, nulls, &idx, &st));
    CHECK_EQ(idx, MPI_UNDEFINED);
    CHECK_EQ(st.MPI_SOURCE, MPI_ANY_SOURCE);
    CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG);
    OK(MPI_Testany(3, nulls, &idx, &flag, &st));
    CHECK(flag && idx == MPI_UNDEFINED);
    OK(MPI_Waitsome(3, nulls, &out, ind, sts));
    CHECK_EQ(out, MPI_UNDEFINED);
    OK(MPI_Testsome(3, nulls, &out, ind, sts));
    CHECK_EQ(out, MPI_UNDEFINED);
    OK(MPI_Testall(3, nulls, &flag, sts));
    CHECK_EQ(flag, 1);
    OK(MPI_Waitall(3, nulls, MPI_STATUSES_IGNORE));
    OK(MPI_Waitany(0, NULL, &idx, &st));
    CHECK_EQ(idx, MPI_UNDEFINED);

    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    int sbuf[4], rbuf[4];
    MPI_Request pr[2];
    OK(MPI_Send_init(sbuf, 4, MPI_INT, right, 3, MPI_COMM_WORLD, &pr[0]));
    OK(MPI_Recv_init(rbuf, 4, MPI_INT, left, 3, MPI_COMM_WORLD, &pr[1]));
    /* inactive persistent requests behave like null ones for completion */
    OK(MPI_Waitany(2, pr, &idx, &st));
    CHECK_EQ(idx, MPI_UNDEFINED);
    OK(MPI_Testsome(2, pr, &out, ind, sts));
    CHECK_EQ(out, MPI_UNDEFINED);
    OK(MPI_Wait(&pr[0], &st));
    CHECK(pr[0] != MPI_REQUEST_NULL);
    OK(MPI_Request_get_status(pr[1], &flag, &st));
    CHECK_EQ(flag, 1);
    for (int it = 0; it < 50; it++) {
        for (int i = 0; i < 4; i++)
            sbuf[i] = mt_rank * 100 + it + i;
        if (it % 2)
            OK(MPI_Startall(2, pr));
        else {
            OK(MPI_Start(&pr[1]));
            OK(MPI_Start(&pr[0]));
        }
        if (it % 3 == 0) {
            OK(MPI_Waitall(2, pr, sts));
        } else {
            int done = 0;
            while (done < 2) {
                OK(MPI_Waitsome(2, pr, &out, ind, sts));
                CHECK(out >= 1 && out <= 2);
                done += out;
            }
            /* now both inactive */
            OK(MPI_Waitsome(2, pr, &out, ind, sts));
            CHECK_EQ(out, MPI_UNDEFINED);
        }
        CHECK(pr[0] != MPI_REQUEST_NULL && pr[1] != MPI_REQUEST_NULL);
        for (int i = 0; i < 4; i++)
            CHECK_EQ(rbuf[i], left * 100 + it + i);
    }
    OK(MPI_Request_free(&pr[0]));
    OK(MPI_Request_free(&pr[1]));
    CHECK(pr[0] == MPI_REQUEST_NULL);

    /* Testany / Waitany with a mix: null, done, pending */
    int v = mt_rank, w = -1, z = -1;
    MPI_Request mix[3];
    mix[0] = MPI_REQUEST_NULL;
    OK(MPI_Irecv(&w, 1, MPI_INT, left, 4, MPI_COMM_WORLD, &mix[1]));
    OK(MPI_Irecv(&z, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &mix[2]));
    OK(MPI_Send(&v, 1, MPI_INT, right, 5, MPI_COMM_WORLD));
    OK(MPI_Send(&v, 1, MPI_INT, right, 4, MPI_COMM_WORLD));
    int seen = 0;
    for (int k = 0; k < 2; k++) {
        OK(MPI_Waitany(3, mix, &idx, &st));
        CHECK(idx == 1 || idx == 2);
        CHECK_EQ(st.MPI_TAG, idx == 1 ? 4 : 5);
        CHECK(mix[idx] == MPI_REQUEST_NULL);
        seen |= 1 << idx;
    }
    CHECK_EQ(seen, 6);
    CHECK(w == left && z == left);
    OK(MPI_Testany(3, mix, &idx, &flag, &st));
    CHECK(flag && idx == MPI_UNDEFINED);

    /* get_status leaves the request alive; the data is there once it says so */
    OK(MPI_Irecv(&w, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &mix[1]));
    v = 1000 + mt_rank;
    OK(MPI_Send(&v, 1, MPI_INT, right, 7, MPI_COMM_WORLD));
    do {
        OK(MPI_Request_get_status(mix[1], &flag, &st));
    } while (!flag);
    CHECK_EQ(w, 1000 + left);
    CHECK_EQ(st.MPI_SOURCE, left);
    CHECK(mix[1] != MPI_REQUEST_NULL);
    OK(MPI_Testany(3, mix, &idx, &flag, &st));
    CHECK(flag && idx == 1);
    OK(MPI_Testany(3, mix, &idx, &flag, &st));
    CHECK(flag && idx == MPI_UNDEFINED);

    /* Request_free on active requests: they still complete */
    int big[5000];
    for (int i = 0; i < 5000; i++)
        big[i] = i + mt_rank;
    MPI_Request fr;
    OK(MPI_Isend(big, 5000, MPI_INT, right, 6, MPI_COMM_WORLD, &fr));
    OK(MPI_Request_free(&fr));
    CHECK(fr == MPI_REQUEST_NULL);
    int *in = calloc(5000, sizeof(int));
    OK(MPI_Recv(in, 5000, MPI_INT, left, 6, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 5000; i++)
        CHECK_EQ(in[i], i + left);
    free(in);
    mt_sync(MPI_COMM_WORLD); /* the freed send was received: big may change now */
    return mt_finish("persist");
}
