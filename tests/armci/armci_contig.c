/*
 * ARMCI contiguous operations: put, get and accumulate of every type
 * (int, long, float, double, float and double complex, with a scale),
 * the value forms, put with a flag, irregular and empty allocations,
 * addresses in any region, and the errors of bad arguments.  Written as
 * ARMCI's own tests are: armci.h and mpi.h only.  Rank 0 prints one line
 * per check: "PASS name" or "FAIL name: why".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <armci.h>

#define N 64

static int me, nproc, failures;

#include "report.h"

static void test_put_get(void)
{
    /* every rank writes its slot of every rank's region, then reads it back */
    void **ptrs = malloc(nproc * sizeof(void *));
    int ok = 1, rc;
    ARMCI_Malloc(ptrs, (armci_size_t)nproc * N * sizeof(int));
    int *src = ARMCI_Malloc_local(N * sizeof(int));
    for (int t = 0; t < nproc; t++) {
        for (int i = 0; i < N; i++)
            src[i] = me * 100000 + t * 1000 + i;
        rc = ARMCI_Put(src, (int *)ptrs[t] + me * N, N * sizeof(int), t);
        EXPECT(rc == 0, "ARMCI_Put to %d returned %d", t, rc);
    }
    ARMCI_Barrier();
    int *mine = ptrs[me];
    for (int s = 0; s < nproc; s++)
        for (int i = 0; i < N; i++)
            EXPECT(mine[s * N + i] == s * 100000 + me * 1000 + i, "slot %d [%d] = %d", s, i, mine[s * N + i]);
    report("put_int", ok, why);

    ok = 1;
    int back[N];
    for (int t = 0; t < nproc; t++) {
        memset(back, 0, sizeof(back));
        rc = ARMCI_Get((int *)ptrs[t] + me * N, back, N * sizeof(int), t);
        EXPECT(rc == 0, "ARMCI_Get from %d returned %d", t, rc);
        for (int i = 0; i < N; i++)
            EXPECT(back[i] == me * 100000 + t * 1000 + i, "get from %d [%d] = %d", t, i, back[i]);
    }
    /* a single element in the middle of someone else's slot */
    int one = -1, t = (me + 1) % nproc;
    rc = ARMCI_Get((int *)ptrs[t] + ((me + 1) % nproc) * N + 7, &one, sizeof(int), t);
    EXPECT(rc == 0 && one == ((me + 1) % nproc) * 100000 + t * 1000 + 7, "single get %d (rc %d)", one, rc);
    report("get_int", ok, why);
    ARMCI_Barrier();
    ARMCI_Free_local(src);
    ARMCI_Free(ptrs[me]);
    free(ptrs);
}

/* dst += scale * src from every rank into every rank, for one type */
#define ACC_TEST(NAME, T, OPC, SCALE, SRCV, EXPV)                                   \
    do {                                                                            \
        int ok = 1;                                                                 \
        void **p = malloc(nproc * sizeof(void *));                                  \
        ARMCI_Malloc(p, N * sizeof(T));                                             \
        T src[N], scale = SCALE, got[N];                                            \
        for (int i = 0; i < N; i++)                                                 \
            src[i] = SRCV;                                                          \
        ARMCI_Barrier();                                                            \
        for (int k = 0; k < nproc; k++) {                                           \
            int t = (me + k) % nproc;                                               \
            int rc = ARMCI_Acc(OPC, &scale, src, p[t], N * sizeof(T), t);           \
            EXPECT(rc == 0, "ARMCI_Acc to %d returned %d", t, rc);                  \
        }                                                                           \
        ARMCI_Barrier();                                                            \
        ARMCI_Get(p[(me + 1) % nproc], got, N * sizeof(T), (me + 1) % nproc);       \
        for (int i = 0; i < N; i++)                                                 \
            EXPECT(got[i] == (EXPV), "[%d] = %g, want %g", i, (double)got[i], (double)(EXPV)); \
        report(NAME, ok, why);                                                      \
        ARMCI_Free(p[me]);                                                          \
        free(p);                                                                    \
    } while (0)

typedef struct { float re, im; } cplx_t;
typedef struct { double re, im; } dcplx_t;

/* complex: (2 + 1i) * ((i + 1) + 1i) = (2i + 1) + (i + 3)i, from every rank */
#define CPLX_TEST(NAME, T, OPC)                                                     \
    do {                                                                            \
        int ok = 1;                                                                 \
        void **p = malloc(nproc * sizeof(void *));                                  \
        ARMCI_Malloc(p, N * sizeof(T));                                             \
        T src[N], scale = {2, 1}, got[N];                                           \
        for (int i = 0; i < N; i++)                                                 \
            src[i].re = i + 1, src[i].im = 1;                                       \
        ARMCI_Barrier();                                                            \
        for (int k = 0; k < nproc; k++) {                                           \
            int t = (me + k) % nproc;                                               \
            int rc = ARMCI_Acc(OPC, &scale, src, p[t], N * sizeof(T), t);           \
            EXPECT(rc == 0, "ARMCI_Acc to %d returned %d", t, rc);                  \
        }                                                                           \
        ARMCI_Barrier();                                                            \
        ARMCI_Get(p[(me + 1) % nproc], got, N * sizeof(T), (me + 1) % nproc);       \
        for (int i = 0; i < N; i++)                                                 \
            EXPECT(got[i].re == nproc * (2 * i + 1) && got[i].im == nproc * (i + 3), \
                   "[%d] = (%g, %g), want (%d, %d)", i, (double)got[i].re, (double)got[i].im, \
                   nproc * (2 * i + 1), nproc * (i + 3));                           \
        report(NAME, ok, why);                                                      \
        ARMCI_Free(p[me]);                                                          \
        free(p);                                                                    \
    } while (0)

static void test_acc(void)
{
    ACC_TEST("acc_int", int, ARMCI_ACC_INT, 3, i - 5, nproc * 3 * (i - 5));
    ACC_TEST("acc_long", long, ARMCI_ACC_LNG, 7, (long)i << 33, nproc * 7 * ((long)i << 33));
    ACC_TEST("acc_float", float, ARMCI_ACC_FLT, 0.5f, 2.0f * i, nproc * (float)i);
    ACC_TEST("acc_double", double, ARMCI_ACC_DBL, -1.25, 4.0 * i + 1, nproc * -1.25 * (4.0 * i + 1));
    CPLX_TEST("acc_complex", cplx_t, ARMCI_ACC_CPL);
    CPLX_TEST("acc_double_complex", dcplx_t, ARMCI_ACC_DCP);
}

static void test_values_and_flag(void)
{
    int ok = 1, t = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    void **p = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(p, 64);
    char *mine = p[me], *theirs = p[t];
    int rc = ARMCI_PutValueInt(1000 + me, theirs, t);
    rc |= ARMCI_PutValueLong(-(1L << 40) - me, theirs + 8, t);
    rc |= ARMCI_PutValueFloat(0.25f * me, theirs + 16, t);
    rc |= ARMCI_PutValueDouble(1e300 / (me + 1), theirs + 24, t);
    EXPECT(rc == 0, "a PutValue call failed");
    ARMCI_Barrier();
    int iv;
    long lv;
    float fv;
    double dv;
    memcpy(&iv, mine, 4), memcpy(&lv, mine + 8, 8), memcpy(&fv, mine + 16, 4), memcpy(&dv, mine + 24, 8);
    EXPECT(iv == 1000 + from && lv == -(1L << 40) - from && fv == 0.25f * from && dv == 1e300 / (from + 1),
           "local values %d %ld %g %g", iv, lv, fv, dv);
    EXPECT(ARMCI_GetValueInt(theirs, t) == 1000 + me && ARMCI_GetValueLong(theirs + 8, t) == -(1L << 40) - me &&
               ARMCI_GetValueFloat(theirs + 16, t) == 0.25f * me &&
               ARMCI_GetValueDouble(theirs + 24, t) == 1e300 / (me + 1),
           "GetValue returned other values");
    report("value_forms", ok, why);
    ARMCI_Barrier();
    ARMCI_Free(p[me]);

    /* data then flag: the flag is never seen before the data */
    ok = 1;
    ARMCI_Malloc(p, 4096 + sizeof(int));
    int *data = malloc(4096);
    for (int i = 0; i < 1024; i++)
        data[i] = me * 7 + i;
    ARMCI_Barrier();
    rc = ARMCI_Put_flag(data, p[t], 4096, (int *)((char *)p[t] + 4096), 42, t);
    EXPECT(rc == 0, "ARMCI_Put_flag returned %d", rc);
    volatile int *flag = (volatile int *)((char *)p[me] + 4096);
    double t0 = armci_timer();
    while (*flag != 42 && armci_timer() - t0 < 30)
        ;
    EXPECT(*flag == 42, "flag never set");
    int *got = p[me];
    for (int i = 0; i < 1024; i++)
        EXPECT(got[i] == from * 7 + i, "data[%d] = %d when the flag was set", i, got[i]);
    report("put_flag", ok, why);
    free(data);
    ARMCI_Barrier();
    ARMCI_Free(p[me]);
    free(p);
}

static void test_regions(void)
{
    /* irregular sizes, empty slices, and addresses inside any region */
    int ok = 1, rc;
    void **a = malloc(nproc * sizeof(void *)), **b = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(a, (me + 1) * 100);
    ARMCI_Malloc(b, me % 2 ? 0 : 256);
    for (int r = 0; r < nproc; r++)
        EXPECT((r % 2 == 1) == (b[r] == NULL), "region b of %d is %p", r, b[r]);
    int t = nproc - 1;
    char last = 'z', got = 0;
    rc = ARMCI_Put(&last, (char *)a[t] + nproc * 100 - 1, 1, t); /* the last byte */
    EXPECT(rc == 0, "put to the last byte returned %d", rc);
    rc = ARMCI_Get((char *)a[t] + nproc * 100 - 1, &got, 1, t);
    EXPECT(rc == 0 && got == 'z', "get of the last byte: rc %d, '%c'", rc, got);
    char buf[16] = {0};
    rc = ARMCI_Put(buf, (char *)a[t] + nproc * 100 - 8, 16, t); /* runs past the end */
    EXPECT(rc != 0, "a put past the end of a region returned 0");
    rc = ARMCI_Put(buf, buf, 16, t); /* an address in no region */
    EXPECT(rc != 0, "a put to an address in no region returned 0");
    rc = ARMCI_Get(buf, buf + 8, 8, t);
    EXPECT(rc != 0, "a get from an address in no region returned 0");
    rc = ARMCI_Put(buf, a[t], -1, t);
    EXPECT(rc != 0, "a put of -1 bytes returned 0");
    rc = ARMCI_Put(buf, a[0], 4, nproc);
    EXPECT(rc != 0, "a put to process %d returned 0", nproc);
    rc = ARMCI_Acc(ARMCI_ACC_DBL, NULL, buf, b[0], 12, 0);
    EXPECT(rc != 0, "an accumulate of 12 bytes of doubles returned 0");
    rc = ARMCI_Acc(12345, NULL, buf, b[0], 8, 0);
    EXPECT(rc != 0, "an accumulate with an unknown op returned 0");
    rc = ARMCI_Put(buf, b[0], 0, 0);
    EXPECT(rc == 0, "a put of 0 bytes returned %d", rc);
    report("regions_and_errors", ok, why);
    ARMCI_Barrier();
    ok = 1;
    rc = ARMCI_Free(b[me]); /* NULL on odd ranks */
    EXPECT(rc == 0, "ARMCI_Free of b returned %d", rc);
    rc = ARMCI_Free(a[me]);
    EXPECT(rc == 0, "ARMCI_Free of a returned %d", rc);
    report("free_irregular", ok, why);
    free(a), free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);

    test_put_get();
    test_acc();
    test_values_and_flag();
    test_regions();

    ARMCI_Finalize();
    MPI_Finalize();
    return failures ? 1 : 0;
}
