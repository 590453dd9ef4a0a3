/*
 * komp's process (docs/openmp.md): before main, the region's layout and
 * the roles; at the end, the job's exit.
 *
 * `knitcc -fopenmp` links the program without PIE (one address for its
 * globals on every node), with src/omp/link/komp_begin.c's object first and
 * komp_end.c's last: their page-aligned marks enclose the program's own
 * .data and .bss (not the C library's copies of stdout and the like,
 * which the linker puts before them), and __wrap_main (-Wl,--wrap=main)
 * calls komp_main with them.  With more than one node the region is:
 *
 *   [0, data)      the program's .data, adopted (content and all)
 *   ...            its .bss, adopted; the rest is the process's own
 *                  (the C library's data, brk's heap)
 *   own zone       a slice per node: KOMP_SLOTS stacks, homed at the node
 *   heap           the region's allocator: the program's malloc
 *
 * The master (rank 0) runs main on its node's first stack; the others run
 * komp_serve on theirs, a parallel region at a time, until the master
 * ends the job: the exit code of main (or of exit()) is every node's.
 */
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dsm/dsm_int.h"
#include "omp/komp.h"
#include "util/config.h"
#include "util/cpus.h"

komp_t komp = {.max_active_levels = 1, .run_sched = KOMP_DYNAMIC, .run_chunk = 1};

static uintptr_t exe_base;

void komp_fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "knit: komp: %s\n", msg);
    fflush(stderr);
    if (komp.multi && komp.ctx)
        knit_abort(komp.ctx, 1, msg);
    _exit(1);
}

void komp_not_supported(const char *what)
{
    komp_fatal("%s: not supported yet by knit's OpenMP runtime (docs/openmp.md)", what);
}

/* ------------------------------------------------------------ settings */

static size_t parse_size(const char *s, size_t dflt_unit)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    while (*end == ' ')
        end++;
    switch (*end) {
    case 'B': case 'b': return v;
    case 'K': case 'k': return v << 10;
    case 'M': case 'm': return v << 20;
    case 'G': case 'g': return v << 30;
    case 0: return v * dflt_unit;
    default: return 0;
    }
}

/* OMP_SCHEDULE: kind[,chunk], with an optional modifier: */
static void parse_schedule(const char *s)
{
    if (!s || !*s)
        return;
    const char *colon = strchr(s, ':');
    if (colon)
        s = colon + 1;
    static const struct { const char *name; int kind; } kinds[] = {
        {"static", KOMP_STATIC}, {"dynamic", KOMP_DYNAMIC}, {"guided", KOMP_GUIDED}, {"auto", KOMP_AUTO}};
    for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t n = strlen(kinds[i].name);
        if (strncasecmp(s, kinds[i].name, n) == 0 && (s[n] == 0 || s[n] == ',')) {
            komp.run_sched = kinds[i].kind;
            komp.run_chunk = s[n] == ',' ? atoi(s + n + 1) : 0;
            if (komp.run_chunk < 0)
                komp.run_chunk = 0;
            return;
        }
    }
    fprintf(stderr, "knit: komp: OMP_SCHEDULE=%s is not a schedule (static, dynamic, guided, auto[,chunk]): "
                    "dynamic is used\n", s);
}

static void settings(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *v = getenv("OMP_NUM_THREADS");
    komp.threads_per_node = v && atoi(v) > 0 ? atoi(v) : (cpus > 0 ? (int)cpus : 1);
    if (komp.threads_per_node > KOMP_SLOTS - 1)
        komp_fatal("OMP_NUM_THREADS=%d: a node runs at most %d threads", komp.threads_per_node, KOMP_SLOTS - 1);
    komp.stack_size = 8u << 20;
    if ((v = getenv("OMP_STACKSIZE")) && *v) {
        size_t s = parse_size(v, 1024);
        if (!s)
            komp_fatal("OMP_STACKSIZE=%s is not a size (e.g. 16M)", v);
        komp.stack_size = s < (1u << 20) ? (1u << 20) : s;
    }
    komp.stack_size = (komp.stack_size + (64u << 10) - 1) & ~(size_t)((64u << 10) - 1);
    v = getenv("OMP_DYNAMIC");
    komp.dyn_var = v && (!strcasecmp(v, "true") || !strcmp(v, "1"));
    if ((v = getenv("OMP_MAX_ACTIVE_LEVELS")) && atoi(v) >= 0)
        komp.max_active_levels = atoi(v);
    parse_schedule(getenv("OMP_SCHEDULE"));
    if ((v = getenv("OMP_CANCELLATION")) && !strcasecmp(v, "true"))
        komp_not_supported("OMP_CANCELLATION=true (cancellation)");
}

/* ------------------------------------------------------------ the program */

static int find_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    exe_base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (!komp.text_lo || lo < komp.text_lo)
                komp.text_lo = lo;
            if (lo + ph->p_memsz > komp.text_hi)
                komp.text_hi = lo + ph->p_memsz;
        }
    }
    return 1; /* the first object is the program */
}

uintptr_t komp_fn_offset(void (*fn)(void *))
{
    return (uintptr_t)fn - exe_base;
}

void (*komp_fn_at(uintptr_t off))(void *)
{
    return (void (*)(void *))(exe_base + off);
}

/* ------------------------------------------------------------ the region */

#define GIB (1ull << 30)

static void layout(kn_dsm_layout_t *l, char *const marks[4])
{
    char *data = marks[0], *data_end = marks[1], *bss = marks[2], *bss_end = marks[3];
    if (data >= data_end || data_end > bss || bss >= bss_end || (uintptr_t)data % 4096 || (uintptr_t)bss % 4096)
        komp_fatal("the program's marks of its data are out of order (was it linked by knitcc -fopenmp?)");
    memset(l, 0, sizeof(*l));
    l->base = (uintptr_t)data;
    l->adopt[l->nadopt].off = 0;
    l->adopt[l->nadopt++].len = (uint64_t)(data_end - data);
    l->adopt[l->nadopt].off = (uint64_t)(bss - data);
    l->adopt[l->nadopt++].len = (uint64_t)(bss_end - bss);
    /* room for brk's heap (the C library's and knit's own memory) */
    uint64_t end = (uint64_t)(bss_end - data);
    l->map_from = (end + GIB - 1) / GIB * GIB + 4 * GIB;
    uint64_t block = kn_cfg.dsm_home_block ? kn_cfg.dsm_home_block : 65536;
    l->own_zone = l->map_from;
    l->own_slice = ((uint64_t)KOMP_SLOTS * komp.stack_size + block - 1) / block * block;
    l->heap_from = l->own_zone + (uint64_t)komp.nnodes * l->own_slice;
    l->size = l->heap_from + (kn_cfg.dsm_size ? kn_cfg.dsm_size : GIB);
    komp.slice = (char *)l->base + l->own_zone + (uint64_t)komp.node * l->own_slice;
}

/* Stack slot i of this node: [lo, hi), its lowest page a guard (not owned). */
void komp_slot(int i, char **lo, char **hi)
{
    *lo = komp.slice + (size_t)i * komp.stack_size + 4096;
    *hi = komp.slice + (size_t)(i + 1) * komp.stack_size;
}

int komp_own_slot(int i)
{
    char *lo, *hi;
    komp_slot(i, &lo, &hi);
    int own = kn_dsm_own(lo, (size_t)(hi - lo), 1);
    if (own < 0)
        komp_fatal("a thread's stack in the region: %s", knit_dsm_last_error());
    return own;
}

void komp_own_live(komp_thr_t *t)
{
    if (t->own >= 0) /* (and the frames it calls next) */
        kn_dsm_own_live(t->own, (char *)__builtin_frame_address(0) - 256);
}

int komp_in_region(const void *p)
{
    const char *c = p, *base = kn_dsm.base;
    return base && c >= base && c < base + kn_dsm.size && kn_dsm_holds((uint64_t)(c - base));
}

/* ------------------------------------------------------------ main */

static struct {
    int argc;
    char **argv, **envp;
    int (*main_fn)(int, char **, char **);
    int code;
    int own;
} run;

static void *on_stack(void *arg)
{
    (void)arg;
    komp_thr()->own = run.own;
    if (knit_rank(komp.ctx) == 0)
        run.code = run.main_fn(run.argc, run.argv, run.envp);
    else
        komp_serve();
    return NULL;
}

/* main (or komp_serve) runs in a thread of its own whose stack is slot 0
 * of the node's: glibc puts a thread's TLS at the top of the stack it is
 * given, so the master's threadprivate variables (copyin's source) are in
 * the region too, not in the initial thread's private block. */
static void run_on_slot0(void)
{
    run.own = komp_own_slot(0);
    char *lo, *hi;
    komp_slot(0, &lo, &hi);
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setstack(&a, lo, (size_t)(hi - lo));
    int e = pthread_create(&t, &a, on_stack, NULL);
    pthread_attr_destroy(&a);
    if (e)
        komp_fatal("cannot start the master thread: %s", strerror(e));
    pthread_join(t, NULL);
}

/* Every node: the region lets go (collective), knit ends. */
static void finish(int code)
{
    komp.exiting = 1;
    komp.exit_code = code;
    if (komp.multi) {
        kn_dsm_detach();
        knit_finalize(komp.ctx);
        komp.multi = 0;
    } else if (komp.ctx) {
        knit_finalize(komp.ctx);
    }
    komp.ctx = NULL;
}

static void komp_end_job(int code);

int komp_main(int argc, char **argv, char **envp, int (*main_fn)(int, char **, char **), char *const marks[4])
{
    settings();
    dl_iterate_phdr(find_exe, NULL);
    komp.nthreads_var = komp.threads_per_node;
    komp.ready = 1;
    knit_ctx_t *ctx;
    char why[256];
    if (knit_init_quiet(&argc, &argv, why, sizeof(why), &ctx) != KNIT_OK) {
        fprintf(stderr, "knit: komp: knit could not start (%s): the program runs alone\n", why);
        return main_fn(argc, argv, envp);
    }
    komp.ctx = ctx;
    komp.node = knit_node(ctx);
    komp.nnodes = knit_nnodes(ctx);
    if (knit_local_size(ctx) > 1)
        komp_fatal("%d processes on node %d: an OpenMP program runs one process per node (knitrun -n N --nodes N; "
                   "OMP_NUM_THREADS threads in each)", knit_local_size(ctx), komp.node);
    komp.nthreads_var = komp.nnodes * komp.threads_per_node;
    /* a launcher that binds each rank to a core (knitrun's default for a
     * few ranks a host) would put all of this process's threads on it
     * (one node, 2 threads, Mandelbrot: 1.38 s bound, 0.72 widened) */
    if (komp.threads_per_node > 1)
        kn_cpus_widen();
    if (komp.nnodes == 1) {
        int code = main_fn(argc, argv, envp);
        finish(code);
        return code;
    }
    if (kn_cfg.dsm_protocol == 1 && komp.threads_per_node > 1)
        komp_fatal("KNIT_DSM_PROTOCOL=invalidate with %d threads per node: not supported yet (a page fault "
                   "fetches from another node through the process's one knit client, one thread at a time); "
                   "run OMP_NUM_THREADS=1, or the update protocol", komp.threads_per_node);
    kn_dsm_layout_t l;
    layout(&l, marks);
    /* one address for the program's data on every node: not so for a PIE
     * whose kernel placed it differently */
    uint64_t at[2] = {l.base, ~(uint64_t)l.base};
    knit_op_t max = {.kind = KNIT_OP_MAX};
    if (knit_allreduce(knit_comm_world(ctx), KNIT_IN_PLACE, at, 2, KNIT_UINT64, &max) != KNIT_OK)
        komp_fatal("the nodes could not compare their layouts");
    if (at[0] != l.base || ~at[1] != l.base)
        komp_fatal("the program's globals are not at one address on every node (a position-independent "
                   "executable?): build it with knitcc -fopenmp, which links it with -no-pie");
    if (kn_dsm_init_layout(ctx, &l) != KNIT_OK)
        komp_fatal("the replicated region: %s", knit_dsm_last_error());
    komp.multi = 1;
    uint64_t shared = 0;
    if (knit_rank(ctx) == 0) {
        komp_shared_t *s = knit_dsm_alloc(sizeof(komp_shared_t));
        if (!s)
            komp_fatal("no memory in the region: %s", knit_dsm_last_error());
        memset(s, 0, sizeof(*s));
        shared = (uint64_t)(uintptr_t)s;
    }
    if (knit_bcast(knit_comm_world(ctx), &shared, 1, KNIT_UINT64, 0) != KNIT_OK || knit_dsm_barrier() != KNIT_OK)
        komp_fatal("the nodes could not start together");
    komp.shared = (komp_shared_t *)(uintptr_t)shared;
    komp_heap_start();
    run.argc = argc;
    run.argv = argv;
    run.envp = envp;
    run.main_fn = main_fn;
    run_on_slot0();
    /* the master, main returned */
    komp_end_job(run.code);
    return run.code;
}

/* The master ends the job: the others leave komp_serve. */
static void komp_end_job(int code)
{
    if (komp.exiting)
        return;
    if (komp.multi) {
        komp_bcast_end(code);
    }
    finish(code);
}

/* A node told to end (komp_serve). */
void komp_node_end(int code)
{
    finish(code);
    exit(code);
}

/* exit() called by the program (-Wl,--wrap=exit): then __real_exit. */
void komp_exit(int code)
{
    if (!komp.ready || komp.exiting || !komp.ctx)
        return;
    komp_thr_t *t = komp_thr();
    if (!komp.multi) {
        finish(code);
        return;
    }
    if (knit_rank(komp.ctx) != 0 || t->team) {
        char msg[160];
        snprintf(msg, sizeof(msg), "exit(%d) %s: the job ends", code,
                 t->team ? "inside a parallel region" : "on a node that serves parallel regions");
        knit_abort(komp.ctx, code ? code : 1, msg);
    }
    komp_end_job(code);
}
