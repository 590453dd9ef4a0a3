/* One-sided communication: every synchronization mode (fence, post/start/
 * complete/wait, lock exclusive and shared, lock_all with flush) x put,
 * get, accumulate x contiguous and derived datatypes x every target (self,
 * this node, the other node), for windows made by MPI_Win_create,
 * MPI_Win_allocate and MPI_Win_create_dynamic; concurrent accumulates and
 * fetch-and-ops from every rank checked exactly; exclusive locks
 * serializing read-modify-write; a target that computes without MPI calls
 * while the others lock, put and accumulate into it; request forms;
 * get-accumulate with every op kind; compare-and-swap; shared windows read
 * by load/store; attributes, names, info, error handlers, and the errors. */
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define R 64 /* ints per origin in every target's window */

enum { S_FENCE, S_PSCW, S_LOCK_EXCL, S_LOCK_SHARED, S_LOCK_ALL, S_NSYNC };
static const char *const sync_name[] = {"fence", "pscw", "lock_excl", "lock_shared", "lock_all"};

static MPI_Group world_group;

/* Open an access epoch to every rank (and expose ours) */
static void open_epoch(int s, MPI_Win w)
{
    switch (s) {
    case S_FENCE: OK(MPI_Win_fence(0, w)); break;
    case S_PSCW:
        OK(MPI_Win_post(world_group, 0, w));
        OK(MPI_Win_start(world_group, 0, w));
        break;
    case S_LOCK_ALL: OK(MPI_Win_lock_all(0, w)); break;
    default: break; /* per target */
    }
}

static void close_epoch(int s, MPI_Win w)
{
    switch (s) {
    case S_FENCE: OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w)); break;
    case S_PSCW:
        OK(MPI_Win_complete(w));
        OK(MPI_Win_wait(w));
        break;
    case S_LOCK_ALL: OK(MPI_Win_unlock_all(w)); break;
    default: break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void target_begin(int s, int t, MPI_Win w)
{
    if (s == S_LOCK_EXCL || s == S_LOCK_SHARED)
        OK(MPI_Win_lock(s == S_LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, w));
}

static void target_end(int s, int t, MPI_Win w)
{
    if (s == S_LOCK_EXCL || s == S_LOCK_SHARED)
        OK(MPI_Win_unlock(t, w));
    else if (s == S_LOCK_ALL)
        OK(MPI_Win_flush(t, w));
}

static int val(int origin, int target, int i, int round)
{
    return 1000000 * round + 10000 * origin + 100 * target + i;
}

/* The window: n regions of R ints (region o belongs to origin o), then an
 * accumulate area of R ints. */
static void one_mode(int flavor, int s, int round)
{
    int n = mt_size, me = mt_rank;
    size_t ints = (size_t)(n + 1) * R;
    int *mem = NULL;
    MPI_Win w;
    MPI_Aint *addr = NULL; /* dynamic: every rank's memory address */
    if (flavor == MPI_WIN_FLAVOR_CREATE) {
        mem = calloc(ints, sizeof(int));
        OK(MPI_Win_create(mem, (MPI_Aint)(ints * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    } else if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
        OK(MPI_Win_allocate((MPI_Aint)(ints * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
        memset(mem, 0, ints * sizeof(int));
    } else {
        OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
        mem = calloc(ints, sizeof(int));
        OK(MPI_Win_attach(w, mem, (MPI_Aint)(ints * sizeof(int))));
        addr = malloc((size_t)n * sizeof(MPI_Aint));
        MPI_Aint a;
        OK(MPI_Get_address(mem, &a));
        OK(MPI_Allgather(&a, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD));
    }
    int flav = 0, *pflav = NULL, flag = 0;
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &pflav, &flag));
    CHECK(flag);
    flav = *pflav;
    CHECK_EQ(flav, flavor);
    MPI_Barrier(MPI_COMM_WORLD);
#define DISP(t, idx) (addr ? addr[t] + (MPI_Aint)((idx) * sizeof(int)) : (MPI_Aint)(idx))

    /* a vector of R/2 ints, stride 2 */
    MPI_Datatype vec;
    OK(MPI_Type_vector(R / 2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    MPI_Datatype quarter; /* R/4 ints, stride 2 */
    OK(MPI_Type_vector(R / 4, 1, 2, MPI_INT, &quarter));
    OK(MPI_Type_commit(&quarter));
    /* an origin buffer is not ours again until the epoch ends: one per target */
    int (*srcs)[R] = malloc((size_t)n * sizeof(*srcs)), back[R];

    /* 1. put (contiguous) into every target's region for us */
    open_epoch(s, w);
    for (int k = 0; k < n; k++) {
        int t = (me + k) % n;
        target_begin(s, t, w);
        int *src = srcs[t];
        for (int i = 0; i < R; i++)
            src[i] = val(me, t, i, round);
        OK(MPI_Put(src, R, MPI_INT, t, DISP(t, me * R), R, MPI_INT, w));
        target_end(s, t, w);
    }
    close_epoch(s, w);
    for (int o = 0; o < n; o++)
        for (int i = 0; i < R; i++)
            CHECK_EQ(mem[o * R + i], val(o, me, i, round));

    /* 2. get with a derived origin type (the even slots) back from every target */
    open_epoch(s, w);
    for (int k = 0; k < n; k++) {
        int t = (me + n - k) % n;
        memset(back, 0xff, sizeof(back));
        target_begin(s, t, w);
        OK(MPI_Get(back, 1, vec, t, DISP(t, me * R), R / 2, MPI_INT, w));
        target_end(s, t, w);
        if (s == S_FENCE || s == S_PSCW) { /* complete only at the epoch's end: check after */
            close_epoch(s, w);
            open_epoch(s, w);
        }
        for (int i = 0; i < R / 2; i++) {
            CHECK_EQ(back[2 * i], val(me, t, i, round));
            CHECK_EQ(back[2 * i + 1], -1);
        }
    }
    close_epoch(s, w);

    /* 3. put with a derived target type: our region's odd slots := -value */
    open_epoch(s, w);
    for (int k = 0; k < n; k++) {
        int t = (me + k) % n;
        int *src = srcs[t];
        for (int i = 0; i < R / 2; i++)
            src[i] = -val(me, t, i, round);
        target_begin(s, t, w);
        OK(MPI_Put(src, R / 2, MPI_INT, t, DISP(t, me * R + 1), 1, vec, w));
        target_end(s, t, w);
    }
    close_epoch(s, w);
    for (int o = 0; o < n; o++)
        for (int i = 0; i < R; i++)
            CHECK_EQ(mem[o * R + i], i % 2 ? -val(o, me, i / 2, round) : val(o, me, i, round));

    /* 4. accumulate from every rank into every target's shared area:
     * SUM contiguous, and MAX through a vector on both sides */
    open_epoch(s, w);
    for (int k = 0; k < n; k++) {
        int t = (me + k) % n;
        int *src = srcs[t];
        for (int i = 0; i < R; i++)
            src[i] = me + i;
        target_begin(s, t, w);
        OK(MPI_Accumulate(src, R / 2, MPI_INT, t, DISP(t, n * R), R / 2, MPI_INT, MPI_SUM, w));
        OK(MPI_Accumulate(src, 1, quarter, t, DISP(t, n * R + R / 2), 1, quarter, MPI_MAX, w));
        target_end(s, t, w);
    }
    close_epoch(s, w);
    for (int i = 0; i < R / 2; i++)
        CHECK_EQ(mem[n * R + i], (long long)n * (n - 1) / 2 + (long long)n * i);
    for (int j = 0; j < R / 4; j++) {
        CHECK_EQ(mem[n * R + R / 2 + 2 * j], n - 1 + 2 * j);
        CHECK_EQ(mem[n * R + R / 2 + 2 * j + 1], 0);
    }
    OK(MPI_Type_free(&quarter));
    free(srcs);
    OK(MPI_Type_free(&vec));
    if (flavor == MPI_WIN_FLAVOR_DYNAMIC)
        OK(MPI_Win_detach(w, mem));
    OK(MPI_Win_free(&w));
    CHECK(w == MPI_WIN_NULL);
    if (flavor != MPI_WIN_FLAVOR_ALLOCATE)
        free(mem);
    free(addr);
    if (me == 0)
        printf("  %s/%d: put, get, accumulate ok\n", sync_name[s], flavor);
}

/* Counters: fetch-and-op from everyone, exclusive read-modify-write,
 * compare-and-swap, get-accumulate. */
static void atomics(void)
{
    int n = mt_size, me = mt_rank;
    long *mem;
    MPI_Win w;
    OK(MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    memset(mem, 0, 8 * sizeof(long));
    MPI_Barrier(MPI_COMM_WORLD);
    const int iters = 20;
    /* fetch_and_op SUM on rank 0's counter: every old value seen once */
    long one = 1, old, *seen = calloc((size_t)(n * iters), sizeof(long)), *all = NULL;
    OK(MPI_Win_lock_all(0, w));
    for (int i = 0; i < iters; i++) {
        OK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 0, MPI_SUM, w));
        OK(MPI_Win_flush(0, w));
        seen[i] = old;
    }
    OK(MPI_Win_unlock_all(w));
    if (me == 0)
        all = calloc((size_t)(n * iters), sizeof(long));
    OK(MPI_Gather(seen, iters, MPI_LONG, all, iters, MPI_LONG, 0, MPI_COMM_WORLD));
    if (me == 0) {
        char *hit = calloc((size_t)(n * iters), 1);
        for (int i = 0; i < n * iters; i++) {
            CHECK(all[i] >= 0 && all[i] < n * iters);
            CHECK(!hit[all[i]]);
            hit[all[i]] = 1;
        }
        free(hit);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* exclusive locks serialize a get, +1, put on the last rank's slot 1 */
    int t = n - 1;
    for (int i = 0; i < iters; i++) {
        long v;
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w));
        OK(MPI_Get(&v, 1, MPI_LONG, t, 1, 1, MPI_LONG, w));
        OK(MPI_Win_flush(t, w));
        v++;
        OK(MPI_Put(&v, 1, MPI_LONG, t, 1, 1, MPI_LONG, w));
        OK(MPI_Win_unlock(t, w));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        CHECK_EQ(mem[0], (long)n * iters);
    if (me == t)
        CHECK_EQ(mem[1], (long)n * iters);
    /* compare-and-swap: one winner takes slot 2 of rank 0 */
    long mine = me + 1, zero = 0, was = -1;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
    OK(MPI_Compare_and_swap(&mine, &zero, &was, MPI_LONG, 0, 2, w));
    OK(MPI_Win_unlock(0, w));
    int won = was == 0, winners = 0;
    OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(winners, 1);
    /* get_accumulate: SUM, REPLACE, NO_OP, MAX on slot 3..6 of the next rank */
    int nx = (me + 1) % n;
    long add = 2, res = -1;
    OK(MPI_Win_lock_all(0, w));
    OK(MPI_Get_accumulate(&add, 1, MPI_LONG, &res, 1, MPI_LONG, nx, 3, 1, MPI_LONG, MPI_SUM, w));
    OK(MPI_Win_flush(nx, w));
    CHECK_EQ(res, 0);
    OK(MPI_Fetch_and_op(&add, &res, MPI_LONG, nx, 3, MPI_NO_OP, w));
    OK(MPI_Win_flush(nx, w));
    CHECK_EQ(res, 2);
    long rep = 7;
    OK(MPI_Fetch_and_op(&rep, &res, MPI_LONG, nx, 4, MPI_REPLACE, w));
    OK(MPI_Win_flush(nx, w));
    CHECK_EQ(res, 0);
    double dv = 2.5, dres = -1;
    OK(MPI_Fetch_and_op(&dv, &dres, MPI_DOUBLE, nx, 5, MPI_MAX, w));
    OK(MPI_Win_flush(nx, w));
    CHECK(dres == 0.0);
    OK(MPI_Fetch_and_op(&dv, &dres, MPI_DOUBLE, nx, 5, MPI_PROD, w));
    OK(MPI_Win_flush(nx, w));
    CHECK(dres == 2.5);
    OK(MPI_Win_unlock_all(w));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_EQ(mem[3], 2);
    CHECK_EQ(mem[4], 7);
    double d5;
    memcpy(&d5, &mem[5], sizeof(d5));
    CHECK(d5 == 6.25);
    OK(MPI_Win_free(&w));
    free(seen);
    if (me == 0)
        printf("  atomics ok\n");
}

/* MAXLOC with MPI_2INT from every rank; request forms. */
static void pairs_and_requests(void)
{
    int n = mt_size, me = mt_rank;
    int *mem;
    MPI_Win w;
    OK(MPI_Win_allocate(64 * sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    for (int i = 0; i < 64; i++)
        mem[i] = 0;
    mem[0] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    int pair[2] = {me % 3, me};
    OK(MPI_Win_fence(0, w));
    OK(MPI_Accumulate(pair, 1, MPI_2INT, 0, 0, 1, MPI_2INT, MPI_MAXLOC, w));
    OK(MPI_Win_fence(0, w));
    if (me == 0) {
        int best = (n - 1 < 2 ? n - 1 : 2);
        CHECK_EQ(mem[0], best);
        CHECK_EQ(mem[1], best); /* the smallest rank with the value */
    }
    /* request forms inside lock_all */
    int nx = (me + 1) % n, v[4] = {me, me, me, me}, got[4] = {-1, -1, -1, -1};
    long long gres = -1;
    MPI_Request rq[4];
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_lock_all(0, w));
    OK(MPI_Rput(v, 4, MPI_INT, nx, 16, 4, MPI_INT, w, &rq[0]));
    OK(MPI_Raccumulate(v, 1, MPI_INT, nx, 32, 1, MPI_INT, MPI_SUM, w, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    OK(MPI_Win_flush(nx, w));
    OK(MPI_Rget(got, 4, MPI_INT, nx, 16, 4, MPI_INT, w, &rq[2]));
    long long eight = 8;
    OK(MPI_Rget_accumulate(&eight, 1, MPI_LONG_LONG, &gres, 1, MPI_LONG_LONG, nx, 40, 1, MPI_LONG_LONG, MPI_SUM, w,
                           &rq[3]));
    int flag = 0;
    while (!flag)
        OK(MPI_Test(&rq[2], &flag, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&rq[3], MPI_STATUS_IGNORE));
    CHECK(rq[2] == MPI_REQUEST_NULL && rq[3] == MPI_REQUEST_NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(got[i], me);
    CHECK_EQ(gres, 0);
    OK(MPI_Win_unlock_all(w));
    MPI_Barrier(MPI_COMM_WORLD);
    int prev = (me + n - 1) % n;
    CHECK_EQ(mem[4], prev);
    CHECK_EQ(mem[8], prev);
    long long g;
    memcpy(&g, &mem[10], sizeof(g));
    CHECK_EQ(g, 8);
    OK(MPI_Win_free(&w));
    if (me == 0)
        printf("  maxloc, request forms ok\n");
}

/* Passive target: rank 0 makes no MPI call while every other rank locks
 * it, puts, and counts itself in with an accumulate. */
static void passive(void)
{
    int n = mt_size, me = mt_rank;
    volatile int *mem;
    MPI_Win w;
    OK(MPI_Win_allocate((MPI_Aint)(n + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    for (int i = 0; i <= n; i++)
        mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double waited = 0;
        while (__atomic_load_n(&mem[n], __ATOMIC_ACQUIRE) != n - 1 && waited < 30) {
            sched_yield(); /* computing: no MPI call */
            clock_gettime(CLOCK_MONOTONIC, &t1);
            waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        }
        CHECK(waited < 30);
        for (int i = 1; i < n; i++)
            CHECK_EQ(mem[i], 100 + i);
    } else {
        int v = 100 + me, one = 1;
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
        OK(MPI_Put(&v, 1, MPI_INT, 0, me, 1, MPI_INT, w));
        OK(MPI_Win_unlock(0, w));
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
        OK(MPI_Accumulate(&one, 1, MPI_INT, 0, n, 1, MPI_INT, MPI_SUM, w));
        OK(MPI_Win_unlock(0, w));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_free(&w));
    if (me == 0)
        printf("  passive target ok\n");
}

/* Shared windows: the node's ranks read each other's parts with loads. */
static void shared(void)
{
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int r, n;
    MPI_Comm_rank(node, &r);
    MPI_Comm_size(node, &n);
    int *mine;
    MPI_Win w;
    OK(MPI_Win_allocate_shared((MPI_Aint)((r + 1) * sizeof(int)), sizeof(int), MPI_INFO_NULL, node, &mine, &w));
    OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w));
    for (int i = 0; i <= r; i++)
        mine[i] = 1000 * r + i;
    OK(MPI_Win_sync(w));
    MPI_Barrier(node);
    OK(MPI_Win_sync(w));
    for (int q = 0; q < n; q++) {
        MPI_Aint sz;
        int du, *p;
        OK(MPI_Win_shared_query(w, q, &sz, &du, &p));
        CHECK_EQ(sz, (q + 1) * (MPI_Aint)sizeof(int));
        CHECK_EQ(du, (int)sizeof(int));
        for (int i = 0; i <= q; i++)
            CHECK_EQ(p[i], 1000 * q + i);
    }
    /* and one-sided into a neighbour's part, once everyone has read */
    MPI_Barrier(node);
    int nx = (r + 1) % n, v = -r;
    OK(MPI_Put(&v, 1, MPI_INT, nx, 0, 1, MPI_INT, w));
    OK(MPI_Win_flush(nx, w));
    OK(MPI_Win_unlock_all(w));
    MPI_Barrier(node);
    CHECK_EQ(mine[0], -((r + n - 1) % n));
    OK(MPI_Win_free(&w));
    /* a communicator over two nodes cannot share */
    int sz;
    MPI_Comm_size(MPI_COMM_WORLD, &sz);
    if (sz > n) {
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        int *p;
        CHECK_EQ(MPI_Win_allocate_shared(4, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w), MPI_ERR_RMA_SHARED);
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    OK(MPI_Comm_free(&node));
    if (mt_rank == 0)
        printf("  shared window ok\n");
}

static int handler_calls;
static void win_handler(MPI_Win *win, int *err, ...)
{
    (void)win;
    handler_calls += *err;
}

/* Attributes, names, info, groups, error handlers and errors. */
static void objects(void)
{
    int me = mt_rank, n = mt_size;
    char buf[256];
    MPI_Win w;
    OK(MPI_Win_create(buf, sizeof(buf), 2, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    void *base;
    MPI_Aint *size;
    int *du, *model, flag;
    OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == buf);
    OK(MPI_Win_get_attr(w, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag && *size == (MPI_Aint)sizeof(buf));
    OK(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && *du == 2);
    OK(MPI_Win_get_attr(w, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED);
    int kv, val = 42, *got;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv, NULL));
    OK(MPI_Win_set_attr(w, kv, &val));
    OK(MPI_Win_get_attr(w, kv, &got, &flag));
    CHECK(flag && *got == 42);
    OK(MPI_Win_delete_attr(w, kv));
    OK(MPI_Win_get_attr(w, kv, &got, &flag));
    CHECK(!flag);
    OK(MPI_Win_free_keyval(&kv));
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Win_set_name(w, "halo"));
    OK(MPI_Win_get_name(w, name, &len));
    CHECK(!strcmp(name, "halo") && len == 4);
    MPI_Group g;
    int gs;
    OK(MPI_Win_get_group(w, &g));
    OK(MPI_Group_size(g, &gs));
    CHECK_EQ(gs, n);
    OK(MPI_Group_free(&g));
    MPI_Info info;
    char v[64];
    OK(MPI_Win_get_info(w, &info));
    OK(MPI_Info_get(info, "accumulate_ordering", 63, v, &flag));
    CHECK(flag);
    OK(MPI_Info_free(&info));
    /* errors under MPI_ERRORS_RETURN */
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    int x = 1;
    CHECK_EQ(MPI_Put(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, w), MPI_ERR_RMA_SYNC); /* no epoch */
    OK(MPI_Win_fence(0, w));
    CHECK_EQ(MPI_Put(&x, 1, MPI_INT, n, 0, 1, MPI_INT, w), MPI_ERR_RANK);
    CHECK_EQ(MPI_Put(&x, 1, MPI_INT, 0, 0, 2, MPI_INT, w), MPI_ERR_ARG); /* sizes differ */
    CHECK_EQ(MPI_Put(&x, 1, MPI_INT, 0, 1000, 1, MPI_INT, w), MPI_ERR_RMA_RANGE);
    CHECK_EQ(MPI_Accumulate(&x, 1, MPI_INT, 0, 0, 1, MPI_FLOAT, MPI_SUM, w), MPI_ERR_TYPE);
    CHECK_EQ(MPI_Accumulate(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_NO_OP, w), MPI_ERR_OP);
    CHECK_EQ(MPI_Win_fence(1, w), MPI_ERR_ASSERT);
    OK(MPI_Put(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w));
    CHECK_EQ(MPI_Win_lock(99, 0, 0, w), MPI_ERR_LOCKTYPE);
    CHECK_EQ(MPI_Win_unlock(0, w), MPI_ERR_RMA_SYNC);
    CHECK_EQ(MPI_Win_flush(0, w), MPI_ERR_RMA_SYNC);
    CHECK_EQ(MPI_Win_complete(w), MPI_ERR_RMA_SYNC);
    CHECK_EQ(MPI_Win_shared_query(w, 0, size, du, &base), MPI_ERR_RMA_FLAVOR);
    CHECK_EQ(MPI_Win_attach(w, buf, 4), MPI_ERR_RMA_FLAVOR);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w));
    CHECK_EQ(MPI_Win_free(&w), MPI_ERR_RMA_SYNC); /* a lock is held */
    OK(MPI_Win_unlock(me, w));
    MPI_Errhandler eh;
    OK(MPI_Win_create_errhandler(win_handler, &eh));
    OK(MPI_Win_set_errhandler(w, eh));
    OK(MPI_Win_call_errhandler(w, MPI_ERR_OTHER));
    CHECK_EQ(handler_calls, MPI_ERR_OTHER);
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_Win_free(&w));
    CHECK_EQ(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN);
    if (me == 0)
        printf("  objects and errors ok\n");
}

/* Fence epochs in a row, each with puts and gets that go as messages to
 * the targets on other nodes (one int, vectors, an indexed type's list of
 * pieces) beside ones that do not (16 KiB contiguous).  Epochs alternate
 * between the two halves of the window, so that a member checking what
 * epoch e left in its memory is not written by epoch e+1 (rank 0 is made
 * the slow one: the others send e+1's messages while it checks).  Then a
 * put that no fence closes, which MPI_Win_free still delivers. */
#define FM 4096 /* ints per member and half */
static int fm_val(int ep, int o, int i)
{
    return ep * 1000000 + o * 1000 + i % 1000;
}

static void fence_messages(void)
{
    int n = mt_size, me = mt_rank;
    size_t ints = (size_t)2 * n * FM;
    int *mem = calloc(ints, sizeof(int)), *src = malloc((size_t)n * FM * sizeof(int)),
        *back = malloc((size_t)n * FM * sizeof(int));
    MPI_Win w;
    OK(MPI_Win_create(mem, (MPI_Aint)(ints * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    MPI_Datatype vec, idx;
    OK(MPI_Type_vector(FM / 4, 1, 2, MPI_INT, &vec)); /* the first half's even slots */
    OK(MPI_Type_commit(&vec));
    int bl[3] = {3, 1, 5}, dp[3] = {0, 7, 11}; /* 9 ints at 100.., not regular */
    OK(MPI_Type_indexed(3, bl, dp, MPI_INT, &idx));
    OK(MPI_Type_commit(&idx));
#define REGION(ep, o) ((MPI_Aint)(((ep) % 2 * n + (o)) * FM))
    OK(MPI_Win_fence(0, w));
    for (int ep = 1; ep <= 6; ep++) {
        for (int t = 0; t < n; t++) {
            int *x = src + (size_t)t * FM;
            for (int i = 0; i < FM; i++)
                x[i] = fm_val(ep, me, i);
            MPI_Aint r = REGION(ep, me);
            if (ep % 3 == 1) {
                OK(MPI_Put(x, FM / 4, MPI_INT, t, r, 1, vec, w));
                OK(MPI_Put(x + 1, 1, MPI_INT, t, r + 1, 1, MPI_INT, w));
                OK(MPI_Put(x + FM / 2, FM / 2, MPI_INT, t, r + FM / 2, FM / 2, MPI_INT, w));
            } else if (ep % 3 == 2) {
                OK(MPI_Put(x, 9, MPI_INT, t, r + 100, 1, idx, w));
            } else { /* what epoch ep-2 (the same half) put there, through the vector on both sides */
                memset(back + (size_t)t * FM, 0xff, FM * sizeof(int));
                OK(MPI_Get(back + (size_t)t * FM, 1, vec, t, r, 1, vec, w));
            }
        }
        OK(MPI_Win_fence(0, w));
        if (me == 0)
            usleep(20000);
        for (int o = 0; o < n; o++) {
            const int *m = mem + REGION(ep, o), *b = back + (size_t)o * FM;
            if (ep % 3 == 1) {
                for (int i = 0; i < FM / 4; i++)
                    CHECK_EQ(m[2 * i], fm_val(ep, o, i));
                CHECK_EQ(m[1], fm_val(ep, o, 1));
                for (int i = FM / 2; i < FM; i++)
                    CHECK_EQ(m[i], fm_val(ep, o, i));
            } else if (ep % 3 == 2) {
                for (int bb = 0, k = 0; bb < 3; bb++)
                    for (int j = 0; j < bl[bb]; j++, k++)
                        CHECK_EQ(m[100 + dp[bb] + j], fm_val(ep, o, k));
                CHECK_EQ(m[103], 0); /* between the pieces: untouched */
            } else {
                for (int i = 0; i < FM / 4; i++) {
                    CHECK_EQ(b[2 * i], fm_val(ep - 2, me, i));
                    CHECK_EQ(b[2 * i + 1], -1);
                }
            }
        }
    }
    /* accumulates in a fence epoch (as messages to other nodes), and the
     * fetching ones behind them, which must see them (accumulate_ordering) */
    long long *am = calloc(64, sizeof(long long)), *f = calloc((size_t)n * 4, sizeof(long long));
    MPI_Win aw;
    OK(MPI_Win_create(am, 64 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &aw));
    MPI_Datatype lvec;
    OK(MPI_Type_vector(4, 1, 2, MPI_LONG_LONG, &lvec));
    OK(MPI_Type_commit(&lvec));
    long long one = me + 1, five = 5, hundred = 100, plus = 1, zero = 0, lv[8];
    for (int i = 0; i < 8; i++)
        lv[i] = i % 2 ? -1 : me * 10 + i;
    OK(MPI_Win_fence(0, aw));
    for (int t = 0; t < n; t++) {
        OK(MPI_Accumulate(&one, 1, MPI_LONG_LONG, t, 0, 1, MPI_LONG_LONG, MPI_SUM, aw));
        OK(MPI_Fetch_and_op(&zero, &f[4 * t], MPI_LONG_LONG, t, 0, MPI_NO_OP, aw));
        OK(MPI_Accumulate(&five, 1, MPI_LONG_LONG, t, 2 + me, 1, MPI_LONG_LONG, MPI_SUM, aw));
        OK(MPI_Compare_and_swap(&hundred, &five, &f[4 * t + 1], MPI_LONG_LONG, t, 2 + me, aw));
        OK(MPI_Get_accumulate(&plus, 1, MPI_LONG_LONG, &f[4 * t + 2], 1, MPI_LONG_LONG, t, 2 + me, 1,
                              MPI_LONG_LONG, MPI_SUM, aw));
        OK(MPI_Accumulate(lv, 1, lvec, t, 40, 1, lvec, MPI_MAX, aw));
    }
    OK(MPI_Win_fence(0, aw));
    CHECK_EQ(am[0], (long long)n * (n + 1) / 2);
    for (int o = 0; o < n; o++)
        CHECK_EQ(am[2 + o], 101);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(am[40 + i], i % 2 ? 0 : (n - 1) * 10 + i);
    for (int t = 0; t < n; t++) {
        CHECK(f[4 * t] >= me + 1 && f[4 * t] <= (long long)n * (n + 1) / 2);
        CHECK_EQ(f[4 * t + 1], 5);
        CHECK_EQ(f[4 * t + 2], 100);
    }
    /* the same in a start/complete epoch with everyone, where the
     * accumulates wait at the origin for complete and the fetching ones
     * cannot be messages: they must still see them */
    memset(am, 0, 64 * sizeof(long long));
    memset(f, 0, (size_t)n * 4 * sizeof(long long));
    MPI_Group all;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &all));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, aw));
    OK(MPI_Win_post(all, 0, aw));
    OK(MPI_Win_start(all, 0, aw));
    for (int t = 0; t < n; t++) {
        OK(MPI_Accumulate(&one, 1, MPI_LONG_LONG, t, 0, 1, MPI_LONG_LONG, MPI_SUM, aw));
        OK(MPI_Accumulate(&five, 1, MPI_LONG_LONG, t, 2 + me, 1, MPI_LONG_LONG, MPI_SUM, aw));
        OK(MPI_Compare_and_swap(&hundred, &five, &f[4 * t + 1], MPI_LONG_LONG, t, 2 + me, aw));
        OK(MPI_Accumulate(lv, 1, lvec, t, 40, 1, lvec, MPI_MAX, aw));
        OK(MPI_Accumulate(&plus, 1, MPI_LONG_LONG, t, 2 + me, 1, MPI_LONG_LONG, MPI_SUM, aw));
    }
    OK(MPI_Win_complete(aw));
    OK(MPI_Win_wait(aw));
    OK(MPI_Group_free(&all));
    OK(MPI_Win_fence(0, aw));
    CHECK_EQ(am[0], (long long)n * (n + 1) / 2);
    for (int o = 0; o < n; o++)
        CHECK_EQ(am[2 + o], 101);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(am[40 + i], i % 2 ? 0 : (n - 1) * 10 + i);
    for (int t = 0; t < n; t++)
        CHECK_EQ(f[4 * t + 1], 5);
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, aw));
    OK(MPI_Win_free(&aw));
    OK(MPI_Type_free(&lvec));
    free(am);
    free(f);
    /* accumulates large enough that their data goes as a second message,
     * from the origin's buffer */
    const int big = 40000; /* ints: 160 KB */
    int *bm = calloc((size_t)big, sizeof(int)), *bs = malloc((size_t)big * sizeof(int));
    MPI_Win bw;
    OK(MPI_Win_create(bm, (MPI_Aint)big * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &bw));
    for (int i = 0; i < big; i++)
        bs[i] = (me + 1) * (i % 7 + 1);
    OK(MPI_Win_fence(0, bw));
    for (int t = 0; t < n; t++)
        OK(MPI_Accumulate(bs, big, MPI_INT, t, 0, big, MPI_INT, MPI_SUM, bw));
    OK(MPI_Win_fence(0, bw));
    for (int i = 0; i < big; i++)
        CHECK_EQ(bm[i], n * (n + 1) / 2 * (i % 7 + 1));
    OK(MPI_Win_free(&bw));
    free(bm);
    free(bs);

    /* a put that no fence closes: MPI_Win_free delivers it */
    int last = 424242;
    OK(MPI_Put(&last, 1, MPI_INT, (me + 1) % n, REGION(7, me) + 5, 1, MPI_INT, w));
    OK(MPI_Win_free(&w));
    CHECK_EQ(mem[REGION(7, (me + n - 1) % n) + 5], 424242);
#undef REGION
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&idx));
    free(mem);
    free(src);
    free(back);
    if (me == 0)
        printf("  fence messages ok\n");
}

/* What a fence's messages carried is in place for every access after the
 * fence, not only for the messages of the next epoch: every member puts
 * many small pieces (a vector: messages to the members on other nodes)
 * into a region of its own in every other member's window; after the
 * fence every member reads every other member's whole window with one
 * contiguous get (more than a message carries: cross-memory attach or a
 * copy on this node, the network or the agents to another), which must
 * find every origin's pieces, the other node's too, though their target
 * may still be applying them when the get starts. */
#define FD 8192 /* ints per origin region */
static int fd_val(int ep, int o, int i)
{
    return ep * 1000000 + o * 10000 + i % 10000;
}

static void fence_then_direct(void)
{
    int n = mt_size, me = mt_rank;
    size_t ints = (size_t)n * FD;
    int *mem = calloc(ints, sizeof(int)), *src = malloc(FD * sizeof(int)), *back = malloc(ints * sizeof(int));
    MPI_Win w;
    OK(MPI_Win_create(mem, (MPI_Aint)(ints * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    MPI_Datatype vec;
    OK(MPI_Type_vector(FD / 2, 1, 2, MPI_INT, &vec)); /* the region's even slots */
    OK(MPI_Type_commit(&vec));
    OK(MPI_Win_fence(0, w));
    int bad = 0;
    for (int ep = 1; ep <= 8; ep++) {
        for (int i = 0; i < FD / 2; i++)
            src[i] = fd_val(ep, me, i);
        for (int t = 0; t < n; t++)
            if (t != me)
                OK(MPI_Put(src, FD / 2, MPI_INT, t, (MPI_Aint)me * FD, 1, vec, w));
        OK(MPI_Win_fence(0, w));
        for (int t = 0; t < n; t++) {
            if (t == me)
                continue;
            OK(MPI_Get(back, (int)ints, MPI_INT, t, 0, (int)ints, MPI_INT, w));
            OK(MPI_Win_fence(0, w)); /* (collective: every member gets from t now) */
            for (int o = 0; o < n; o++)
                for (int i = 0; o != t && i < FD / 2; i++)
                    if (back[(size_t)o * FD + 2 * (size_t)i] != fd_val(ep, o, i) && !bad++)
                        fprintf(stderr, "rank %d: epoch %d, rank %d's window, origin %d's piece %d: %d, not %d\n",
                                me, ep, t, o, i, back[(size_t)o * FD + 2 * (size_t)i], fd_val(ep, o, i));
        }
    }
    CHECK_EQ(bad, 0);
    OK(MPI_Win_free(&w));
    OK(MPI_Type_free(&vec));
    free(mem);
    free(src);
    free(back);
    if (me == 0)
        printf("  fence then direct ok\n");
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int round = 1;
    static const int flavors[] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_DYNAMIC};
    for (int f = 0; f < 3; f++)
        for (int s = 0; s < S_NSYNC; s++)
            one_mode(flavors[f], s, round++);
    fence_messages();
    fence_then_direct();
    atomics();
    pairs_and_requests();
    passive();
    shared();
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    objects();
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Group_free(&world_group));
    return mt_finish("win");
}
