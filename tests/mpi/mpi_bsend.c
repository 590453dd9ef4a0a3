/* Buffered sends: attach, Bsend/Ibsend/Bsend_init, reuse of the space,
 * MPI_ERR_BUFFER when it is too small, detach waits and returns the buffer. */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 1;
    CHECK_EQ(MPI_Bsend(&x, 1, MPI_INT, right, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER); /* nothing attached */
    int psize;
    OK(MPI_Pack_size(1000, MPI_INT, MPI_COMM_WORLD, &psize));
    int bsize = 4 * (psize + MPI_BSEND_OVERHEAD);
    char *buf = malloc(bsize);
    OK(MPI_Buffer_attach(buf, bsize));
    CHECK_EQ(MPI_Buffer_attach(buf, bsize), MPI_ERR_BUFFER);
    int data[1000];
    /* many rounds: the space of finished sends is reused */
    for (int round = 0; round < 20; round++) {
        for (int m = 0; m < 4; m++) {
            for (int i = 0; i < 1000; i++)
                data[i] = mt_rank * 1000000 + round * 1000 + m * 10 + i;
            OK(MPI_Bsend(data, 1000, MPI_INT, right, m, MPI_COMM_WORLD));
        }
        /* the message is copied: changing data now changes nothing */
        memset(data, 0, sizeof(data));
        int in[1000];
        for (int m = 3; m >= 0; m--) {
            OK(MPI_Recv(in, 1000, MPI_INT, left, m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_EQ(in[999], left * 1000000 + round * 1000 + m * 10 + 999);
        }
        mt_sync(MPI_COMM_WORLD);
    }
    /* too big for the buffer */
    int *huge = calloc(10000, sizeof(int));
    CHECK_EQ(MPI_Bsend(huge, 10000, MPI_INT, right, 9, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    /* Ibsend and Bsend_init complete at once */
    MPI_Request r, p;
    int flag;
    OK(MPI_Ibsend(data, 10, MPI_INT, right, 5, MPI_COMM_WORLD, &r));
    OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK_EQ(flag, 1);
    OK(MPI_Bsend_init(data, 10, MPI_INT, right, 6, MPI_COMM_WORLD, &p));
    for (int k = 0; k < 3; k++) {
        data[0] = k;
        OK(MPI_Start(&p));
        OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
    }
    OK(MPI_Request_free(&p));
    int in[10];
    OK(MPI_Recv(in, 10, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int k = 0; k < 3; k++) {
        OK(MPI_Recv(in, 10, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(in[0], k);
    }
    /* a pending buffered send to a receiver that posts late: detach waits */
    OK(MPI_Bsend(data, 1000, MPI_INT, right, 7, MPI_COMM_WORLD));
    int *big = malloc(1000 * sizeof(int));
    MPI_Request late;
    OK(MPI_Irecv(big, 1000, MPI_INT, left, 7, MPI_COMM_WORLD, &late));
    void *back;
    int back_size;
    OK(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == buf && back_size == bsize);
    OK(MPI_Wait(&late, MPI_STATUS_IGNORE));
    free(big);
    free(huge);
    free(buf);
    return mt_finish("bsend");
}
