/*
 * ARMCI read-modify-write, mutexes and the armci_msg_* helpers:
 * fetch-and-add counters hit by every rank (the total must be exact and
 * every ticket handed out once), swaps, a counter updated under a mutex
 * with get + put, mutexes hosted on some ranks only, collectives of every
 * type and op, point-to-point messages beside MPI's, and the locality
 * queries.  armci.h and mpi.h only; rank 0 prints "PASS name" or
 * "FAIL name: why" per check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <armci.h>

static int me, nproc, failures;

#include "report.h"

#define ITERS 200

static void test_rmw(void)
{
    void **p = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(p, 64);
    int ok = 1, rc;
    /* int counter at rank 0, long counter at the last rank */
    long long sum = 0, cnt_int = 0;
    int prev = -1, old;
    for (int i = 0; i < ITERS; i++) {
        rc = ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &old, p[0], 1, 0);
        EXPECT(rc == 0, "Rmw returned %d", rc);
        EXPECT(old > prev, "fetched %d after %d", old, prev);
        prev = old;
        sum += old;
        cnt_int++;
    }
    long lold, lprev = -1;
    for (int i = 0; i < ITERS; i++) {
        rc = ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &lold, (char *)p[nproc - 1] + 8, 3, nproc - 1);
        EXPECT(rc == 0, "Rmw long returned %d", rc);
        EXPECT(lold > lprev && lold % 3 == 0, "fetched %ld after %ld", lold, lprev);
        lprev = lold;
    }
    ARMCI_Barrier();
    int total = -1;
    long ltotal = -1;
    ARMCI_Get(p[0], &total, sizeof(int), 0);
    ARMCI_Get((char *)p[nproc - 1] + 8, &ltotal, sizeof(long), nproc - 1);
    EXPECT(total == nproc * ITERS, "int counter %d, want %d", total, nproc * ITERS);
    EXPECT(ltotal == 3L * nproc * ITERS, "long counter %ld, want %ld", ltotal, 3L * nproc * ITERS);
    /* every ticket 0 .. N-1 handed out once: the sum and the count match */
    long long n = (long long)nproc * ITERS, sums[2] = {sum, cnt_int};
    armci_msg_llgop(sums, 2, "+");
    EXPECT(sums[0] == n * (n - 1) / 2 && sums[1] == n, "tickets sum %lld over %lld", sums[0], sums[1]);
    report("rmw_fetch_and_add", ok, why);
    ARMCI_Barrier();

    /* swap: every rank swaps its id into rank 0's int; the olds and the
     * final value are {-1, 0, .., nproc-1} */
    ok = 1;
    if (me == 0) {
        int v = -1;
        long lv = -1;
        ARMCI_Put(&v, (char *)p[0] + 16, sizeof(int), 0);
        ARMCI_Put(&lv, (char *)p[0] + 24, sizeof(long), 0);
    }
    ARMCI_Barrier();
    int sw = me;
    long lsw = (1L << 40) + me;
    rc = ARMCI_Rmw(ARMCI_SWAP, &sw, (char *)p[0] + 16, 0, 0);
    EXPECT(rc == 0, "swap returned %d", rc);
    rc = ARMCI_Rmw(ARMCI_SWAP_LONG, &lsw, (char *)p[0] + 24, 0, 0);
    EXPECT(rc == 0, "swap long returned %d", rc);
    ARMCI_Barrier();
    long long s2[2] = {sw, lsw == -1 ? -1 : lsw - (1L << 40)};
    armci_msg_llgop(s2, 2, "+");
    int fin = ARMCI_GetValueInt((char *)p[0] + 16, 0);
    long lfin = ARMCI_GetValueLong((char *)p[0] + 24, 0);
    long long want = (long long)nproc * (nproc - 1) / 2 - 1;
    EXPECT(s2[0] + fin == want, "swapped-out ints sum %lld + final %d, want %lld", s2[0], fin, want);
    EXPECT(s2[1] + (lfin - (1L << 40)) == want, "swapped-out longs sum %lld + final %ld", s2[1], lfin);
    report("rmw_swap", ok, why);

    ok = 1;
    EXPECT(ARMCI_Rmw(99, &old, p[0], 1, 0) != 0, "an unknown op accepted");
    EXPECT(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &old, &old, 1, 0) != 0, "an address in no region accepted");
    EXPECT(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &old, p[0], 1, nproc) != 0, "process out of range accepted");
    report("rmw_errors", ok, why);
    ARMCI_Barrier();
    ARMCI_Free(p[me]);
    free(p);
}

static void test_mutex(void)
{
    void **p = malloc(nproc * sizeof(void *));
    int ok = 1, rc;
    rc = ARMCI_Create_mutexes(3);
    EXPECT(rc == 0, "Create_mutexes returned %d", rc);
    ARMCI_Malloc(p, me == 0 ? 2 * sizeof(long) : 0);
    /* the counter lives at rank 0, its mutex (number 2) at the last rank */
    for (int i = 0; i < ITERS / 4; i++) {
        long v;
        ARMCI_Lock(2, nproc - 1);
        ARMCI_Get(p[0], &v, sizeof(v), 0);
        double t0 = armci_timer(); /* widen the window a missing lock would leave */
        while (armci_timer() - t0 < 20e-6)
            ;
        v += 1;
        ARMCI_Put(&v, p[0], sizeof(v), 0);
        ARMCI_Unlock(2, nproc - 1);
    }
    ARMCI_Barrier();
    long total = ARMCI_GetValueLong(p[0], 0);
    EXPECT(total == (long)nproc * (ITERS / 4), "counter %ld, want %d", total, nproc * (ITERS / 4));
    report("mutex_counter", ok, why);
    ok = 1;
    EXPECT(ARMCI_Create_mutexes(1) != 0, "a second Create_mutexes accepted");
    rc = ARMCI_Destroy_mutexes();
    EXPECT(rc == 0, "Destroy_mutexes returned %d", rc);
    report("mutex_create_twice", ok, why);

    /* mutexes on rank 0 only (armci-mpi's contention test): NbPut +
     * Unlock, the unlock completing the put first */
    ok = 1;
    rc = ARMCI_Create_mutexes(me == 0 ? 1 : 0);
    EXPECT(rc == 0, "Create_mutexes returned %d", rc);
    ARMCI_Barrier();
    for (int i = 0; i < ITERS / 4; i++) {
        long v;
        ARMCI_Lock(0, 0);
        ARMCI_Get((long *)p[0] + 1, &v, sizeof(v), 0);
        v += 5;
        ARMCI_NbPut(&v, (long *)p[0] + 1, sizeof(v), 0, NULL);
        ARMCI_Unlock(0, 0);
    }
    ARMCI_Barrier();
    total = ARMCI_GetValueLong((long *)p[0] + 1, 0);
    EXPECT(total == 5L * nproc * (ITERS / 4), "counter %ld, want %d", total, 5 * nproc * (ITERS / 4));
    report("mutex_on_one_rank", ok, why);
    ARMCI_Destroy_mutexes();
    ARMCI_Free(p[me]);
    free(p);
}

static void test_msg(void)
{
    int ok = 1, r, s;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    EXPECT(armci_msg_me() == r && armci_msg_nproc() == s, "me %d nproc %d", armci_msg_me(), armci_msg_nproc());
    char text[32] = "";
    if (me == nproc - 1)
        strcpy(text, "from the last rank");
    armci_msg_brdcst(text, sizeof(text), nproc - 1);
    EXPECT(!strcmp(text, "from the last rank"), "brdcst gave '%s'", text);
    double d = me == 0 ? 3.25 : 0;
    armci_msg_bcast(&d, sizeof(d), 0);
    EXPECT(d == 3.25, "bcast gave %g", d);
    report("msg_bcast", ok, why);

    ok = 1;
    int sgn = me % 2 ? -1 : 1;
    int iv[6] = {me + 1, me + 1, me, me, sgn * (me + 1), sgn * (me + 1)};
    armci_msg_igop(iv, 1, "+");
    armci_msg_igop(iv + 1, 1, "*");
    armci_msg_igop(iv + 2, 1, "max");
    armci_msg_igop(iv + 3, 1, "min");
    armci_msg_igop(iv + 4, 1, "absmax");
    armci_msg_igop(iv + 5, 1, "absmin");
    int fact = 1;
    for (int k = 2; k <= nproc; k++)
        fact *= k;
    EXPECT(iv[0] == nproc * (nproc + 1) / 2 && iv[1] == fact && iv[2] == nproc - 1 && iv[3] == 0 &&
               iv[4] == nproc && iv[5] == 1,
           "igop: %d %d %d %d %d %d", iv[0], iv[1], iv[2], iv[3], iv[4], iv[5]);
    long lv[2] = {(long)me << 35, -(long)me};
    armci_msg_lgop(lv, 1, "+");
    armci_msg_lgop(lv + 1, 1, "absmax");
    EXPECT(lv[0] == ((long)nproc * (nproc - 1) / 2) << 35 && lv[1] == nproc - 1, "lgop: %ld %ld", lv[0], lv[1]);
    long long ll[2] = {1LL << 50, me};
    armci_msg_llgop(ll, 2, "max");
    EXPECT(ll[0] == 1LL << 50 && ll[1] == nproc - 1, "llgop: %lld %lld", ll[0], ll[1]);
    float fv[2] = {0.5f * me, -0.25f * (me + 1)};
    armci_msg_fgop(fv, 1, "+");
    armci_msg_fgop(fv + 1, 1, "absmin");
    EXPECT(fv[0] == 0.25f * nproc * (nproc - 1) && fv[1] == 0.25f, "fgop: %g %g", fv[0], fv[1]);
    double dv[3] = {1.5, me - 0.5, me + 2.0};
    armci_msg_dgop(dv, 1, "*");
    armci_msg_dgop(dv + 1, 1, "min");
    armci_msg_dgop(dv + 2, 1, "+");
    double pw = 1;
    for (int k = 0; k < nproc; k++)
        pw *= 1.5;
    EXPECT(dv[0] == pw && dv[1] == -0.5 && dv[2] == nproc * (nproc - 1) / 2.0 + 2.0 * nproc, "dgop: %g %g %g",
           dv[0], dv[1], dv[2]);
    int bits = 1 << me;
    armci_msg_gop_scope(SCOPE_ALL, &bits, 1, "or", ARMCI_INT);
    EXPECT(bits == (1 << nproc) - 1, "or gave %x", bits);
    double red = me + 1;
    armci_msg_reduce(&red, 1, "+", ARMCI_DOUBLE);
    EXPECT(me != 0 || red == nproc * (nproc + 1) / 2.0, "reduce gave %g at rank 0", red);
    report("msg_gop", ok, why);

    /* scopes: the node's processes, the node masters */
    ok = 1;
    int node = armci_domain_my_id(ARMCI_DOMAIN_SMP), here = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node);
    int one = 1;
    armci_msg_gop_scope(SCOPE_NODE, &one, 1, "+", ARMCI_INT);
    EXPECT(one == here, "SCOPE_NODE sum %d, node has %d", one, here);
    int master = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, 0) == me;
    long m = 1;
    armci_msg_gop_scope(SCOPE_MASTERS, &m, 1, "+", ARMCI_LONG);
    EXPECT(!master || m == armci_domain_count(ARMCI_DOMAIN_SMP), "SCOPE_MASTERS sum %ld on a master", m);
    EXPECT(master || m == 1, "SCOPE_MASTERS changed a non-master's value to %ld", m);
    int nid = node * 10;
    armci_msg_bcast_scope(SCOPE_NODE, &nid, sizeof(nid), 0);
    EXPECT(nid == node * 10, "node bcast gave %d", nid);
    int total = 0;
    for (int k = 0; k < armci_domain_count(ARMCI_DOMAIN_SMP); k++)
        total += armci_domain_nprocs(ARMCI_DOMAIN_SMP, k);
    EXPECT(total == nproc, "domains hold %d processes", total);
    EXPECT(armci_domain_id(ARMCI_DOMAIN_SMP, me) == node && armci_domain_same_id(ARMCI_DOMAIN_SMP, me) &&
               ARMCI_Same_node(me),
           "my own domain disagrees");
    report("msg_scopes_and_domains", ok, why);

    /* point to point: a ring, an any-source receive, and ARMCI's messages
     * never matching MPI's of the same tag */
    ok = 1;
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc, got = -1, len = -1;
    if (me % 2 == 0) {
        armci_msg_snd(7, &me, sizeof(int), to);
        armci_msg_rcv(7, &got, sizeof(int), &len, from);
    } else {
        armci_msg_rcv(7, &got, sizeof(int), &len, from);
        armci_msg_snd(7, &me, sizeof(int), to);
    }
    EXPECT(got == from && len == (int)sizeof(int), "ring got %d (%d bytes)", got, len);
    if (nproc > 1) {
        if (me == 1) {
            int a = 111, b = 222;
            MPI_Send(&a, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
            armci_msg_snd(5, &b, sizeof(int), 0);
        } else if (me == 0) {
            int a = 0, b = 0;
            int src = armci_msg_rcvany(5, &b, sizeof(int), &len);
            MPI_Recv(&a, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            EXPECT(src == 1 && b == 222 && a == 111, "armci got %d from %d, MPI got %d", b, src, a);
        }
    }
    void *addrs[64];
    addrs[me] = (void *)(long)(0x1000 * (me + 1));
    armci_exchange_address(addrs, nproc);
    for (int k = 0; k < nproc; k++)
        EXPECT(addrs[k] == (void *)(long)(0x1000 * (k + 1)), "address of %d is %p", k, addrs[k]);
    armci_msg_barrier();
    report("msg_p2p", ok, why);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);

    test_rmw();
    test_mutex();
    test_msg();

    ARMCI_Finalize();
    MPI_Finalize();
    return failures ? 1 : 0;
}
