/* Intercommunicators: MPI_Intercomm_create over the world split three ways
 * (even/odd, first/last halves of uneven sizes, and the halves swapped with
 * the local order reversed), point-to-point both ways with MPI_ANY_SOURCE
 * and probes, every blocking collective with each side as root and values
 * checked exactly, merge with high both ways, dup (attributes), idup,
 * split, create, compare, groups; MPI_PROC_NULL receives with
 * MPI_DATATYPE_NULL; MPI_Get_version; error classes under
 * MPI_ERRORS_RETURN.  A job of one rank checks what needs no second group. */
#include "mt.h"

static int lay; /* the layout being tested */

/* which side a world rank is on (0: A, 1: B), and its key in the split */
static int side_of(int r)
{
    switch (lay) {
    case 0: return r % 2;
    case 1: return r >= mt_size / 2;           /* n = 3: A {0}, B {1, 2} */
    default: return r < (mt_size + 1) / 2;     /* n = 3: A {2}, B {1, 0} (keys reversed) */
    }
}
static int key_of(int r)
{
    return lay == 2 ? -r : r;
}

/* the world ranks of side s in local rank order; returns how many */
static int members(int s, int *out)
{
    int n = 0;
    for (int k = lay == 2 ? mt_size - 1 : 0; lay == 2 ? k >= 0 : k < mt_size; k += lay == 2 ? -1 : 1)
        if (side_of(k) == s)
            out[n++] = k;
    return n;
}

static int idx_of(const int *list, int n, int w)
{
    for (int i = 0; i < n; i++)
        if (list[i] == w)
            return i;
    return -1;
}

/* the group's world ranks, in order */
static void check_group(MPI_Group g, const int *expect, int n)
{
    MPI_Group wg;
    int gn, *in = malloc(sizeof(int) * (size_t)n + 1), *out = malloc(sizeof(int) * (size_t)n + 1);
    OK(MPI_Group_size(g, &gn));
    CHECK_EQ(gn, n);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (int i = 0; i < n; i++)
        in[i] = i;
    OK(MPI_Group_translate_ranks(g, n, in, wg, out));
    for (int i = 0; i < n; i++)
        CHECK_EQ(out[i], expect[i]);
    OK(MPI_Group_free(&wg));
    free(in);
    free(out);
}

static int copies; /* attribute copy callback calls */
static int copy_fn(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)key, (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int me_w, side, ln, rn, li; /* world rank, side, local and remote sizes, local rank */
static int L[64], R[64];           /* local and remote world ranks, by rank */

static void check_shape(MPI_Comm ic)
{
    int f, x;
    OK(MPI_Comm_test_inter(ic, &f));
    CHECK_EQ(f, 1);
    OK(MPI_Comm_size(ic, &x));
    CHECK_EQ(x, ln);
    OK(MPI_Comm_rank(ic, &x));
    CHECK_EQ(x, li);
    OK(MPI_Comm_remote_size(ic, &x));
    CHECK_EQ(x, rn);
    MPI_Group g;
    OK(MPI_Comm_group(ic, &g));
    check_group(g, L, ln);
    OK(MPI_Group_free(&g));
    OK(MPI_Comm_remote_group(ic, &g));
    check_group(g, R, rn);
    OK(MPI_Group_free(&g));
}

static void p2p(MPI_Comm ic)
{
    /* every process sends every remote process its world rank; receives
     * from anyone, probing first */
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)rn);
    int *val = malloc(sizeof(int) * (size_t)rn), seen[64] = {0};
    for (int j = 0; j < rn; j++) {
        val[j] = me_w * 100 + j;
        OK(MPI_Isend(&val[j], 1, MPI_INT, j, 3, ic, &rq[j]));
    }
    for (int k = 0; k < rn; k++) {
        MPI_Status st;
        int x, cnt;
        OK(MPI_Probe(MPI_ANY_SOURCE, 3, ic, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rn);
        CHECK_EQ(st.MPI_TAG, 3);
        OK(MPI_Get_count(&st, MPI_INT, &cnt));
        CHECK_EQ(cnt, 1);
        int src = st.MPI_SOURCE;
        OK(MPI_Recv(&x, 1, MPI_INT, k % 2 ? src : MPI_ANY_SOURCE, 3, ic, &st));
        if (k % 2)
            CHECK_EQ(st.MPI_SOURCE, src);
        CHECK_EQ(x, R[st.MPI_SOURCE] * 100 + li);
        CHECK(!seen[st.MPI_SOURCE]);
        seen[st.MPI_SOURCE] = 1;
    }
    OK(MPI_Waitall(rn, rq, MPI_STATUSES_IGNORE));
    /* local i sends to remote i % rn; a process hears from the remote k
     * with k % ln == its rank: iprobe until the first comes */
    int x = me_w, back = -1, flag = 0, expect = 0;
    MPI_Status st;
    OK(MPI_Send(&x, 1, MPI_INT, li % rn, 4, ic));
    for (int k = 0; k < rn; k++)
        expect += k % ln == li;
    for (long spin = 0; expect && !flag; spin++) {
        OK(MPI_Iprobe(MPI_ANY_SOURCE, 4, ic, &flag, &st));
        CHECK(spin < 100000000L);
    }
    if (expect)
        CHECK_EQ(st.MPI_SOURCE % ln, li);
    for (int k = 0; k < rn; k++)
        if (k % ln == li) {
            OK(MPI_Recv(&back, 1, MPI_INT, k, 4, ic, &st));
            CHECK_EQ(back, R[k]);
            CHECK_EQ(st.MPI_SOURCE, k);
        }
    /* matched probe: a message from remote rank 0 to everyone, taken by
     * the handle; its status names the remote rank */
    x = me_w + 7;
    if (li == 0)
        for (int j = 0; j < rn; j++)
            OK(MPI_Send(&x, 1, MPI_INT, j, 6, ic));
    MPI_Message msg;
    OK(MPI_Mprobe(MPI_ANY_SOURCE, 6, ic, &msg, &st));
    CHECK_EQ(st.MPI_SOURCE, 0);
    back = -1;
    OK(MPI_Mrecv(&back, 1, MPI_INT, &msg, &st));
    CHECK_EQ(back, R[0] + 7);
    CHECK_EQ(st.MPI_SOURCE, 0);
    /* sendrecv between local i and remote i, both ways at once */
    if (li < rn) {
        int got = -1;
        OK(MPI_Sendrecv(&me_w, 1, MPI_INT, li, 5, &got, 1, MPI_INT, li, 5, ic, &st));
        CHECK_EQ(got, R[li]);
        CHECK_EQ(st.MPI_SOURCE, li);
    }
    free(rq);
    free(val);
}

/* count of alltoallv from (sender side, sender rank) to receiver rank */
static int a2a_cnt(int sside, int si, int ri)
{
    return (si + 2 * ri + sside) % 3;
}

static void rooted(MPI_Comm ic, int rside, int rt)
{
    /* rside's rank rt is the root; the other side gives the data */
    int at_root_side = side == rside, iam = at_root_side && li == rt;
    int root = at_root_side ? (iam ? MPI_ROOT : MPI_PROC_NULL) : rt;
    int rw = rside == side ? L[rt] : R[rt]; /* the root's world rank */
    int buf[256], sb[256], cnts[64], displs[64];
    /* bcast */
    for (int k = 0; k < 5; k++)
        buf[k] = iam ? rw * 10 + k : -1;
    OK(MPI_Bcast(buf, 5, MPI_INT, root, ic));
    for (int k = 0; k < 5; k++)
        CHECK_EQ(buf[k], at_root_side ? (iam ? rw * 10 + k : -1) : rw * 10 + k);
    /* gather: 2 ints from each remote process */
    sb[0] = me_w;
    sb[1] = me_w + 1000;
    for (int k = 0; k < 2 * rn; k++)
        buf[k] = -1;
    OK(MPI_Gather(sb, 2, MPI_INT, buf, 2, MPI_INT, root, ic));
    if (iam)
        for (int j = 0; j < rn; j++) {
            CHECK_EQ(buf[2 * j], R[j]);
            CHECK_EQ(buf[2 * j + 1], R[j] + 1000);
        }
    /* gatherv: remote j gives j + 1 ints, stored last to first */
    for (int k = 0; k <= li; k++)
        sb[k] = me_w * 10 + k;
    int off = 0;
    for (int j = rn - 1; j >= 0; j--) {
        cnts[j] = j + 1;
        displs[j] = off;
        off += j + 1;
    }
    for (int k = 0; k < off; k++)
        buf[k] = -1;
    OK(MPI_Gatherv(sb, li + 1, MPI_INT, buf, cnts, displs, MPI_INT, root, ic));
    if (iam)
        for (int j = 0; j < rn; j++)
            for (int k = 0; k <= j; k++)
                CHECK_EQ(buf[displs[j] + k], R[j] * 10 + k);
    /* scatter: block j = {rw*100 + j, -j} */
    for (int j = 0; j < rn; j++) {
        sb[2 * j] = rw * 100 + j;
        sb[2 * j + 1] = -j;
    }
    buf[0] = buf[1] = 7;
    OK(MPI_Scatter(sb, 2, MPI_INT, buf, 2, MPI_INT, root, ic));
    if (!at_root_side) {
        CHECK_EQ(buf[0], rw * 100 + li);
        CHECK_EQ(buf[1], -li);
    } else {
        CHECK_EQ(buf[0], 7);
    }
    /* scatterv: remote j gets j + 1 ints, taken last to first */
    for (int j = 0; j < rn; j++)
        for (int k = 0; k <= j; k++)
            sb[displs[j] + k] = j * 1000 + k + rw;
    for (int k = 0; k <= li; k++)
        buf[k] = -1;
    OK(MPI_Scatterv(sb, cnts, displs, MPI_INT, buf, li + 1, MPI_INT, root, ic));
    if (!at_root_side)
        for (int k = 0; k <= li; k++)
            CHECK_EQ(buf[k], li * 1000 + k + rw);
    /* reduce: sum of the remote world ranks, their count, max */
    sb[0] = me_w;
    sb[1] = 1;
    sb[2] = me_w;
    buf[0] = buf[1] = -1;
    OK(MPI_Reduce(sb, buf, 2, MPI_INT, MPI_SUM, root, ic));
    int rsum = 0, rmax = -1;
    for (int j = 0; j < rn; j++) {
        rsum += R[j];
        rmax = R[j] > rmax ? R[j] : rmax;
    }
    if (iam) {
        CHECK_EQ(buf[0], rsum);
        CHECK_EQ(buf[1], rn);
    } else {
        CHECK_EQ(buf[0], -1);
    }
    OK(MPI_Reduce(sb + 2, buf, 1, MPI_INT, MPI_MAX, root, ic));
    if (iam)
        CHECK_EQ(buf[0], rmax);
}

static void all_kinds(MPI_Comm ic)
{
    int buf[512], sb[512], scnt[64], sdsp[64], rcnt[64], rdsp[64];
    OK(MPI_Barrier(ic));
    /* allgather */
    sb[0] = me_w;
    OK(MPI_Allgather(sb, 1, MPI_INT, buf, 1, MPI_INT, ic));
    for (int j = 0; j < rn; j++)
        CHECK_EQ(buf[j], R[j]);
    /* allgatherv: remote j gives j + 1 copies of its world rank */
    for (int k = 0; k <= li; k++)
        sb[k] = me_w;
    int off = 0;
    for (int j = 0; j < rn; j++) {
        rcnt[j] = j + 1;
        rdsp[j] = off;
        off += j + 2; /* a gap */
    }
    for (int k = 0; k < off; k++)
        buf[k] = -5;
    OK(MPI_Allgatherv(sb, li + 1, MPI_INT, buf, rcnt, rdsp, MPI_INT, ic));
    for (int j = 0; j < rn; j++) {
        for (int k = 0; k <= j; k++)
            CHECK_EQ(buf[rdsp[j] + k], R[j]);
        CHECK_EQ(buf[rdsp[j] + j + 1], -5);
    }
    /* alltoall: to remote j, me*1000 + j */
    for (int j = 0; j < rn; j++)
        sb[j] = me_w * 1000 + j;
    OK(MPI_Alltoall(sb, 1, MPI_INT, buf, 1, MPI_INT, ic));
    for (int j = 0; j < rn; j++)
        CHECK_EQ(buf[j], R[j] * 1000 + li);
    /* alltoallv and w: a2a_cnt ints of (sender*100 + k) */
    int so = 0, ro = 0;
    for (int j = 0; j < rn; j++) {
        scnt[j] = a2a_cnt(side, li, j);
        sdsp[j] = so;
        for (int k = 0; k < scnt[j]; k++)
            sb[so + k] = me_w * 100 + k;
        so += scnt[j];
        rcnt[j] = a2a_cnt(!side, j, li);
        rdsp[j] = ro;
        ro += rcnt[j] + 1;
    }
    for (int w = 0; w < 2; w++) {
        for (int k = 0; k < ro; k++)
            buf[k] = -7;
        if (!w) {
            OK(MPI_Alltoallv(sb, scnt, sdsp, MPI_INT, buf, rcnt, rdsp, MPI_INT, ic));
        } else {
            int sbd[64], rbd[64];
            MPI_Datatype ts[64];
            for (int j = 0; j < rn; j++) {
                sbd[j] = sdsp[j] * (int)sizeof(int);
                rbd[j] = rdsp[j] * (int)sizeof(int);
                ts[j] = MPI_INT;
            }
            OK(MPI_Alltoallw(sb, scnt, sbd, ts, buf, rcnt, rbd, ts, ic));
        }
        for (int j = 0; j < rn; j++) {
            for (int k = 0; k < rcnt[j]; k++)
                CHECK_EQ(buf[rdsp[j] + k], R[j] * 100 + k);
            CHECK_EQ(buf[rdsp[j] + rcnt[j]], -7);
        }
    }
    /* allreduce: the remote group's sum and count */
    int rsum = 0;
    for (int j = 0; j < rn; j++)
        rsum += R[j];
    sb[0] = me_w;
    sb[1] = 1;
    OK(MPI_Allreduce(sb, buf, 2, MPI_INT, MPI_SUM, ic));
    CHECK_EQ(buf[0], rsum);
    CHECK_EQ(buf[1], rn);
    /* a strided datatype on both sides: every other int */
    MPI_Datatype vec;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    sb[0] = me_w;
    sb[1] = -100;
    sb[2] = 1;
    for (int k = 0; k < 4; k++)
        buf[k] = -3;
    OK(MPI_Allreduce(sb, buf, 1, vec, MPI_SUM, ic));
    CHECK_EQ(buf[0], rsum);
    CHECK_EQ(buf[1], -3);
    CHECK_EQ(buf[2], rn);
    /* allgather: a strided pair against two contiguous ints */
    sb[0] = me_w;
    sb[2] = -me_w;
    OK(MPI_Allgather(sb, 1, vec, buf, 2, MPI_INT, ic));
    for (int j = 0; j < rn; j++) {
        CHECK_EQ(buf[2 * j], R[j]);
        CHECK_EQ(buf[2 * j + 1], -R[j]);
    }
    OK(MPI_Type_free(&vec));
    /* reduce_scatter_block: total ln * rn on both sides; element k is
     * sender + k, so local rank i gets sum over remote of (R[j] + k) for
     * k in [i * rn, (i + 1) * rn) */
    int total = ln * rn;
    for (int k = 0; k < total; k++)
        sb[k] = me_w + k;
    OK(MPI_Reduce_scatter_block(sb, buf, rn, MPI_INT, MPI_SUM, ic));
    for (int k = 0; k < rn; k++)
        CHECK_EQ(buf[k], rsum + rn * (li * rn + k));
    /* reduce_scatter: rank 0 takes two shares, the last none (if ln > 1) */
    for (int i = 0; i < ln; i++)
        rcnt[i] = ln == 1 ? rn : i == 0 ? 2 * rn : i == ln - 1 ? 0 : rn;
    int first = 0;
    for (int i = 0; i < li; i++)
        first += rcnt[i];
    for (int k = 0; k < rcnt[li] + 1; k++)
        buf[k] = -9;
    OK(MPI_Reduce_scatter(sb, buf, rcnt, MPI_INT, MPI_SUM, ic));
    for (int k = 0; k < rcnt[li]; k++)
        CHECK_EQ(buf[k], rsum + rn * (first + k));
    CHECK_EQ(buf[rcnt[li]], -9);
}

static void merge(MPI_Comm ic)
{
    int A[64], B[64], an = members(0, A), bn = members(1, B);
    for (int how = 0; how < 3; how++) {
        /* 0: A low; 1: B low; 2: both low (the lower leader first) */
        int high = how == 0 ? side : how == 1 ? !side : 0;
        int a_first = how == 0 || (how == 2 && A[0] < B[0]);
        MPI_Comm m;
        OK(MPI_Intercomm_merge(ic, high, &m));
        int r, n, f;
        OK(MPI_Comm_test_inter(m, &f));
        CHECK_EQ(f, 0);
        OK(MPI_Comm_size(m, &n));
        CHECK_EQ(n, mt_size);
        OK(MPI_Comm_rank(m, &r));
        int expect = side == 0 ? (a_first ? 0 : bn) + idx_of(A, an, me_w) : (a_first ? an : 0) + idx_of(B, bn, me_w);
        CHECK_EQ(r, expect);
        int x = me_w, sum;
        OK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, m));
        CHECK_EQ(sum, mt_size * (mt_size - 1) / 2);
        /* rank 0 of the merged communicator is who we think */
        int w0 = me_w;
        OK(MPI_Bcast(&w0, 1, MPI_INT, 0, m));
        CHECK_EQ(w0, a_first ? A[0] : B[0]);
        OK(MPI_Comm_free(&m));
    }
}

static void derived(MPI_Comm ic)
{
    int key, flag, res;
    void *v;
    OK(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    static char base[4];
    OK(MPI_Comm_set_attr(ic, key, base));
    OK(MPI_Comm_set_name(ic, "ic"));
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_get_name(ic, name, &len));
    CHECK(!strcmp(name, "ic"));
    /* info on an intercommunicator, and dup_with_info */
    MPI_Info info, got;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "knit_side", side ? "b" : "a"));
    OK(MPI_Comm_set_info(ic, info));
    OK(MPI_Comm_get_info(ic, &got));
    char val[8];
    OK(MPI_Info_get(got, "knit_side", sizeof(val) - 1, val, &flag));
    CHECK(flag && !strcmp(val, side ? "b" : "a"));
    OK(MPI_Info_free(&got));
    MPI_Comm di;
    OK(MPI_Comm_dup_with_info(ic, info, &di));
    check_shape(di);
    OK(MPI_Comm_get_info(di, &got));
    OK(MPI_Info_get(got, "knit_side", sizeof(val) - 1, val, &flag));
    CHECK(flag && !strcmp(val, side ? "b" : "a"));
    OK(MPI_Info_free(&got));
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_free(&di));
    /* dup: congruent, its own matching, attribute copied */
    MPI_Comm d;
    copies = 0;
    OK(MPI_Comm_dup(ic, &d));
    CHECK_EQ(copies, 1);
    OK(MPI_Comm_get_attr(d, key, &v, &flag));
    CHECK(flag && v == base + 1);
    check_shape(d);
    OK(MPI_Comm_compare(ic, d, &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_compare(ic, ic, &res));
    CHECK_EQ(res, MPI_IDENT);
    OK(MPI_Comm_compare(ic, MPI_COMM_WORLD, &res));
    CHECK_EQ(res, MPI_UNEQUAL);
    int x = me_w, y = -1;
    MPI_Status st;
    OK(MPI_Send(&x, 1, MPI_INT, 0, 9, ic));
    x += 1000;
    OK(MPI_Send(&x, 1, MPI_INT, 0, 9, d));
    if (li == 0) {
        for (int j = 0; j < rn; j++) { /* dup's messages first: not ic's */
            OK(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 9, d, &st));
            CHECK_EQ(y, R[st.MPI_SOURCE] + 1000);
        }
        for (int j = 0; j < rn; j++) {
            OK(MPI_Recv(&y, 1, MPI_INT, j, 9, ic, &st));
            CHECK_EQ(y, R[j]);
        }
    }
    /* collectives on the dup */
    OK(MPI_Allreduce(&me_w, &y, 1, MPI_INT, MPI_MAX, d));
    int rmax = 0;
    for (int j = 0; j < rn; j++)
        rmax = R[j] > rmax ? R[j] : rmax;
    CHECK_EQ(y, rmax);
    OK(MPI_Comm_free(&d));
    /* idup: complete in MPI_Wait, attributes copied */
    MPI_Request rq;
    copies = 0;
    OK(MPI_Comm_idup(ic, &d, &rq));
    OK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL);
    CHECK_EQ(copies, 1);
    check_shape(d);
    OK(MPI_Barrier(d));
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free_keyval(&key));
    /* split: colour by local rank parity; the remote part is the remote
     * ranks of the same parity, ordered by key (reversed) */
    MPI_Comm s;
    int color = li % 2;
    OK(MPI_Comm_split(ic, li == 0 && ln > 2 ? MPI_UNDEFINED : color, -li, &s));
    {
        int lsub[64], rsub[64], lk = 0, rk = 0;
        for (int i = ln - 1; i >= 0; i--)
            if (i % 2 == color && !(i == 0 && ln > 2))
                lsub[lk++] = L[i];
        for (int j = rn - 1; j >= 0; j--)
            if (j % 2 == color && !(j == 0 && rn > 2))
                rsub[rk++] = R[j];
        if (li == 0 && ln > 2) {
            CHECK(s == MPI_COMM_NULL);
        } else if (rk == 0) {
            CHECK(s == MPI_COMM_NULL);
        } else {
            int r, n;
            CHECK(s != MPI_COMM_NULL);
            OK(MPI_Comm_size(s, &n));
            CHECK_EQ(n, lk);
            OK(MPI_Comm_remote_size(s, &n));
            CHECK_EQ(n, rk);
            OK(MPI_Comm_rank(s, &r));
            CHECK_EQ(lsub[r], me_w);
            MPI_Group g;
            OK(MPI_Comm_remote_group(s, &g));
            check_group(g, rsub, rk);
            OK(MPI_Group_free(&g));
            int z = me_w, sum = -1;
            OK(MPI_Allreduce(&z, &sum, 1, MPI_INT, MPI_SUM, s));
            int es = 0;
            for (int j = 0; j < rk; j++)
                es += rsub[j];
            CHECK_EQ(sum, es);
            OK(MPI_Comm_free(&s));
        }
    }
    /* create: the local group without its rank 0 (when it has more) */
    MPI_Group lg, sub;
    OK(MPI_Comm_group(ic, &lg));
    int zero = 0;
    if (ln > 1)
        OK(MPI_Group_excl(lg, 1, &zero, &sub));
    else
        OK(MPI_Group_incl(lg, 1, &zero, &sub));
    MPI_Comm cr;
    OK(MPI_Comm_create(ic, sub, &cr));
    if (ln > 1 && li == 0) {
        CHECK(cr == MPI_COMM_NULL);
    } else {
        int n;
        CHECK(cr != MPI_COMM_NULL);
        OK(MPI_Comm_size(cr, &n));
        CHECK_EQ(n, ln > 1 ? ln - 1 : 1);
        OK(MPI_Comm_remote_size(cr, &n));
        CHECK_EQ(n, rn > 1 ? rn - 1 : 1);
        OK(MPI_Barrier(cr));
        OK(MPI_Comm_free(&cr));
    }
    OK(MPI_Group_free(&sub));
    OK(MPI_Group_free(&lg));
}

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* Every nonblocking collective started at once, point-to-point while they
 * run (a blocking implementation would deadlock here: the other side
 * waits for this one's message before it starts its collectives), then
 * completed together; a user op and a datatype freed while they run. */
static void nonblocking(MPI_Comm ic)
{
    MPI_Request rq[32];
    int k = 0;
    /* roots: A's rank 0 for bcast, reduce, scatterv; B's last for gather, scatter, gatherv */
    int a_root = side == 0 ? (li == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int b_last = side == 0 ? rn - 1 : ln - 1;
    int b_root = side == 1 ? (li == b_last ? MPI_ROOT : MPI_PROC_NULL) : b_last;
    int a0 = side == 0 ? L[0] : R[0], bl = side == 1 ? L[b_last] : R[b_last];
    int rsum = 0;
    for (int j = 0; j < rn; j++)
        rsum += R[j];
    /* the p2p that must get through while the collectives are pending:
     * side B sends first and receives after; side A receives first */
    int pv = -1, peer = li < rn ? li : -1;
    if (side == 0 && peer >= 0)
        OK(MPI_Recv(&pv, 1, MPI_INT, peer, 21, ic, MPI_STATUS_IGNORE));
    int bc[3] = {-1, -1, -1};
    if (a_root == MPI_ROOT)
        bc[0] = me_w, bc[1] = me_w + 1, bc[2] = me_w + 2;
    OK(MPI_Ibcast(bc, 3, MPI_INT, a_root, ic, &rq[k++]));
    int gs = me_w * 3, gr[64];
    OK(MPI_Igather(&gs, 1, MPI_INT, gr, 1, MPI_INT, b_root, ic, &rq[k++]));
    int sc_in[64], sc_out = -1;
    for (int j = 0; j < rn; j++)
        sc_in[j] = me_w * 1000 + j;
    OK(MPI_Iscatter(sc_in, 1, MPI_INT, &sc_out, 1, MPI_INT, b_root, ic, &rq[k++]));
    int red_in[2] = {me_w, 1}, red_out[2] = {-1, -1};
    OK(MPI_Ireduce(red_in, red_out, 2, MPI_INT, MPI_SUM, a_root, ic, &rq[k++]));
    MPI_Op op;
    OK(MPI_Op_create(my_sum, 0, &op));
    int ar_out[2] = {-1, -1};
    OK(MPI_Iallreduce(red_in, ar_out, 2, MPI_INT, op, ic, &rq[k++]));
    OK(MPI_Op_free(&op)); /* still applied by the pending call */
    MPI_Datatype vec;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int vin[3] = {me_w, -50, 7}, vout[3] = {-1, -2, -1};
    OK(MPI_Iallreduce(vin, vout, 1, vec, MPI_MAX, ic, &rq[k++]));
    OK(MPI_Type_free(&vec));
    int ag[64];
    OK(MPI_Iallgather(&me_w, 1, MPI_INT, ag, 1, MPI_INT, ic, &rq[k++]));
    int a2s[64], a2r[64];
    for (int j = 0; j < rn; j++)
        a2s[j] = me_w * 100 + j;
    OK(MPI_Ialltoall(a2s, 1, MPI_INT, a2r, 1, MPI_INT, ic, &rq[k++]));
    OK(MPI_Ibarrier(ic, &rq[k++]));
    int total = ln * rn, rsb_in[64], rsb_out[64];
    for (int i = 0; i < total; i++)
        rsb_in[i] = me_w + i;
    OK(MPI_Ireduce_scatter_block(rsb_in, rsb_out, rn, MPI_INT, MPI_SUM, ic, &rq[k++]));
    int rcs[64], rs_out[65];
    for (int i = 0; i < ln; i++)
        rcs[i] = ln == 1 ? rn : i == 0 ? 2 * rn : i == ln - 1 ? 0 : rn;
    OK(MPI_Ireduce_scatter(rsb_in, rs_out, rcs, MPI_INT, MPI_SUM, ic, &rq[k++]));
    /* v forms: remote j gives / gets j + 1 ints */
    int cnt[64], dsp[64], off = 0;
    for (int j = 0; j < rn; j++) {
        cnt[j] = j + 1;
        dsp[j] = off;
        off += j + 1;
    }
    int gv_in[64], gv_out[256], sv_in[256], sv_out[64], agv_out[256];
    for (int q = 0; q <= li; q++)
        gv_in[q] = me_w * 10 + q;
    for (int q = 0; q < off; q++)
        sv_in[q] = me_w * 10000 + q;
    OK(MPI_Igatherv(gv_in, li + 1, MPI_INT, gv_out, cnt, dsp, MPI_INT, b_root, ic, &rq[k++]));
    OK(MPI_Iscatterv(sv_in, cnt, dsp, MPI_INT, sv_out, li + 1, MPI_INT, a_root, ic, &rq[k++]));
    OK(MPI_Iallgatherv(gv_in, li + 1, MPI_INT, agv_out, cnt, dsp, MPI_INT, ic, &rq[k++]));
    int avs[64], avr[64], avsc[64], avsd[64], avrc[64], avrd[64], so = 0, ro = 0;
    for (int j = 0; j < rn; j++) {
        avsc[j] = a2a_cnt(side, li, j);
        avsd[j] = so;
        for (int q = 0; q < avsc[j]; q++)
            avs[so + q] = me_w * 100 + q;
        so += avsc[j];
        avrc[j] = a2a_cnt(!side, j, li);
        avrd[j] = ro;
        ro += avrc[j];
    }
    OK(MPI_Ialltoallv(avs, avsc, avsd, MPI_INT, avr, avrc, avrd, MPI_INT, ic, &rq[k++]));
    if (side == 1 && peer >= 0)
        OK(MPI_Send(&me_w, 1, MPI_INT, peer, 21, ic));
    if (side == 1 && peer >= 0) /* and the answer, still before completing */
        OK(MPI_Recv(&pv, 1, MPI_INT, peer, 22, ic, MPI_STATUS_IGNORE));
    if (side == 0 && peer >= 0)
        OK(MPI_Send(&me_w, 1, MPI_INT, peer, 22, ic));
    if (peer >= 0)
        CHECK_EQ(pv, R[peer]);
    /* complete: the first half one by one with Test, the rest at once */
    for (int i = 0; i < k / 2; i++) {
        int flag = 0;
        for (long spin = 0; !flag; spin++) {
            OK(MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE));
            CHECK(spin < 100000000L);
        }
        CHECK(rq[i] == MPI_REQUEST_NULL);
    }
    MPI_Status sts[32];
    OK(MPI_Waitall(k - k / 2, rq + k / 2, sts));
    for (int i = 0; i < k - k / 2; i++) {
        CHECK_EQ(sts[i].MPI_SOURCE, MPI_ANY_SOURCE);
        CHECK_EQ(sts[i].MPI_TAG, MPI_ANY_TAG);
    }
    /* the values */
    for (int q = 0; q < 3; q++)
        CHECK_EQ(bc[q], side == 1 ? a0 + q : a_root == MPI_ROOT ? me_w + q : -1);
    if (b_root == MPI_ROOT)
        for (int j = 0; j < rn; j++)
            CHECK_EQ(gr[j], R[j] * 3);
    if (side == 0)
        CHECK_EQ(sc_out, bl * 1000 + li);
    else
        CHECK_EQ(sc_out, -1);
    if (a_root == MPI_ROOT) {
        CHECK_EQ(red_out[0], rsum);
        CHECK_EQ(red_out[1], rn);
    } else {
        CHECK_EQ(red_out[0], -1);
    }
    CHECK_EQ(ar_out[0], rsum);
    CHECK_EQ(ar_out[1], rn);
    int rmax = 0;
    for (int j = 0; j < rn; j++)
        rmax = R[j] > rmax ? R[j] : rmax;
    CHECK_EQ(vout[0], rmax);
    CHECK_EQ(vout[1], -2);
    CHECK_EQ(vout[2], 7);
    for (int j = 0; j < rn; j++) {
        CHECK_EQ(ag[j], R[j]);
        CHECK_EQ(a2r[j], R[j] * 100 + li);
    }
    for (int q = 0; q < rn; q++)
        CHECK_EQ(rsb_out[q], rsum + rn * (li * rn + q));
    int first = 0;
    for (int i = 0; i < li; i++)
        first += rcs[i];
    for (int q = 0; q < rcs[li]; q++)
        CHECK_EQ(rs_out[q], rsum + rn * (first + q));
    if (b_root == MPI_ROOT)
        for (int j = 0; j < rn; j++)
            for (int q = 0; q <= j; q++)
                CHECK_EQ(gv_out[dsp[j] + q], R[j] * 10 + q);
    if (side == 1)
        for (int q = 0; q <= li; q++)
            CHECK_EQ(sv_out[q], a0 * 10000 + li * (li + 1) / 2 + q); /* the root's displacement for us */
    for (int j = 0; j < rn; j++)
        for (int q = 0; q <= j; q++)
            CHECK_EQ(agv_out[dsp[j] + q], R[j] * 10 + q);
    for (int j = 0; j < rn; j++)
        for (int q = 0; q < avrc[j]; q++)
            CHECK_EQ(avr[avrd[j] + q], R[j] * 100 + q);
}

static void errors(MPI_Comm ic)
{
    int x = 0, f;
    MPI_Request rq;
    OK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
    CHECK_EQ(MPI_Scan(&x, &f, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
    CHECK_EQ(MPI_Exscan(&x, &f, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
    CHECK_EQ(MPI_Iscan(&x, &f, 1, MPI_INT, MPI_SUM, ic, &rq), MPI_ERR_COMM);
    CHECK_EQ(MPI_Ibcast(&x, 1, MPI_INT, rn, ic, &rq), MPI_ERR_ROOT);
    CHECK_EQ(MPI_Iallreduce(&x, &f, 1, MPI_INT, MPI_OP_NULL, ic, &rq), MPI_ERR_OP);
    CHECK_EQ(MPI_Iallreduce(&x, &f, 1, MPI_INT, MPI_REPLACE, ic, &rq), MPI_ERR_OP);
    CHECK_EQ(MPI_Ialltoall(&x, -1, MPI_INT, &f, 1, MPI_INT, ic, &rq), MPI_ERR_COUNT);
    CHECK_EQ(MPI_Ibarrier(ic, NULL), MPI_ERR_ARG);
    CHECK_EQ(MPI_Bcast(&x, 1, MPI_INT, rn, ic), MPI_ERR_ROOT);
    CHECK_EQ(MPI_Bcast(&x, 1, MPI_INT, -7, ic), MPI_ERR_ROOT);
    CHECK_EQ(MPI_Bcast(&x, -1, MPI_INT, 0, ic), MPI_ERR_COUNT);
    CHECK_EQ(MPI_Bcast(&x, 1, MPI_DATATYPE_NULL, 0, ic), MPI_ERR_TYPE);
    CHECK_EQ(MPI_Allgather(&x, -2, MPI_INT, &f, 1, MPI_INT, ic), MPI_ERR_COUNT);
    CHECK_EQ(MPI_Alltoallv(&x, NULL, NULL, MPI_INT, &f, NULL, NULL, MPI_INT, ic), MPI_ERR_ARG);
    CHECK_EQ(MPI_Reduce(&x, &f, 1, MPI_INT, MPI_OP_NULL, MPI_PROC_NULL, ic), MPI_SUCCESS); /* not significant */
    /* toward remote root 0 the send side matters, and fails before sending */
    CHECK_EQ(MPI_Gather(&x, 1, MPI_DATATYPE_NULL, NULL, 1, MPI_INT, 0, ic), MPI_ERR_TYPE);
    CHECK_EQ(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_ARG);
    CHECK_EQ(MPI_Send(&x, 1, MPI_INT, rn, 0, ic), MPI_ERR_RANK);
    CHECK_EQ(MPI_Recv(&x, 1, MPI_INT, rn, 0, ic, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    CHECK_EQ(MPI_Comm_create_group(ic, MPI_GROUP_EMPTY, 0, &(MPI_Comm){0}), MPI_ERR_COMM);
    CHECK_EQ(MPI_Comm_split_type(ic, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &(MPI_Comm){0}), MPI_ERR_COMM);
    CHECK_EQ(MPI_Intercomm_create(ic, 0, MPI_COMM_WORLD, 0, 1, &(MPI_Comm){0}), MPI_ERR_COMM);
    CHECK_EQ(MPI_Comm_split(ic, -3, 0, &(MPI_Comm){0}), MPI_ERR_ARG);
    /* still usable after the errors */
    OK(MPI_Barrier(ic));
}

static void proc_null(void)
{
    MPI_Status st;
    int cnt;
    MPI_Request rq;
    /* a receive from MPI_PROC_NULL: at once, whatever the type and count */
    st.MPI_SOURCE = st.MPI_TAG = 123;
    OK(MPI_Recv(NULL, 3, MPI_DATATYPE_NULL, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK_EQ(cnt, 0);
    OK(MPI_Irecv(NULL, -1, MPI_DATATYPE_NULL, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &rq));
    st.MPI_SOURCE = 9;
    OK(MPI_Wait(&rq, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(st.MPI_TAG, MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_BYTE, &cnt));
    CHECK_EQ(cnt, 0);
    OK(MPI_Recv_init(NULL, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_SELF, &rq));
    OK(MPI_Start(&rq));
    int flag = 0;
    OK(MPI_Test(&rq, &flag, &st));
    CHECK(flag);
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    OK(MPI_Request_free(&rq));
    int x = 4;
    OK(MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, NULL, 2, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                    &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    OK(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    OK(MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag);
    MPI_Message msg;
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC);
    OK(MPI_Mrecv(NULL, 1, MPI_DATATYPE_NULL, &msg, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK(msg == MPI_MESSAGE_NULL);
    /* a bad datatype still fails where the source is a process */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_EQ(MPI_Recv(NULL, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    CHECK_EQ(MPI_Recv(NULL, 1, MPI_INT, MPI_PROC_NULL, -4, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void intra_only(void)
{
    int v, sv, f, len;
    OK(MPI_Get_version(&v, &sv));
    CHECK_EQ(v, MPI_VERSION);
    CHECK_EQ(sv, MPI_SUBVERSION);
    CHECK(v == 3 && sv == 1);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    OK(MPI_Get_library_version(lib, &len));
    CHECK(strstr(lib, "knit MPI ") == lib && strstr(lib, "subset of MPI 3.1") && (int)strlen(lib) == len);
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &f));
    CHECK_EQ(f, 0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_EQ(MPI_Comm_remote_size(MPI_COMM_WORLD, &v), MPI_ERR_COMM);
    MPI_Group g;
    CHECK_EQ(MPI_Comm_remote_group(MPI_COMM_SELF, &g), MPI_ERR_COMM);
    MPI_Comm c;
    CHECK_EQ(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &c), MPI_ERR_COMM);
    CHECK_EQ(MPI_Intercomm_create(MPI_COMM_WORLD, mt_size, MPI_COMM_WORLD, 0, 0, &c), MPI_ERR_RANK);
    CHECK_EQ(MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, -1, &c), MPI_ERR_TAG);
    /* remote leader inside the local group: found at the leader (every rank here is one of SELF) */
    CHECK_EQ(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, mt_rank, 0, &c), MPI_ERR_RANK);
    CHECK_EQ(MPI_Bcast(&v, 1, MPI_INT, MPI_ROOT, MPI_COMM_WORLD), MPI_ERR_ROOT);
    CHECK_EQ(MPI_Comm_idup(MPI_COMM_WORLD, &c, NULL), MPI_ERR_ARG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    /* idup of intracommunicators: completes in MPI_Test */
    MPI_Comm d[2];
    MPI_Request rq[2];
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &d[0], &rq[0]));
    OK(MPI_Comm_idup(MPI_COMM_SELF, &d[1], &rq[1]));
    int done = 0;
    for (long spin = 0; !done; spin++) {
        OK(MPI_Testall(2, rq, &done, MPI_STATUSES_IGNORE));
        CHECK(spin < 1000000L);
    }
    int res;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, d[0], &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    int x = mt_rank, sum;
    OK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, d[0]));
    CHECK_EQ(sum, mt_size * (mt_size - 1) / 2);
    OK(MPI_Comm_size(d[1], &x));
    CHECK_EQ(x, 1);
    OK(MPI_Comm_free(&d[0]));
    OK(MPI_Comm_free(&d[1]));
    /* create_group, dup_with_info, set/get_info */
    MPI_Group wg, eg;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int range[1][3] = {{0, mt_size - 1, 2}};
    OK(MPI_Group_range_incl(wg, 1, range, &eg));
    if (mt_rank % 2 == 0) {
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, eg, 11, &c));
        OK(MPI_Comm_size(c, &x));
        CHECK_EQ(x, (mt_size + 1) / 2);
        OK(MPI_Comm_rank(c, &x));
        CHECK_EQ(x, mt_rank / 2);
        OK(MPI_Comm_free(&c));
    }
    OK(MPI_Group_free(&eg));
    OK(MPI_Group_free(&wg));
    MPI_Info info, got;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "knit_test", "yes"));
    OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c));
    OK(MPI_Comm_get_info(c, &got));
    char val[16];
    OK(MPI_Info_get(got, "knit_test", sizeof(val) - 1, val, &f));
    CHECK(f && !strcmp(val, "yes"));
    OK(MPI_Info_free(&got));
    OK(MPI_Info_set(info, "knit_test", "no"));
    OK(MPI_Comm_set_info(c, info));
    OK(MPI_Comm_get_info(c, &got));
    OK(MPI_Info_get(got, "knit_test", sizeof(val) - 1, val, &f));
    CHECK(f && !strcmp(val, "no"));
    OK(MPI_Info_free(&got));
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    me_w = mt_rank;
    intra_only();
    proc_null();
    if (mt_size < 2 || mt_size > 64) {
        if (mt_rank == 0)
            printf("note: intercommunicators need 2 to 64 ranks: skipped at %d\n", mt_size);
        return mt_finish("inter");
    }
    for (lay = 0; lay < 3; lay++) {
        side = side_of(me_w);
        ln = members(side, L);
        rn = members(!side, R);
        li = idx_of(L, ln, me_w);
        MPI_Comm local, ic;
        OK(MPI_Comm_split(MPI_COMM_WORLD, side, key_of(me_w), &local));
        int x;
        OK(MPI_Comm_rank(local, &x));
        CHECK_EQ(x, li);
        /* local leader: the last of the local group; remote leader its
         * first (their last would do as well: it is the leader they name) */
        OK(MPI_Intercomm_create(local, ln - 1, MPI_COMM_WORLD, R[rn - 1], 77 + lay, &ic));
        check_shape(ic);
        p2p(ic);
        for (int rside = 0; rside < 2; rside++) {
            int rsz = rside == side ? ln : rn;
            rooted(ic, rside, 0);
            if (rsz > 1)
                rooted(ic, rside, rsz - 1);
        }
        all_kinds(ic);
        nonblocking(ic);
        merge(ic);
        derived(ic);
        errors(ic);
        OK(MPI_Comm_free(&ic));
        OK(MPI_Comm_free(&local));
        if (mt_rank == 0)
            printf("ok layout %d\n", lay);
    }
    return mt_finish("inter");
}
