/*
 * ARMCI strided and vector operations, blocking and nonblocking: PutS,
 * GetS, AccS over 1 to 3 stride levels; PutV, GetV, AccV with segments in
 * two regions; the Nb forms completed by ARMCI_Wait, ARMCI_Test,
 * ARMCI_WaitProc, ARMCI_WaitAll and aggregate handles; and the errors of
 * bad strides.  armci.h and mpi.h only; rank 0 prints "PASS name" or
 * "FAIL name: why" per check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <armci.h>

static int me, nproc, failures;

#include "report.h"

/* Remote array per rank: nproc slabs of R2 x R1 x R0 doubles; rank s owns
 * slab s at every target.  Local source: L2 x L1 x L0. */
#define R0 10
#define R1 7
#define R2 5
#define L0 6
#define L1 5
#define L2 4
#define SLAB (R2 * R1 * R0)

static double lval(int who, int k, int j, int i) { return who * 1e6 + k * 1e4 + j * 100 + i; }
static double rinit(int owner, int idx) { return -1.0 - owner * 1e6 - idx; }

/* Block of c[0] doubles x c[1] x c[2] at offset (o2, o1, o0) of slab me
 * at target t: levels strided levels. */
static void strided_case(void **p, int levels, const char *name, int nb)
{
    int ok = 1, t = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    int o0 = 2, o1 = 1, o2 = 1, n0 = 4, n1, n2;
    static double src[L2][L1][L0];
    for (int k = 0; k < L2; k++)
        for (int j = 0; j < L1; j++)
            for (int i = 0; i < L0; i++)
                src[k][j][i] = lval(me, k, j, i);
    /* reset every slab of my region to its initial pattern */
    double *mine = p[me];
    for (int x = 0; x < nproc * SLAB; x++)
        mine[x] = rinit(me, x);
    ARMCI_Barrier();

    /* 1 level: rows of n0 doubles; 2: rows, then planes; 3: single
     * doubles every other element on the remote side (contiguous here),
     * then rows, then planes */
    int sstr[3], dstr[3], cnt[4], step = levels == 3 ? 2 : 1;
    n1 = 3, n2 = levels >= 2 ? 2 : 1;
    int *c = cnt, *ss = sstr, *ds = dstr;
    if (levels == 3) {
        *c++ = sizeof(double);
        *ss++ = sizeof(double), *ds++ = 2 * sizeof(double);
        *c++ = n0;
    } else {
        *c++ = n0 * sizeof(double);
    }
    *c++ = n1;
    *ss++ = L0 * sizeof(double), *ds++ = R0 * sizeof(double);
    if (levels >= 2) {
        *c++ = n2;
        *ss++ = L1 * L0 * sizeof(double), *ds++ = R1 * R0 * sizeof(double);
    }
    double *dst = (double *)p[t] + me * SLAB + (o2 * R1 + o1) * R0 + o0;
    int rc;
    if (nb) {
        armci_hdl_t h;
        ARMCI_INIT_HANDLE(&h);
        rc = ARMCI_NbPutS(src, sstr, dst, dstr, cnt, levels, t, &h);
        if (rc == 0)
            rc = ARMCI_Wait(&h);
    } else {
        rc = ARMCI_PutS(src, sstr, dst, dstr, cnt, levels, t);
    }
    EXPECT(rc == 0, "PutS returned %d", rc);
    ARMCI_Barrier();
    /* my region: slab `from` has from's block, everything else its initial value */
    for (int s = 0; s < nproc; s++)
        for (int k = 0; k < R2; k++)
            for (int j = 0; j < R1; j++)
                for (int i = 0; i < R0; i++) {
                    int idx = s * SLAB + (k * R1 + j) * R0 + i;
                    int x = (i - o0) / step;
                    int in = s == from && k >= o2 && k < o2 + n2 && j >= o1 && j < o1 + n1 && i >= o0 &&
                             (i - o0) % step == 0 && x < n0;
                    double want = in ? lval(from, k - o2, j - o1, x) : rinit(me, idx);
                    EXPECT(mine[idx] == want, "slab %d (%d,%d,%d) = %.0f, want %.0f", s, k, j, i, mine[idx], want);
                }
    char nm[64];
    snprintf(nm, sizeof(nm), "%s%s", nb ? "nb_" : "", name);
    report(nm, ok, why);

    /* GetS: the same block back into a strided local buffer */
    ok = 1;
    static double back[L2][L1][L0];
    for (int k = 0; k < L2; k++)
        for (int j = 0; j < L1; j++)
            for (int i = 0; i < L0; i++)
                back[k][j][i] = -7;
    if (nb) {
        armci_hdl_t h;
        ARMCI_INIT_HANDLE(&h);
        rc = ARMCI_NbGetS(dst, dstr, back, sstr, cnt, levels, t, &h);
        double t0 = armci_timer();
        int tr = 1;
        while (rc == 0 && (tr = ARMCI_Test(&h)) == 1 && armci_timer() - t0 < 30)
            ;
        EXPECT(tr == 0, "ARMCI_Test returned %d", tr);
    } else {
        rc = ARMCI_GetS(dst, dstr, back, sstr, cnt, levels, t);
    }
    EXPECT(rc == 0, "GetS returned %d", rc);
    for (int k = 0; k < L2; k++)
        for (int j = 0; j < L1; j++)
            for (int i = 0; i < L0; i++) {
                int in = k < n2 && j < n1 && i < n0;
                double want = in ? lval(me, k, j, i) : -7;
                EXPECT(back[k][j][i] == want, "back (%d,%d,%d) = %.0f, want %.0f", k, j, i, back[k][j][i], want);
            }
    snprintf(nm, sizeof(nm), "%s%s", nb ? "nb_get" : "get", name + 3);
    report(nm, ok, why);
    ARMCI_Barrier();
}

static void test_strided(void)
{
    void **p = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(p, (armci_size_t)nproc * SLAB * sizeof(double));
    for (int nb = 0; nb < 2; nb++) {
        strided_case(p, 1, "puts_1level", nb);
        strided_case(p, 2, "puts_2levels", nb);
        strided_case(p, 3, "puts_3levels", nb);
    }

    /* AccS from every rank into one block of rank 0's slab 0, scale 0.5:
     * 1 level (rows), 2 (rows, planes), 3 (every other double, rows,
     * planes); blocking, then nonblocking completed by ARMCI_WaitProc */
    for (int run = 0; run < 6; run++) {
        int ok = 1, rc, levels = 1 + run % 3, nb = run >= 3;
        double *mine = p[me];
        for (int x = 0; x < nproc * SLAB; x++)
            mine[x] = 1.0;
        ARMCI_Barrier();
        double src[2][3][4], scale = 0.5;
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 4; i++)
                    src[k][j][i] = (me + 1) * (k * 12 + j * 4 + i);
        int step = levels == 3 ? 2 : 1, np = levels >= 2 ? 2 : 1;
        int sstr[3], dstr[3], cnt[4], *c = cnt, *ss = sstr, *ds = dstr;
        if (levels == 3) {
            *c++ = sizeof(double), *c++ = 4;
            *ss++ = sizeof(double), *ds++ = 2 * sizeof(double);
        } else {
            *c++ = 4 * sizeof(double);
        }
        *c++ = 3, *ss++ = 4 * sizeof(double), *ds++ = R0 * sizeof(double);
        if (levels >= 2)
            *c++ = 2, *ss++ = 12 * sizeof(double), *ds++ = R1 * R0 * sizeof(double);
        double *dst = (double *)p[0] + (1 * R1 + 1) * R0 + 1;
        if (nb) {
            rc = ARMCI_NbAccS(ARMCI_ACC_DBL, &scale, src, sstr, dst, dstr, cnt, levels, 0, NULL);
            if (rc == 0)
                rc = ARMCI_WaitProc(0);
        } else {
            rc = ARMCI_AccS(ARMCI_ACC_DBL, &scale, src, sstr, dst, dstr, cnt, levels, 0);
        }
        EXPECT(rc == 0, "AccS returned %d", rc);
        ARMCI_Barrier();
        static double got[SLAB];
        ARMCI_Get(p[0], got, sizeof(got), 0);
        double ranks = nproc * (nproc + 1) / 2.0;
        for (int k = 0; k < R2; k++)
            for (int j = 0; j < R1; j++)
                for (int i = 0; i < R0; i++) {
                    int x = (i - 1) / step;
                    int in = k >= 1 && k < 1 + np && j >= 1 && j < 4 && i >= 1 && (i - 1) % step == 0 && x < 4;
                    double want = in ? 1.0 + 0.5 * ranks * ((k - 1) * 12 + (j - 1) * 4 + x) : 1.0;
                    double g = got[(k * R1 + j) * R0 + i];
                    EXPECT(g == want, "(%d,%d,%d) = %g, want %g", k, j, i, g, want);
                }
        char nm[64];
        snprintf(nm, sizeof(nm), "%saccs_%dlevel%s%s", nb ? "nb_" : "", levels, levels > 1 ? "s" : "",
                 nb ? "_implicit_waitproc" : "");
        report(nm, ok, why);
        ARMCI_Barrier();
    }

    /* bad strides: errors, not crashes */
    int ok = 1, t = (me + 1) % nproc;
    double buf[64];
    int sstr[8] = {8, 8, 8, 8, 8, 8, 8, 8}, dstr[8] = {8, 8, 8, 8, 8, 8, 8, 8};
    int cnt[9] = {8, 1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT(ARMCI_PutS(buf, sstr, p[t], dstr, cnt, 8, t) != 0, "8 stride levels accepted");
    EXPECT(ARMCI_GetS(p[t], sstr, buf, dstr, cnt, -1, t) != 0, "-1 stride levels accepted");
    int negc[2] = {8, -2};
    EXPECT(ARMCI_PutS(buf, sstr, p[t], dstr, negc, 1, t) != 0, "a negative count accepted");
    int negs[1] = {-8}, c2[2] = {8, 2};
    EXPECT(ARMCI_PutS(buf, negs, p[t], dstr, c2, 1, t) != 0, "a negative source stride accepted");
    EXPECT(ARMCI_GetS(p[t], negs, buf, dstr, c2, 1, t) != 0, "a negative remote stride accepted");
    EXPECT(ARMCI_AccS(ARMCI_ACC_DBL, NULL, buf, sstr, p[t], dstr, cnt, 1, t) == 0, "a valid AccS failed");
    int c3[2] = {12, 2};
    EXPECT(ARMCI_AccS(ARMCI_ACC_DBL, NULL, buf, sstr, p[t], dstr, c3, 1, t) != 0, "12-byte double blocks accepted");
    EXPECT(ARMCI_PutS(buf, sstr, p[t], dstr, NULL, 1, t) != 0, "a NULL count accepted");
    EXPECT(ARMCI_PutS(buf, NULL, p[t], dstr, c2, 1, t) != 0, "a NULL stride array accepted");
    int big[2] = {8, 1 << 30};
    EXPECT(ARMCI_PutS(buf, sstr, p[t], dstr, big, 1, t) != 0, "a block past the region accepted");
    EXPECT(ARMCI_NbPutS(buf, sstr, p[t], dstr, cnt, 9, t, NULL) != 0, "9 stride levels accepted (nb)");
    int zero[3] = {8, 0, 5};
    EXPECT(ARMCI_PutS(buf, sstr, p[t], dstr, zero, 2, t) == 0, "a transfer with a zero count failed");
    EXPECT(ARMCI_PutS(buf, sstr, p[t], dstr, cnt, 7, t) == 0, "7 stride levels refused");
    report("strided_errors", ok, why);
    ARMCI_Barrier();
    ARMCI_Free(p[me]);
    free(p);
}

/* Vector forms: 2 descriptors whose segments lie in two regions. */
static void test_vector(void)
{
    void **a = malloc(nproc * sizeof(void *)), **b = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(a, 64 * sizeof(int));
    ARMCI_Malloc(b, 64 * sizeof(int));
    int t = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    for (int nb = 0; nb < 2; nb++) {
        int ok = 1, rc;
        memset(a[me], 0, 64 * sizeof(int));
        memset(b[me], 0, 64 * sizeof(int));
        ARMCI_Barrier();
        int src[16];
        for (int i = 0; i < 16; i++)
            src[i] = me * 100 + i;
        /* d0: 4 segments of 2 ints: a[0..1], b[10..11], a[20..21], b[30..31];
         * d1: 3 segments of 1 int: b[50], a[51], a[60] */
        void *s0[4], *d0[4], *s1[3], *d1[3];
        int *ra = a[t], *rb = b[t];
        for (int k = 0; k < 4; k++) {
            s0[k] = &src[2 * k];
            d0[k] = (k % 2 ? rb : ra) + 10 * k;
        }
        s1[0] = &src[8], d1[0] = rb + 50;
        s1[1] = &src[9], d1[1] = ra + 51;
        s1[2] = &src[10], d1[2] = ra + 60;
        armci_giov_t v[2] = {{s0, d0, 4, 2 * sizeof(int)}, {s1, d1, 3, sizeof(int)}};
        armci_hdl_t h;
        ARMCI_INIT_HANDLE(&h);
        rc = nb ? ARMCI_NbPutV(v, 2, t, &h) : ARMCI_PutV(v, 2, t);
        if (nb && rc == 0)
            rc = ARMCI_Wait(&h);
        EXPECT(rc == 0, "PutV returned %d", rc);
        ARMCI_Barrier();
        int *la = a[me], *lb = b[me];
        for (int k = 0; k < 4; k++)
            for (int e = 0; e < 2; e++) {
                int got = (k % 2 ? lb : la)[10 * k + e];
                EXPECT(got == from * 100 + 2 * k + e, "segment %d.%d = %d", k, e, got);
            }
        EXPECT(lb[50] == from * 100 + 8 && la[51] == from * 100 + 9 && la[60] == from * 100 + 10,
               "second descriptor: %d %d %d", lb[50], la[51], la[60]);
        EXPECT(la[2] == 0 && lb[0] == 0 && la[50] == 0, "untouched ints changed");
        report(nb ? "nb_putv_two_regions" : "putv_two_regions", ok, why);

        /* GetV: the same segments back */
        ok = 1;
        int back[16];
        memset(back, 0, sizeof(back));
        void *gs0[4], *gd0[4], *gs1[3], *gd1[3];
        for (int k = 0; k < 4; k++)
            gs0[k] = d0[k], gd0[k] = &back[2 * k];
        for (int k = 0; k < 3; k++)
            gs1[k] = d1[k], gd1[k] = &back[8 + k];
        armci_giov_t g[2] = {{gs0, gd0, 4, 2 * sizeof(int)}, {gs1, gd1, 3, sizeof(int)}};
        rc = nb ? ARMCI_NbGetV(g, 2, t, NULL) : ARMCI_GetV(g, 2, t);
        if (nb && rc == 0)
            rc = ARMCI_WaitAll();
        EXPECT(rc == 0, "GetV returned %d", rc);
        for (int i = 0; i < 11; i++)
            EXPECT(back[i] == me * 100 + i, "back[%d] = %d", i, back[i]);
        report(nb ? "nb_getv_implicit_waitall" : "getv_two_regions", ok, why);
        ARMCI_Barrier();

        /* AccV from every rank into rank 0's a[0..3] and b[8..11] */
        ok = 1;
        memset(a[me], 0, 64 * sizeof(int));
        memset(b[me], 0, 64 * sizeof(int));
        ARMCI_Barrier();
        int one[4] = {1, 2, 3, 4}, scale = 2;
        void *as[2] = {one, one}, *ad[2] = {a[0], (int *)b[0] + 8};
        armci_giov_t acc = {as, ad, 2, 4 * sizeof(int)};
        rc = nb ? ARMCI_NbAccV(ARMCI_ACC_INT, &scale, &acc, 1, 0, &h) : ARMCI_AccV(ARMCI_ACC_INT, &scale, &acc, 1, 0);
        if (nb && rc == 0)
            rc = ARMCI_Wait(&h);
        EXPECT(rc == 0, "AccV returned %d", rc);
        ARMCI_Barrier();
        int ga[4], gb[4];
        ARMCI_Get(a[0], ga, sizeof(ga), 0);
        ARMCI_Get((int *)b[0] + 8, gb, sizeof(gb), 0);
        for (int i = 0; i < 4; i++) {
            int want = 2 * nproc * (i + 1);
            EXPECT(ga[i] == want && gb[i] == want, "a[%d] = %d, b[%d] = %d, want %d", i, ga[i], 8 + i, gb[i], want);
        }
        report(nb ? "nb_accv" : "accv", ok, why);
        ARMCI_Barrier();
    }
    /* errors */
    int ok = 1, buf[4];
    void *ps[1] = {buf}, *pd[1] = {buf};
    armci_giov_t bad = {ps, pd, 1, 4};
    EXPECT(ARMCI_PutV(&bad, 1, t) != 0, "a segment in no region accepted");
    armci_giov_t neg = {ps, pd, -1, 4};
    EXPECT(ARMCI_PutV(&neg, 1, t) != 0, "a negative segment count accepted");
    EXPECT(ARMCI_GetV(&bad, -1, t) != 0, "a negative descriptor count accepted");
    report("vector_errors", ok, why);
    ARMCI_Barrier();
    ARMCI_Free(b[me]);
    ARMCI_Free(a[me]);
    free(a), free(b);
}

/* Nonblocking contiguous forms and handles. */
static void test_nb(void)
{
    void **p = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(p, 4096 * sizeof(long));
    int ok = 1, rc, t = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    long *src = malloc(4096 * sizeof(long));
    for (int i = 0; i < 4096; i++)
        src[i] = (long)me << 32 | i;
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    EXPECT(ARMCI_Test(&h) == 0, "ARMCI_Test of a fresh handle is not 0");
    EXPECT(ARMCI_Wait(&h) == 0, "ARMCI_Wait of a fresh handle is not 0");
    rc = ARMCI_NbPut(src, p[t], 4096 * sizeof(long), t, &h);
    EXPECT(rc == 0, "NbPut returned %d", rc);
    rc = ARMCI_Wait(&h);
    EXPECT(rc == 0, "Wait returned %d", rc);
    ARMCI_Barrier();
    long *mine = p[me];
    for (int i = 0; i < 4096; i++)
        EXPECT(mine[i] == ((long)from << 32 | i), "[%d] = %lx", i, mine[i]);
    report("nb_put_wait", ok, why);

    /* NbGet completed by ARMCI_Test, polled with a bound */
    ok = 1;
    long *back = calloc(4096, sizeof(long));
    rc = ARMCI_NbGet(p[t], back, 4096 * sizeof(long), t, &h);
    int tr = 1;
    double t0 = armci_timer();
    while (rc == 0 && (tr = ARMCI_Test(&h)) == 1 && armci_timer() - t0 < 30)
        ;
    EXPECT(rc == 0 && tr == 0, "NbGet %d, Test %d", rc, tr);
    for (int i = 0; i < 4096; i++)
        EXPECT(back[i] == ((long)me << 32 | i), "back[%d] = %lx", i, back[i]);
    report("nb_get_test", ok, why);
    ARMCI_Barrier();

    /* an aggregate handle: 8 puts of 512 longs, one wait */
    ok = 1;
    ARMCI_INIT_HANDLE(&h);
    ARMCI_SET_AGGREGATE_HANDLE(&h);
    for (int i = 0; i < 4096; i++)
        src[i] = -(long)i - me;
    for (int k = 0; k < 8; k++) {
        rc = ARMCI_NbPut(src + 512 * k, (long *)p[t] + 512 * k, 512 * sizeof(long), t, &h);
        EXPECT(rc == 0, "aggregate NbPut %d returned %d", k, rc);
    }
    ARMCI_UNSET_AGGREGATE_HANDLE(&h);
    rc = ARMCI_Wait(&h);
    EXPECT(rc == 0, "Wait returned %d", rc);
    ARMCI_Barrier();
    for (int i = 0; i < 4096; i++)
        EXPECT(mine[i] == -(long)i - from, "[%d] = %ld", i, mine[i]);
    report("nb_aggregate_handle", ok, why);

    /* implicit handles: a run of NbPut with NULL, NbPutValue, NbAcc; then WaitAll */
    ok = 1;
    ARMCI_Barrier();
    for (int k = 0; k < 300; k++) {
        rc = ARMCI_NbPutValueLong(k * 3L + me, (long *)p[t] + k, t, NULL);
        EXPECT(rc == 0, "NbPutValueLong %d returned %d", k, rc);
    }
    long add[4] = {1, 1, 1, 1}, sc = 5;
    rc = ARMCI_NbAcc(ARMCI_ACC_LNG, &sc, add, (long *)p[t] + 1000, sizeof(add), t, NULL);
    EXPECT(rc == 0, "NbAcc returned %d", rc);
    armci_hdl_t hv;
    ARMCI_INIT_HANDLE(&hv);
    rc = ARMCI_NbPutValueInt(77 + me, (long *)p[t] + 2000, t, &hv); /* the value's copy is the library's */
    EXPECT(rc == 0, "NbPutValueInt returned %d", rc);
    EXPECT(ARMCI_Wait(&hv) == 0, "Wait of NbPutValueInt failed");
    rc = ARMCI_WaitAll();
    EXPECT(rc == 0, "WaitAll returned %d", rc);
    ARMCI_Barrier();
    for (int k = 0; k < 300; k++)
        EXPECT(mine[k] == k * 3L + from, "[%d] = %ld", k, mine[k]);
    for (int k = 0; k < 4; k++)
        EXPECT(mine[1000 + k] == -(long)(1000 + k) - from + 5, "acc [%d] = %ld", 1000 + k, mine[1000 + k]);
    int iv;
    memcpy(&iv, &mine[2000], sizeof(int));
    EXPECT(iv == 77 + from, "NbPutValueInt wrote %d", iv);
    report("nb_implicit_waitall", ok, why);

    /* many operations under one aggregate handle (GA's aggregate test):
     * 2000 NbPutValueDouble, then NbPutS with 0 levels and NULL strides */
    ok = 1;
    ARMCI_Barrier();
    ARMCI_INIT_HANDLE(&h);
    ARMCI_SET_AGGREGATE_HANDLE(&h);
    double *dm = (double *)mine, *dt = p[t];
    for (int k = 0; k < 2000 && ok; k++) {
        rc = ARMCI_NbPutValueDouble(k * 0.5 + me, dt + k, t, &h);
        EXPECT(rc == 0, "NbPutValueDouble %d returned %d", k, rc);
    }
    double tail[96];
    for (int k = 0; k < 96; k++)
        tail[k] = -k - me;
    for (int k = 0; k < 96 && ok; k += 8) {
        int bytes = 8 * sizeof(double);
        rc = ARMCI_NbPutS(&tail[k], NULL, dt + 2000 + k, NULL, &bytes, 0, t, &h);
        EXPECT(rc == 0, "NbPutS with 0 levels returned %d", rc);
    }
    rc = ARMCI_Wait(&h);
    EXPECT(rc == 0, "Wait returned %d", rc);
    ARMCI_Barrier();
    for (int k = 0; k < 2000; k++)
        EXPECT(dm[k] == k * 0.5 + from, "[%d] = %g", k, dm[k]);
    for (int k = 0; k < 96; k++)
        EXPECT(dm[2000 + k] == -k - from, "[%d] = %g", 2000 + k, dm[2000 + k]);
    report("nb_aggregate_many", ok, why);

    /* a handle reused before its wait: the earlier operation completes first */
    ok = 1;
    ARMCI_Barrier();
    ARMCI_INIT_HANDLE(&h);
    for (int k = 0; k < 4; k++) {
        long v = 1000 + k;
        memcpy(&src[k], &v, sizeof(v));
        rc = ARMCI_NbPut(&src[k], (long *)p[t] + 3000, sizeof(long), t, &h);
        EXPECT(rc == 0, "NbPut %d returned %d", k, rc);
    }
    EXPECT(ARMCI_Wait(&h) == 0, "Wait failed");
    ARMCI_Fence(t);
    ARMCI_Barrier();
    EXPECT(mine[3000] == 1003, "reused handle: last value %ld", mine[3000]);
    report("nb_handle_reuse", ok, why);
    ARMCI_Barrier();
    free(back);
    free(src);
    ARMCI_Free(p[me]);
    free(p);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);

    test_strided();
    test_vector();
    test_nb();

    ARMCI_Finalize();
    MPI_Finalize();
    return failures ? 1 : 0;
}
