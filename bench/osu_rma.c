/*
 * One-sided latency and bandwidth as the OSU micro-benchmarks measure them
 * (osu_put_latency, osu_get_latency, osu_acc_latency, osu_put_bw,
 * osu_get_bw), plus MPI_Put of a vector type; plain MPI, built with each
 * MPI's mpicc (bench/osu_rma.py runs them side by side).  2 ranks: rank 0
 * is the origin, rank 1 the target.
 *
 *   latency  per iteration: open the epoch, one operation, close it
 *              lock   MPI_Win_lock(SHARED, 1) .. MPI_Win_unlock
 *              flush  (lock held for the whole run) .. MPI_Win_flush
 *              fence  MPI_Win_fence .. MPI_Win_fence (both ranks)
 *              pscw   start .. complete at 0, post .. wait at 1
 *   bw       the same with 64 operations from one buffer per epoch
 *   vec      MPI_Put of 1024 doubles at stride 2 (vector on both sides)
 *
 * Windows made by MPI_Win_create, MPI_Win_allocate or
 * MPI_Win_create_dynamic.  Each value is the median of --reps runs, each
 * --time-ms long at least (10 warm-up iterations before).  Output lines:
 *   test op sync win bytes value      (us, or MB/s for bw)
 *
 *   osu_rma [--tests lat,bw,vec] [--ops put,get,acc] [--syncs lock,flush,fence,pscw]
 *           [--wins create,allocate,dynamic] [--lat-sizes 8] [--bw-sizes 1048576]
 *           [--reps 5] [--time-ms 20]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOCK, FLUSH, FENCE, PSCW };
enum { PUT, GET, ACC };
static const char *const sync_names[] = {"lock", "flush", "fence", "pscw"};
static const char *const op_names[] = {"put", "get", "acc"};
static const char *const win_names[] = {"create", "allocate", "dynamic"};
#define WINDOW 64

static int rank;
static MPI_Group peer_group;

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return 1;
    return 0;
}

typedef struct win {
    MPI_Win w;
    char *mem;
    MPI_Aint disp0;          /* the target's displacement of its buffer's start */
} win_t;

static void win_make(int kind, size_t bytes, win_t *x)
{
    memset(x, 0, sizeof(*x));
    if (kind == 1) {
        MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &x->mem, &x->w);
    } else {
        MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &x->mem);
        if (kind == 0) {
            MPI_Win_create(x->mem, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &x->w);
        } else {
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &x->w);
            MPI_Win_attach(x->w, x->mem, (MPI_Aint)bytes);
            MPI_Aint a;
            MPI_Get_address(x->mem, &a);
            MPI_Bcast(&a, 1, MPI_AINT, 1, MPI_COMM_WORLD); /* the target's address */
            x->disp0 = a;
        }
    }
    memset(x->mem, 1, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void win_drop(int kind, win_t *x)
{
    if (kind == 2)
        MPI_Win_detach(x->w, x->mem);
    MPI_Win_free(&x->w);
    if (kind != 1)
        MPI_Free_mem(x->mem);
}

static void op_once(int op, char *buf, size_t bytes, MPI_Datatype vec, win_t *x)
{
    if (vec != MPI_DATATYPE_NULL) {
        MPI_Put(buf, 1, vec, 1, x->disp0, 1, vec, x->w);
        return;
    }
    switch (op) {
    case PUT: MPI_Put(buf, (int)bytes, MPI_CHAR, 1, x->disp0, (int)bytes, MPI_CHAR, x->w); break;
    case GET: MPI_Get(buf, (int)bytes, MPI_CHAR, 1, x->disp0, (int)bytes, MPI_CHAR, x->w); break;
    default:
        MPI_Accumulate(buf, (int)(bytes / 4), MPI_INT, 1, x->disp0, (int)(bytes / 4), MPI_INT, MPI_SUM, x->w);
        break;
    }
}

/* iters iterations of nops operations per epoch; seconds */
static double run(int sync, int op, char *buf, size_t bytes, MPI_Datatype vec, int nops, int iters, win_t *x)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (sync == FLUSH && rank == 0)
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, x->w);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        switch (sync) {
        case LOCK:
        case FLUSH:
            if (rank != 0)
                break;
            if (sync == LOCK)
                MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, x->w);
            for (int k = 0; k < nops; k++)
                op_once(op, buf, bytes, vec, x);
            if (sync == LOCK)
                MPI_Win_unlock(1, x->w);
            else
                MPI_Win_flush(1, x->w);
            break;
        case FENCE:
            MPI_Win_fence(0, x->w);
            if (rank == 0)
                for (int k = 0; k < nops; k++)
                    op_once(op, buf, bytes, vec, x);
            MPI_Win_fence(0, x->w);
            break;
        default:
            if (rank == 0) {
                MPI_Win_start(peer_group, 0, x->w);
                for (int k = 0; k < nops; k++)
                    op_once(op, buf, bytes, vec, x);
                MPI_Win_complete(x->w);
            } else {
                MPI_Win_post(peer_group, 0, x->w);
                MPI_Win_wait(x->w);
            }
            break;
        }
    }
    double t = MPI_Wtime() - t0;
    if (sync == FLUSH && rank == 0)
        MPI_Win_unlock(1, x->w);
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* seconds per iteration: the median of reps runs of at least time_ms */
static double measure(int sync, int op, char *buf, size_t bytes, MPI_Datatype vec, int nops, int reps, double time_ms,
                      win_t *x)
{
    run(sync, op, buf, bytes, vec, nops, 10, x);
    int iters = 10;
    double t;
    while ((t = run(sync, op, buf, bytes, vec, nops, iters, x)) < time_ms * 1e-3 && iters < (1 << 24))
        iters *= 2;
    double v[64];
    if (reps > 64)
        reps = 64;
    v[0] = t / iters;
    for (int r = 1; r < reps; r++)
        v[r] = run(sync, op, buf, bytes, vec, nops, iters, x) / iters;
    qsort(v, (size_t)reps, sizeof(double), cmpd);
    return v[reps / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *tests = "lat,bw,vec", *ops = "put,get,acc", *syncs = "lock,flush,fence,pscw",
               *wins = "create,allocate,dynamic", *lat_sizes = "8", *bw_sizes = "1048576";
    int reps = 5;
    double time_ms = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--tests")) tests = v;
        else if (!strcmp(k, "--ops")) ops = v;
        else if (!strcmp(k, "--syncs")) syncs = v;
        else if (!strcmp(k, "--wins")) wins = v;
        else if (!strcmp(k, "--lat-sizes")) lat_sizes = v;
        else if (!strcmp(k, "--bw-sizes")) bw_sizes = v;
        else if (!strcmp(k, "--reps")) reps = atoi(v);
        else if (!strcmp(k, "--time-ms")) time_ms = atof(v);
        else {
            if (rank == 0)
                fprintf(stderr, "osu_rma: unknown option %s\n", k);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (n != 2) {
        if (rank == 0)
            fprintf(stderr, "osu_rma: run it with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int peer = 1 - rank;
    MPI_Group_incl(world, 1, &peer, &peer_group);
    MPI_Group_free(&world);
    size_t maxb = 2 * 1024 * 8;
    for (const char *p = bw_sizes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if ((size_t)atol(p) > maxb)
            maxb = (size_t)atol(p);
    for (const char *p = lat_sizes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if ((size_t)atol(p) > maxb)
            maxb = (size_t)atol(p);
    char *buf;
    MPI_Alloc_mem((MPI_Aint)maxb, MPI_INFO_NULL, &buf);
    memset(buf, 2, maxb);
    MPI_Datatype vec;
    MPI_Type_vector(1024, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    if (rank == 0)
        printf("# test op sync win bytes value (us; bw: MB/s)\n");
    for (int wk = 0; wk < 3; wk++) {
        if (!listed(wins, win_names[wk]))
            continue;
        win_t x;
        win_make(wk, maxb, &x);
        for (int s = 0; s < 4; s++) {
            if (!listed(syncs, sync_names[s]))
                continue;
            for (int t = 0; t < 3; t++) {
                const char *tn = t == 0 ? "lat" : t == 1 ? "bw" : "vec";
                if (!listed(tests, tn))
                    continue;
                for (int op = 0; op < 3; op++) {
                    if (!listed(ops, op_names[op]) || (t == 2 && op != PUT))
                        continue;
                    const char *sizes = t == 0 ? lat_sizes : t == 1 ? bw_sizes : "8192";
                    for (const char *p = sizes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
                        size_t b = (size_t)atol(p);
                        double sec = measure(s, op, buf, b, t == 2 ? vec : MPI_DATATYPE_NULL, t == 1 ? WINDOW : 1,
                                             reps, time_ms, &x);
                        double v = t == 1 ? (double)b * WINDOW / sec / 1e6 : sec * 1e6;
                        if (rank == 0)
                            printf("%s %s %s %s %zu %.3f\n", tn, op_names[op], sync_names[s], win_names[wk], b, v);
                        fflush(stdout);
                    }
                }
            }
        }
        win_drop(wk, &x);
    }
    MPI_Type_free(&vec);
    MPI_Group_free(&peer_group);
    MPI_Free_mem(buf);
    MPI_Finalize();
    return 0;
}
