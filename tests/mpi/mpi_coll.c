/* MPI collectives against references computed locally: every collective
 * for counts 0, 1, odd and large, every root, MPI_IN_PLACE, on
 * MPI_COMM_WORLD and on communicators from Comm_split (reversed and
 * strided, so non-contiguous in the world); every predefined op on a type
 * of each class, MAXLOC/MINLOC on every pair type (ties included), user
 * ops (commutative; non-commutative 2x2 matrix product and permutation
 * composition, in rank order; one on a sparse vector type), derived types
 * (vector) in bcast/gather/scatter/allgather/alltoall(v/w) and reductions,
 * Reduce_local, Op_commutative. */
#include <complex.h>
#include <stdint.h>

#include "mt.h"

static int me, np;
static const int counts[] = {0, 1, 7, 1001, 40003};
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))

static int val(int r, int i)
{
    return (r + 1) * 1009 + i * 7 + (i % 13) * (r + 3);
}

static int *ialloc(size_t n)
{
    int *p = malloc((n ? n : 1) * sizeof(int));
    CHECK(p);
    return p;
}

/* ------------------------------------------------------------ movement */

static void t_bcast(MPI_Comm comm)
{
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = counts[ci];
        int *b = ialloc((size_t)n);
        for (int root = 0; root < np; root++) {
            for (int i = 0; i < n; i++)
                b[i] = me == root ? val(root, i) : -1;
            OK(MPI_Bcast(b, n, MPI_INT, root, comm));
            for (int i = 0; i < n; i++)
                CHECK_EQ(b[i], val(root, i));
        }
        free(b);
    }
    /* a vector type: every other int, the gaps untouched */
    MPI_Datatype vec;
    OK(MPI_Type_vector(5, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int b[3 * 10];
    for (int root = 0; root < np; root++) {
        for (int i = 0; i < 30; i++)
            b[i] = me == root ? val(root, i) : -7;
        OK(MPI_Bcast(b, 3, vec, root, comm));
        /* vec's extent is 9 ints: elements at 0, 9, 18 */
        for (int i = 0; i < 30; i++) {
            int k = i % 9, e = i / 9;
            int data = e < 3 && k % 2 == 0 && i < 27 && k <= 8;
            CHECK_EQ(b[i], data || me == root ? val(root, i) : -7);
        }
    }
    OK(MPI_Type_free(&vec));
}

static void t_gather_scatter(MPI_Comm comm)
{
    for (int ci = 0; ci < NCOUNTS - 1; ci++) {
        int n = counts[ci];
        size_t all = (size_t)n * (size_t)np;
        int *s = ialloc((size_t)n), *r = ialloc(all);
        for (int root = 0; root < np; root++) {
            /* gather */
            for (int i = 0; i < n; i++)
                s[i] = val(me, i);
            for (size_t i = 0; i < all; i++)
                r[i] = -1;
            OK(MPI_Gather(s, n, MPI_INT, me == root ? r : NULL, n, MPI_INT, root, comm));
            if (me == root)
                for (int q = 0; q < np; q++)
                    for (int i = 0; i < n; i++)
                        CHECK_EQ(r[(size_t)q * n + i], val(q, i));
            /* gather in place */
            if (me == root) {
                for (size_t i = 0; i < all; i++)
                    r[i] = (int)(i / (n ? n : 1)) == root ? val(root, (int)(i % n)) : -1;
                OK(MPI_Gather(MPI_IN_PLACE, n, MPI_INT, r, n, MPI_INT, root, comm));
                for (int q = 0; q < np; q++)
                    for (int i = 0; i < n; i++)
                        CHECK_EQ(r[(size_t)q * n + i], val(q, i));
            } else {
                OK(MPI_Gather(s, n, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, comm));
            }
            /* scatter */
            if (me == root)
                for (int q = 0; q < np; q++)
                    for (int i = 0; i < n; i++)
                        r[(size_t)q * n + i] = val(q, i) * 3;
            for (int i = 0; i < n; i++)
                s[i] = -1;
            OK(MPI_Scatter(r, n, MPI_INT, s, n, MPI_INT, root, comm));
            for (int i = 0; i < n; i++)
                CHECK_EQ(s[i], val(me, i) * 3);
            /* scatter in place at the root: its block stays */
            if (me == root) {
                r[(size_t)root * n] = n ? -5 : 0;
                OK(MPI_Scatter(r, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, root, comm));
                if (n)
                    CHECK_EQ(r[(size_t)root * n], -5);
            } else {
                for (int i = 0; i < n; i++)
                    s[i] = -1;
                OK(MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, s, n, MPI_INT, root, comm));
                for (int i = 0; i < n; i++)
                    CHECK_EQ(s[i], val(me, i) * 3);
            }
        }
        free(s);
        free(r);
    }
}

/* gatherv / scatterv / allgatherv: rank q has q % 3 + n elements, blocks
 * placed in reverse order with a gap of 2 */
static void t_vforms(MPI_Comm comm)
{
    for (int ci = 0; ci < NCOUNTS - 1; ci++) {
        int n = counts[ci];
        int *rc = ialloc((size_t)np), *dp = ialloc((size_t)np);
        int tot = 0;
        for (int q = np - 1; q >= 0; q--) {
            rc[q] = q % 3 + n;
            dp[q] = tot;
            tot += rc[q] + 2;
        }
        int *s = ialloc((size_t)rc[me]), *r = ialloc((size_t)tot);
        for (int i = 0; i < rc[me]; i++)
            s[i] = val(me, i);
        for (int root = 0; root < np; root++) {
            for (int i = 0; i < tot; i++)
                r[i] = -1;
            OK(MPI_Gatherv(s, rc[me], MPI_INT, r, rc, dp, MPI_INT, root, comm));
            if (me == root)
                for (int q = 0; q < np; q++) {
                    for (int i = 0; i < rc[q]; i++)
                        CHECK_EQ(r[dp[q] + i], val(q, i));
                    CHECK_EQ(r[dp[q] + rc[q]], -1);
                }
            for (int i = 0; i < rc[me]; i++)
                s[i] = -1;
            if (me == root)
                for (int q = 0; q < np; q++)
                    for (int i = 0; i < rc[q]; i++)
                        r[dp[q] + i] = val(q, i) + 11;
            OK(MPI_Scatterv(r, rc, dp, MPI_INT, s, rc[me], MPI_INT, root, comm));
            for (int i = 0; i < rc[me]; i++)
                CHECK_EQ(s[i], val(me, i) + 11);
            for (int i = 0; i < rc[me]; i++)
                s[i] = val(me, i);
            /* gatherv in place */
            if (me == root) {
                for (int i = 0; i < tot; i++)
                    r[i] = -1;
                for (int i = 0; i < rc[me]; i++)
                    r[dp[me] + i] = val(me, i);
                OK(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, r, rc, dp, MPI_INT, root, comm));
                for (int q = 0; q < np; q++)
                    for (int i = 0; i < rc[q]; i++)
                        CHECK_EQ(r[dp[q] + i], val(q, i));
            } else {
                OK(MPI_Gatherv(s, rc[me], MPI_INT, NULL, NULL, NULL, MPI_INT, root, comm));
            }
        }
        /* allgatherv, and in place */
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < tot; i++)
                r[i] = -1;
            if (ip)
                for (int i = 0; i < rc[me]; i++)
                    r[dp[me] + i] = val(me, i);
            OK(MPI_Allgatherv(ip ? MPI_IN_PLACE : s, rc[me], MPI_INT, r, rc, dp, MPI_INT, comm));
            for (int q = 0; q < np; q++)
                for (int i = 0; i < rc[q]; i++)
                    CHECK_EQ(r[dp[q] + i], val(q, i));
        }
        free(s);
        free(r);
        free(rc);
        free(dp);
    }
}

static void t_allgather_alltoall(MPI_Comm comm)
{
    for (int ci = 0; ci < NCOUNTS - 1; ci++) {
        int n = counts[ci];
        size_t all = (size_t)n * (size_t)np;
        int *s = ialloc(all), *r = ialloc(all);
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < n; i++)
                s[i] = val(me, i);
            for (size_t i = 0; i < all; i++)
                r[i] = ip && (int)(i / (n ? n : 1)) == me ? val(me, (int)(i % n)) : -1;
            OK(MPI_Allgather(ip ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT, comm));
            for (int q = 0; q < np; q++)
                for (int i = 0; i < n; i++)
                    CHECK_EQ(r[(size_t)q * n + i], val(q, i));
            /* alltoall: block q of rank me carries (me, q) */
            for (int q = 0; q < np; q++)
                for (int i = 0; i < n; i++)
                    s[(size_t)q * n + i] = val(me * np + q, i);
            if (ip)
                memcpy(r, s, all * sizeof(int));
            OK(MPI_Alltoall(ip ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT, comm));
            for (int q = 0; q < np; q++)
                for (int i = 0; i < n; i++)
                    CHECK_EQ(r[(size_t)q * n + i], val(q * np + me, i));
        }
        /* alltoallv: rank me sends (me + q) % 3 + n to q, reversed blocks */
        int *sc = ialloc((size_t)np), *sd = ialloc((size_t)np), *rcn = ialloc((size_t)np), *rd = ialloc((size_t)np);
        int st = 0, rt = 0;
        for (int q = np - 1; q >= 0; q--) {
            sc[q] = (me + q) % 3 + n;
            sd[q] = st;
            st += sc[q];
            rcn[q] = (q + me) % 3 + n;
            rd[q] = rt;
            rt += rcn[q] + 1;
        }
        int *vs = ialloc((size_t)st), *vr = ialloc((size_t)rt);
        for (int q = 0; q < np; q++)
            for (int i = 0; i < sc[q]; i++)
                vs[sd[q] + i] = val(me * np + q, i);
        for (int i = 0; i < rt; i++)
            vr[i] = -1;
        OK(MPI_Alltoallv(vs, sc, sd, MPI_INT, vr, rcn, rd, MPI_INT, comm));
        for (int q = 0; q < np; q++) {
            for (int i = 0; i < rcn[q]; i++)
                CHECK_EQ(vr[rd[q] + i], val(q * np + me, i));
            CHECK_EQ(vr[rd[q] + rcn[q]], -1);
        }
        /* alltoallv in place (symmetric counts) */
        for (int q = 0; q < np; q++) {
            rcn[q] = n + (q + me) % 2;
            rd[q] = q * (n + 2);
        }
        int *big = ialloc((size_t)np * (size_t)(n + 2));
        for (int q = 0; q < np; q++)
            for (int i = 0; i < rcn[q]; i++)
                big[rd[q] + i] = val(me * np + q, i);
        OK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, big, rcn, rd, MPI_INT, comm));
        for (int q = 0; q < np; q++)
            for (int i = 0; i < rcn[q]; i++)
                CHECK_EQ(big[rd[q] + i], val(q * np + me, i));
        free(big);
        free(vs);
        free(vr);
        free(sc);
        free(sd);
        free(rcn);
        free(rd);
        free(s);
        free(r);
    }
}

/* derived types on one side: a vector of n ints (stride 2) against n
 * contiguous ints on the other; alltoallw with a type per peer */
static void t_derived_movement(MPI_Comm comm)
{
    int n = 5;
    MPI_Datatype vec;
    OK(MPI_Type_vector(n, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(vec, &lb, &ext));
    int stride = (int)(ext / sizeof(int)); /* 2n - 1 */
    int *sp = ialloc((size_t)np * (size_t)stride + 1), *r = ialloc((size_t)np * (size_t)n);
    for (int root = 0; root < np; root++) {
        /* gather: sent as a vector, received contiguous */
        for (int i = 0; i < stride; i++)
            sp[i] = i % 2 ? -9 : val(me, i / 2);
        OK(MPI_Gather(sp, 1, vec, r, n, MPI_INT, root, comm));
        if (me == root)
            for (int q = 0; q < np; q++)
                for (int i = 0; i < n; i++)
                    CHECK_EQ(r[q * n + i], val(q, i));
        /* scatter: sent contiguous, received as vectors */
        if (me == root)
            for (int q = 0; q < np; q++)
                for (int i = 0; i < n; i++)
                    r[q * n + i] = val(q, i) - 4;
        for (int i = 0; i < stride; i++)
            sp[i] = -9;
        OK(MPI_Scatter(r, n, MPI_INT, sp, 1, vec, root, comm));
        for (int i = 0; i < stride; i++)
            CHECK_EQ(sp[i], i % 2 ? -9 : val(me, i / 2) - 4);
    }
    /* allgather into vectors (extent 2n-1 ints: they interleave?  no:
     * element q starts at q * (2n - 1)) */
    int *big = ialloc((size_t)np * (size_t)stride + 1);
    for (int i = 0; i < np * stride; i++)
        big[i] = -9;
    int *mine = ialloc((size_t)n);
    for (int i = 0; i < n; i++)
        mine[i] = val(me, i);
    OK(MPI_Allgather(mine, n, MPI_INT, big, 1, vec, comm));
    for (int q = 0; q < np; q++)
        for (int i = 0; i < stride; i++)
            CHECK_EQ(big[q * stride + i], i % 2 ? -9 : val(q, i / 2));
    /* alltoall with vectors both ways */
    for (int q = 0; q < np; q++)
        for (int i = 0; i < stride; i++)
            sp[q * stride + i] = i % 2 ? -3 : val(me * np + q, i / 2);
    for (int i = 0; i < np * stride; i++)
        big[i] = -9;
    OK(MPI_Alltoall(sp, 1, vec, big, 1, vec, comm));
    for (int q = 0; q < np; q++)
        for (int i = 0; i < stride; i++)
            CHECK_EQ(big[q * stride + i], i % 2 ? -9 : val(q * np + me, i / 2));
    /* alltoallw: to even peers n ints as a vector, to odd ones n contiguous
     * ints; received contiguous, at byte displacements in reverse order */
    int *scn = ialloc((size_t)np), *sdb = ialloc((size_t)np), *rcn = ialloc((size_t)np), *rdb = ialloc((size_t)np);
    MPI_Datatype *stv = malloc((size_t)np * sizeof(MPI_Datatype)), *rtv = malloc((size_t)np * sizeof(MPI_Datatype));
    CHECK(stv && rtv);
    int *ws = ialloc((size_t)np * (size_t)stride);
    for (int q = 0; q < np; q++) {
        int odd = q % 2;
        stv[q] = odd ? MPI_INT : vec;
        scn[q] = odd ? n : 1;
        sdb[q] = q * stride * (int)sizeof(int);
        for (int i = 0; i < stride; i++)
            ws[q * stride + i] = odd ? (i < n ? val(me * np + q, i) : -3) : (i % 2 ? -3 : val(me * np + q, i / 2));
        rtv[q] = MPI_INT;
        rcn[q] = n;
        rdb[q] = (np - 1 - q) * n * (int)sizeof(int);
    }
    OK(MPI_Alltoallw(ws, scn, sdb, stv, r, rcn, rdb, rtv, comm));
    for (int q = 0; q < np; q++)
        for (int i = 0; i < n; i++)
            CHECK_EQ(r[(np - 1 - q) * n + i], val(q * np + me, i));
    free(scn);
    free(sdb);
    free(rcn);
    free(rdb);
    free(stv);
    free(rtv);
    free(ws);
    free(mine);
    free(big);
    free(sp);
    free(r);
    OK(MPI_Type_free(&vec));
}

/* ----------------------------------------------------------- reductions */

static void t_reduce_sum(MPI_Comm comm)
{
    for (int ci = 0; ci < NCOUNTS; ci++) {
        int n = counts[ci];
        int *s = ialloc((size_t)n), *r = ialloc((size_t)n);
        long long *ref = malloc((n ? n : 1) * sizeof(long long));
        CHECK(ref);
        for (int i = 0; i < n; i++) {
            s[i] = val(me, i);
            ref[i] = 0;
            for (int q = 0; q < np; q++)
                ref[i] += val(q, i);
        }
        for (int root = 0; root < np; root += (n > 1000 ? 2 : 1)) {
            for (int i = 0; i < n; i++)
                r[i] = -1;
            OK(MPI_Reduce(s, r, n, MPI_INT, MPI_SUM, root, comm));
            if (me == root)
                for (int i = 0; i < n; i++)
                    CHECK_EQ(r[i], ref[i]);
            if (me == root) {
                memcpy(r, s, (size_t)n * sizeof(int));
                OK(MPI_Reduce(MPI_IN_PLACE, r, n, MPI_INT, MPI_SUM, root, comm));
                for (int i = 0; i < n; i++)
                    CHECK_EQ(r[i], ref[i]);
            } else {
                OK(MPI_Reduce(s, NULL, n, MPI_INT, MPI_SUM, root, comm));
            }
        }
        for (int ip = 0; ip < 2; ip++) {
            if (ip)
                memcpy(r, s, (size_t)n * sizeof(int));
            else
                for (int i = 0; i < n; i++)
                    r[i] = -1;
            OK(MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, n, MPI_INT, MPI_SUM, comm));
            for (int i = 0; i < n; i++)
                CHECK_EQ(r[i], ref[i]);
        }
        /* scan / exscan (and in place) */
        for (int ip = 0; ip < 2; ip++) {
            for (int ex = 0; ex < 2; ex++) {
                for (int i = 0; i < n; i++)
                    r[i] = ip ? s[i] : -1;
                if (ex)
                    OK(MPI_Exscan(ip ? MPI_IN_PLACE : s, r, n, MPI_INT, MPI_SUM, comm));
                else
                    OK(MPI_Scan(ip ? MPI_IN_PLACE : s, r, n, MPI_INT, MPI_SUM, comm));
                if (ex && me == 0)
                    continue;
                for (int i = 0; i < n; i++) {
                    long long x = 0;
                    for (int q = 0; q <= me - ex; q++)
                        x += val(q, i);
                    CHECK_EQ(r[i], x);
                }
            }
        }
        free(s);
        free(r);
        free(ref);
    }
}

static void t_reduce_scatter(MPI_Comm comm)
{
    for (int ci = 0; ci < NCOUNTS - 1; ci++) {
        int n = counts[ci];
        int *rc = ialloc((size_t)np);
        int tot = 0, off = 0;
        for (int q = 0; q < np; q++) {
            rc[q] = n + q % 2;
            if (q < me)
                off += rc[q];
            tot += rc[q];
        }
        int *s = ialloc((size_t)tot), *r = ialloc((size_t)tot);
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < tot; i++)
                s[i] = val(me, i);
            if (ip)
                memcpy(r, s, (size_t)tot * sizeof(int));
            OK(MPI_Reduce_scatter(ip ? MPI_IN_PLACE : s, r, rc, MPI_INT, MPI_SUM, comm));
            for (int i = 0; i < rc[me]; i++) {
                long long x = 0;
                for (int q = 0; q < np; q++)
                    x += val(q, off + i);
                CHECK_EQ(r[i], x);
            }
            if (ip)
                memcpy(r, s, (size_t)n * (size_t)np * sizeof(int));
            OK(MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : s, r, n, MPI_INT, MPI_MAX, comm));
            for (int i = 0; i < n; i++) {
                int x = val(0, me * n + i);
                for (int q = 1; q < np; q++)
                    x = val(q, me * n + i) > x ? val(q, me * n + i) : x;
                CHECK_EQ(r[i], x);
            }
        }
        free(s);
        free(r);
        free(rc);
    }
}

/* every predefined op on a type of each class */
#define OPS_INT(T, MT)                                                                          \
    do {                                                                                        \
        MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,       \
                        MPI_BAND, MPI_BOR, MPI_BXOR};                                           \
        for (int o = 0; o < 10; o++) {                                                          \
            T s[6], r[6], x[6];                                                                 \
            for (int i = 0; i < 6; i++)                                                         \
                s[i] = (T)((me * 5 + i * 3) % 4 + (i == 5 ? 0 : 1));                            \
            for (int i = 0; i < 6; i++) {                                                       \
                for (int q = 0; q < np; q++) {                                                  \
                    T v = (T)((q * 5 + i * 3) % 4 + (i == 5 ? 0 : 1));                          \
                    if (q == 0) { x[i] = v; continue; }                                         \
                    switch (o) {                                                                \
                    case 0: x[i] = (T)(x[i] + v); break;                                        \
                    case 1: x[i] = (T)(x[i] * v); break;                                        \
                    case 2: x[i] = v > x[i] ? v : x[i]; break;                                  \
                    case 3: x[i] = v < x[i] ? v : x[i]; break;                                  \
                    case 4: x[i] = (T)(x[i] && v); break;                                       \
                    case 5: x[i] = (T)(x[i] || v); break;                                       \
                    case 6: x[i] = (T)(!x[i] != !v); break;                                     \
                    case 7: x[i] = (T)(x[i] & v); break;                                        \
                    case 8: x[i] = (T)(x[i] | v); break;                                        \
                    default: x[i] = (T)(x[i] ^ v);                                              \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
            OK(MPI_Allreduce(s, r, 6, MT, ops[o], comm));                                       \
            for (int i = 0; i < 6; i++)                                                         \
                CHECK_EQ(r[i], x[i]);                                                           \
        }                                                                                       \
    } while (0)

#define OPS_FLOAT(T, MT)                                                                        \
    do {                                                                                        \
        MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};                                   \
        for (int o = 0; o < 4; o++) {                                                           \
            T s[5], r[5], x[5];                                                                 \
            for (int i = 0; i < 5; i++)                                                         \
                s[i] = (T)((me * 3 + i) % 5) * (T)0.5 - 1;                                      \
            for (int i = 0; i < 5; i++)                                                         \
                for (int q = 0; q < np; q++) {                                                  \
                    T v = (T)((q * 3 + i) % 5) * (T)0.5 - 1;                                    \
                    x[i] = q == 0 ? v : o == 0 ? x[i] + v : o == 1 ? x[i] * v : o == 2 ? (v > x[i] ? v : x[i]) \
                                                                                 : (v < x[i] ? v : x[i]); \
                }                                                                               \
            OK(MPI_Allreduce(s, r, 5, MT, ops[o], comm));                                       \
            for (int i = 0; i < 5; i++) /* halves: exact in binary */                           \
                CHECK(r[i] == x[i]);                                                            \
        }                                                                                       \
    } while (0)

static void t_ops(MPI_Comm comm)
{
    OPS_INT(int, MPI_INT);
    OPS_INT(unsigned char, MPI_UNSIGNED_CHAR);
    OPS_INT(short, MPI_SHORT);
    OPS_INT(long long, MPI_LONG_LONG);
    OPS_INT(uint64_t, MPI_UINT64_T);
    OPS_INT(int8_t, MPI_INT8_T);
    OPS_FLOAT(float, MPI_FLOAT);
    OPS_FLOAT(double, MPI_DOUBLE);
    OPS_FLOAT(long double, MPI_LONG_DOUBLE);
    /* complex sum and product */
    double _Complex zs[2] = {me + 1.0 * I, 1.0 - me * I}, zr[2], zx[2] = {0, 1};
    for (int q = 0; q < np; q++) {
        zx[0] += q + 1.0 * I;
        zx[1] *= 1.0 - q * I;
    }
    OK(MPI_Allreduce(zs, zr, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm));
    CHECK(zr[0] == zx[0]);
    OK(MPI_Allreduce(zs + 1, zr + 1, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, comm));
    CHECK(cabs(zr[1] - zx[1]) < 1e-9 * (1 + cabs(zx[1])));
    /* logical ops on C_BOOL: true everywhere / somewhere */
    _Bool b[2] = {1, me == np - 1}, br[2];
    OK(MPI_Allreduce(b, br, 2, MPI_C_BOOL, MPI_LAND, comm));
    CHECK(br[0] == 1 && br[1] == (np == 1));
    OK(MPI_Allreduce(b, br, 2, MPI_C_BOOL, MPI_LOR, comm));
    CHECK(br[0] == 1 && br[1] == 1);
    /* BOR on MPI_BYTE */
    unsigned char by = (unsigned char)(1u << (me % 8)), byr;
    OK(MPI_Allreduce(&by, &byr, 1, MPI_BYTE, MPI_BOR, comm));
    CHECK_EQ(byr, np >= 8 ? 0xff : (1u << np) - 1);
}

/* MAXLOC / MINLOC: value (q * 7) % 3 (ties) with index 10 + q; the winner
 * of a tie is the smallest index */
#define LOC(S, MT)                                                                                 \
    do {                                                                                           \
        S s[3], r[3];                                                                              \
        for (int i = 0; i < 3; i++) {                                                              \
            s[i].v = (__typeof__(s[i].v))((me * 7 + i) % 3);                                       \
            s[i].i = 10 + me;                                                                      \
        }                                                                                          \
        for (int mx = 0; mx < 2; mx++) {                                                           \
            OK(MPI_Allreduce(s, r, 3, MT, mx ? MPI_MAXLOC : MPI_MINLOC, comm));                    \
            for (int i = 0; i < 3; i++) {                                                          \
                int bv = (0 * 7 + i) % 3, bi = 10;                                                 \
                for (int q = 1; q < np; q++) {                                                     \
                    int v = (q * 7 + i) % 3;                                                       \
                    if (mx ? v > bv : v < bv) {                                                    \
                        bv = v;                                                                    \
                        bi = 10 + q;                                                               \
                    }                                                                              \
                }                                                                                  \
                CHECK(r[i].v == bv);                                                               \
                CHECK_EQ(r[i].i, bi);                                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

struct fi { float v; int i; };
struct di { double v; int i; };
struct li { long v; int i; };
struct ii { int v; int i; };
struct si { short v; int i; };
struct ldi { long double v; int i; };
struct ff { float v, i; };

static void t_loc(MPI_Comm comm)
{
    LOC(struct fi, MPI_FLOAT_INT);
    LOC(struct di, MPI_DOUBLE_INT);
    LOC(struct li, MPI_LONG_INT);
    LOC(struct ii, MPI_2INT);
    LOC(struct si, MPI_SHORT_INT);
    LOC(struct ldi, MPI_LONG_DOUBLE_INT);
    LOC(struct ff, MPI_2REAL);
    /* a derived type of pairs (packed, spread to structs and back):
     * contiguous 3 x MPI_DOUBLE_INT, count 1 */
    MPI_Datatype c3;
    OK(MPI_Type_contiguous(3, MPI_DOUBLE_INT, &c3));
    OK(MPI_Type_commit(&c3));
    struct di s[3], r[3];
    for (int i = 0; i < 3; i++) {
        s[i].v = (me * 7 + i) % 3;
        s[i].i = 10 + me;
    }
    OK(MPI_Reduce(s, r, 1, c3, MPI_MAXLOC, 0, comm));
    if (me == 0)
        for (int i = 0; i < 3; i++) {
            int bv = i % 3, bi = 10;
            for (int q = 1; q < np; q++)
                if ((q * 7 + i) % 3 > bv) {
                    bv = (q * 7 + i) % 3;
                    bi = 10 + q;
                }
            CHECK(r[i].v == bv);
            CHECK_EQ(r[i].i, bi);
        }
    OK(MPI_Type_free(&c3));
}

/* ------------------------------------------------------------- user ops */

static MPI_Datatype mat_t, perm_t, svec_t;

/* 2x2 matrices of long long: inout = in x inout */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == mat_t);
    long long *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        long long c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                          a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof(c));
    }
}

static void mat_of(int q, int i, long long *m)
{
    m[0] = q + 1 + i % 3;
    m[1] = 1;
    m[2] = (q + i) % 2;
    m[3] = 2 - q % 2;
}

static void mat_mul_ref(const long long *a, long long *b)
{
    long long c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                      a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof(c));
}

/* permutations of 3 (12 bytes: no native type of that size): inout = in o inout */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == perm_t);
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 3, b += 3) {
        int c[3] = {a[b[0]], a[b[1]], a[b[2]]};
        memcpy(b, c, sizeof(c));
    }
}

static void perm_of(int q, int i, int *p)
{
    static const int perms[6][3] = {{0, 1, 2}, {1, 0, 2}, {0, 2, 1}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    memcpy(p, perms[(q * 5 + i) % 6], 3 * sizeof(int));
}

/* element-wise sum on a sparse vector type (2 ints, stride 2): the gap is
 * never read nor written */
static void svec_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == svec_t);
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 3, b += 3) {
        b[0] += a[0];
        b[2] += a[2];
    }
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == MPI_INT);
    for (int k = 0; k < *len; k++)
        ((int *)inout)[k] += ((int *)in)[k];
}

static void t_user_ops(MPI_Comm comm)
{
    MPI_Op mop, pop, sop, cop;
    OK(MPI_Op_create(matmul, 0, &mop));
    OK(MPI_Op_create(compose, 0, &pop));
    OK(MPI_Op_create(svec_sum, 1, &sop));
    OK(MPI_Op_create(isum, 1, &cop));
    int cm;
    OK(MPI_Op_commutative(mop, &cm));
    CHECK_EQ(cm, 0);
    OK(MPI_Op_commutative(cop, &cm));
    CHECK_EQ(cm, 1);
    OK(MPI_Op_commutative(MPI_SUM, &cm));
    CHECK_EQ(cm, 1);
    for (int ci = 0; ci < NCOUNTS - 1; ci++) {
        int n = counts[ci] > 1000 ? 3001 : counts[ci];
        long long *ms = malloc(((size_t)n * 4 + 1) * sizeof(long long)),
                  *mr = malloc(((size_t)n * 4 + 1) * sizeof(long long)),
                  *mx = malloc(((size_t)n * 4 + 1) * sizeof(long long));
        int *ps = ialloc((size_t)n * 3), *pr = ialloc((size_t)n * 3), *px = ialloc((size_t)n * 3);
        CHECK(ms && mr && mx);
        for (int i = 0; i < n; i++) {
            mat_of(me, i, ms + 4 * i);
            perm_of(me, i, ps + 3 * i);
            /* reference: M_0 x M_1 x ... x M_{p-1}, built from the right */
            mat_of(np - 1, i, mx + 4 * i);
            perm_of(np - 1, i, px + 3 * i);
            for (int q = np - 2; q >= 0; q--) {
                long long a[4];
                int pa[3], c[3];
                mat_of(q, i, a);
                mat_mul_ref(a, mx + 4 * i);
                perm_of(q, i, pa);
                int *b = px + 3 * i;
                c[0] = pa[b[0]];
                c[1] = pa[b[1]];
                c[2] = pa[b[2]];
                memcpy(b, c, sizeof(c));
            }
        }
        for (int root = 0; root < np; root += (n > 100 ? 3 : 1)) {
            OK(MPI_Reduce(ms, mr, n, mat_t, mop, root, comm));
            if (me == root)
                CHECK(!memcmp(mr, mx, (size_t)n * 4 * sizeof(long long)));
        }
        OK(MPI_Allreduce(ms, mr, n, mat_t, mop, comm));
        CHECK(!memcmp(mr, mx, (size_t)n * 4 * sizeof(long long)));
        OK(MPI_Allreduce(ps, pr, n, perm_t, pop, comm));
        CHECK(!memcmp(pr, px, (size_t)n * 3 * sizeof(int)));
        /* scan with the matrix product: prefix M_0 x ... x M_me */
        OK(MPI_Scan(ms, mr, n, mat_t, mop, comm));
        for (int i = 0; i < n; i++) {
            long long x[4];
            mat_of(me, i, x);
            for (int q = me - 1; q >= 0; q--) {
                long long a[4];
                mat_of(q, i, a);
                mat_mul_ref(a, x);
            }
            CHECK(!memcmp(mr + 4 * i, x, sizeof(x)));
        }
        /* reduce_scatter_block with the permutations (block me of the product) */
        int *pbig = ialloc((size_t)n * 3 * (size_t)np);
        for (int q = 0; q < np; q++)
            memcpy(pbig + (size_t)q * n * 3, ps, (size_t)n * 3 * sizeof(int));
        OK(MPI_Reduce_scatter_block(pbig, pr, n, perm_t, pop, comm));
        CHECK(!memcmp(pr, px, (size_t)n * 3 * sizeof(int)));
        free(pbig);
        /* commutative user op on MPI_INT, in place */
        int *is = ialloc((size_t)n);
        for (int i = 0; i < n; i++)
            is[i] = val(me, i);
        OK(MPI_Allreduce(MPI_IN_PLACE, is, n, MPI_INT, cop, comm));
        for (int i = 0; i < n; i++) {
            int x = 0;
            for (int q = 0; q < np; q++)
                x += val(q, i);
            CHECK_EQ(is[i], x);
        }
        free(is);
        free(ms);
        free(mr);
        free(mx);
        free(ps);
        free(pr);
        free(px);
    }
    /* the sparse vector type with a user op: gaps keep their sentinel */
    int sv[3 * 4], svr[3 * 4];
    for (int i = 0; i < 12; i++) {
        sv[i] = i % 3 == 1 ? -100 - me : val(me, i);
        svr[i] = -55;
    }
    OK(MPI_Allreduce(sv, svr, 4, svec_t, sop, comm));
    for (int i = 0; i < 12; i++) {
        int x = 0;
        for (int q = 0; q < np; q++)
            x += val(q, i);
        CHECK_EQ(svr[i], i % 3 == 1 ? -55 : x);
    }
    OK(MPI_Op_free(&mop));
    OK(MPI_Op_free(&pop));
    OK(MPI_Op_free(&sop));
    OK(MPI_Op_free(&cop));
    CHECK(mop == MPI_OP_NULL);
}

/* a predefined op on a non-contiguous derived type: element-wise */
static void t_derived_reduce(MPI_Comm comm)
{
    MPI_Datatype vd;
    OK(MPI_Type_vector(3, 2, 3, MPI_DOUBLE, &vd)); /* 2 of every 3 doubles */
    OK(MPI_Type_commit(&vd));
    double b[2 * 8 + 1], x;
    for (int i = 0; i < 17; i++)
        b[i] = i < 16 && i % 8 != 2 && i % 8 != 5 ? me + i : -1.5;
    OK(MPI_Allreduce(MPI_IN_PLACE, b, 2, vd, MPI_SUM, comm));
    for (int i = 0; i < 16; i++) {
        /* elements at 0 and 8 doubles (extent 8): blocks {0,1},{3,4},{6,7} */
        int k = i % 8, data = k != 2 && k != 5;
        x = 0;
        for (int q = 0; q < np; q++)
            x += q + i;
        CHECK(b[i] == (data ? x : -1.5));
    }
    OK(MPI_Type_free(&vd));
}

static void t_reduce_local(void)
{
    int a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50};
    OK(MPI_Reduce_local(a, b, 5, MPI_INT, MPI_SUM));
    for (int i = 0; i < 5; i++)
        CHECK_EQ(b[i], 11 * (i + 1));
    long long m1[4] = {1, 2, 3, 4}, m2[4] = {0, 1, 1, 0};
    MPI_Op mop;
    OK(MPI_Op_create(matmul, 0, &mop));
    OK(MPI_Reduce_local(m1, m2, 1, mat_t, mop)); /* m2 = m1 x m2 */
    CHECK(m2[0] == 2 && m2[1] == 1 && m2[2] == 4 && m2[3] == 3);
    OK(MPI_Op_free(&mop));
    struct di p = {2.0, 7}, q = {2.0, 3};
    OK(MPI_Reduce_local(&p, &q, 1, MPI_DOUBLE_INT, MPI_MAXLOC));
    CHECK(q.v == 2.0 && q.i == 3);
}

static void run_all(MPI_Comm comm)
{
    OK(MPI_Comm_rank(comm, &me));
    OK(MPI_Comm_size(comm, &np));
    OK(MPI_Barrier(comm));
    t_bcast(comm);
    t_gather_scatter(comm);
    t_vforms(comm);
    t_allgather_alltoall(comm);
    t_derived_movement(comm);
    t_reduce_sum(comm);
    t_reduce_scatter(comm);
    t_ops(comm);
    t_loc(comm);
    t_user_ops(comm);
    t_derived_reduce(comm);
    OK(MPI_Barrier(comm));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    OK(MPI_Type_contiguous(4, MPI_LONG_LONG, &mat_t));
    OK(MPI_Type_commit(&mat_t));
    OK(MPI_Type_contiguous(3, MPI_INT, &perm_t));
    OK(MPI_Type_commit(&perm_t));
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &svec_t));
    OK(MPI_Type_commit(&svec_t));
    t_reduce_local();
    run_all(MPI_COMM_WORLD);
    /* odd world ranks in reverse order; even ones in order (strided) */
    MPI_Comm sub;
    OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_rank % 2 ? -mt_rank : mt_rank, &sub));
    run_all(sub);
    OK(MPI_Comm_free(&sub));
    /* a scrambled order */
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, (mt_rank * 5 + 3) % (mt_size + 1), &sub));
    run_all(sub);
    OK(MPI_Comm_free(&sub));
    run_all(MPI_COMM_SELF);
    OK(MPI_Type_free(&mat_t));
    OK(MPI_Type_free(&perm_t));
    OK(MPI_Type_free(&svec_t));
    return mt_finish("coll");
}
