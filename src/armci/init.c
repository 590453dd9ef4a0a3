/*
 * ARMCI: start and end, errors, memory (ARMCI_Malloc's regions), locality.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "armci/armci_impl.h"

kn_armci_t kn_armci;

static int rank_for_log(void)
{
    knit_ctx_t *ctx = knit_ctx_current();
    return ctx ? knit_rank(ctx) : -1;
}

knit_status_t kn_armci_err(const char *fn, knit_status_t st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "armci: rank %d: %s: %s\n", rank_for_log(), fn, msg);
    return st;
}

static __attribute__((noreturn)) void die_msg(int code, const char *msg)
{
    knit_ctx_t *ctx = knit_ctx_current();
    if (code <= 0 || code > 255)
        code = 1;
    if (ctx)
        knit_abort(ctx, code, msg);
    /* knit is not started: no job to end but this process */
    fprintf(stderr, "armci: %s\n", msg);
    exit(code);
}

void kn_armci_die(const char *fn, const char *fmt, ...)
{
    char msg[512], line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "%s: %s", fn, msg);
    die_msg(1, line);
}

void kn_armci_need_init(const char *fn)
{
    if (!kn_armci.initialized)
        kn_armci_die(fn, "called before ARMCI_Init (or after ARMCI_Finalize)");
}

void ARMCI_Error(const char *msg, int code)
{
    char line[600];
    snprintf(line, sizeof(line), "ARMCI_Error: %s: %d", msg ? msg : "(no message)", code);
    die_msg(code, line);
}

void ARMCI_Cleanup(void)
{
    /* nothing of the process outlives it: knit's files belong to knitrun */
}

/* ------------------------------------------------------- start and end */

int ARMCI_Init_args(int *argc, char ***argv)
{
    if (kn_armci.initialized)
        return 0;
    knit_ctx_t *ctx = knit_ctx_current();
    int own = 0;
    if (!ctx) {
        /* as armci-mpi: a program that did not start MPI gets it started */
        if (MPI_Init(argc, argv) != MPI_SUCCESS)
            return kn_armci_err("ARMCI_Init", KNIT_ERR_STATE, "MPI_Init failed");
        ctx = knit_ctx_current();
        if (!ctx)
            return kn_armci_err("ARMCI_Init", KNIT_ERR_STATE, "knit is not running after MPI_Init");
        own = 1;
    }
    knit_comm_t *world = knit_comm_world(ctx);
    if (!world)
        return kn_armci_err("ARMCI_Init", KNIT_ERR_STATE, "no world communicator");
    memset(&kn_armci, 0, sizeof(kn_armci));
    kn_armci.ctx = ctx;
    kn_armci.world = world;
    kn_armci.own_mpi = own;
    kn_armci.me = knit_comm_rank(world);
    kn_armci.nproc = knit_comm_size(world);
    kn_armci.next_serial = 1;
    kn_armci.reap_at = 256;
    /* handle ids carry a constant high half, so that a handle the program
     * never initialized is unlikely to name a live one */
    kn_armci.next_hid = 0x4b4e495400000001ull;
    kn_armci.initialized = 1;
    return 0;
}

int ARMCI_Init(void)
{
    return ARMCI_Init_args(NULL, NULL);
}

int ARMCI_Initialized(void)
{
    return kn_armci.initialized;
}

int ARMCI_Finalize(void)
{
    if (!kn_armci.initialized)
        return 0;
    knit_status_t err = kn_armci_complete(-1, NULL, 1);
    knit_status_t fst = kn_armci_fence_remote();
    if (err == 0 && fst < 0)
        err = fst;
    if (kn_armci.mutex_win) {
        knit_status_t st = ARMCI_Destroy_mutexes();
        if (st < 0 && err == 0)
            err = st;
    }
    /* the regions still allocated, oldest first: the same order everywhere */
    while (kn_armci.regions) {
        kn_armci_region_t **pp = &kn_armci.regions;
        while ((*pp)->next)
            pp = &(*pp)->next;
        kn_armci_region_t *r = *pp;
        knit_status_t st = knit_win_free(r->win);
        if (st < 0 && err == 0)
            err = kn_armci_err("ARMCI_Finalize", st, "freeing a region: %s", knit_strerror(st));
        *pp = NULL;
        free(r);
    }
    kn_armci_msg_fini();
    int own = kn_armci.own_mpi;
    memset(&kn_armci, 0, sizeof(kn_armci));
    if (own && MPI_Finalize() != MPI_SUCCESS && err == 0)
        err = KNIT_ERR_STATE;
    return err;
}

/* -------------------------------------------------------------- memory */

kn_armci_region_t *kn_armci_region_of(int proc, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    if (a + len < a)
        return NULL;
    kn_armci_region_t *r = kn_armci.last_hit;
    for (int pass = 0; pass < 2; pass++) {
        for (; r; r = pass ? r->next : NULL) {
            uintptr_t base = (uintptr_t)knit_win_base(r->win, proc);
            size_t size = knit_win_size(r->win, proc);
            if (size && a >= base && a + len <= base + size) {
                kn_armci.last_hit = r;
                return r;
            }
        }
        r = kn_armci.regions;
    }
    return NULL;
}

int ARMCI_Malloc(void **ptr_arr, armci_size_t bytes)
{
    kn_armci_need_init("ARMCI_Malloc");
    /* the other processes are in the collective: a local error cannot be
     * returned without leaving them waiting */
    if (!ptr_arr || bytes < 0)
        kn_armci_die("ARMCI_Malloc", "%s", !ptr_arr ? "ptr_arr is NULL" : "negative size");
    kn_armci_region_t *r = calloc(1, sizeof(*r));
    if (!r)
        kn_armci_die("ARMCI_Malloc", "out of memory");
    knit_status_t st = knit_mem_alloc(kn_armci.world, (size_t)bytes, &r->win);
    if (st < 0) {
        free(r);
        return kn_armci_err("ARMCI_Malloc", st, "%ld bytes: %s", (long)bytes, knit_strerror(st));
    }
    r->serial = kn_armci.next_serial++;
    r->next = kn_armci.regions;
    kn_armci.regions = r;
    for (int i = 0; i < kn_armci.nproc; i++)
        ptr_arr[i] = knit_win_size(r->win, i) ? knit_win_base(r->win, i) : NULL;
    return 0;
}

int ARMCI_Free(void *ptr)
{
    kn_armci_need_init("ARMCI_Free");
    kn_armci_region_t *mine = NULL;
    if (ptr) {
        for (kn_armci_region_t *r = kn_armci.regions; r && !mine; r = r->next)
            if (knit_win_size(r->win, kn_armci.me) && knit_win_base(r->win, kn_armci.me) == ptr)
                mine = r;
    }
    /* agree on the region: a process that allocated 0 bytes passes NULL
     * and learns it from the others; [0] max serial, [1] -min serial,
     * [2] someone passed an address that is no region's */
    int64_t v[3] = {mine ? mine->serial : -1, mine ? -mine->serial : INT64_MIN, ptr && !mine};
    knit_op_t max = {.kind = KNIT_OP_MAX};
    knit_status_t st = knit_allreduce(kn_armci.world, KNIT_IN_PLACE, v, 3, KNIT_INT64, &max);
    if (st < 0)
        return kn_armci_err("ARMCI_Free", st, "agreeing on the region: %s", knit_strerror(st));
    if (v[2])
        return kn_armci_err("ARMCI_Free", KNIT_ERR_INVAL, "%s",
                            ptr && !mine ? "the address is not one that ARMCI_Malloc returned here"
                                         : "another process named an address ARMCI_Malloc did not return");
    kn_armci_region_t *r = NULL, **pp;
    if (v[0] < 0) {
        /* every process passed NULL: the newest region of 0 bytes everywhere */
        for (r = kn_armci.regions; r; r = r->next) {
            int empty = 1;
            for (int i = 0; i < kn_armci.nproc && empty; i++)
                empty = knit_win_size(r->win, i) == 0;
            if (empty)
                break;
        }
        if (!r)
            return kn_armci_err("ARMCI_Free", KNIT_ERR_INVAL, "every process passed NULL and no region is empty");
    } else if (v[0] != -v[1]) {
        return kn_armci_err("ARMCI_Free", KNIT_ERR_INVAL, "the processes named different regions");
    } else {
        for (r = kn_armci.regions; r && r->serial != v[0]; r = r->next)
            ;
        if (!r)
            return kn_armci_err("ARMCI_Free", KNIT_ERR_STATE, "region %lld is unknown here", (long long)v[0]);
    }
    knit_status_t err = kn_armci_complete(-1, r, 1);
    for (pp = &kn_armci.regions; *pp != r; pp = &(*pp)->next)
        ;
    *pp = r->next;
    if (kn_armci.last_hit == r)
        kn_armci.last_hit = NULL;
    st = knit_win_free(r->win);
    free(r);
    if (st < 0)
        return kn_armci_err("ARMCI_Free", st, "%s", knit_strerror(st));
    return err;
}

void *ARMCI_Malloc_local(armci_size_t bytes)
{
    void *p = NULL;
    if (bytes < 0) {
        kn_armci_err("ARMCI_Malloc_local", KNIT_ERR_INVAL, "negative size %ld", (long)bytes);
        return NULL;
    }
    if (posix_memalign(&p, 64, bytes ? (size_t)bytes : 1) != 0)
        return NULL;
    return p;
}

int ARMCI_Free_local(void *ptr)
{
    free(ptr);
    return 0;
}

void ARMCI_Access_begin(void *ptr)
{
    (void)ptr; /* one's own region is always open to load and store */
}

void ARMCI_Access_end(void *ptr)
{
    (void)ptr;
}

void ARMCI_Copy(void *src, void *dst, int n)
{
    if (n < 0 || (n > 0 && (!src || !dst)))
        kn_armci_die("ARMCI_Copy", "bad arguments (n %d, src %p, dst %p)", n, src, dst);
    if (n)
        memmove(dst, src, (size_t)n);
}

/* ------------------------------------------------------------ locality */

static knit_ctx_t *ctx_or_die(const char *fn)
{
    knit_ctx_t *ctx = knit_ctx_current();
    if (!ctx)
        kn_armci_die(fn, "knit is not started (call MPI_Init or ARMCI_Init first)");
    return ctx;
}

static void check_domain(const char *fn, armci_domain_t d)
{
    if (d != ARMCI_DOMAIN_SMP)
        kn_armci_die(fn, "domain %d not supported yet (only ARMCI_DOMAIN_SMP)", d);
}

int armci_domain_count(armci_domain_t domain)
{
    check_domain(__func__, domain);
    return knit_nnodes(ctx_or_die(__func__));
}

int armci_domain_my_id(armci_domain_t domain)
{
    check_domain(__func__, domain);
    return knit_node(ctx_or_die(__func__));
}

int armci_domain_id(armci_domain_t domain, int glob_proc_id)
{
    check_domain(__func__, domain);
    int n = knit_node_of(ctx_or_die(__func__), glob_proc_id);
    if (n < 0)
        kn_armci_die(__func__, "process %d out of range", glob_proc_id);
    return n;
}

int armci_domain_nprocs(armci_domain_t domain, int id)
{
    check_domain(__func__, domain);
    knit_ctx_t *ctx = ctx_or_die(__func__);
    int n = 0, size = knit_size(ctx);
    for (int r = 0; r < size; r++)
        n += knit_node_of(ctx, r) == id;
    if (!n)
        kn_armci_die(__func__, "domain %d out of range", id);
    return n;
}

int armci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id)
{
    check_domain(__func__, domain);
    knit_ctx_t *ctx = ctx_or_die(__func__);
    int k = 0, size = knit_size(ctx);
    for (int r = 0; r < size; r++)
        if (knit_node_of(ctx, r) == id && k++ == loc_proc_id)
            return r;
    kn_armci_die(__func__, "no process %d in domain %d", loc_proc_id, id);
}

int armci_domain_same_id(armci_domain_t domain, int proc)
{
    check_domain(__func__, domain);
    knit_ctx_t *ctx = ctx_or_die(__func__);
    int n = knit_node_of(ctx, proc);
    if (n < 0)
        kn_armci_die(__func__, "process %d out of range", proc);
    return n == knit_node(ctx);
}

int ARMCI_Same_node(int proc)
{
    return armci_domain_same_id(ARMCI_DOMAIN_SMP, proc);
}

int ARMCI_Uses_shm(void)
{
    return 0;
}
