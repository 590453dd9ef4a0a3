/* Under the default handler (MPI_ERRORS_ARE_FATAL) a bad argument ends
 * the job with a message naming the call and the error class.  argv[1]
 * picks the error; the last rank makes it ("all": every rank). */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    const char *what = argc > 1 ? argv[1] : "rank";
    int buf[4] = {0};
    if (!strcmp(what, "all")) /* every rank at once: one verdict, nothing else */
        MPI_Send(buf, 1, MPI_INT, mt_size + 5, 0, MPI_COMM_WORLD);
    MPI_Win win = MPI_WIN_NULL;
    if (!strcmp(what, "unsupported")) /* a window over memory outside the shared heap: needs the agents */
        MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (mt_rank == mt_size - 1) {
        if (!strcmp(what, "rank"))
            MPI_Send(buf, 1, MPI_INT, mt_size + 5, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "tag"))
            MPI_Send(buf, 1, MPI_INT, 0, -3, MPI_COMM_WORLD);
        else if (!strcmp(what, "type"))
            MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "comm"))
            MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
        else if (!strcmp(what, "truncate")) {
            MPI_Send(buf, 4, MPI_INT, 0, 1, MPI_COMM_SELF);
            MPI_Recv(buf, 2, MPI_INT, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        } else if (!strcmp(what, "request")) {
            MPI_Request r = (MPI_Request)42;
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else if (!strcmp(what, "uncommitted")) {
            MPI_Datatype t;
            MPI_Type_vector(2, 1, 2, MPI_INT, &t);
            MPI_Send(buf, 1, t, 0, 0, MPI_COMM_WORLD);
        } else if (!strcmp(what, "uncommitted_named")) {
            MPI_Datatype t;
            MPI_Type_contiguous(2, MPI_INT, &t);
            MPI_Type_set_name(t, "pair_t");
            MPI_Send(buf, 1, t, 0, 0, MPI_COMM_WORLD);
        } else if (!strcmp(what, "topology")) {
            int src, dst;
            MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst);
        } else if (!strcmp(what, "unsupported")) {
            MPI_Win_lock_all(0, win);
            MPI_Accumulate(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
        }
        printf("not reached: the error did not end the job\n");
        fflush(stdout);
        return 0;
    }
    /* the others wait for a message that never comes */
    MPI_Recv(buf, 1, MPI_INT, mt_size - 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 0;
}
