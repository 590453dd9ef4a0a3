/* Ordering and wildcards: non-overtaking per sender with ANY_SOURCE and
 * ANY_TAG, tag-selective receives out of arrival order, probes, counts. */
#include "mt.h"

#define N 200

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Status st;
    if (mt_rank != 0) {
        /* each sender: N messages tagged by parity, carrying a sequence */
        for (int i = 0; i < N; i++) {
            int msg[2] = {mt_rank, i};
            OK(MPI_Send(msg, 2, MPI_INT, 0, i % 2, MPI_COMM_WORLD));
        }
        /* a message with a distinct tag, then one with many ints */
        int big[1000];
        for (int i = 0; i < 1000; i++)
            big[i] = mt_rank * 1000 + i;
        OK(MPI_Send(big, 1000, MPI_INT, 0, 50, MPI_COMM_WORLD));
        OK(MPI_Send(big, 7, MPI_INT, 0, 60, MPI_COMM_WORLD));
    } else {
        int next[64] = {0};
        /* tag 1 only first (skipping tag 0 messages in the queue) */
        for (int i = 0; i < (mt_size - 1) * N / 2; i++) {
            int msg[2];
            OK(MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st));
            CHECK_EQ(st.MPI_TAG, 1);
            CHECK_EQ(st.MPI_SOURCE, msg[0]);
            CHECK_EQ(msg[1] % 2, 1);
            CHECK(msg[1] > next[msg[0]] - 1); /* increasing per sender */
            next[msg[0]] = msg[1] + 1;
        }
        for (int s = 1; s < mt_size; s++)
            next[s] = 0;
        /* then the tag-0 messages from anyone, in order per sender */
        for (int i = 0; i < (mt_size - 1) * N / 2; i++) {
            int msg[2];
            OK(MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st));
            CHECK_EQ(st.MPI_TAG, 0);
            CHECK_EQ(msg[1], next[msg[0]]);
            next[msg[0]] += 2;
            int n;
            OK(MPI_Get_count(&st, MPI_INT, &n));
            CHECK_EQ(n, 2);
        }
        /* ANY_TAG from one sender: its messages in the order sent */
        for (int s = 1; s < mt_size; s++) {
            OK(MPI_Probe(s, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK_EQ(st.MPI_TAG, 50);
        }
        /* probes see the next message without taking it */
        for (int s = 1; s < mt_size; s++) {
            OK(MPI_Probe(s, 50, MPI_COMM_WORLD, &st));
            int n;
            OK(MPI_Get_count(&st, MPI_INT, &n));
            CHECK_EQ(n, 1000);
            CHECK_EQ(st.MPI_SOURCE, s);
            int *big = malloc(n * sizeof(int));
            OK(MPI_Recv(big, n, MPI_INT, s, 50, MPI_COMM_WORLD, &st));
            for (int i = 0; i < n; i++)
                CHECK_EQ(big[i], s * 1000 + i);
            free(big);
        }
        int flag = 0, got = 0;
        while (got < mt_size - 1) {
            OK(MPI_Iprobe(MPI_ANY_SOURCE, 60, MPI_COMM_WORLD, &flag, &st));
            if (!flag)
                continue;
            int n, small[7];
            OK(MPI_Get_count(&st, MPI_INT, &n));
            CHECK_EQ(n, 7);
            OK(MPI_Recv(small, 7, MPI_INT, st.MPI_SOURCE, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(small[6], st.MPI_SOURCE * 1000 + 6);
            got++;
        }
        int tags[4] = {0, 1, 50, 60};
        for (int k = 0; k < 4; k++) {
            OK(MPI_Iprobe(MPI_ANY_SOURCE, tags[k], MPI_COMM_WORLD, &flag, &st));
            CHECK_EQ(flag, 0);
        }
    }
    /* MPI_PROC_NULL everywhere */
    int x = 5;
    OK(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG);
    int n;
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK_EQ(n, 0);
    CHECK_EQ(x, 5);
    OK(MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    MPI_Request r[2];
    OK(MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[1]));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, r, sts));
    CHECK_EQ(sts[1].MPI_SOURCE, MPI_PROC_NULL);
    OK(MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, &n, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    return mt_finish("order");
}
