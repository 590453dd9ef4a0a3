/* Error classes of the collectives under MPI_ERRORS_RETURN, and a user
 * error handler called for them.  Every bad call here is detected locally
 * before any communication (on every rank alike, or on MPI_COMM_SELF), so
 * nothing is left half-started; after each the communicator still works. */
#include "mt.h"

#define EXPECT(call, cls) CHECK_EQ((call), (cls))

static int handler_calls, handler_last;

static void handler(MPI_Comm *comm, int *err, ...)
{
    (void)comm;
    handler_calls++;
    handler_last = *err;
}

static void noop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in, (void)inout, (void)len, (void)dt;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm w = MPI_COMM_WORLD, self = MPI_COMM_SELF;
    OK(MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN));
    int n = mt_size, a[64] = {0}, b[64] = {0}, cnt[64], dsp[64];
    for (int i = 0; i < 64; i++) {
        cnt[i] = 1;
        dsp[i] = i;
    }
    MPI_Request rq;

    /* communicator */
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(a, 1, MPI_INT, 0, (MPI_Comm)12345), MPI_ERR_COMM);
    EXPECT(MPI_Ibarrier(MPI_COMM_NULL, &rq), MPI_ERR_COMM);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM);
    /* root */
    EXPECT(MPI_Bcast(a, 1, MPI_INT, n, w), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(a, 1, MPI_INT, -5, w), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(a, 1, MPI_INT, MPI_ROOT, w), MPI_ERR_ROOT);
    EXPECT(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, MPI_PROC_NULL, w), MPI_ERR_ROOT);
    EXPECT(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, n + 3, w), MPI_ERR_ROOT);
    EXPECT(MPI_Iscatter(a, 1, MPI_INT, b, 1, MPI_INT, -1, w, &rq), MPI_ERR_ROOT);
    /* count */
    EXPECT(MPI_Bcast(a, -1, MPI_INT, 0, w), MPI_ERR_COUNT);
    EXPECT(MPI_Allreduce(a, b, -2, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    EXPECT(MPI_Allgather(a, -1, MPI_INT, b, 1, MPI_INT, w), MPI_ERR_COUNT);
    cnt[mt_rank] = -1;
    EXPECT(MPI_Allgatherv(a, 1, MPI_INT, b, cnt, dsp, MPI_INT, w), MPI_ERR_COUNT);
    EXPECT(MPI_Reduce_scatter(a, b, cnt, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    cnt[mt_rank] = 1;
    cnt[0] = -3;
    EXPECT(MPI_Gatherv(a, 1, MPI_INT, b, cnt, dsp, MPI_INT, 0, self), MPI_ERR_COUNT);
    EXPECT(MPI_Scatterv(a, cnt, dsp, MPI_INT, b, 1, MPI_INT, 0, self), MPI_ERR_COUNT);
    cnt[0] = 1;
    /* datatype */
    EXPECT(MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE);
    EXPECT(MPI_Allreduce(a, b, 1, (MPI_Datatype)777, MPI_SUM, w), MPI_ERR_TYPE);
    MPI_Datatype unc;
    OK(MPI_Type_contiguous(2, MPI_INT, &unc));
    EXPECT(MPI_Bcast(a, 1, unc, 0, w), MPI_ERR_TYPE); /* not committed */
    EXPECT(MPI_Alltoall(a, 1, MPI_INT, b, 1, unc, w), MPI_ERR_TYPE);
    OK(MPI_Type_free(&unc));
    /* buffer */
    EXPECT(MPI_Bcast(NULL, 1, MPI_INT, 0, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Allreduce(NULL, b, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Allreduce(a, a, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER); /* aliased: MPI_IN_PLACE exists */
    EXPECT(MPI_Allgather(a, 1, MPI_INT, NULL, 1, MPI_INT, w), MPI_ERR_BUFFER);
    /* op */
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, (MPI_Op)4242, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_BYTE, MPI_SUM, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_BAND, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_MAXLOC, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_2INT, MPI_SUM, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_REPLACE, w), MPI_ERR_OP);
    EXPECT(MPI_Reduce(a, b, 1, MPI_INT, MPI_NO_OP, 0, w), MPI_ERR_OP);
    EXPECT(MPI_Iallreduce(a, b, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, w, &rq), MPI_ERR_OP);
    {   /* a struct of an int and a double mixes basic types */
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE}, st;
        OK(MPI_Type_create_struct(2, bl, d, ts, &st));
        OK(MPI_Type_commit(&st));
        EXPECT(MPI_Allreduce(a, b, 1, st, MPI_SUM, w), MPI_ERR_OP);
        OK(MPI_Type_free(&st));
    }
    MPI_Op sum = MPI_SUM, uop;
    EXPECT(MPI_Op_free(&sum), MPI_ERR_OP);
    EXPECT(MPI_Op_create(NULL, 1, &uop), MPI_ERR_ARG);
    OK(MPI_Op_create(noop, 1, &uop));
    OK(MPI_Op_free(&uop));
    EXPECT(MPI_Op_free(&uop), MPI_ERR_OP); /* MPI_OP_NULL now */
    EXPECT(MPI_Reduce_local(a, b, 1, MPI_BYTE, MPI_PROD), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(a, b, -1, MPI_INT, MPI_SUM), MPI_ERR_COUNT);
    /* MPI_IN_PLACE misuse */
    if (n > 1) {
        /* every rank names another as the root: each is a non-root here */
        EXPECT(MPI_Reduce(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, (mt_rank + 1) % n, w), MPI_ERR_ARG);
        EXPECT(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, (mt_rank + 1) % n, w), MPI_ERR_ARG);
        EXPECT(MPI_Scatter(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, (mt_rank + 1) % n, w), MPI_ERR_ARG);
    }
    EXPECT(MPI_Allreduce(a, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w), MPI_ERR_ARG);
    EXPECT(MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, w), MPI_ERR_ARG);
    EXPECT(MPI_Alltoall(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w), MPI_ERR_ARG);
    /* sizes that cannot match (this rank's own block) */
    EXPECT(MPI_Allgather(a, 2, MPI_INT, b, 1, MPI_INT, w), MPI_ERR_TRUNCATE);
    EXPECT(MPI_Alltoall(a, 1, MPI_INT, b, 2, MPI_INT, w), MPI_ERR_COUNT);
    /* requests */
    EXPECT(MPI_Ibarrier(w, NULL), MPI_ERR_ARG);
    OK(MPI_Ibarrier(w, &rq));
    EXPECT(MPI_Request_free(&rq), MPI_ERR_REQUEST);
    EXPECT(MPI_Cancel(&rq), MPI_ERR_REQUEST);
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(rq == MPI_REQUEST_NULL);

    /* a user handler is called with the class */
    MPI_Errhandler eh;
    OK(MPI_Comm_create_errhandler(handler, &eh));
    OK(MPI_Comm_set_errhandler(w, eh));
    EXPECT(MPI_Bcast(a, 1, MPI_INT, n, w), MPI_ERR_ROOT);
    CHECK_EQ(handler_calls, 1);
    CHECK_EQ(handler_last, MPI_ERR_ROOT);
    OK(MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));

    /* everything still works */
    for (int i = 0; i < 4; i++)
        a[i] = mt_rank + i;
    OK(MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, w));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(b[i], n * (n - 1) / 2 + n * i);
    OK(MPI_Barrier(w));
    return mt_finish("coll_err");
}
