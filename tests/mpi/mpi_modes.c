/* Send modes and combined calls: Ssend/Issend complete only once matched,
 * Rsend/Irsend, Sendrecv and Sendrecv_replace around a ring with
 * non-contiguous types, large messages. */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    MPI_Status st;
    int flag;
    if (mt_size >= 2) {
        /* rank 0 Issends tag A to 1; rank 1 first waits for tag B, so
         * the Issend cannot be complete before B is sent */
        int a = 11, b = 22, ra, rb;
        if (mt_rank == 0) {
            MPI_Request r;
            OK(MPI_Issend(&a, 1, MPI_INT, 1, 100, MPI_COMM_WORLD, &r));
            for (int i = 0; i < 1000; i++) {
                OK(MPI_Test(&r, &flag, &st));
                CHECK_EQ(flag, 0);
            }
            OK(MPI_Send(&b, 1, MPI_INT, 1, 101, MPI_COMM_WORLD));
            OK(MPI_Wait(&r, &st));
            OK(MPI_Ssend(&a, 1, MPI_INT, 1, 102, MPI_COMM_WORLD));
        } else if (mt_rank == 1) {
            OK(MPI_Recv(&rb, 1, MPI_INT, 0, 101, MPI_COMM_WORLD, &st));
            OK(MPI_Recv(&ra, 1, MPI_INT, 0, 100, MPI_COMM_WORLD, &st));
            CHECK(ra == 11 && rb == 22);
            OK(MPI_Recv(&ra, 1, MPI_INT, 0, 102, MPI_COMM_WORLD, &st));
        }
    }
    /* Rsend after the receive is known to be posted */
    int v = mt_rank, w = -1, go = 0;
    MPI_Request r;
    OK(MPI_Irecv(&w, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &r));
    OK(MPI_Sendrecv(&go, 1, MPI_INT, left, 8, &go, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &st));
    OK(MPI_Rsend(&v, 1, MPI_INT, right, 7, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    CHECK_EQ(w, left);
    OK(MPI_Irecv(&w, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &r));
    OK(MPI_Sendrecv(&go, 1, MPI_INT, left, 8, &go, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &st));
    MPI_Request rs;
    OK(MPI_Irsend(&v, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &rs));
    MPI_Request both[2] = {r, rs};
    OK(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
    CHECK_EQ(w, left);

    /* Sendrecv_replace of a strided column, around the ring */
    enum { R = 300, C = 7 };
    int *m = malloc(R * C * sizeof(int));
    for (int i = 0; i < R * C; i++)
        m[i] = mt_rank * 10000 + i;
    MPI_Datatype col;
    OK(MPI_Type_vector(R, 1, C, MPI_INT, &col));
    OK(MPI_Type_commit(&col));
    OK(MPI_Sendrecv_replace(m + 3, 1, col, right, 1, left, 1, MPI_COMM_WORLD, &st));
    for (int i = 0; i < R; i++) {
        CHECK_EQ(m[i * C + 3], left * 10000 + i * C + 3);
        CHECK_EQ(m[i * C + 2], mt_rank * 10000 + i * C + 2);
    }
    OK(MPI_Get_count(&st, col, &flag));
    CHECK_EQ(flag, 1);
    OK(MPI_Type_free(&col));
    free(m);

    /* large messages through every protocol, contiguous and not */
    for (int len = 1; len <= (1 << 22); len *= 8) {
        char *s = malloc(len), *d = malloc(len);
        for (int i = 0; i < len; i++)
            s[i] = (char)(i * 7 + mt_rank);
        OK(MPI_Sendrecv(s, len, MPI_CHAR, right, 2, d, len, MPI_CHAR, left, 2, MPI_COMM_WORLD, &st));
        for (int i = 0; i < len; i += 1 + len / 1000)
            CHECK_EQ(d[i], (char)(i * 7 + left));
        int n;
        OK(MPI_Get_count(&st, MPI_CHAR, &n));
        CHECK_EQ(n, len);
        free(s);
        free(d);
    }
    return mt_finish("modes");
}
