/* Datatypes whose description must not grow with their counts, and the
 * datatype calls around them:
 *   - types of 2^30 blocks (vector, hvector, indexed_block, subarray,
 *     darray, resized, and types nested over them) created, committed,
 *     described and freed in under 10 ms (best of 3) and 1 MiB;
 *   - pack/unpack of large and nested layouts against hand loops, and the
 *     layout cursor and strided form the one-sided code walks with;
 *   - darray against hand-computed ownership (block, cyclic(k), none, 1-3
 *     dimensions, C and Fortran order) at the job's process count;
 *   - get_envelope/get_contents rebuilt into the same type, every combiner;
 *   - Pack_external / Unpack_external / Pack_external_size against
 *     hand-made big-endian bytes; Type_match_size; the _x queries. */
#include <stdint.h>
#include <unistd.h>

#include "mt.h"
#include "../../src/mpi/mpi_impl.h" /* the cursor and strided form (white box) */

/* ------------------------------------------------------------ helpers */

static long rss_bytes(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f != NULL);
    CHECK(fscanf(f, "%ld %ld", &pages, &res) == 2);
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}

static long hwm_bytes(void) /* peak resident size so far */
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    CHECK(kb >= 0);
    return kb * 1024;
}

static void free_contents(MPI_Datatype *ts, int nt)
{
    for (int i = 0; i < nt; i++) {
        int ni, na, n2, comb;
        OK(MPI_Type_get_envelope(ts[i], &ni, &na, &n2, &comb));
        if (comb != MPI_COMBINER_NAMED)
            OK(MPI_Type_free(&ts[i]));
    }
}

/* Describe t the way a tool would: size, extents, envelope, contents. */
static void describe(MPI_Datatype t, MPI_Count want_size, MPI_Count want_extent)
{
    MPI_Count size, lb, ext, tlb, text;
    OK(MPI_Type_size_x(t, &size));
    OK(MPI_Type_get_extent_x(t, &lb, &ext));
    OK(MPI_Type_get_true_extent_x(t, &tlb, &text));
    CHECK_EQ(size, want_size);
    CHECK_EQ(ext, want_extent);
    CHECK(text >= 0 && text <= ext + 64);
    int ni, na, nt, comb;
    OK(MPI_Type_get_envelope(t, &ni, &na, &nt, &comb));
    CHECK(ni <= 64 && na <= 64 && nt <= 64);
    int ints[64];
    MPI_Aint aints[64];
    MPI_Datatype types[64];
    OK(MPI_Type_get_contents(t, ni, na, nt, ints, aints, types));
    free_contents(types, nt);
}

/* ---------------------------------------------------- huge datatypes */

enum { BIG = 1 << 30 };

/* Build, commit, describe and free one family of huge types; returns the
 * seconds it took, and *grow the resident growth while they were alive. */
static double huge_round(int which, long *grow)
{
    long r0 = rss_bytes();
    double t0 = MPI_Wtime();
    MPI_Datatype t[4] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
    const MPI_Count I = sizeof(int);
    switch (which) {
    case 0: /* MPI_Type_vector(2^30, 1, 2, MPI_INT) */
        OK(MPI_Type_vector(BIG, 1, 2, MPI_INT, &t[0]));
        OK(MPI_Type_commit(&t[0]));
        describe(t[0], BIG * I, (2LL * BIG - 1) * I);
        break;
    case 1: /* hvector, and a vector of it (nested), and one resized */
        OK(MPI_Type_create_hvector(BIG, 1, 3 * I, MPI_INT, &t[0]));
        OK(MPI_Type_vector(4, 2, 3, t[0], &t[1]));
        OK(MPI_Type_create_resized(t[1], 0, 1LL << 40, &t[2]));
        OK(MPI_Type_commit(&t[1]));
        OK(MPI_Type_commit(&t[2]));
        describe(t[0], BIG * I, (3LL * (BIG - 1) + 1) * I);
        describe(t[2], 8LL * BIG * I, 1LL << 40);
        break;
    case 2: { /* indexed_block of blocks of 2^29 strided ints: 2^30 blocks */
        OK(MPI_Type_create_resized(MPI_INT, 0, 2 * I, &t[0]));
        int disp[2] = {0, BIG + 7};
        OK(MPI_Type_create_indexed_block(2, BIG / 2, disp, t[0], &t[1]));
        OK(MPI_Type_commit(&t[1]));
        describe(t[1], BIG * I, 2 * I * (BIG + 7) + 2 * I * (BIG / 2));
        /* and hindexed_block of the huge vector */
        OK(MPI_Type_vector(BIG, 1, 2, MPI_INT, &t[2]));
        MPI_Aint hd[3] = {0, 1LL << 34, 1LL << 35};
        OK(MPI_Type_create_hindexed_block(3, 1, hd, t[2], &t[3]));
        OK(MPI_Type_commit(&t[3]));
        describe(t[3], 3LL * BIG * I, (1LL << 35) + (2LL * BIG - 1) * I);
        break;
    }
    case 3: { /* subarray of huge dimensions: 2^15 x 2^15 ints of 2^20 x 2^20 x 4 */
        int sizes[3] = {1 << 20, 1 << 20, 4}, sub[3] = {1 << 15, 1 << 15, 1}, start[3] = {5, 9, 2};
        OK(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t[0]));
        OK(MPI_Type_commit(&t[0]));
        describe(t[0], BIG * I, (1LL << 42) * I);
        OK(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_INT, &t[1]));
        OK(MPI_Type_dup(t[1], &t[2]));
        OK(MPI_Type_commit(&t[2]));
        describe(t[2], BIG * I, (1LL << 42) * I);
        break;
    }
    case 4: { /* darray: 2^30 ints cyclic over the job, and 2-D block x cyclic(3) */
        int g1 = BIG, d1 = MPI_DISTRIBUTE_CYCLIC, a1 = MPI_DISTRIBUTE_DFLT_DARG, p1 = mt_size;
        OK(MPI_Type_create_darray(mt_size, mt_rank, 1, &g1, &d1, &a1, &p1, MPI_ORDER_C, MPI_INT, &t[0]));
        OK(MPI_Type_commit(&t[0]));
        MPI_Count mine = BIG / mt_size + (mt_rank < BIG % mt_size);
        describe(t[0], mine * I, (MPI_Count)BIG * I);
        int g2[2] = {1 << 15, 1 << 15}, d2[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int a2[2] = {MPI_DISTRIBUTE_DFLT_DARG, 3}, p2[2] = {1, mt_size};
        OK(MPI_Type_create_darray(mt_size, mt_rank, 2, g2, d2, a2, p2, MPI_ORDER_FORTRAN, MPI_INT, &t[1]));
        OK(MPI_Type_commit(&t[1]));
        MPI_Count size;
        OK(MPI_Type_size_x(t[1], &size));
        CHECK(size > 0 && size <= (MPI_Count)BIG * I);
        break;
    }
    case 5: { /* deep nesting: contiguous of struct of vector of the huge vector */
        OK(MPI_Type_vector(BIG, 1, 2, MPI_INT, &t[0]));
        OK(MPI_Type_vector(3, 1, 2, t[0], &t[1]));
        int bl[2] = {2, 1};
        MPI_Aint dd[2] = {0, 1LL << 40};
        MPI_Datatype tt[2] = {t[1], MPI_DOUBLE};
        OK(MPI_Type_create_struct(2, bl, dd, tt, &t[2]));
        OK(MPI_Type_contiguous(5, t[2], &t[3]));
        OK(MPI_Type_commit(&t[3]));
        MPI_Count size;
        OK(MPI_Type_size_x(t[3], &size));
        CHECK_EQ(size, 5 * (6LL * BIG * I + 8));
        describe(t[3], size, 5 * ((1LL << 40) + 8));
        break;
    }
    }
    *grow = rss_bytes() - r0;
    for (int i = 0; i < 4; i++)
        if (t[i] != MPI_DATATYPE_NULL)
            OK(MPI_Type_free(&t[i]));
    return MPI_Wtime() - t0;
}

static void test_huge(void)
{
    static const char *names[] = {"vector", "hvector/resized", "indexed_block", "subarray", "darray", "nested"};
    long hwm0 = hwm_bytes();
    for (int which = 0; which < 6; which++) {
        double best = 1e9;
        long grow = 0, g;
        for (int k = 0; k < 3; k++) { /* best of 3: the machine is shared */
            double s = huge_round(which, &g);
            if (s < best)
                best = s;
            if (g > grow)
                grow = g;
        }
        if (mt_rank == 0)
            printf("huge %-16s %.3f ms, resident +%ld KiB\n", names[which], best * 1e3, grow / 1024);
        if (best >= 0.010 || grow >= (1 << 20))
            fprintf(stderr, "FAIL rank %d: huge %s: %.3f ms, +%ld bytes\n", mt_rank, names[which], best * 1e3,
                    grow);
        CHECK(best < 0.010);
        CHECK(grow < (1 << 20));
    }
    /* nothing transient either: the peak did not move by a MiB */
    CHECK(hwm_bytes() - hwm0 < (1 << 20));
}

/* ---------------------------------------------------- pack and unpack */

/* the bytes that the cursor walks, concatenated, must be the packed bytes;
 * and where there is a strided form, it must describe the same bytes */
static void check_walks(MPI_Datatype h, const char *buf, int count, const char *packed, size_t bytes)
{
    kn_mpi_type_t *t = kn_mpi_type(h);
    CHECK(t != NULL);
    kn_mpi_tcur_t c;
    kn_mpi_tcur_init(&c, t, buf, (size_t)count);
    size_t at = 0, len;
    char *addr;
    while ((len = kn_mpi_tcur_next(&c, &addr)) > 0) {
        CHECK(at + len <= bytes);
        CHECK(memcmp(addr, packed + at, len) == 0);
        at += len;
    }
    CHECK_EQ(at, bytes);
    MPI_Aint first;
    int64_t cnt[3], stride[2];
    int levels;
    if (kn_mpi_type_strided(t, (size_t)count, &first, cnt, stride, &levels)) {
        int64_t n1 = levels >= 1 ? cnt[1] : 1, n2 = levels >= 2 ? cnt[2] : 1;
        at = 0;
        for (int64_t j = 0; j < n2; j++)
            for (int64_t i = 0; i < n1; i++) {
                const char *p = buf + first + (levels >= 2 ? j * stride[1] : 0) + (levels >= 1 ? i * stride[0] : 0);
                CHECK(memcmp(p, packed + at, (size_t)cnt[0]) == 0);
                at += (size_t)cnt[0];
            }
        CHECK_EQ(at, bytes);
    }
}

/* Pack count of t from buf, compare with want (the hand loop's bytes),
 * unpack into a zeroed copy and compare with buf where the layout is
 * (mask: 1 where the layout has data). */
static void pack_roundtrip(MPI_Datatype t, const char *buf, size_t span, int count, const char *want,
                           size_t bytes, const char *mask)
{
    int size;
    OK(MPI_Pack_size(count, t, MPI_COMM_WORLD, &size));
    CHECK_EQ(size, bytes);
    char *p = malloc(bytes + 1);
    int pos = 0;
    OK(MPI_Pack(buf, count, t, p, (int)bytes, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, bytes);
    CHECK(memcmp(p, want, bytes) == 0);
    check_walks(t, buf, count, p, bytes);
    char *back = calloc(span, 1);
    pos = 0;
    OK(MPI_Unpack(p, (int)bytes, &pos, back, count, t, MPI_COMM_WORLD));
    CHECK_EQ(pos, bytes);
    for (size_t i = 0; i < span; i++)
        CHECK(back[i] == (mask[i] ? buf[i] : 0));
    free(back);
    free(p);
}

static void test_pack(void)
{
    /* a large vector: 2^20 blocks of 3 ints, stride 5, two of them */
    enum { N = 1 << 20, BL = 3, ST = 5, C = 2 };
    MPI_Datatype v;
    OK(MPI_Type_vector(N, BL, ST, MPI_INT, &v));
    OK(MPI_Type_commit(&v));
    MPI_Aint ext = ((MPI_Aint)(N - 1) * ST + BL) * (MPI_Aint)sizeof(int);
    size_t span = (size_t)ext * C, bytes = (size_t)C * N * BL * sizeof(int);
    int *buf = malloc(span);
    char *mask = calloc(span, 1);
    int *want = malloc(bytes);
    for (size_t i = 0; i < span / sizeof(int); i++)
        buf[i] = (int)(i * 2654435761u) ^ mt_rank;
    size_t w = 0;
    for (int c = 0; c < C; c++)
        for (int b = 0; b < N; b++)
            for (int j = 0; j < BL; j++) {
                size_t at = (size_t)c * (size_t)ext / sizeof(int) + (size_t)b * ST + (size_t)j;
                want[w++] = buf[at];
                memset(mask + at * sizeof(int), 1, sizeof(int));
            }
    pack_roundtrip(v, (char *)buf, span, C, (char *)want, bytes, mask);
    /* a partial unpack stops exactly where the bytes end */
    char *p = malloc(bytes);
    int pos = 0;
    OK(MPI_Pack(buf, C, v, p, (int)bytes, &pos, MPI_COMM_WORLD));
    int *back = calloc(span, 1);
    kn_mpi_unpack(kn_mpi_type(v), p, 7 * sizeof(int) + 2, back, C);
    CHECK(back[0] == buf[0] && back[2] == buf[2] && back[5] == buf[5] && back[10] == buf[10]);
    CHECK(back[3] == 0 && back[12] == 0);
    CHECK(memcmp((char *)&back[11], (char *)&buf[11], 2) == 0 && ((char *)&back[11])[2] == 0);
    free(back);
    free(p);
    OK(MPI_Type_free(&v));

    /* a vector of a vector: two strided levels (the one-sided form) */
    {
        MPI_Datatype v1, v2;
        OK(MPI_Type_vector(4, 1, 2, MPI_INT, &v1));   /* ints 0 2 4 6, extent 7 */
        OK(MPI_Type_vector(3, 1, 5, v1, &v2));        /* at 0, 35, 70 ints */
        OK(MPI_Type_commit(&v2));
        MPI_Aint first;
        int64_t cnt[3], stride[2];
        int levels;
        CHECK(kn_mpi_type_strided(kn_mpi_type(v2), 1, &first, cnt, stride, &levels));
        CHECK(levels == 2 && first == 0 && cnt[0] == 4 && cnt[1] == 4 && stride[0] == 8 && cnt[2] == 3 &&
              stride[1] == 140);
        int src[80], hw[12];
        char m2[sizeof(src)] = {0};
        for (int i = 0; i < 80; i++)
            src[i] = i * 3 + mt_rank;
        for (int b = 0, n = 0; b < 3; b++)
            for (int i = 0; i < 4; i++, n++) {
                hw[n] = src[35 * b + 2 * i];
                memset(m2 + (35 * b + 2 * i) * 4, 1, 4);
            }
        pack_roundtrip(v2, (char *)src, sizeof(src), 1, (char *)hw, sizeof(hw), m2);
        OK(MPI_Type_free(&v1));
        OK(MPI_Type_free(&v2));
    }

    /* nested: a vector of a struct of (a vector of doubles and a char), resized */
    enum { M = 64 };
    MPI_Datatype vd, st, str, nv;
    OK(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &vd));   /* doubles 0,1,4,5,8,9 */
    int bl[2] = {1, 3};
    MPI_Aint dd[2] = {8, 0};                         /* the vector at 8 bytes, chars at 0..2 */
    MPI_Datatype tt[2] = {vd, MPI_CHAR};
    OK(MPI_Type_create_struct(2, bl, dd, tt, &st));
    OK(MPI_Type_create_resized(st, 0, 96, &str));
    OK(MPI_Type_commit(&str));
    OK(MPI_Type_vector(4, 2, 3, str, &nv));          /* elements 0,1,3,4,6,7,9,10 of 96 bytes */
    OK(MPI_Type_commit(&nv));
    size_t nspan = 96 * 12 * 2;
    char *nb = malloc(nspan), *nm = calloc(nspan, 1), *nw = malloc(nspan);
    for (size_t i = 0; i < nspan; i++)
        nb[i] = (char)(i * 7 + 3);
    MPI_Aint next;
    OK(MPI_Type_get_extent(nv, &(MPI_Aint){0}, &next));
    CHECK_EQ(next, (3 * 3 + 2) * 96);
    w = 0;
    for (int c = 0; c < 2; c++)
        for (int b = 0; b < 4; b++)
            for (int e = 0; e < 2; e++) {
                size_t base = (size_t)c * (size_t)next + ((size_t)b * 3 + (size_t)e) * 96;
                for (int k = 0; k < 3; k++)
                    for (int d = 0; d < 2; d++)
                        for (int x = 0; x < 8; x++) {
                            size_t at = base + 8 + ((size_t)k * 4 + (size_t)d) * 8 + (size_t)x;
                            nw[w++] = nb[at];
                            nm[at] = 1;
                        }
                for (int k = 0; k < 3; k++) {
                    nw[w++] = nb[base + (size_t)k];
                    nm[base + (size_t)k] = 1;
                }
            }
    pack_roundtrip(nv, nb, nspan, 2, nw, w, nm);
    /* Get_elements along the nested typemap: 1 element and 2 doubles + ... */
    MPI_Status s;
    int cnt;
    OK(MPI_Status_set_elements(&s, nv, 6 + 3 + 4));
    MPI_Count e;
    OK(MPI_Get_elements_x(&s, nv, &e));
    CHECK_EQ(e, 13);
    OK(MPI_Get_count(&s, MPI_BYTE, &cnt));
    CHECK_EQ(cnt, 6 * 8 + 3 + 4 * 8); /* one struct, then 4 doubles of the next */
    OK(MPI_Get_count(&s, str, &cnt));
    CHECK_EQ(cnt, MPI_UNDEFINED);
    MPI_Datatype all[] = {vd, st, str, nv};
    for (int i = 0; i < 4; i++)
        OK(MPI_Type_free(&all[i]));
    free(nb);
    free(nm);
    free(nw);
    free(buf);
    free(mask);
    free(want);
}

/* ----------------------------------------------------------- darray */

/* the global indexes of dimension i that coordinate c owns, increasing */
static int owned(int dist, int darg, int g, int p, int c, int *out)
{
    int n = 0;
    for (int x = 0; x < g; x++) {
        int who;
        if (dist == MPI_DISTRIBUTE_NONE)
            who = 0;
        else if (dist == MPI_DISTRIBUTE_BLOCK)
            who = x / (darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg);
        else
            who = x / (darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg) % p;
        if (who == c)
            out[n++] = x;
    }
    return n;
}

typedef struct dcase {
    int ndims, order;
    int g[3], dist[3], darg[3], p[3]; /* p[i] == 0: the rest of the processes */
} dcase_t;

static void darray_case(const dcase_t *dc)
{
    int nd = dc->ndims, g[3], p[3], coords[3];
    int rest = mt_size, zero = -1;
    for (int i = 0; i < nd; i++) {
        g[i] = dc->g[i];
        p[i] = dc->p[i];
        if (p[i])
            rest /= p[i];
        else
            zero = i;
    }
    if (zero >= 0)
        p[zero] = rest;
    int prod = 1;
    for (int i = 0; i < nd; i++)
        prod *= p[i];
    if (prod != mt_size)
        return; /* this grid does not fit the job's size */
    int total = 1;
    for (int i = 0; i < nd; i++)
        total *= g[i];
    /* every rank's type and expected list of global indexes */
    MPI_Datatype *types = malloc((size_t)mt_size * sizeof(*types));
    int *idx = malloc((size_t)total * sizeof(int));
    int own[3][64], nown[3];
    for (int r = 0; r < mt_size; r++) {
        OK(MPI_Type_create_darray(mt_size, r, nd, g, dc->dist, dc->darg, p, dc->order, MPI_INT, &types[r]));
        OK(MPI_Type_commit(&types[r]));
    }
    for (int i = nd - 1, r = mt_rank; i >= 0; i--) {
        coords[i] = r % p[i];
        r /= p[i];
    }
    int n = 1;
    for (int i = 0; i < nd; i++) {
        nown[i] = owned(dc->dist[i], dc->darg[i], g[i], p[i], coords[i], own[i]);
        n *= nown[i];
    }
    /* this rank's local array in its order: C: last dimension fastest */
    for (int k = 0; k < n; k++) {
        int rem = k, lin = 0, sub[3];
        for (int j = 0; j < nd; j++) {
            int i = dc->order == MPI_ORDER_C ? nd - 1 - j : j;
            sub[i] = own[i][rem % nown[i]];
            rem /= nown[i];
        }
        /* the global array's linear index: C row-major, Fortran column-major */
        if (dc->order == MPI_ORDER_C)
            for (int i = 0; i < nd; i++)
                lin = lin * g[i] + sub[i];
        else
            for (int i = nd - 1; i >= 0; i--)
                lin = lin * g[i] + sub[i];
        idx[k] = lin;
    }
    int size;
    MPI_Aint lb, ext;
    OK(MPI_Type_size(types[mt_rank], &size));
    CHECK_EQ(size, n * (int)sizeof(int));
    OK(MPI_Type_get_extent(types[mt_rank], &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)total * (MPI_Aint)sizeof(int));
    /* the global array, value = 1000 * rank + index; each rank sends its part
     * with its darray type to the right and receives the left's part
     * contiguous; then sends contiguous, received with the darray type */
    int *gl = malloc((size_t)total * sizeof(int)), *loc = malloc(((size_t)total + 1) * sizeof(int));
    for (int i = 0; i < total; i++)
        gl[i] = 1000 * mt_rank + i;
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    /* the left's count, from its type */
    int lsize;
    OK(MPI_Type_size(types[left], &lsize));
    MPI_Status st;
    OK(MPI_Sendrecv(gl, 1, types[mt_rank], right, 21, loc, total, MPI_INT, left, 21, MPI_COMM_WORLD, &st));
    int got;
    OK(MPI_Get_count(&st, MPI_INT, &got));
    CHECK_EQ(got * (int)sizeof(int), lsize);
    /* check the left's part with the left's ownership: recompute quickly
     * by unpacking our own copy with its type */
    int *mine = calloc((size_t)total, sizeof(int));
    int pos = 0;
    char *pk = malloc((size_t)lsize + 1);
    int *lgl = malloc((size_t)total * sizeof(int));
    for (int i = 0; i < total; i++)
        lgl[i] = 1000 * left + i;
    OK(MPI_Pack(lgl, 1, types[left], pk, lsize, &pos, MPI_COMM_WORLD));
    CHECK(memcmp(pk, loc, (size_t)lsize) == 0);
    /* and ours against the hand-computed list */
    for (int k = 0; k < n; k++)
        loc[k] = -1 - k;
    pos = 0;
    OK(MPI_Pack(gl, 1, types[mt_rank], loc, n * (int)sizeof(int), &pos, MPI_COMM_WORLD));
    for (int k = 0; k < n; k++)
        CHECK_EQ(loc[k], 1000 * mt_rank + idx[k]);
    /* the other way: contiguous in, darray out; untouched elements stay */
    for (int k = 0; k < n; k++)
        loc[k] = 7 * k + 1;
    for (int i = 0; i < total; i++)
        mine[i] = -5;
    OK(MPI_Sendrecv(loc, n, MPI_INT, mt_rank, 22, mine, 1, types[mt_rank], mt_rank, 22, MPI_COMM_WORLD, &st));
    char *hit = calloc((size_t)total, 1);
    for (int k = 0; k < n; k++) {
        CHECK_EQ(mine[idx[k]], 7 * k + 1);
        hit[idx[k]] = 1;
    }
    for (int i = 0; i < total; i++)
        if (!hit[i])
            CHECK_EQ(mine[i], -5);
    /* together the ranks own every element once */
    int *cover = calloc((size_t)total, sizeof(int)), *sum = calloc((size_t)total, sizeof(int));
    for (int i = 0; i < total; i++)
        cover[i] = hit[i];
    OK(MPI_Allreduce(cover, sum, total, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < total; i++)
        CHECK_EQ(sum[i], 1);
    for (int r = 0; r < mt_size; r++)
        OK(MPI_Type_free(&types[r]));
    free(cover);
    free(sum);
    free(hit);
    free(pk);
    free(lgl);
    free(mine);
    free(gl);
    free(loc);
    free(types);
    free(idx);
}

static void test_darray(void)
{
    const int B = MPI_DISTRIBUTE_BLOCK, Y = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE;
    const int D = MPI_DISTRIBUTE_DFLT_DARG, C = MPI_ORDER_C, F = MPI_ORDER_FORTRAN;
    const dcase_t cases[] = {
        {1, C, {23}, {B}, {D}, {0}},
        {1, C, {23}, {Y}, {D}, {0}},
        {1, F, {29}, {Y}, {3}, {0}},
        {1, C, {17}, {N}, {D}, {1}},
        {1, C, {40}, {B}, {40}, {0}},
        {2, C, {7, 9}, {B, Y}, {D, 2}, {0, 1}},
        {2, F, {7, 9}, {B, Y}, {D, 2}, {0, 1}},
        {2, C, {6, 10}, {Y, B}, {D, D}, {1, 0}},
        {2, F, {5, 13}, {N, Y}, {D, 4}, {1, 0}},
        {3, C, {4, 5, 6}, {B, N, Y}, {D, D, 2}, {0, 1, 1}},
        {3, F, {4, 5, 6}, {Y, B, N}, {3, D, D}, {1, 0, 1}},
        {3, C, {5, 3, 7}, {N, Y, B}, {D, 1, D}, {1, 1, 0}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        darray_case(&cases[i]);
    if (mt_size >= 4) { /* blocks of 11 cover 40 elements from 4 processes on */
        dcase_t b11 = {1, C, {40}, {B}, {11}, {0}};
        darray_case(&b11);
    }
    /* a 2-D grid where the job's size allows it */
    if (mt_size % 2 == 0) {
        dcase_t sq = {2, C, {9, 11}, {Y, B}, {2, D}, {2, 0}};
        darray_case(&sq);
        sq.order = F;
        darray_case(&sq);
    }
    /* errors: a grid of the wrong size, NONE over more than one process */
    int g = 10, d = B, a = D, p = mt_size + 1;
    MPI_Datatype t;
    CHECK(MPI_Type_create_darray(mt_size, mt_rank, 1, &g, &d, &a, &p, C, MPI_INT, &t) == MPI_ERR_ARG);
    p = 2, d = N;
    if (mt_size == 2)
        CHECK(MPI_Type_create_darray(2, mt_rank, 1, &g, &d, &a, &p, C, MPI_INT, &t) == MPI_ERR_ARG);
    d = B, a = 1, p = mt_size; /* blocks of 1 cannot cover 10 over fewer than 10 */
    CHECK(MPI_Type_create_darray(mt_size, mt_rank, 1, &g, &d, &a, &p, C, MPI_INT, &t) == MPI_ERR_ARG);
}

/* ------------------------------------------------------------ depth */

/* Types nested deeper and deeper (each a struct of the last and a char):
 * each packs right and the cursor walks it, until the nesting limit, where
 * the constructor says MPI_ERR_TYPE instead of building what the walkers
 * could not take. */
static void test_depth(void)
{
    enum { MAXL = 200 };
    MPI_Datatype t[MAXL + 1];
    int ints[4] = {11, 22, 33, 44};
    char buf[128];
    memcpy(buf, ints, sizeof(ints));
    for (int i = 16; i < 128; i++)
        buf[i] = (char)i;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &t[0]));
    int k, bl[2] = {1, 1}, err = MPI_SUCCESS;
    MPI_Aint dd[2] = {0, 100};
    for (k = 0; k < MAXL; k++) {
        MPI_Datatype tt[2] = {t[k], MPI_CHAR};
        if ((err = MPI_Type_create_struct(2, bl, dd, tt, &t[k + 1])) != MPI_SUCCESS)
            break;
        OK(MPI_Type_commit(&t[k + 1]));
        /* the two ints, then the char at 100 once per level */
        char want[16 + MAXL], got[16 + MAXL];
        memcpy(want, &ints[0], 4);
        memcpy(want + 4, &ints[2], 4);
        memset(want + 8, 100, (size_t)k + 1);
        int pos = 0;
        OK(MPI_Pack(buf, 1, t[k + 1], got, sizeof(got), &pos, MPI_COMM_WORLD));
        CHECK_EQ(pos, 8 + k + 1);
        CHECK(memcmp(got, want, (size_t)pos) == 0);
        check_walks(t[k + 1], buf, 1, got, (size_t)pos);
    }
    CHECK_EQ(err, MPI_ERR_TYPE);
    CHECK(k >= 40); /* at least as deep as MPICH's dataloops went */
    for (int i = 0; i <= k; i++)
        OK(MPI_Type_free(&t[i]));
}

/* ------------------------------------------------------- get_contents */

/* Rebuild t from its envelope and contents with its own constructor. */
static MPI_Datatype rebuild(MPI_Datatype t, int *combiner)
{
    int ni, na, nt, comb;
    OK(MPI_Type_get_envelope(t, &ni, &na, &nt, &comb));
    *combiner = comb;
    int *i = malloc((size_t)(ni + 1) * sizeof(int));
    MPI_Aint *a = malloc((size_t)(na + 1) * sizeof(MPI_Aint));
    MPI_Datatype *ty = malloc((size_t)(nt + 1) * sizeof(MPI_Datatype)), r = MPI_DATATYPE_NULL;
    OK(MPI_Type_get_contents(t, ni, na, nt, i, a, ty));
    switch (comb) {
    case MPI_COMBINER_DUP: CHECK(ni == 0 && na == 0 && nt == 1); OK(MPI_Type_dup(ty[0], &r)); break;
    case MPI_COMBINER_CONTIGUOUS: CHECK(ni == 1 && nt == 1); OK(MPI_Type_contiguous(i[0], ty[0], &r)); break;
    case MPI_COMBINER_VECTOR: CHECK(ni == 3 && nt == 1); OK(MPI_Type_vector(i[0], i[1], i[2], ty[0], &r)); break;
    case MPI_COMBINER_HVECTOR:
        CHECK(ni == 2 && na == 1 && nt == 1);
        OK(MPI_Type_create_hvector(i[0], i[1], a[0], ty[0], &r));
        break;
    case MPI_COMBINER_INDEXED:
        CHECK(ni == 2 * i[0] + 1 && nt == 1);
        OK(MPI_Type_indexed(i[0], i + 1, i + 1 + i[0], ty[0], &r));
        break;
    case MPI_COMBINER_HINDEXED:
        CHECK(ni == i[0] + 1 && na == i[0] && nt == 1);
        OK(MPI_Type_create_hindexed(i[0], i + 1, a, ty[0], &r));
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        CHECK(ni == i[0] + 2 && nt == 1);
        OK(MPI_Type_create_indexed_block(i[0], i[1], i + 2, ty[0], &r));
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        CHECK(ni == 2 && na == i[0] && nt == 1);
        OK(MPI_Type_create_hindexed_block(i[0], i[1], a, ty[0], &r));
        break;
    case MPI_COMBINER_STRUCT:
        CHECK(ni == i[0] + 1 && na == i[0] && nt == i[0]);
        OK(MPI_Type_create_struct(i[0], i + 1, a, ty, &r));
        break;
    case MPI_COMBINER_SUBARRAY:
        CHECK(ni == 3 * i[0] + 2 && nt == 1);
        OK(MPI_Type_create_subarray(i[0], i + 1, i + 1 + i[0], i + 1 + 2 * i[0], i[1 + 3 * i[0]], ty[0], &r));
        break;
    case MPI_COMBINER_DARRAY: {
        int n = i[2];
        CHECK(ni == 4 * n + 4 && nt == 1);
        OK(MPI_Type_create_darray(i[0], i[1], n, i + 3, i + 3 + n, i + 3 + 2 * n, i + 3 + 3 * n, i[3 + 4 * n],
                                  ty[0], &r));
        break;
    }
    case MPI_COMBINER_RESIZED:
        CHECK(ni == 0 && na == 2 && nt == 1);
        OK(MPI_Type_create_resized(ty[0], a[0], a[1], &r));
        break;
    default: CHECK(!"unexpected combiner");
    }
    free_contents(ty, nt);
    free(i);
    free(a);
    free(ty);
    OK(MPI_Type_commit(&r));
    return r;
}

/* t and its rebuild agree on size, bounds and the bytes they pack */
static void same_type(MPI_Datatype t, MPI_Datatype u, const char *buf, size_t span)
{
    MPI_Count s1, s2, l1, l2, e1, e2, tl1, tl2, te1, te2;
    OK(MPI_Type_size_x(t, &s1));
    OK(MPI_Type_size_x(u, &s2));
    OK(MPI_Type_get_extent_x(t, &l1, &e1));
    OK(MPI_Type_get_extent_x(u, &l2, &e2));
    OK(MPI_Type_get_true_extent_x(t, &tl1, &te1));
    OK(MPI_Type_get_true_extent_x(u, &tl2, &te2));
    CHECK(s1 == s2 && l1 == l2 && e1 == e2 && tl1 == tl2 && te1 == te2);
    CHECK(te1 <= (MPI_Count)span);
    char *p1 = malloc((size_t)s1 + 1), *p2 = malloc((size_t)s1 + 1);
    int q1 = 0, q2 = 0;
    OK(MPI_Pack(buf, 1, t, p1, (int)s1, &q1, MPI_COMM_WORLD));
    OK(MPI_Pack(buf, 1, u, p2, (int)s1, &q2, MPI_COMM_WORLD));
    CHECK(q1 == s1 && q2 == s1 && memcmp(p1, p2, (size_t)s1) == 0);
    check_walks(t, buf, 1, p1, (size_t)s1);
    check_walks(u, buf, 1, p1, (size_t)s1);
    free(p1);
    free(p2);
}

static void test_contents(void)
{
    enum { SPAN = 1 << 16 };
    char *buf = malloc(SPAN);
    for (int i = 0; i < SPAN; i++)
        buf[i] = (char)(i * 13 + 5);
    MPI_Datatype t[13];
    int want[13] = {MPI_COMBINER_DUP, MPI_COMBINER_CONTIGUOUS, MPI_COMBINER_VECTOR, MPI_COMBINER_HVECTOR,
                    MPI_COMBINER_INDEXED, MPI_COMBINER_HINDEXED, MPI_COMBINER_INDEXED_BLOCK,
                    MPI_COMBINER_HINDEXED_BLOCK, MPI_COMBINER_STRUCT, MPI_COMBINER_SUBARRAY,
                    MPI_COMBINER_DARRAY, MPI_COMBINER_RESIZED, MPI_COMBINER_VECTOR};
    OK(MPI_Type_dup(MPI_SHORT_INT, &t[0]));
    OK(MPI_Type_contiguous(5, MPI_DOUBLE, &t[1]));
    OK(MPI_Type_vector(4, 3, 7, t[1], &t[2]));
    OK(MPI_Type_create_hvector(3, 2, -13, MPI_INT, &t[3]));
    int bl[3] = {2, 0, 3}, di[3] = {5, 1, -2};
    OK(MPI_Type_indexed(3, bl, di, MPI_FLOAT, &t[4]));
    MPI_Aint ad[3] = {40, 3, 100};
    OK(MPI_Type_create_hindexed(3, bl, ad, t[0], &t[5]));
    OK(MPI_Type_create_indexed_block(3, 2, di, t[3], &t[6]));
    OK(MPI_Type_create_hindexed_block(3, 4, ad, MPI_CHAR, &t[7]));
    MPI_Datatype st[3] = {t[4], MPI_LONG_DOUBLE, t[7]};
    MPI_Aint sd[3] = {64, 0, 600};
    OK(MPI_Type_create_struct(3, bl, sd, st, &t[8]));
    int sz[2] = {10, 12}, sub[2] = {3, 4}, start[2] = {2, 5};
    OK(MPI_Type_create_subarray(2, sz, sub, start, MPI_ORDER_FORTRAN, t[0], &t[9]));
    int g[2] = {8, 9}, d[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, a[2] = {2, MPI_DISTRIBUTE_DFLT_DARG};
    int p[2] = {mt_size, 1};
    OK(MPI_Type_create_darray(mt_size, mt_rank, 2, g, d, a, p, MPI_ORDER_C, MPI_SHORT, &t[10]));
    OK(MPI_Type_create_resized(t[2], -8, 1000, &t[11]));
    OK(MPI_Type_vector(2, 1, 3, t[11], &t[12])); /* over a resized type */
    for (int k = 0; k < 13; k++) {
        OK(MPI_Type_commit(&t[k]));
        int comb;
        MPI_Datatype r = rebuild(t[k], &comb);
        CHECK_EQ(comb, want[k]);
        MPI_Count lb, ext;
        OK(MPI_Type_get_true_extent_x(t[k], &lb, &ext));
        size_t shift = lb < 0 ? (size_t)(-lb) : 0; /* the data from buf on */
        CHECK((MPI_Count)shift + lb + ext <= SPAN);
        same_type(t[k], r, buf + shift, SPAN - shift);
        OK(MPI_Type_free(&r));
    }
    /* named types: the envelope says so, contents are erroneous */
    int ni, na, nt, comb;
    OK(MPI_Type_get_envelope(MPI_DOUBLE_INT, &ni, &na, &nt, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nt == 0);
    CHECK(MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL) == MPI_ERR_TYPE);
    for (int k = 0; k < 13; k++)
        OK(MPI_Type_free(&t[k]));
    free(buf);
}

/* ------------------------------------------------------- external32 */

static void be(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static void test_external(void)
{
    /* sizes of MPI-3.1 table 13.2 */
    struct { MPI_Datatype t; int size; } sizes[] = {
        {MPI_CHAR, 1}, {MPI_SHORT, 2}, {MPI_INT, 4}, {MPI_LONG, 4}, {MPI_UNSIGNED_LONG, 4},
        {MPI_LONG_LONG_INT, 8}, {MPI_FLOAT, 4}, {MPI_DOUBLE, 8}, {MPI_LONG_DOUBLE, 16}, {MPI_WCHAR, 4},
        {MPI_C_BOOL, 1}, {MPI_INT64_T, 8}, {MPI_AINT, 8}, {MPI_COUNT, 8}, {MPI_OFFSET, 8},
        {MPI_C_DOUBLE_COMPLEX, 16}, {MPI_C_LONG_DOUBLE_COMPLEX, 32}, {MPI_DOUBLE_INT, 12},
        {MPI_LONG_INT, 8}, {MPI_SHORT_INT, 6}, {MPI_LONG_DOUBLE_INT, 20}, {MPI_2INT, 8},
        {MPI_INTEGER, 4}, {MPI_DOUBLE_PRECISION, 8}, {MPI_2DOUBLE_PRECISION, 16}, {MPI_BYTE, 1},
    };
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        MPI_Aint s;
        OK(MPI_Pack_external_size("external32", 3, sizes[k].t, &s));
        CHECK_EQ(s, 3 * sizes[k].size);
    }
    /* a struct of mixed members, two of them */
    struct rec { char c; short s; int i; long l; double d; float f; long double x; unsigned long u; } r[2];
    int bl[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    MPI_Aint dd[8] = {offsetof(struct rec, c), offsetof(struct rec, s), offsetof(struct rec, i),
                      offsetof(struct rec, l), offsetof(struct rec, d), offsetof(struct rec, f),
                      offsetof(struct rec, x), offsetof(struct rec, u)};
    MPI_Datatype tt[8] = {MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_DOUBLE, MPI_FLOAT, MPI_LONG_DOUBLE,
                          MPI_UNSIGNED_LONG};
    MPI_Datatype rt;
    OK(MPI_Type_create_struct(8, bl, dd, tt, &rt));
    OK(MPI_Type_commit(&rt));
    memset(r, 0, sizeof(r));
    for (int k = 0; k < 2; k++) {
        r[k].c = (char)('A' + k);
        r[k].s = (short)(-2 - k);
        r[k].i = 0x01020304 + k;
        r[k].l = -5 - k;
        r[k].d = 1.5 + k;          /* 0x3ff8000000000000, 0x4004000000000000 */
        r[k].f = -2.0f;            /* 0xc0000000 */
        r[k].x = k ? 1.0L + 0x1p-60L : 1.5L; /* binary128 fraction bit 52 of the low half */
        r[k].u = 0xfffffff0u + (unsigned)k;
    }
    MPI_Aint size;
    OK(MPI_Pack_external_size("external32", 2, rt, &size));
    CHECK_EQ(size, 2 * (1 + 2 + 4 + 4 + 8 + 4 + 16 + 4));
    unsigned char want[2 * 43], got[2 * 43 + 8];
    for (int k = 0; k < 2; k++) {
        unsigned char *w = want + 43 * k;
        w[0] = (unsigned char)('A' + k);
        be(w + 1, (uint16_t)(-2 - k), 2);
        be(w + 3, 0x01020304u + (unsigned)k, 4);
        be(w + 7, (uint32_t)(-5 - k), 4);
        be(w + 11, k ? 0x4004000000000000ull : 0x3ff8000000000000ull, 8);
        be(w + 19, 0xc0000000u, 4);
        be(w + 23, k ? 0x3fff000000000000ull : 0x3fff800000000000ull, 8);
        be(w + 31, k ? 1ull << 52 : 0, 8);
        be(w + 39, 0xfffffff0u + (unsigned)k, 4);
    }
    MPI_Aint pos = 4;
    memset(got, 0xee, sizeof(got));
    OK(MPI_Pack_external("external32", r, 2, rt, got, sizeof(got), &pos));
    CHECK_EQ(pos, 4 + size);
    CHECK(got[0] == 0xee && got[3] == 0xee && got[4 + size] == 0xee);
    for (int i = 0; i < 86; i++)
        if (got[4 + i] != want[i]) {
            fprintf(stderr, "external32 byte %d: %02x, expected %02x\n", i, got[4 + i], want[i]);
            CHECK(got[4 + i] == want[i]);
        }
    /* and back, through a type that is not contiguous */
    struct rec back[2];
    memset(back, 0, sizeof(back));
    pos = 4;
    OK(MPI_Unpack_external("external32", got, sizeof(got), &pos, back, 2, rt));
    CHECK_EQ(pos, 4 + size);
    for (int k = 0; k < 2; k++)
        CHECK(back[k].c == r[k].c && back[k].s == r[k].s && back[k].i == r[k].i && back[k].l == r[k].l &&
              back[k].d == r[k].d && back[k].f == r[k].f && back[k].x == r[k].x && back[k].u == r[k].u);
    /* a vector of pairs: values strided, the int halves too */
    struct { double v; int i; } pr[6];
    for (int k = 0; k < 6; k++)
        pr[k].v = -0.25 * k, pr[k].i = -k;
    MPI_Datatype pv;
    OK(MPI_Type_vector(3, 1, 2, MPI_DOUBLE_INT, &pv));
    OK(MPI_Type_commit(&pv));
    unsigned char pb[36];
    pos = 0;
    OK(MPI_Pack_external("external32", pr, 1, pv, pb, sizeof(pb), &pos));
    CHECK_EQ(pos, 36);
    for (int k = 0; k < 3; k++) {
        unsigned char w[12];
        double v = -0.25 * 2 * k;
        uint64_t bits;
        memcpy(&bits, &v, 8);
        be(w, bits, 8);
        be(w + 8, (uint32_t)(-2 * k), 4);
        CHECK(memcmp(pb + 12 * k, w, 12) == 0);
    }
    /* truncation, bad datarep */
    pos = 0;
    CHECK(MPI_Pack_external("external32", pr, 1, pv, pb, 35, &pos) == MPI_ERR_TRUNCATE);
    CHECK(MPI_Pack_external("native", pr, 1, pv, pb, 36, &pos) == MPI_ERR_ARG);
    OK(MPI_Type_free(&pv));
    OK(MPI_Type_free(&rt));
}

/* ------------------------------------------------ match_size and _x */

static void test_match_and_x(void)
{
    MPI_Datatype t;
    int s;
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 4, &t));
    CHECK(t == MPI_FLOAT);
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    CHECK(t == MPI_DOUBLE);
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 2, &t));
    OK(MPI_Type_size(t, &s));
    CHECK_EQ(s, 2);
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 8, &t));
    OK(MPI_Type_size(t, &s));
    CHECK_EQ(s, 8);
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
    CHECK(t == MPI_C_DOUBLE_COMPLEX);
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t) == MPI_ERR_ARG);
    CHECK(MPI_Type_match_size(99, 4, &t) == MPI_ERR_ARG);

    /* sizes past an int: the _x forms have them, the int forms say undefined */
    MPI_Datatype v, c;
    OK(MPI_Type_vector(BIG, 1, 2, MPI_INT, &v));
    OK(MPI_Type_commit(&v));
    OK(MPI_Type_contiguous(3, v, &c));
    OK(MPI_Type_commit(&c));
    MPI_Count size, lb, ext, tlb, text, e;
    OK(MPI_Type_size_x(c, &size));
    CHECK_EQ(size, 3LL * BIG * 4);
    OK(MPI_Type_size(c, &s));
    CHECK_EQ(s, MPI_UNDEFINED);
    OK(MPI_Type_get_extent_x(c, &lb, &ext));
    CHECK(lb == 0 && ext == 3 * (2LL * BIG - 1) * 4);
    OK(MPI_Type_get_true_extent_x(c, &tlb, &text));
    CHECK(tlb == 0 && text == ext);
    MPI_Status st;
    OK(MPI_Status_set_elements_x(&st, c, 3LL * BIG - 5));
    OK(MPI_Get_elements_x(&st, c, &e));
    CHECK_EQ(e, 3LL * BIG - 5);
    int ie, cnt;
    OK(MPI_Get_elements(&st, c, &ie));
    CHECK_EQ(ie, MPI_UNDEFINED);
    OK(MPI_Get_count(&st, c, &cnt));
    CHECK_EQ(cnt, MPI_UNDEFINED);
    OK(MPI_Status_set_elements_x(&st, c, 2LL * BIG));
    OK(MPI_Get_count(&st, c, &cnt));
    CHECK_EQ(cnt, MPI_UNDEFINED);
    OK(MPI_Status_set_elements_x(&st, v, BIG));
    OK(MPI_Get_count(&st, v, &cnt));
    CHECK_EQ(cnt, 1);
    OK(MPI_Type_free(&c));
    OK(MPI_Type_free(&v));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_huge(); /* first: the peak resident size is still low */
    test_pack();
    test_darray();
    test_depth();
    test_contents();
    test_external();
    test_match_and_x();
    return mt_finish("dtype_big");
}
