/* Nonblocking collectives: several in flight at once on one communicator,
 * overlapped with point-to-point traffic on the same communicator (same
 * tags), completed through MPI_Wait, Test, Waitall (mixed with p2p
 * requests), Waitany, Waitsome, Testall; derived types unpacked at
 * completion; MPI_Request_get_status; every I-form against a reference. */
#include "mt.h"

static int me, np;

static int val(int r, int i)
{
    return (r + 1) * 131 + i * 3;
}

static void nb_round(MPI_Comm comm, int n, int mode)
{
    OK(MPI_Comm_rank(comm, &me));
    OK(MPI_Comm_size(comm, &np));
    size_t all = (size_t)n * (size_t)np;
    int *bc = malloc((n + 1) * sizeof(int)), *ar = malloc((n + 1) * sizeof(int)), *as = malloc((n + 1) * sizeof(int));
    int *gs = malloc((n + 1) * sizeof(int)), *gr = malloc((all + 1) * sizeof(int));
    int *ags = malloc((n + 1) * sizeof(int)), *agr = malloc((all + 1) * sizeof(int));
    int *ts = malloc((all + 1) * sizeof(int)), *tr = malloc((all + 1) * sizeof(int));
    int *ss = malloc((all + 1) * sizeof(int)), *sr = malloc((n + 1) * sizeof(int));
    int *rd = malloc((n + 1) * sizeof(int)), *sc = malloc((n + 1) * sizeof(int));
    CHECK(bc && ar && as && gs && gr && ags && agr && ts && tr && ss && sr && rd && sc);
    int root = np - 1;
    for (int i = 0; i < n; i++) {
        bc[i] = me == root % np ? val(99, i) : -1;
        as[i] = val(me, i);
        gs[i] = val(me, i) + 1;
        ags[i] = val(me, i) + 2;
        rd[i] = -1;
        sc[i] = val(me, i) + 5;
    }
    for (int q = 0; q < np; q++)
        for (int i = 0; i < n; i++) {
            ts[(size_t)q * n + i] = val(me * np + q, i);
            ss[(size_t)q * n + i] = val(q, i) + 7;
        }
    MPI_Request rq[12];
    int nr = 0;
    /* p2p on the same communicator with tag 0 around the ring, posted
     * between the collectives */
    int right = (me + 1) % np, left = (me + np - 1) % np, pv = val(me, 0), pr = -1;
    OK(MPI_Irecv(&pr, 1, MPI_INT, left, 0, comm, &rq[nr++]));
    OK(MPI_Ibarrier(comm, &rq[nr++]));
    OK(MPI_Ibcast(bc, n, MPI_INT, root, comm, &rq[nr++]));
    OK(MPI_Isend(&pv, 1, MPI_INT, right, 0, comm, &rq[nr++]));
    OK(MPI_Iallreduce(as, ar, n, MPI_INT, MPI_SUM, comm, &rq[nr++]));
    OK(MPI_Igather(gs, n, MPI_INT, gr, n, MPI_INT, 0, comm, &rq[nr++]));
    OK(MPI_Iallgather(ags, n, MPI_INT, agr, n, MPI_INT, comm, &rq[nr++]));
    OK(MPI_Ialltoall(ts, n, MPI_INT, tr, n, MPI_INT, comm, &rq[nr++]));
    OK(MPI_Iscatter(ss, n, MPI_INT, sr, n, MPI_INT, root, comm, &rq[nr++]));
    OK(MPI_Ireduce(as, rd, n, MPI_INT, MPI_MAX, 0, comm, &rq[nr++]));
    OK(MPI_Iscan(as, sc, n, MPI_INT, MPI_SUM, comm, &rq[nr++]));
    /* complete in one of several ways */
    MPI_Status sts[12];
    if (mode == 0) {
        OK(MPI_Waitall(nr, rq, sts));
    } else if (mode == 1) {
        for (int k = 0; k < nr; k++) {
            int idx;
            OK(MPI_Waitany(nr, rq, &idx, &sts[0]));
            CHECK(idx >= 0 && idx < nr);
            CHECK(rq[idx] == MPI_REQUEST_NULL);
        }
        int idx;
        OK(MPI_Waitany(nr, rq, &idx, MPI_STATUS_IGNORE));
        CHECK_EQ(idx, MPI_UNDEFINED);
    } else if (mode == 2) {
        int left_ = nr, idx[12], outc;
        while (left_ > 0) {
            OK(MPI_Waitsome(nr, rq, &outc, idx, sts));
            CHECK(outc >= 1);
            left_ -= outc;
        }
    } else if (mode == 3) {
        int flag = 0;
        long spins = 0;
        while (!flag) { /* bounded by the job timeout */
            OK(MPI_Testall(nr, rq, &flag, sts));
            spins++;
        }
        CHECK(spins >= 1);
    } else {
        for (int k = nr - 1; k >= 0; k--) {
            int flag = 0;
            if (k % 2) {
                while (!flag)
                    OK(MPI_Test(&rq[k], &flag, MPI_STATUS_IGNORE));
            } else {
                /* Request_get_status leaves it alive; Wait then frees it */
                while (!flag)
                    OK(MPI_Request_get_status(rq[k], &flag, MPI_STATUS_IGNORE));
                CHECK(rq[k] != MPI_REQUEST_NULL);
                OK(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
            }
            CHECK(rq[k] == MPI_REQUEST_NULL);
        }
    }
    CHECK_EQ(pr, val(left, 0));
    for (int i = 0; i < n; i++) {
        CHECK_EQ(bc[i], val(99, i));
        int x = 0, m = val(0, i), s = 0;
        for (int q = 0; q < np; q++) {
            x += val(q, i);
            m = val(q, i) > m ? val(q, i) : m;
            if (q <= me)
                s += val(q, i);
        }
        CHECK_EQ(ar[i], x);
        CHECK_EQ(sc[i], s);
        if (me == 0)
            CHECK_EQ(rd[i], m);
        CHECK_EQ(sr[i], val(me, i) + 7);
    }
    for (int q = 0; q < np; q++)
        for (int i = 0; i < n; i++) {
            if (me == 0)
                CHECK_EQ(gr[(size_t)q * n + i], val(q, i) + 1);
            CHECK_EQ(agr[(size_t)q * n + i], val(q, i) + 2);
            CHECK_EQ(tr[(size_t)q * n + i], val(q * np + me, i));
        }
    free(bc);
    free(ar);
    free(as);
    free(gs);
    free(gr);
    free(ags);
    free(agr);
    free(ts);
    free(tr);
    free(ss);
    free(sr);
    free(rd);
    free(sc);
}

/* the remaining I-forms, with derived types unpacked at completion and
 * in-place variants */
static void nb_more(MPI_Comm comm)
{
    OK(MPI_Comm_rank(comm, &me));
    OK(MPI_Comm_size(comm, &np));
    enum { N = 6 };
    MPI_Datatype vec;
    OK(MPI_Type_vector(N, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int *vb = malloc(2 * N * sizeof(int)), *rc = malloc(np * sizeof(int)), *dp = malloc(np * sizeof(int));
    int *gv = malloc((size_t)np * (N + 1) * sizeof(int)), *mine = malloc((N + 1) * sizeof(int));
    int *rsb = malloc((size_t)np * N * sizeof(int)), *rsr = malloc(N * sizeof(int));
    int *ex = malloc(N * sizeof(int)), *a2 = malloc((size_t)np * N * sizeof(int));
    CHECK(vb && rc && dp && gv && mine && rsb && rsr && ex && a2);
    for (int i = 0; i < 2 * N; i++)
        vb[i] = me == 0 ? val(5, i) : -4;
    int tot = 0;
    for (int q = 0; q < np; q++) {
        rc[q] = q % 2 + N - 1;
        dp[q] = tot;
        tot += rc[q];
    }
    for (int i = 0; i < rc[me]; i++)
        mine[i] = val(me, i);
    for (int i = 0; i < np * N; i++)
        rsb[i] = val(me, i);
    for (int i = 0; i < N; i++)
        ex[i] = val(me, i);
    for (int i = 0; i < np * N; i++)
        a2[i] = val(me * np + i / N, i % N);
    MPI_Request rq[6];
    OK(MPI_Ibcast(vb, 1, vec, 0, comm, &rq[0]));                               /* unpacked at the end */
    OK(MPI_Iallgatherv(mine, rc[me], MPI_INT, gv, rc, dp, MPI_INT, comm, &rq[1]));
    OK(MPI_Ireduce_scatter_block(rsb, rsr, N, MPI_INT, MPI_SUM, comm, &rq[2]));
    OK(MPI_Iexscan(MPI_IN_PLACE, ex, N, MPI_INT, MPI_SUM, comm, &rq[3]));
    OK(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a2, N, MPI_INT, comm, &rq[4]));
    OK(MPI_Type_free(&vec)); /* still in use by the bcast: stays alive */
    /* point-to-point on the same communicator while they run */
    int x = me, y = -1;
    OK(MPI_Sendrecv(&x, 1, MPI_INT, (me + 1) % np, 5, &y, 1, MPI_INT, (me + np - 1) % np, 5, comm,
                    MPI_STATUS_IGNORE));
    CHECK_EQ(y, (me + np - 1) % np);
    OK(MPI_Ibarrier(comm, &rq[5]));
    OK(MPI_Waitall(6, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 2 * N; i++)
        CHECK_EQ(vb[i], me == 0 || (i % 2 == 0 && i < 2 * N - 1) ? val(5, i) : -4);
    for (int q = 0; q < np; q++)
        for (int i = 0; i < rc[q]; i++)
            CHECK_EQ(gv[dp[q] + i], val(q, i));
    for (int i = 0; i < N; i++) {
        int s = 0, e = 0;
        for (int q = 0; q < np; q++) {
            s += val(q, me * N + i);
            if (q < me)
                e += val(q, i);
        }
        CHECK_EQ(rsr[i], s);
        if (me > 0)
            CHECK_EQ(ex[i], e);
        else
            CHECK_EQ(ex[i], val(0, i)); /* rank 0 of an in-place exscan: untouched */
    }
    for (int q = 0; q < np; q++)
        for (int i = 0; i < N; i++)
            CHECK_EQ(a2[q * N + i], val(q * np + me, i));
    free(vb);
    free(rc);
    free(dp);
    free(gv);
    free(mine);
    free(rsb);
    free(rsr);
    free(ex);
    free(a2);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm sub;
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -mt_rank, &sub));
    int sizes[] = {0, 1, 17, 3000};
    for (int mode = 0; mode < 5; mode++)
        for (int k = 0; k < 4; k++) {
            nb_round(MPI_COMM_WORLD, sizes[k], mode);
            nb_round(sub, sizes[(k + 1) % 4], (mode + 1) % 5);
        }
    nb_more(MPI_COMM_WORLD);
    nb_more(sub);
    /* a nonblocking collective left running across blocking ones */
    MPI_Request r;
    int v = mt_rank, s = -1, t = -1;
    OK(MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    OK(MPI_Allreduce(&v, &t, 1, MPI_INT, MPI_MAX, sub));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_EQ(s, mt_size * (mt_size - 1) / 2);
    CHECK_EQ(t, mt_size - 1);
    OK(MPI_Comm_free(&sub));
    return mt_finish("coll_nb");
}
