/* Process topologies against grids and graphs worked out by hand:
 * Dims_create (a table, fixed entries, errors, and an exhaustive check of
 * balance for small n); Cartesian create/get/rank/coords/shift/sub/map in
 * 1 to 4 dimensions, periodic and not (tables for 4 and 8 ranks, a
 * formula for any count); graph and distributed graph (both creates,
 * neighbours, weights, the documented neighbour order); every
 * neighbourhood collective, blocking and nonblocking, contiguous and with
 * a strided type, checked element by element (MPI_PROC_NULL blocks left
 * alone, a periodic dimension of size 1 or 2 pairing block s with s^1,
 * repeated graph edges in list order); error classes under
 * MPI_ERRORS_RETURN. */
#include "mt.h"

static int me, np;

#define MAXN 64 /* neighbours at most in these tests */

/* ------------------------------------------------------------ Dims_create */

static void dims_case(int n, int nd, const int *in, const int *want)
{
    int d[8];
    memcpy(d, in, (size_t)nd * sizeof(int));
    OK(MPI_Dims_create(n, nd, d));
    for (int i = 0; i < nd; i++)
        if (d[i] != want[i]) {
            fprintf(stderr, "FAIL rank %d: Dims_create(%d, %d) dim %d = %d, expected %d\n", me, n, nd, i, d[i],
                    want[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
}

/* the smallest (largest - smallest) over every split of n into k factors */
static int best_spread(int n, int k, int cap, int hi)
{
    if (k == 0)
        return n == 1 ? 0 : 1 << 30;
    int best = 1 << 30;
    for (int d = 1; d <= cap && d <= n; d++) {
        if (n % d)
            continue;
        int h = hi ? hi : d;
        int s = k == 1 ? (d == n ? h - d : 1 << 30) : best_spread(n / d, k - 1, d, h);
        if (s < best)
            best = s;
    }
    return best;
}

static void t_dims(void)
{
    dims_case(6, 2, (int[]){0, 0}, (int[]){3, 2});
    dims_case(7, 2, (int[]){0, 0}, (int[]){7, 1});
    dims_case(6, 3, (int[]){0, 3, 0}, (int[]){2, 3, 1});
    dims_case(72, 2, (int[]){0, 0}, (int[]){9, 8});
    dims_case(24, 3, (int[]){0, 0, 0}, (int[]){4, 3, 2});
    dims_case(16, 4, (int[]){0, 0, 0, 0}, (int[]){2, 2, 2, 2});
    dims_case(12, 3, (int[]){0, 0, 0}, (int[]){3, 2, 2});
    dims_case(1, 3, (int[]){0, 0, 0}, (int[]){1, 1, 1});
    dims_case(30, 2, (int[]){0, 0}, (int[]){6, 5});
    dims_case(64, 3, (int[]){0, 0, 0}, (int[]){4, 4, 4});
    dims_case(100, 3, (int[]){0, 0, 0}, (int[]){5, 5, 4});
    dims_case(1024, 2, (int[]){0, 0}, (int[]){32, 32});
    dims_case(97, 2, (int[]){0, 0}, (int[]){97, 1});
    dims_case(8, 2, (int[]){2, 0}, (int[]){2, 4});
    dims_case(8, 3, (int[]){0, 0, 2}, (int[]){2, 2, 2});
    dims_case(6, 2, (int[]){2, 3}, (int[]){2, 3});
    dims_case(60, 4, (int[]){0, 5, 0, 0}, (int[]){3, 5, 2, 2});
    dims_case(5, 1, (int[]){0}, (int[]){5});
    dims_case(1, 0, (int[]){0}, (int[]){0});
    dims_case(36, 5, (int[]){0, 0, 0, 0, 0}, (int[]){3, 3, 2, 2, 1});
    /* big inputs stay quick */
    int big[30] = {0};
    OK(MPI_Dims_create(1 << 30, 30, big));
    for (int i = 0; i < 30; i++)
        CHECK_EQ(big[i], 2);
    /* more dimensions than prime factors: the rest are 1 */
    int *many = calloc(100000, sizeof(int));
    CHECK(many);
    OK(MPI_Dims_create(12, 100000, many));
    CHECK(many[0] == 3 && many[1] == 2 && many[2] == 2 && many[3] == 1 && many[99999] == 1);
    memset(many, 0, 100000 * sizeof(int));
    OK(MPI_Dims_create(1 << 30, 40, many));
    for (int i = 0; i < 40; i++)
        CHECK_EQ(many[i], i < 30 ? 2 : 1);
    memset(many, 0, 100000 * sizeof(int));
    OK(MPI_Dims_create(2147483647, 3, many)); /* a prime */
    CHECK(many[0] == 2147483647 && many[1] == 1 && many[2] == 1);
    free(many);
    int b8[8] = {0};
    OK(MPI_Dims_create(735134400, 8, b8)); /* 2^6 3^3 5^2 7 11 13 17 */
    long long prod = 1;
    for (int i = 0; i < 8; i++) {
        prod *= b8[i];
        if (i)
            CHECK(b8[i] <= b8[i - 1]);
    }
    CHECK_EQ(prod, 735134400);
    /* every n up to 100 in 1..4 dimensions: the product, nonincreasing,
     * and as balanced as any split can be */
    for (int n = 1; n <= 100; n++)
        for (int k = 1; k <= 4; k++) {
            int d[4] = {0, 0, 0, 0};
            OK(MPI_Dims_create(n, k, d));
            int p = 1;
            for (int i = 0; i < k; i++) {
                p *= d[i];
                if (i)
                    CHECK(d[i] <= d[i - 1]);
            }
            CHECK_EQ(p, n);
            CHECK_EQ(d[0] - d[k - 1], best_spread(n, k, n, 0));
        }
    /* errors */
    int d2[2] = {0, 0};
    CHECK_EQ(MPI_Dims_create(0, 2, d2), MPI_ERR_ARG);
    CHECK_EQ(MPI_Dims_create(4, -1, d2), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Dims_create(4, 2, NULL), MPI_ERR_ARG);
    int d3[3] = {0, 3, 0};
    CHECK_EQ(MPI_Dims_create(7, 3, d3), MPI_ERR_DIMS);
    int d4[2] = {0, 5};
    CHECK_EQ(MPI_Dims_create(12, 2, d4), MPI_ERR_DIMS);
    int d5[2] = {2, 2};
    CHECK_EQ(MPI_Dims_create(6, 2, d5), MPI_ERR_DIMS);
    int d6[2] = {-1, 0};
    CHECK_EQ(MPI_Dims_create(6, 2, d6), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Dims_create(6, 0, NULL), MPI_ERR_DIMS);
}

/* -------------------------------------------------------------- neighbours */

/* A process's neighbour lists, worked out by the test. */
typedef struct nbrs {
    int indeg, outdeg;
    int in[MAXN], out[MAXN];
    int cart;
} nbrs_t;

/* Cartesian: rank of coordinates, wrapped; -1 off a non-periodic edge */
static int grid_rank(int nd, const int *dims, const int *per, const int *co)
{
    int r = 0;
    for (int d = 0; d < nd; d++) {
        int x = co[d];
        if (x < 0 || x >= dims[d]) {
            if (!per[d])
                return MPI_PROC_NULL;
            x = ((x % dims[d]) + dims[d]) % dims[d];
        }
        r = r * dims[d] + x;
    }
    return r;
}

static void grid_coords(int nd, const int *dims, int r, int *co)
{
    for (int d = nd - 1; d >= 0; d--) {
        co[d] = r % dims[d];
        r /= dims[d];
    }
}

static nbrs_t grid_nbrs(int nd, const int *dims, const int *per, int r)
{
    nbrs_t n = {2 * nd, 2 * nd, {0}, {0}, 1};
    int co[8];
    grid_coords(nd, dims, r, co);
    for (int d = 0; d < nd; d++)
        for (int s = 0; s < 2; s++) {
            co[d] += s ? 1 : -1;
            n.in[2 * d + s] = n.out[2 * d + s] = grid_rank(nd, dims, per, co);
            co[d] -= s ? 1 : -1;
        }
    return n;
}

/* ------------------------------------------------------- the collectives */

/* The value element i of the block that q sends on out-edge k carries. */
static int val(int q, int k, int i)
{
    return q * 100000 + k * 1000 + i + 1;
}

/* Which of q's out-edges feeds in-edge l of r (the pairing MPI defines). */
static int match_edge(const nbrs_t *all, int r, int l)
{
    const nbrs_t *a = &all[r];
    int q = a->in[l];
    const nbrs_t *b = &all[q];
    if (a->cart)
        return l ^ 1;
    int j = 0; /* the j-th edge into r from q ... */
    for (int i = 0; i < l; i++)
        j += a->in[i] == q;
    for (int k = 0; k < b->outdeg; k++) /* ... is the j-th edge from q to r */
        if (b->out[k] == r && j-- == 0)
            return k;
    CHECK(0);
    return -1;
}

#define SENT (-7)
#define C 3 /* ints per block */

/* counts of the v-forms: what q sends on out-edge k */
static int vcount(int q, int k)
{
    return 1 + (q + 2 * k) % 3;
}

/* MPI_Type_vector(C, 1, 2, MPI_INT) resized to 2C ints: block k of a
 * buffer is ints 2Ck + 2i, the odd ones are gaps */
static MPI_Datatype vec;

/* where int i of block b lies: contiguous or through vec */
static int pos(int strided, int b, int i)
{
    return strided ? 2 * C * b + 2 * i : C * b + i;
}

/* Run every neighbourhood collective on comm (this process's neighbours
 * all[me], everyone's in all[]), blocking and not, contiguous and
 * strided, and check every element. */
static void t_collectives(MPI_Comm comm, const nbrs_t *all)
{
    const nbrs_t *n = &all[me];
    int ind = n->indeg, outd = n->outdeg;
    int *sb = malloc(sizeof(int) * (size_t)(2 * C * (outd + 1)) * 2);
    int *rb = malloc(sizeof(int) * (size_t)(2 * C * (ind + 1)) * 2);
    CHECK(sb && rb);
    int scnt[MAXN], sdis[MAXN], rcnt[MAXN], rdis[MAXN];
    MPI_Aint sdw[MAXN], rdw[MAXN];
    MPI_Datatype sty[MAXN], rty[MAXN];
    for (int form = 0; form < 5; form++)
        for (int strided = 0; strided < 2; strided++)
            for (int nb = 0; nb < 2; nb++) {
                MPI_Datatype t = strided ? vec : MPI_INT;
                int cnt = strided ? 1 : C; /* C ints */
                for (int i = 0; i < 2 * C * (outd + 1) * 2; i++)
                    sb[i] = SENT - 1;
                for (int i = 0; i < 2 * C * (ind + 1) * 2; i++)
                    rb[i] = SENT;
                MPI_Request rq = MPI_REQUEST_NULL;
                MPI_Request *req = nb ? &rq : NULL;
                int err = 0;
                switch (form) {
                case 0: /* allgather: one block to all */
                    for (int i = 0; i < C; i++)
                        sb[pos(strided, 0, i)] = val(me, 0, i);
                    err = nb ? MPI_Ineighbor_allgather(sb, cnt, t, rb, cnt, t, comm, req)
                             : MPI_Neighbor_allgather(sb, cnt, t, rb, cnt, t, comm);
                    break;
                case 1: /* allgatherv: q sends vcount(q, 0) ints, at displacements with gaps */
                    for (int i = 0; i < vcount(me, 0); i++)
                        sb[i] = val(me, 0, i);
                    for (int l = 0, d = 0; l < ind; l++) {
                        rcnt[l] = n->in[l] == MPI_PROC_NULL ? 0 : vcount(n->in[l], 0);
                        rdis[l] = d;
                        d += rcnt[l] + 1;
                    }
                    err = nb ? MPI_Ineighbor_allgatherv(sb, vcount(me, 0), MPI_INT, rb, rcnt, rdis, MPI_INT, comm, req)
                             : MPI_Neighbor_allgatherv(sb, vcount(me, 0), MPI_INT, rb, rcnt, rdis, MPI_INT, comm);
                    break;
                case 2: /* alltoall */
                    for (int k = 0; k < outd; k++)
                        for (int i = 0; i < C; i++)
                            sb[pos(strided, k, i)] = val(me, k, i);
                    err = nb ? MPI_Ineighbor_alltoall(sb, cnt, t, rb, cnt, t, comm, req)
                             : MPI_Neighbor_alltoall(sb, cnt, t, rb, cnt, t, comm);
                    break;
                case 3: /* alltoallv: block k has vcount(me, k) ints, reversed order in sb */
                    for (int k = 0, d = 0; k < outd; k++) {
                        scnt[k] = vcount(me, k);
                        sdis[k] = 4 * (outd - 1 - k);
                        for (int i = 0; i < scnt[k]; i++)
                            sb[sdis[k] + i] = val(me, k, i);
                        (void)d;
                    }
                    for (int l = 0, d = 0; l < ind; l++) {
                        rcnt[l] = n->in[l] == MPI_PROC_NULL ? 0 : vcount(n->in[l], match_edge(all, me, l));
                        rdis[l] = d;
                        d += rcnt[l] + 1;
                    }
                    err = nb ? MPI_Ineighbor_alltoallv(sb, scnt, sdis, MPI_INT, rb, rcnt, rdis, MPI_INT, comm, req)
                             : MPI_Neighbor_alltoallv(sb, scnt, sdis, MPI_INT, rb, rcnt, rdis, MPI_INT, comm);
                    break;
                default: /* alltoallw: sends C contiguous ints; receives alternate vec and ints
                          * (strided: the other way round), byte displacements */
                    for (int k = 0; k < outd; k++) {
                        int v = strided && k % 2;
                        sty[k] = v ? vec : MPI_INT;
                        scnt[k] = v ? 1 : C;
                        sdw[k] = (MPI_Aint)sizeof(int) * pos(1, k, 0);
                        for (int i = 0; i < C; i++)
                            sb[v ? pos(1, k, i) : pos(1, k, 0) + i] = val(me, k, i);
                    }
                    for (int l = 0; l < ind; l++) {
                        int v = (l % 2) != strided;
                        rty[l] = v ? vec : MPI_INT;
                        rcnt[l] = v ? 1 : C;
                        rdw[l] = (MPI_Aint)sizeof(int) * pos(1, l, 0);
                    }
                    err = nb ? MPI_Ineighbor_alltoallw(sb, scnt, sdw, sty, rb, rcnt, rdw, rty, comm, req)
                             : MPI_Neighbor_alltoallw(sb, scnt, sdw, sty, rb, rcnt, rdw, rty, comm);
                    break;
                }
                CHECK_EQ(err, MPI_SUCCESS);
                if (nb) {
                    CHECK(rq != MPI_REQUEST_NULL);
                    if (strided) { /* Test until done, then the request is gone */
                        int flag = 0;
                        for (long spins = 0; !flag; spins++) {
                            OK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
                            CHECK(spins < 100000000L);
                        }
                    } else {
                        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
                    }
                    CHECK(rq == MPI_REQUEST_NULL);
                }
                /* the expected receive buffer, element by element */
                int len = 2 * C * (ind + 1) * 2;
                int *want = malloc(sizeof(int) * (size_t)len);
                CHECK(want);
                for (int i = 0; i < len; i++)
                    want[i] = SENT;
                for (int l = 0; l < ind; l++) {
                    int q = n->in[l];
                    if (q == MPI_PROC_NULL)
                        continue; /* untouched */
                    int k = form == 0 || form == 1 ? 0 : match_edge(all, me, l);
                    if (form == 1 || form == 3) {
                        for (int i = 0; i < rcnt[l]; i++)
                            want[rdis[l] + i] = val(q, k, i);
                    } else if (form == 4) {
                        int v = (l % 2) != strided;
                        for (int i = 0; i < C; i++)
                            want[v ? pos(1, l, i) : pos(1, l, 0) + i] = val(q, k, i);
                    } else {
                        for (int i = 0; i < C; i++)
                            want[pos(strided, l, i)] = val(q, k, i);
                    }
                }
                for (int i = 0; i < len; i++)
                    if (rb[i] != want[i]) {
                        fprintf(stderr,
                                "FAIL rank %d: neighbourhood form %d strided %d nonblocking %d: int %d = %d, "
                                "expected %d\n",
                                me, form, strided, nb, i, rb[i], want[i]);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                free(want);
            }

    /* two in flight at once, completed in reverse order with Waitall, and
     * Testall: each gets its own messages */
    int a[2 * MAXN], b[2 * MAXN], x = 11, y = 22;
    for (int i = 0; i < 2 * MAXN; i++)
        a[i] = b[i] = SENT;
    MPI_Request two[2];
    OK(MPI_Ineighbor_allgather(&x, 1, MPI_INT, a, 1, MPI_INT, comm, &two[0]));
    OK(MPI_Ineighbor_allgather(&y, 1, MPI_INT, b, 1, MPI_INT, comm, &two[1]));
    MPI_Request rev[2] = {two[1], two[0]};
    OK(MPI_Waitall(2, rev, MPI_STATUSES_IGNORE));
    for (int l = 0; l < ind; l++) {
        CHECK_EQ(a[l], n->in[l] == MPI_PROC_NULL ? SENT : 11);
        CHECK_EQ(b[l], n->in[l] == MPI_PROC_NULL ? SENT : 22);
    }
    OK(MPI_Ineighbor_alltoall(sb, 0, MPI_INT, rb, 0, MPI_INT, comm, &two[0]));
    int flag = 0;
    for (long spins = 0; !flag; spins++) {
        OK(MPI_Testall(1, two, &flag, MPI_STATUSES_IGNORE));
        CHECK(spins < 100000000L);
    }
    CHECK(two[0] == MPI_REQUEST_NULL);
    free(sb);
    free(rb);
}

/* The library's view of this process's neighbours is the test's. */
static void check_nbrs(MPI_Comm comm, const nbrs_t *n)
{
    int kind;
    OK(MPI_Topo_test(comm, &kind));
    if (kind == MPI_CART) {
        int nd;
        OK(MPI_Cartdim_get(comm, &nd));
        CHECK_EQ(2 * nd, n->indeg);
        for (int d = 0; d < nd; d++) {
            int src, dst;
            OK(MPI_Cart_shift(comm, d, 1, &src, &dst));
            CHECK_EQ(src, n->in[2 * d]);
            CHECK_EQ(dst, n->in[2 * d + 1]);
        }
    } else if (kind == MPI_GRAPH) {
        int cnt, nb[MAXN];
        OK(MPI_Graph_neighbors_count(comm, me, &cnt));
        CHECK_EQ(cnt, n->indeg);
        OK(MPI_Graph_neighbors(comm, me, MAXN, nb));
        for (int i = 0; i < cnt; i++)
            CHECK_EQ(nb[i], n->in[i]);
    } else {
        CHECK_EQ(kind, MPI_DIST_GRAPH);
        int ind, outd, w, src[MAXN], dst[MAXN];
        OK(MPI_Dist_graph_neighbors_count(comm, &ind, &outd, &w));
        CHECK_EQ(ind, n->indeg);
        CHECK_EQ(outd, n->outdeg);
        OK(MPI_Dist_graph_neighbors(comm, MAXN, src, MPI_UNWEIGHTED, MAXN, dst, MPI_UNWEIGHTED));
        for (int i = 0; i < ind; i++)
            CHECK_EQ(src[i], n->in[i]);
        for (int i = 0; i < outd; i++)
            CHECK_EQ(dst[i], n->out[i]);
    }
}

/* ------------------------------------------------------------------ Cartesian */

/* A grid over the first prod(dims) ranks: everything the queries say,
 * and the collectives. */
static void t_cart(int nd, const int *dims, const int *per)
{
    int n = 1;
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    MPI_Comm cart;
    OK(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, per, 1, &cart));
    int newrank;
    OK(MPI_Cart_map(MPI_COMM_WORLD, nd, dims, per, &newrank));
    if (me >= n) {
        CHECK(cart == MPI_COMM_NULL);
        CHECK_EQ(newrank, MPI_UNDEFINED);
        return;
    }
    CHECK(cart != MPI_COMM_NULL);
    CHECK_EQ(newrank, me);
    int r, s, kind, ndims;
    OK(MPI_Comm_rank(cart, &r));
    OK(MPI_Comm_size(cart, &s));
    CHECK_EQ(r, me); /* reorder keeps the order */
    CHECK_EQ(s, n);
    OK(MPI_Topo_test(cart, &kind));
    CHECK_EQ(kind, MPI_CART);
    OK(MPI_Cartdim_get(cart, &ndims));
    CHECK_EQ(ndims, nd);
    int gd[8], gp[8], gc[8], co[8];
    OK(MPI_Cart_get(cart, 8, gd, gp, gc));
    grid_coords(nd, dims, me, co);
    for (int d = 0; d < nd; d++) {
        CHECK_EQ(gd[d], dims[d]);
        CHECK_EQ(gp[d], per[d] != 0);
        CHECK_EQ(gc[d], co[d]);
    }
    /* coords and rank of every process, and shifts by several steps */
    for (int q = 0; q < n; q++) {
        int qc[8], rr;
        OK(MPI_Cart_coords(cart, q, nd, qc));
        grid_coords(nd, dims, q, co);
        for (int d = 0; d < nd; d++)
            CHECK_EQ(qc[d], co[d]);
        OK(MPI_Cart_rank(cart, qc, &rr));
        CHECK_EQ(rr, q);
        for (int d = 0; d < nd; d++) /* one period further, where periodic */
            if (per[d])
                qc[d] += dims[d] * (q % 2 ? -1 : 2);
        OK(MPI_Cart_rank(cart, qc, &rr));
        CHECK_EQ(rr, q);
    }
    grid_coords(nd, dims, me, co);
    for (int d = 0; d < nd; d++)
        for (int disp = -3; disp <= 3; disp++) {
            int src, dst, c2[8];
            OK(MPI_Cart_shift(cart, d, disp, &src, &dst));
            memcpy(c2, co, sizeof(c2));
            c2[d] = co[d] + disp;
            CHECK_EQ(dst, grid_rank(nd, dims, per, c2));
            c2[d] = co[d] - disp;
            CHECK_EQ(src, grid_rank(nd, dims, per, c2));
        }
    /* a duplicate keeps the topology */
    MPI_Comm dup;
    OK(MPI_Comm_dup(cart, &dup));
    OK(MPI_Topo_test(dup, &kind));
    CHECK_EQ(kind, MPI_CART);
    OK(MPI_Cart_get(dup, 8, gd, gp, gc));
    for (int d = 0; d < nd; d++)
        CHECK(gd[d] == dims[d] && gp[d] == (per[d] != 0) && gc[d] == co[d]);
    /* a split does not */
    MPI_Comm sp;
    OK(MPI_Comm_split(cart, 0, 0, &sp));
    OK(MPI_Topo_test(sp, &kind));
    CHECK_EQ(kind, MPI_UNDEFINED);
    OK(MPI_Comm_free(&sp));

    /* the collectives, on the grid and on its duplicate */
    nbrs_t *all = calloc((size_t)n, sizeof(*all));
    CHECK(all);
    for (int q = 0; q < n; q++)
        all[q] = grid_nbrs(nd, dims, per, q);
    check_nbrs(cart, &all[me]);
    t_collectives(cart, all);
    t_collectives(dup, all);
    OK(MPI_Comm_free(&dup));

    /* Cart_sub: keep every other dimension, then none */
    int keep[8], sd[8], sp_[8], k = 0, color = 0;
    for (int d = 0; d < nd; d++) {
        keep[d] = d % 2 == 0;
        if (keep[d]) {
            sd[k] = dims[d];
            sp_[k++] = per[d];
        }
    }
    MPI_Comm sub;
    OK(MPI_Cart_sub(cart, keep, &sub));
    int sr, ss, sc[8], subn = 1, want = 0;
    for (int d = 0; d < nd; d++)
        if (keep[d]) {
            subn *= dims[d];
            want = want * dims[d] + co[d];
        } else {
            color = color * dims[d] + co[d];
        }
    OK(MPI_Comm_size(sub, &ss));
    OK(MPI_Comm_rank(sub, &sr));
    CHECK_EQ(ss, subn);
    CHECK_EQ(sr, want);
    OK(MPI_Cartdim_get(sub, &ndims));
    CHECK_EQ(ndims, k);
    OK(MPI_Cart_get(sub, 8, gd, gp, sc));
    for (int d = 0, j = 0; d < nd; d++)
        if (keep[d]) {
            CHECK_EQ(gd[j], dims[d]);
            CHECK_EQ(gp[j], per[d] != 0);
            CHECK_EQ(sc[j], co[d]);
            j++;
        }
    /* members of a sub-grid are the processes with the same dropped coordinates */
    int mine = color, theirs = -1;
    OK(MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_MAX, sub));
    CHECK_EQ(theirs, color);
    nbrs_t *suball = calloc((size_t)subn, sizeof(*suball));
    CHECK(suball);
    for (int q = 0; q < subn; q++)
        suball[q] = grid_nbrs(k, sd, sp_, q);
    int save = me;
    me = sr;
    check_nbrs(sub, &suball[sr]);
    t_collectives(sub, suball);
    me = save;
    free(suball);
    OK(MPI_Comm_free(&sub));
    int none[8] = {0};
    OK(MPI_Cart_sub(cart, none, &sub));
    OK(MPI_Comm_size(sub, &ss));
    CHECK_EQ(ss, 1);
    OK(MPI_Cartdim_get(sub, &ndims));
    CHECK_EQ(ndims, 0);
    OK(MPI_Comm_free(&sub));
    free(all);
    OK(MPI_Comm_free(&cart));
}

/* the neighbours of a 2-D grid over 4 and 8 ranks, dims from
 * Dims_create, dimension 0 open and 1 periodic, worked out by hand */
static const int grid4[4][4] = {
    {MPI_PROC_NULL, 2, 1, 1}, {MPI_PROC_NULL, 3, 0, 0}, {0, MPI_PROC_NULL, 3, 3}, {1, MPI_PROC_NULL, 2, 2}};
static const int grid8[8][4] = {
    {MPI_PROC_NULL, 2, 1, 1}, {MPI_PROC_NULL, 3, 0, 0}, {0, 4, 3, 3}, {1, 5, 2, 2},
    {2, 6, 5, 5},             {3, 7, 4, 4},             {4, MPI_PROC_NULL, 7, 7}, {5, MPI_PROC_NULL, 6, 6},
};

static void t_cart_tables(void)
{
    if (np != 4 && np != 8)
        return;
    int dims[2] = {0, 0}, per[2] = {0, 1};
    OK(MPI_Dims_create(np, 2, dims));
    CHECK_EQ(dims[0], np / 2);
    CHECK_EQ(dims[1], 2);
    MPI_Comm cart;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart));
    const int *want = np == 4 ? grid4[me] : grid8[me];
    for (int d = 0; d < 2; d++) {
        int src, dst;
        OK(MPI_Cart_shift(cart, d, 1, &src, &dst));
        CHECK_EQ(src, want[2 * d]);
        CHECK_EQ(dst, want[2 * d + 1]);
    }
    OK(MPI_Comm_free(&cart));
}

/* ------------------------------------------------------------------- graphs */

static void t_graph(void)
{
    /* a ring over all ranks, node 0 also its own neighbour */
    int index[64], edges[192], ne = 0;
    for (int i = 0; i < np; i++) {
        edges[ne++] = (i + 1) % np;
        edges[ne++] = (i + np - 1) % np;
        if (i == 0)
            edges[ne++] = 0;
        index[i] = ne;
    }
    MPI_Comm g;
    OK(MPI_Graph_create(MPI_COMM_WORLD, np, index, edges, 1, &g));
    int kind, nn, nedg, r;
    OK(MPI_Topo_test(g, &kind));
    CHECK_EQ(kind, MPI_GRAPH);
    OK(MPI_Comm_rank(g, &r));
    CHECK_EQ(r, me);
    OK(MPI_Graphdims_get(g, &nn, &nedg));
    CHECK_EQ(nn, np);
    CHECK_EQ(nedg, ne);
    int gi[64], ge[192];
    OK(MPI_Graph_get(g, 64, 192, gi, ge));
    for (int i = 0; i < np; i++)
        CHECK_EQ(gi[i], index[i]);
    for (int i = 0; i < ne; i++)
        CHECK_EQ(ge[i], edges[i]);
    /* shorter arrays get what fits */
    int one[2] = {-5, -5};
    OK(MPI_Graph_get(g, 1, 1, one, one + 1));
    CHECK_EQ(one[0], index[0]);
    CHECK_EQ(one[1], edges[0]);
    for (int q = 0; q < np; q++) {
        int cnt, nb[8];
        OK(MPI_Graph_neighbors_count(g, q, &cnt));
        CHECK_EQ(cnt, q == 0 ? 3 : 2);
        OK(MPI_Graph_neighbors(g, q, 8, nb));
        CHECK_EQ(nb[0], (q + 1) % np);
        CHECK_EQ(nb[1], (q + np - 1) % np);
        if (q == 0)
            CHECK_EQ(nb[2], 0);
    }
    int newrank;
    OK(MPI_Graph_map(MPI_COMM_WORLD, np, index, edges, &newrank));
    CHECK_EQ(newrank, me);
    nbrs_t all[64];
    for (int q = 0; q < np; q++) {
        int first = q ? index[q - 1] : 0;
        all[q].indeg = all[q].outdeg = index[q] - first;
        all[q].cart = 0;
        for (int i = 0; i < all[q].indeg; i++)
            all[q].in[i] = all[q].out[i] = edges[first + i];
    }
    check_nbrs(g, &all[me]);
    t_collectives(g, all);
    MPI_Comm dup;
    OK(MPI_Comm_dup(g, &dup));
    OK(MPI_Topo_test(dup, &kind));
    CHECK_EQ(kind, MPI_GRAPH);
    check_nbrs(dup, &all[me]);
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&g));

    /* fewer nodes than processes: the last is left out; a node without
     * edges */
    if (np > 1) {
        int idx2[64], e2[64], m = 0;
        for (int i = 0; i < np - 1; i++) {
            if (i != 0)
                e2[m++] = 0;
            idx2[i] = m;
        }
        idx2[0] = 0;
        /* node 0 has no edges listed, nodes 1.. point at 0 */
        OK(MPI_Graph_create(MPI_COMM_WORLD, np - 1, idx2, e2, 0, &g));
        OK(MPI_Graph_map(MPI_COMM_WORLD, np - 1, idx2, e2, &newrank));
        if (me == np - 1) {
            CHECK(g == MPI_COMM_NULL);
            CHECK_EQ(newrank, MPI_UNDEFINED);
        } else {
            int cnt;
            OK(MPI_Graph_neighbors_count(g, me, &cnt));
            CHECK_EQ(cnt, me == 0 ? 0 : 1);
            OK(MPI_Comm_free(&g));
        }
    }
}

static void t_dist_graph(void)
{
    /* adjacent, weighted: out to r+1, r+2; in from r-1, r-2 */
    int src[2] = {(me + np - 1) % np, (me + np - 2) % np}, dst[2] = {(me + 1) % np, (me + 2) % np};
    int sw[2] = {10 * me + 1, 10 * me + 2}, dw[2] = {20 * me + 1, 20 * me + 2};
    MPI_Comm dg;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 1, &dg));
    int kind, ind, outd, w, s[4], d[4], gsw[4], gdw[4];
    OK(MPI_Topo_test(dg, &kind));
    CHECK_EQ(kind, MPI_DIST_GRAPH);
    OK(MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &w));
    CHECK(ind == 2 && outd == 2 && w == 1);
    OK(MPI_Dist_graph_neighbors(dg, 4, s, gsw, 4, d, gdw));
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(s[i], src[i]);
        CHECK_EQ(d[i], dst[i]);
        CHECK_EQ(gsw[i], sw[i]);
        CHECK_EQ(gdw[i], dw[i]);
    }
    nbrs_t all[64];
    for (int q = 0; q < np; q++) {
        all[q] = (nbrs_t){2, 2, {(q + np - 1) % np, (q + np - 2) % np}, {(q + 1) % np, (q + 2) % np}, 0};
    }
    check_nbrs(dg, &all[me]);
    t_collectives(dg, all);
    MPI_Comm dup;
    OK(MPI_Comm_dup(dg, &dup));
    OK(MPI_Dist_graph_neighbors(dup, 4, s, gsw, 4, d, gdw));
    CHECK(s[1] == src[1] && gdw[1] == dw[1]);
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&dg));

    /* adjacent, unweighted, and uneven: everyone sends to 0 */
    int zero = 0, everyone[64];
    for (int q = 0; q < np; q++)
        everyone[q] = q;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, me == 0 ? np : 0, me == 0 ? everyone : NULL, MPI_UNWEIGHTED, 1,
                                      &zero, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    OK(MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &w));
    CHECK(ind == (me == 0 ? np : 0) && outd == 1 && w == 0);
    for (int q = 0; q < np; q++) {
        all[q] = (nbrs_t){q == 0 ? np : 0, 1, {0}, {0}, 0};
        if (q == 0)
            memcpy(all[q].in, everyone, sizeof(int) * (size_t)np);
    }
    check_nbrs(dg, &all[me]);
    t_collectives(dg, all);
    OK(MPI_Comm_free(&dg));

    /* Dist_graph_create, each naming its own out-edges to r+1 and r+3:
     * an end's edges come in the order of the processes that named them */
    int ddst[2] = {(me + 1) % np, (me + 3) % np}, dwt[2] = {me * 7 + 1, me * 7 + 2}, two = 2;
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, &two, ddst, dwt, MPI_INFO_NULL, 0, &dg));
    int expin[8], expinw[8], nin = 0;
    for (int q = 0; q < np; q++)
        for (int j = 0; j < 2; j++)
            if ((q + (j ? 3 : 1)) % np == me) {
                expin[nin] = q;
                expinw[nin++] = q * 7 + 1 + j;
            }
    OK(MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &w));
    CHECK(ind == nin && outd == 2 && w == 1);
    OK(MPI_Dist_graph_neighbors(dg, 4, s, gsw, 4, d, gdw));
    for (int i = 0; i < nin; i++) {
        CHECK_EQ(s[i], expin[i]);
        CHECK_EQ(gsw[i], expinw[i]);
    }
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(d[i], ddst[i]);
        CHECK_EQ(gdw[i], dwt[i]);
    }
    for (int q = 0; q < np; q++) {
        all[q] = (nbrs_t){0, 2, {0}, {(q + 1) % np, (q + 3) % np}, 0};
        for (int p = 0; p < np; p++)
            for (int j = 0; j < 2; j++)
                if ((p + (j ? 3 : 1)) % np == q)
                    all[q].in[all[q].indeg++] = p;
    }
    t_collectives(dg, all);
    OK(MPI_Comm_free(&dg));

    /* Dist_graph_create, rank 0 naming every edge (a star into the last
     * rank, and each rank to itself), weighted: the others, without
     * edges, give MPI_WEIGHTS_EMPTY */
    int srcs[64], degs[64], dsts[128], wts[128], m = 0;
    for (int q = 0; q < np; q++) {
        srcs[q] = q;
        degs[q] = 2;
        wts[m] = 100 + m;
        dsts[m++] = np - 1;
        wts[m] = 100 + m;
        dsts[m++] = q;
    }
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, me == 0 ? np : 0, srcs, degs, dsts, me == 0 ? wts : MPI_WEIGHTS_EMPTY,
                             MPI_INFO_NULL, 0, &dg));
    OK(MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &w));
    CHECK_EQ(w, 1);
    CHECK_EQ(outd, 2);
    CHECK_EQ(ind, me == np - 1 ? np + 1 : 1);
    int bs[72], bsw[72];
    OK(MPI_Dist_graph_neighbors(dg, 72, bs, bsw, 4, d, gdw));
    CHECK(d[0] == np - 1 && gdw[0] == 100 + 2 * me && d[1] == me && gdw[1] == 101 + 2 * me);
    for (int p = 0, i = 0; p < np; p++) {
        if (me == np - 1) {
            CHECK_EQ(bs[i], p);
            CHECK_EQ(bsw[i++], 100 + 2 * p);
        }
        if (p == me) {
            CHECK_EQ(bs[i], p);
            CHECK_EQ(bsw[i++], 101 + 2 * p);
        }
    }
    for (int q = 0; q < np; q++) {
        all[q] = (nbrs_t){0, 2, {0}, {np - 1, q}, 0};
        for (int p = 0; p < np; p++) { /* rank 0's list: p -> last, p -> p */
            if (q == np - 1)
                all[q].in[all[q].indeg++] = p;
            if (p == q)
                all[q].in[all[q].indeg++] = p;
        }
    }
    check_nbrs(dg, &all[me]);
    t_collectives(dg, all);
    OK(MPI_Comm_free(&dg));
    /* unweighted from rank 0, MPI_WEIGHTS_EMPTY from the others (no edges) */
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, me == 0 ? np : 0, srcs, degs, dsts,
                             me == 0 ? MPI_UNWEIGHTED : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
    OK(MPI_Dist_graph_neighbors_count(dg, &ind, &outd, &w));
    CHECK_EQ(w, 0);
    CHECK_EQ(ind, me == np - 1 ? np + 1 : 1);
    OK(MPI_Comm_free(&dg));
}

/* ----------------------------------------------------------------- errors */

static void t_errors(void)
{
    int x = 0, y = 0, src, dst, d1 = np, p1 = 1, buf[8];
    MPI_Request rq;
    CHECK_EQ(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Cartdim_get(MPI_COMM_WORLD, &x), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Neighbor_allgather(&x, 1, MPI_INT, &y, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Ineighbor_alltoall(&x, 1, MPI_INT, &y, 1, MPI_INT, MPI_COMM_WORLD, &rq), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Topo_test(MPI_COMM_NULL, &x), MPI_ERR_COMM);
    CHECK_EQ(MPI_Topo_test(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    MPI_Comm c;
    int big = np + 1, zero = 0, neg = -1;
    CHECK_EQ(MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &p1, 0, &c), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Cart_create(MPI_COMM_WORLD, 1, &zero, &p1, 0, &c), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Cart_create(MPI_COMM_WORLD, -1, &d1, &p1, 0, &c), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Cart_create(MPI_COMM_WORLD, 1, NULL, &p1, 0, &c), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p1, 0, NULL), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_create(MPI_COMM_NULL, 1, &d1, &p1, 0, &c), MPI_ERR_COMM);
    CHECK_EQ(MPI_Cart_map(MPI_COMM_WORLD, 1, &big, &p1, &x), MPI_ERR_DIMS);

    /* a 1-D ring, open */
    int p0 = 0;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p0, 0, &c));
    CHECK_EQ(MPI_Cart_shift(c, 1, 1, &src, &dst), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Cart_shift(c, -1, 1, &src, &dst), MPI_ERR_DIMS);
    CHECK_EQ(MPI_Cart_shift(c, 0, 1, NULL, &dst), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_coords(c, np, 1, buf), MPI_ERR_RANK);
    CHECK_EQ(MPI_Cart_coords(c, -1, 1, buf), MPI_ERR_RANK);
    CHECK_EQ(MPI_Cart_coords(c, 0, 0, buf), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_get(c, 0, buf, buf + 1, buf + 2), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_rank(c, &big, &x), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_rank(c, &neg, &x), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_sub(c, NULL, &c), MPI_ERR_ARG);
    CHECK_EQ(MPI_Graph_neighbors_count(c, 0, &x), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Graphdims_get(c, &x, &y), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Dist_graph_neighbors_count(c, &x, &y, buf), MPI_ERR_TOPOLOGY);
    /* the neighbourhood collectives' arguments */
    CHECK_EQ(MPI_Neighbor_alltoall(buf, -1, MPI_INT, buf, 1, MPI_INT, c), MPI_ERR_COUNT);
    CHECK_EQ(MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, buf, 1, MPI_INT, c), MPI_ERR_ARG);
    CHECK_EQ(MPI_Neighbor_allgather(buf, 1, MPI_DATATYPE_NULL, buf, 1, MPI_INT, c), MPI_ERR_TYPE);
    CHECK_EQ(MPI_Ineighbor_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, c, NULL), MPI_ERR_ARG);
    if (np > 1) { /* a neighbour: the buffer and the arrays are checked */
        CHECK_EQ(MPI_Neighbor_alltoall(NULL, 1, MPI_INT, buf, 1, MPI_INT, c), MPI_ERR_BUFFER);
        CHECK_EQ(MPI_Neighbor_alltoallv(buf, NULL, NULL, MPI_INT, buf, NULL, NULL, MPI_INT, c), MPI_ERR_ARG);
        CHECK_EQ(MPI_Neighbor_alltoallw(buf, NULL, NULL, NULL, buf, NULL, NULL, NULL, c), MPI_ERR_ARG);
    }
    OK(MPI_Comm_free(&c));

    /* truncation: each of the two neighbours of a ring sends 2 ints into 1 */
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d1, &p1, 0, &c));
    int s2[4] = {1, 2, 3, 4}, r1[2] = {0, 0};
    CHECK_EQ(MPI_Neighbor_alltoall(s2, 2, MPI_INT, r1, 1, MPI_INT, c), MPI_ERR_TRUNCATE);
    CHECK_EQ(MPI_Ineighbor_alltoall(s2, 2, MPI_INT, r1, 1, MPI_INT, c, &rq), MPI_SUCCESS);
    MPI_Status st;
    CHECK_EQ(MPI_Wait(&rq, &st), MPI_ERR_TRUNCATE);
    /* the next one is not disturbed */
    int l = (me + np - 1) % np, rr = (me + 1) % np;
    OK(MPI_Neighbor_alltoall(s2, 2, MPI_INT, buf, 2, MPI_INT, c));
    /* block 0 went to the left neighbour, which receives it in its block 1,
     * and the other way round (so also when both are this process) */
    CHECK(buf[0] == 3 && buf[1] == 4 && buf[2] == 1 && buf[3] == 2);
    /* a nonblocking neighbourhood collective cannot be freed or cancelled */
    OK(MPI_Ineighbor_allgather(&me, 1, MPI_INT, buf, 1, MPI_INT, c, &rq));
    CHECK_EQ(MPI_Request_free(&rq), MPI_ERR_REQUEST);
    CHECK_EQ(MPI_Cancel(&rq), MPI_ERR_REQUEST);
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_EQ(buf[0], l);
    CHECK_EQ(buf[1], rr);
    /* with point-to-point requests in Waitany, and outliving its
     * communicator's handle */
    MPI_Request mix[2];
    int self = -1, sv = 1234 + me, which;
    buf[0] = buf[1] = SENT;
    OK(MPI_Irecv(&self, 1, MPI_INT, me, 5, MPI_COMM_WORLD, &mix[0]));
    OK(MPI_Ineighbor_allgather(&sv, 1, MPI_INT, buf, 1, MPI_INT, c, &mix[1]));
    OK(MPI_Comm_free(&c));
    OK(MPI_Send(&sv, 1, MPI_INT, me, 5, MPI_COMM_WORLD));
    OK(MPI_Waitany(2, mix, &which, MPI_STATUS_IGNORE));
    OK(MPI_Waitany(2, mix, &which, MPI_STATUS_IGNORE));
    CHECK(mix[0] == MPI_REQUEST_NULL && mix[1] == MPI_REQUEST_NULL);
    CHECK_EQ(self, 1234 + me);
    CHECK_EQ(buf[0], 1234 + l);
    CHECK_EQ(buf[1], 1234 + rr);

    /* graphs */
    int idx[64], edg[64];
    for (int i = 0; i < np; i++) {
        idx[i] = i + 1;
        edg[i] = (i + 1) % np;
    }
    CHECK_EQ(MPI_Graph_create(MPI_COMM_WORLD, np + 1, idx, edg, 0, &c), MPI_ERR_ARG);
    CHECK_EQ(MPI_Graph_create(MPI_COMM_WORLD, -1, idx, edg, 0, &c), MPI_ERR_ARG);
    edg[0] = np;
    CHECK_EQ(MPI_Graph_create(MPI_COMM_WORLD, np, idx, edg, 0, &c), MPI_ERR_RANK);
    CHECK_EQ(MPI_Graph_map(MPI_COMM_WORLD, np, idx, edg, &x), MPI_ERR_RANK);
    edg[0] = 1 % np;
    idx[0] = 2;
    idx[1] = np > 1 ? 1 : idx[1];
    if (np > 1)
        CHECK_EQ(MPI_Graph_create(MPI_COMM_WORLD, np, idx, edg, 0, &c), MPI_ERR_ARG);
    idx[0] = 1;
    idx[1] = 2;
    OK(MPI_Graph_create(MPI_COMM_WORLD, np, idx, edg, 0, &c));
    CHECK_EQ(MPI_Graph_neighbors_count(c, np, &x), MPI_ERR_RANK);
    CHECK_EQ(MPI_Graph_neighbors(c, -1, 1, buf), MPI_ERR_RANK);
    CHECK_EQ(MPI_Graph_get(c, -1, 1, buf, buf), MPI_ERR_ARG);
    CHECK_EQ(MPI_Cart_get(c, 1, buf, buf, buf), MPI_ERR_TOPOLOGY);
    CHECK_EQ(MPI_Dist_graph_neighbors(c, 1, buf, MPI_UNWEIGHTED, 1, buf, MPI_UNWEIGHTED), MPI_ERR_TOPOLOGY);
    OK(MPI_Comm_free(&c));

    /* distributed graphs */
    int one = 1, w1 = 1, wneg = -1;
    CHECK_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &np, &w1, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL,
                                            0, &c),
             MPI_ERR_RANK);
    CHECK_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &zero, &wneg, 0, NULL, MPI_WEIGHTS_EMPTY,
                                            MPI_INFO_NULL, 0, &c),
             MPI_ERR_ARG);
    CHECK_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &zero, MPI_WEIGHTS_EMPTY, 0, NULL, MPI_WEIGHTS_EMPTY,
                                            MPI_INFO_NULL, 0, &c),
             MPI_ERR_ARG);
    CHECK_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &zero, MPI_UNWEIGHTED, 1, &zero, &w1, MPI_INFO_NULL,
                                            0, &c),
             MPI_ERR_ARG);
    CHECK_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED,
                                            MPI_INFO_NULL, 0, &c),
             MPI_ERR_ARG);
    CHECK_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &zero, &one, &np, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c),
             MPI_ERR_RANK);
    CHECK_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &np, &one, &zero, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c),
             MPI_ERR_RANK);
    CHECK_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &zero, &neg, &zero, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c),
             MPI_ERR_ARG);
    CHECK_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &zero, &one, &zero, &wneg, MPI_INFO_NULL, 0, &c), MPI_ERR_ARG);
    /* weights from some, MPI_UNWEIGHTED from others: every process is told */
    CHECK_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, &one, &me, me == 0 ? &w1 : MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &c),
             np > 1 ? MPI_ERR_ARG : MPI_SUCCESS);
    if (np == 1)
        OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    me = mt_rank;
    np = mt_size;
    CHECK(np <= 64);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Type_vector(C, 1, 2, MPI_INT, &vec));
    MPI_Datatype tmp = vec;
    OK(MPI_Type_create_resized(tmp, 0, (MPI_Aint)(2 * C * sizeof(int)), &vec));
    OK(MPI_Type_free(&tmp));
    OK(MPI_Type_commit(&vec));

    t_dims();

    int dims[4], per[4];
    /* 1-D over everyone, periodic and not */
    dims[0] = np;
    per[0] = 1;
    t_cart(1, dims, per);
    per[0] = 0;
    t_cart(1, dims, per);
    /* 2-D from Dims_create, open x periodic */
    dims[0] = dims[1] = 0;
    OK(MPI_Dims_create(np, 2, dims));
    per[0] = 0, per[1] = 1;
    t_cart(2, dims, per);
    /* 3-D with periodic dimensions of size 1 around a line of everyone:
     * both neighbours there are the process itself */
    dims[0] = 1, dims[1] = np, dims[2] = 1;
    per[0] = 1, per[1] = 0, per[2] = 1;
    t_cart(3, dims, per);
    /* 4-D from Dims_create, alternating */
    dims[0] = dims[1] = dims[2] = dims[3] = 0;
    OK(MPI_Dims_create(np, 4, dims));
    per[0] = 1, per[1] = 0, per[2] = 1, per[3] = 0;
    t_cart(4, dims, per);
    /* a grid smaller than the job: the rest get MPI_COMM_NULL */
    if (np > 2) {
        dims[0] = 2, dims[1] = (np - 1) / 2;
        per[0] = per[1] = 1;
        t_cart(2, dims, per);
    }
    /* ndims 0: one process */
    t_cart(0, dims, per);
    t_cart_tables();

    t_graph();
    t_dist_graph();
    t_errors();

    OK(MPI_Type_free(&vec));
    return mt_finish("mpi_topo");
}
