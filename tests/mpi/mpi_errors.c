/* Error classes for bad arguments under MPI_ERRORS_RETURN, user error
 * handlers, error strings.  Nothing here may crash. */
#include "mt.h"

static int handler_calls, handler_last;
static void handler(MPI_Comm *comm, int *err, ...)
{
    (void)comm;
    handler_calls++;
    handler_last = *err;
}

#define EXPECT(call, cls)                                                                 \
    do {                                                                                  \
        int e_ = (call);                                                                  \
        int c_ = -1;                                                                      \
        MPI_Error_class(e_, &c_);                                                         \
        if (c_ != (cls)) {                                                                \
            char s_[MPI_MAX_ERROR_STRING];                                                \
            int l_;                                                                       \
            MPI_Error_string(e_, s_, &l_);                                                \
            fprintf(stderr, "FAIL rank %d: %s:%d: %s gave %d (%s), expected %s\n", mt_rank, __FILE__, \
                    __LINE__, #call, e_, s_, #cls);                                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                 \
        }                                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    OK(MPI_Errhandler_free(&eh));

    int buf[16] = {0}, flag;
    MPI_Request req;
    MPI_Status st, sts2[2];
    MPI_Comm w = MPI_COMM_WORLD;
    /* ranks, tags, counts, types, buffers, communicators */
    EXPECT(MPI_Send(buf, 1, MPI_INT, mt_size, 0, w), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, -7, 0, w), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, w), MPI_ERR_RANK);
    EXPECT(MPI_Recv(buf, 1, MPI_INT, mt_size + 3, 0, w, &st), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, -1, w), MPI_ERR_TAG);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, w), MPI_ERR_TAG);
    EXPECT(MPI_Isend(buf, 1, MPI_INT, 0, 0x7fffffff, w, &req), MPI_ERR_TAG);
    EXPECT(MPI_Recv(buf, 1, MPI_INT, 0, -5, w, &st), MPI_ERR_TAG);
    EXPECT(MPI_Send(buf, -1, MPI_INT, 0, 0, w), MPI_ERR_COUNT);
    EXPECT(MPI_Irecv(buf, -3, MPI_INT, 0, 0, w, &req), MPI_ERR_COUNT);
    EXPECT(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, w), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, 1, (MPI_Datatype)12345, 0, 0, w), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, 1, (MPI_Datatype)MPI_COMM_WORLD, 0, 0, w), MPI_ERR_TYPE);
    MPI_Datatype vec;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    EXPECT(MPI_Send(buf, 1, vec, 0, 0, w), MPI_ERR_TYPE); /* not committed */
    OK(MPI_Type_free(&vec));
    CHECK(vec == MPI_DATATYPE_NULL);
    EXPECT(MPI_Type_free(&vec), MPI_ERR_TYPE);
    MPI_Datatype predef = MPI_INT;
    EXPECT(MPI_Type_free(&predef), MPI_ERR_TYPE);
    EXPECT(MPI_Send(NULL, 3, MPI_INT, 0, 0, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Recv(NULL, 3, MPI_INT, 0, 0, w, &st), MPI_ERR_BUFFER);
    OK(MPI_Send(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, w)); /* zero count: NULL is fine */
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, (MPI_Comm)0x7777), MPI_ERR_COMM);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, (MPI_Comm)MPI_INT), MPI_ERR_COMM);
    int sz;
    EXPECT(MPI_Comm_size(MPI_COMM_NULL, &sz), MPI_ERR_COMM);
    MPI_Comm wc = MPI_COMM_WORLD;
    EXPECT(MPI_Comm_free(&wc), MPI_ERR_COMM);
    EXPECT(MPI_Comm_split(w, -5, 0, &wc), MPI_ERR_ARG);

    /* requests */
    MPI_Request bad = (MPI_Request)0x4400abcd;
    EXPECT(MPI_Wait(&bad, &st), MPI_ERR_REQUEST);
    EXPECT(MPI_Test(&bad, &flag, &st), MPI_ERR_REQUEST);
    MPI_Request arr[2] = {MPI_REQUEST_NULL, bad};
    EXPECT(MPI_Waitall(2, arr, MPI_STATUSES_IGNORE), MPI_ERR_REQUEST);
    req = MPI_REQUEST_NULL;
    EXPECT(MPI_Request_free(&req), MPI_ERR_REQUEST);
    EXPECT(MPI_Start(&req), MPI_ERR_REQUEST);
    OK(MPI_Isend(buf, 1, MPI_INT, mt_rank, 5, w, &req));
    EXPECT(MPI_Start(&req), MPI_ERR_REQUEST); /* not persistent */
    OK(MPI_Recv(buf + 1, 1, MPI_INT, mt_rank, 5, w, &st));
    OK(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL);
    EXPECT(MPI_Waitall(-1, arr, MPI_STATUSES_IGNORE), MPI_ERR_COUNT);
    /* the nonblocking calls' hot path (contiguous, a rank, a request) turns
     * the same arguments away as the general path */
    EXPECT(MPI_Isend(buf, 1, MPI_INT, 0, 0, w, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Irecv(buf, 1, MPI_INT, 0, 0, w, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Isend(buf, 1, MPI_INT, mt_size, 0, w, &req), MPI_ERR_RANK);
    EXPECT(MPI_Irecv(buf, 1, MPI_INT, -7, 0, w, &req), MPI_ERR_RANK);
    EXPECT(MPI_Irecv(buf, 1, MPI_INT, 0, -2, w, &req), MPI_ERR_TAG);
    EXPECT(MPI_Isend(NULL, 2, MPI_INT, 0, 0, w, &req), MPI_ERR_BUFFER);
    EXPECT(MPI_Isend(buf, 1, MPI_INT, 0, 0, (MPI_Comm)0x7777, &req), MPI_ERR_COMM);
    EXPECT(MPI_Irecv(buf, 1, MPI_DATATYPE_NULL, 0, 0, w, &req), MPI_ERR_TYPE);
    /* a bad handle after a live request: nothing completes, the live one stays */
    OK(MPI_Isend(buf, 1, MPI_INT, mt_rank, 6, w, &arr[0]));
    arr[1] = bad;
    EXPECT(MPI_Waitall(2, arr, MPI_STATUSES_IGNORE), MPI_ERR_REQUEST);
    CHECK(arr[0] != MPI_REQUEST_NULL);
    OK(MPI_Recv(buf + 1, 1, MPI_INT, mt_rank, 6, w, &st));
    OK(MPI_Wait(&arr[0], &st));
    /* a request freed while active, then the hot path again: the freed one
     * is reaped, the new one completes */
    OK(MPI_Isend(buf, 1, MPI_INT, mt_rank, 7, w, &req));
    OK(MPI_Request_free(&req));
    OK(MPI_Isend(buf, 1, MPI_INT, mt_rank, 8, w, &arr[0]));
    OK(MPI_Irecv(buf + 2, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &arr[1]));
    OK(MPI_Waitall(2, arr, sts2));
    CHECK_EQ(sts2[1].MPI_TAG, 7);
    CHECK_EQ(sts2[1].MPI_SOURCE, mt_rank);
    OK(MPI_Recv(buf + 2, 1, MPI_INT, mt_rank, 8, w, &st));
    EXPECT(MPI_Get_count(NULL, MPI_INT, &sz), MPI_ERR_ARG);

    /* truncation: status and class */
    buf[0] = 1, buf[1] = 2, buf[2] = 3;
    OK(MPI_Send(buf, 3, MPI_INT, 0, 9, MPI_COMM_SELF));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int two[2] = {0, 0};
    EXPECT(MPI_Recv(two, 2, MPI_INT, 0, 9, MPI_COMM_SELF, &st), MPI_ERR_TRUNCATE);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_TRUNCATE);
    CHECK(two[0] == 1 && two[1] == 2);
    OK(MPI_Send(buf, 3, MPI_INT, 0, 9, MPI_COMM_SELF));
    OK(MPI_Irecv(two, 2, MPI_INT, 0, 9, MPI_COMM_SELF, &arr[0]));
    arr[1] = MPI_REQUEST_NULL;
    MPI_Status sts[2];
    EXPECT(MPI_Waitall(2, arr, sts), MPI_ERR_IN_STATUS);
    CHECK_EQ(sts[0].MPI_ERROR, MPI_ERR_TRUNCATE);
    CHECK_EQ(sts[1].MPI_ERROR, MPI_SUCCESS);

    /* groups, keyvals, info, unsupported calls */
    MPI_Group g, g2;
    OK(MPI_Comm_group(w, &g));
    int r5[2] = {0, 0};
    if (mt_size >= 2)
        EXPECT(MPI_Group_incl(g, 2, r5, &g2), MPI_ERR_RANK); /* duplicate */
    r5[0] = mt_size;
    EXPECT(MPI_Group_incl(g, 1, r5, &g2), MPI_ERR_RANK);
    EXPECT(MPI_Group_size(MPI_GROUP_NULL, &sz), MPI_ERR_GROUP);
    OK(MPI_Group_free(&g));
    EXPECT(MPI_Group_free(&g), MPI_ERR_GROUP);
    int kv = 999999;
    void *v;
    EXPECT(MPI_Comm_get_attr(w, kv, &v, &flag), MPI_ERR_KEYVAL);
    EXPECT(MPI_Comm_set_attr(w, MPI_TAG_UB, &v), MPI_ERR_KEYVAL);
    MPI_Info info = MPI_INFO_NULL;
    EXPECT(MPI_Info_set(info, "a", "b"), MPI_ERR_INFO);
    MPI_Comm ic;
    EXPECT(MPI_Intercomm_create(w, mt_size, w, 0, 0, &ic), MPI_ERR_RANK); /* local_leader: checked everywhere */
    EXPECT(MPI_Comm_remote_size(w, &sz), MPI_ERR_COMM);
    int dims[2] = {0, 0};
    EXPECT(MPI_Dims_create(-1, 2, dims), MPI_ERR_ARG);

    /* strings and classes */
    char s[MPI_MAX_ERROR_STRING];
    int len, cls;
    OK(MPI_Error_string(MPI_ERR_RANK, s, &len));
    CHECK(strstr(s, "MPI_ERR_RANK") && len == (int)strlen(s));
    OK(MPI_Error_class(MPI_ERR_TRUNCATE, &cls));
    CHECK_EQ(cls, MPI_ERR_TRUNCATE);
    for (int e = 0; e <= MPI_ERR_LASTCODE; e++) {
        OK(MPI_Error_string(e, s, &len));
        CHECK(len > 0);
    }

    /* a user handler sees the error and the call returns it */
    MPI_Errhandler mine;
    OK(MPI_Comm_create_errhandler(handler, &mine));
    MPI_Comm dup;
    OK(MPI_Comm_dup(w, &dup));
    OK(MPI_Comm_set_errhandler(dup, mine));
    OK(MPI_Errhandler_free(&mine));
    EXPECT(MPI_Send(buf, 1, MPI_INT, mt_size + 1, 0, dup), MPI_ERR_RANK);
    CHECK_EQ(handler_calls, 1);
    CHECK_EQ(handler_last, MPI_ERR_RANK);
    MPI_Comm dup2; /* inherits the handler */
    OK(MPI_Comm_dup(dup, &dup2));
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, -2, dup2), MPI_ERR_TAG);
    CHECK_EQ(handler_calls, 2);
    OK(MPI_Comm_free(&dup2));
    OK(MPI_Comm_free(&dup));
    EXPECT(MPI_Comm_free(&dup), MPI_ERR_COMM);
    return mt_finish("errors");
}
