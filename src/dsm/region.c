/*
 * The replicated region: one address for every rank of the job, one
 * replica per node (docs/dsm.md).
 *
 * knit_dsm_init, collectively:
 *   1. every rank loads the agents' dsm module (the dsmring, the lockmgr);
 *   2. each node's lowest rank makes the node's files (dsm_mod.h: data,
 *      twin, meta; sparse) and has its agent map them;
 *   3. the ranks agree on an address: KNIT_DSM_ADDR, else two candidates
 *      high in the address space, else one that rank 0's kernel picks;
 *      each rank maps the data file there (MAP_FIXED_NOREPLACE) and they
 *      learn together whether everyone could; one that could not tells
 *      the others what it has in the way (/proc/self/maps);
 *   4. with more than one node, every page starts write-protected and the
 *      fault handler starts tracking (write.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll/coll.h"
#include "dsm/dsm_int.h"
#include "offload/offload.h"
#include "util/config.h"
#include "util/log.h"
#include "util/shmfile.h"

extern const unsigned char kn_builtin_dsm[];
extern const size_t kn_builtin_dsm_len;

kn_dsm_t kn_dsm = {.call = PTHREAD_MUTEX_INITIALIZER, .dirty_lock = ATOMIC_FLAG_INIT};

_Static_assert(sizeof(kn_dsm_meta_t) == 4096, "the meta file's header is one page");

void kn_dsm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kn_dsm.err, sizeof(kn_dsm.err), fmt, ap);
    va_end(ap);
    kn_debug("dsm: %s", kn_dsm.err);
}

const char *knit_dsm_last_error(void)
{
    return kn_dsm.err;
}

void *knit_dsm_base(void)
{
    return kn_dsm.base;
}

size_t knit_dsm_size(void)
{
    return kn_dsm.base ? kn_dsm.size : 0;
}

knit_status_t kn_dsm_ask(const void *args, size_t len, void *result, size_t cap)
{
    knit_mreq_t *r;
    knit_status_t st = knit_module_request(kn_dsm.mod, args, len, &r);
    char why[256] = "";
    size_t n = 0;
    if (st == KNIT_OK)
        st = knit_request_wait(&r, result ? result : why, result ? cap : sizeof(why) - 1, &n);
    if (st == KNIT_ERR_TRUNCATE && result)
        st = KNIT_ERR_PROTO;
    if (st != KNIT_OK && !result && n) /* the agent's reason */
        kn_dsm_error("%.*s", (int)(n < sizeof(why) ? n : sizeof(why) - 1), why);
    else if (st != KNIT_OK)
        kn_dsm_error("a request to the node's agent failed: %s", knit_strerror(st));
    return st;
}

/* Every rank learns the lowest status of all, and the text of a rank
 * that failed becomes everyone's error. */
static knit_status_t agree(knit_comm_t *world, knit_status_t mine, const char *text)
{
    /* [0] the lowest status, as its negation's max; [1] a rank that failed */
    int64_t v[2] = {-(int64_t)mine, mine != KNIT_OK ? knit_rank(kn_dsm.ctx) : -1};
    knit_op_t max = {.kind = KNIT_OP_MAX};
    if (knit_allreduce(world, KNIT_IN_PLACE, v, 2, KNIT_INT64, &max) != KNIT_OK)
        return KNIT_ERR_IO;
    int64_t st_all = -v[0], who_all = v[1];
    if (st_all == KNIT_OK)
        return KNIT_OK;
    char buf[sizeof(kn_dsm.err)];
    snprintf(buf, sizeof(buf), "%s", text ? text : "");
    if (knit_bcast(world, buf, sizeof(buf), KNIT_BYTE, (int)who_all) == KNIT_OK && buf[0])
        snprintf(kn_dsm.err, sizeof(kn_dsm.err), "%s", buf);
    return (knit_status_t)st_all;
}

static void unmap_all(void)
{
    /* (adopted memory stays: it is the process's own, the program's globals) */
    if (kn_dsm.base)
        munmap(kn_dsm.base + kn_dsm.layout.map_from, kn_dsm.size - kn_dsm.layout.map_from);
    if (kn_dsm.twin)
        munmap(kn_dsm.twin, kn_dsm.size);
    if (kn_dsm.meta)
        munmap(kn_dsm.meta, kn_dsm.meta_len);
    kn_dsm.base = kn_dsm.twin = NULL;
    kn_dsm.meta = NULL;
}

static void unlink_files(void)
{
    for (int i = 0; i < 3; i++)
        if (kn_dsm.name[i][0])
            shm_unlink(kn_dsm.name[i]);
}

/* The node's lowest rank: the files, and the agent maps them. */
static knit_status_t make_files(void)
{
    static const char *what[3] = {"data", "twin", "meta"};
    uint64_t len[3] = {kn_dsm.size, kn_dsm.size, kn_dsm.meta_len};
    for (int i = 0; i < 3; i++) {
        int fd = kn_shm_file_create(kn_dsm.name[i], len[i], i == 2 ? sizeof(kn_dsm_meta_t) : 0, O_CLOEXEC);
        if (fd < 0) {
            kn_dsm_error("node %d: cannot make the region's %s file %s (%" PRIu64 " bytes): %s", knit_node(kn_dsm.ctx),
                         what[i], kn_dsm.name[i], len[i], strerror(errno));
            for (int j = 0; j < i; j++)
                shm_unlink(kn_dsm.name[j]);
            return KNIT_ERR_NOMEM;
        }
        if (i == 2) {
            kn_dsm_meta_t *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) {
                m->magic = KN_DSM_MAGIC;
                m->version = KN_DSM_VERSION;
                m->size = kn_dsm.size;
                m->npages = kn_dsm.npages;
                munmap(m, sizeof(*m));
            }
        }
        /* the adopted memory's content: this process's */
        for (int k = 0; i == 0 && k < kn_dsm.layout.nadopt; k++) {
            uint64_t off = kn_dsm.layout.adopt[k].off, len = kn_dsm.layout.adopt[k].len;
            if (pwrite(fd, (const char *)kn_dsm.layout.base + off, len, (off_t)off) != (ssize_t)len) {
                kn_dsm_error("node %d: cannot fill the region's data file %s: %s", knit_node(kn_dsm.ctx),
                             kn_dsm.name[0], strerror(errno));
                close(fd);
                for (int j = 0; j <= i; j++)
                    shm_unlink(kn_dsm.name[j]);
                return KNIT_ERR_IO;
            }
        }
        close(fd);
    }
    const kn_dsm_layout_t *l = &kn_dsm.layout;
    struct {
        kn_dsm_q_t q;
        kn_dsm_init_t in;
    } a = {.q = {.op = KN_DSM_Q_INIT},
           .in = {.size = kn_dsm.size, .window = kn_cfg.dsm_window, .frame = kn_cfg.dsm_frame,
                  .corrupt_every = kn_cfg.dsm_corrupt > 0 ? (uint64_t)kn_cfg.dsm_corrupt : 0,
                  .protocol = (uint64_t)kn_dsm.invalidate, .home_pages = kn_dsm.homes.pages,
                  .own_zone = kn_dsm.homes.zone, .own_slice = kn_dsm.homes.slice, .heap_from = l->heap_from,
                  .migrate = kn_cfg.dsm_migrate ? 1 : 0}};
    memcpy(a.in.data, kn_dsm.name[0], KN_DSM_NAME_MAX);
    memcpy(a.in.twin, kn_dsm.name[1], KN_DSM_NAME_MAX);
    memcpy(a.in.meta, kn_dsm.name[2], KN_DSM_NAME_MAX);
    knit_status_t st = kn_dsm_ask(&a, sizeof(a), NULL, 0);
    if (st != KNIT_OK)
        kn_dsm_error("node %d: its agent could not map the region's files (%s; the agent's log says why)",
                     knit_node(kn_dsm.ctx), knit_strerror(st));
    return st;
}

/* The file's [off, off + len) at `at` (NULL: anywhere; over: whatever
 * is there goes, else only where nothing is). */
static void *map_shm_at(const char *name, uint64_t off, size_t len, int prot, void *at, int over)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return MAP_FAILED;
    int flags = MAP_SHARED | MAP_NORESERVE | (!at ? 0 : over ? MAP_FIXED : MAP_FIXED_NOREPLACE);
    void *p = mmap(at, len, prot, flags, fd, (off_t)off);
    int e = errno;
    close(fd);
    if (p != MAP_FAILED && at && p != at) { /* a kernel before 4.17 takes the address as a hint */
        munmap(p, len);
        p = MAP_FAILED;
        e = EEXIST;
    }
    errno = e;
    return p;
}

static void *map_shm(const char *name, size_t len, int prot, void *at)
{
    return map_shm_at(name, 0, len, prot, at, 0);
}

/* What this process has in [a, a + len): the first line of its maps that
 * overlaps. */
static void in_the_way(uintptr_t a, size_t len, char *out, size_t cap)
{
    snprintf(out, cap, "(no mapping found there)");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    char line[300];
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || hi <= a || lo >= a + len)
            continue;
        line[strcspn(line, "\n")] = 0;
        snprintf(out, cap, "it has %.250s", line);
        break;
    }
    fclose(f);
}

static uintptr_t kernel_pick(size_t size)
{
    void *p = mmap(NULL, size + (1ul << 30), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    munmap(p, size + (1ul << 30));
    return ((uintptr_t)p + (1ul << 30) - 1) & ~((uintptr_t)(1ul << 30) - 1);
}

/* The layout's adopted memory becomes the region's: the file (which
 * holds what the node's lowest rank had there) over it. */
static knit_status_t adopt(knit_comm_t *world, int prot)
{
    char text[sizeof(kn_dsm.err)] = "";
    knit_status_t mine = KNIT_OK;
    for (int k = 0; k < kn_dsm.layout.nadopt && mine == KNIT_OK; k++) {
        uint64_t off = kn_dsm.layout.adopt[k].off, len = kn_dsm.layout.adopt[k].len;
        if (map_shm_at(kn_dsm.name[0], off, len, prot, kn_dsm.base + off, 1) == MAP_FAILED) {
            snprintf(text, sizeof(text), "rank %d cannot map the region over its memory at %p (%" PRIu64 " bytes): %s",
                     knit_rank(kn_dsm.ctx), (void *)(kn_dsm.base + off), len, strerror(errno));
            mine = KNIT_ERR_NOMEM;
        }
    }
    return agree(world, mine, text);
}

/* Rank 0 reports a failed init once for everyone (each rank keeps the
 * text for knit_dsm_last_error). */
static int failure_reported;

static void report_failure(knit_ctx_t *ctx, knit_status_t st)
{
    if (knit_rank(ctx) == 0 && !failure_reported)
        kn_error("knit_dsm_init: %s", kn_dsm.err[0] ? kn_dsm.err : knit_strerror(st));
    failure_reported = 1;
}

/* Map the data file at one address everywhere. */
static knit_status_t place(knit_comm_t *world)
{
    uintptr_t cand[3];
    int ncand = 0;
    const char *want = kn_cfg.dsm_addr;
    if (kn_dsm.layout.base) {
        cand[ncand++] = kn_dsm.layout.base;
    } else if (want && *want && strcmp(want, "auto")) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(want, &end, 0);
        if (errno || *end || !v || v % KN_DSM_PAGE) {
            kn_dsm_error("KNIT_DSM_ADDR=%s is not a page-aligned address (hex, e.g. 0x200000000000)", want);
            return KNIT_ERR_INVAL;
        }
        cand[ncand++] = (uintptr_t)v;
    } else {
        cand[ncand++] = (uintptr_t)0x200000000000ull;
        cand[ncand++] = (uintptr_t)0x300000000000ull;
        cand[ncand++] = 0; /* rank 0's kernel's */
    }
    int prot = kn_dsm.protect ? PROT_READ : PROT_READ | PROT_WRITE;
    knit_status_t st = KNIT_ERR_NOMEM;
    for (int i = 0; i < ncand; i++) {
        uint64_t at = cand[i];
        if (!at) {
            at = knit_rank(kn_dsm.ctx) == 0 ? kernel_pick(kn_dsm.size) : 0;
            if (knit_bcast(world, &at, 1, KNIT_UINT64, 0) != KNIT_OK)
                return KNIT_ERR_IO;
        }
        char text[sizeof(kn_dsm.err)] = "";
        knit_status_t mine = KNIT_OK;
        uint64_t from = kn_dsm.layout.map_from, len = kn_dsm.size - from;
        void *p = at ? map_shm_at(kn_dsm.name[0], from, len, prot, (void *)(uintptr_t)(at + from), 0) : MAP_FAILED;
        if (p == MAP_FAILED) {
            int e = errno;
            char what[300];
            in_the_way((uintptr_t)at + from, len, what, sizeof(what));
            snprintf(text, sizeof(text), "rank %d cannot map the region at [%#" PRIx64 ", %#" PRIx64 "): %s; %.200s",
                     knit_rank(kn_dsm.ctx), at + from, at + kn_dsm.size, strerror(e), e == EEXIST ? what : "");
            mine = KNIT_ERR_NOMEM;
        }
        st = agree(world, mine, text);
        if (st == KNIT_OK) {
            kn_dsm.base = (char *)p - from;
            return adopt(world, prot);
        }
        if (p != MAP_FAILED)
            munmap(p, len);
        if (st != KNIT_ERR_NOMEM)
            return st;
    }
    size_t n = strlen(kn_dsm.err);
    snprintf(kn_dsm.err + n, sizeof(kn_dsm.err) - n, "; KNIT_DSM_ADDR chooses another address");
    return st;
}

static knit_status_t init(knit_ctx_t *ctx, const kn_dsm_layout_t *l)
{
    uint64_t size = l->size;
    knit_comm_t *world = knit_comm_world(ctx);
    if (kn_cfg.dsm_frame < 8192 || kn_cfg.dsm_frame > (16u << 20) || !kn_cfg.dsm_window) {
        kn_dsm_error("KNIT_DSM_FRAME=%llu: an update message holds 8 KiB to 16 MiB (and KNIT_DSM_WINDOW at least 1)",
                     (unsigned long long)kn_cfg.dsm_frame);
        return KNIT_ERR_INVAL;
    }
    if (!kn_cfg.dsm_home_block || kn_cfg.dsm_home_block % KN_DSM_PAGE) {
        kn_dsm_error("KNIT_DSM_HOME_BLOCK=%llu is not a multiple of 4096", (unsigned long long)kn_cfg.dsm_home_block);
        return KNIT_ERR_INVAL;
    }
    if (kn_cfg.dsm_keep < 0 || kn_cfg.dsm_keep > 250) {
        kn_dsm_error("KNIT_DSM_KEEP=%lld: releases in a row, 0 to 250", (long long)kn_cfg.dsm_keep);
        return KNIT_ERR_INVAL;
    }
    if (!size || size % KN_DSM_PAGE || size > (1ull << 46)) {
        kn_dsm_error("a region of %zu bytes: the size must be a multiple of 4096, at most 64 TiB", size);
        return KNIT_ERR_INVAL;
    }
    int nnodes = knit_nnodes(ctx);
    uint64_t zone_end = l->own_zone + (uint64_t)nnodes * l->own_slice, ends = l->map_from;
    for (int k = 0; k < l->nadopt; k++)
        ends |= l->adopt[k].off | l->adopt[k].len;
    if (l->base % KN_DSM_PAGE || ends % KN_DSM_PAGE || l->heap_from % KN_DSM_PAGE || l->nadopt > KN_DSM_ADOPT_MAX ||
        l->map_from > size || l->heap_from < l->map_from || l->heap_from >= size ||
        (l->own_slice && (l->own_zone < l->map_from || zone_end > l->heap_from ||
                          !kn_dsm_homes_of(&kn_dsm.homes, kn_cfg.dsm_home_block / KN_DSM_PAGE,
                                           l->own_zone / KN_DSM_PAGE, l->own_slice / KN_DSM_PAGE, nnodes)))) {
        kn_dsm_error("a region layout that does not hold together (pages, zones, the heap's start)");
        return KNIT_ERR_INVAL;
    }
    kn_dsm.layout = *l;
    kn_dsm.ctx = ctx;
    kn_dsm.size = size;
    kn_dsm.npages = size / KN_DSM_PAGE;
    kn_dsm.nnodes = knit_nnodes(ctx);
    kn_dsm.node = knit_node(ctx);
    kn_dsm.protect = kn_dsm.nnodes > 1;
    kn_dsm.invalidate = kn_cfg.dsm_protocol == 1;
    /* (invalidate: an acquire must be able to take any page another node wrote) */
    kn_dsm.keep_max = kn_dsm.invalidate ? 0 : kn_cfg.dsm_keep;
    kn_dsm_homes_of(&kn_dsm.homes, kn_cfg.dsm_home_block / KN_DSM_PAGE, l->own_zone / KN_DSM_PAGE,
                    l->own_slice / KN_DSM_PAGE, kn_dsm.nnodes);
    kn_dsm.pos = 0;
    kn_dsm.meta_len = kn_dsm_meta_bytes(kn_dsm.npages);
    knit_status_t st = kn_off_load_builtin(ctx, "dsm", kn_builtin_dsm, kn_builtin_dsm_len, &kn_dsm.mod);
    if (st != KNIT_OK) {
        kn_dsm.mod = NULL;
        if (st == KNIT_ERR_NOT_SUPPORTED)
            kn_dsm_error("the replicated region needs the node agents (this job has none: a singleton, or "
                         "knitrun --no-offload)");
        else
            kn_dsm_error("the agents' dsm module could not be loaded: %s", knit_module_last_error(ctx));
        return st;
    }
    static const char *suffix[3] = {"data", "twin", "meta"};
    for (int i = 0; i < 3; i++)
        snprintf(kn_dsm.name[i], KN_DSM_NAME_MAX, "/knit-%s-n%d-dsm.%s", kn_coll_jobid(world->coll), knit_node(ctx),
                 suffix[i]);
    int first = knit_local_rank(ctx) == 0;
    st = agree(world, first ? make_files() : KNIT_OK, kn_dsm.err);
    if (st != KNIT_OK) {
        if (first)
            unlink_files();
        knit_module_unload(kn_dsm.mod);
        kn_dsm.mod = NULL;
        return st;
    }
    knit_status_t mine = KNIT_OK;
    kn_dsm.twin = map_shm(kn_dsm.name[1], kn_dsm.size, PROT_READ | PROT_WRITE, NULL);
    kn_dsm.meta = map_shm(kn_dsm.name[2], kn_dsm.meta_len, PROT_READ | PROT_WRITE, NULL);
    if (kn_dsm.twin == MAP_FAILED || kn_dsm.meta == MAP_FAILED) {
        kn_dsm_error("rank %d cannot map its node's region files: %s", knit_rank(ctx), strerror(errno));
        if (kn_dsm.twin == MAP_FAILED)
            kn_dsm.twin = NULL;
        if (kn_dsm.meta == MAP_FAILED)
            kn_dsm.meta = NULL;
        mine = KNIT_ERR_NOMEM;
    } else {
        kn_dsm.pages = kn_dsm_pages(kn_dsm.meta);
        if (kn_dsm.invalidate) /* (the agents move homes there: KN_DSM_PG_HOME) */
            kn_dsm.homes.words = kn_dsm.pages;
    }
    st = agree(world, mine, kn_dsm.err);
    if (st == KNIT_OK)
        st = place(world);
    if (st == KNIT_OK && kn_dsm.protect && kn_dsm_track_start() < 0)
        mine = KNIT_ERR_NOMEM;
    if (st == KNIT_OK)
        st = agree(world, mine, kn_dsm.err);
    if (st != KNIT_OK) {
        /* before the barrier that lets the others go on: a rank that then
         * exits may end the job at once */
        report_failure(ctx, st);
        kn_dsm_track_stop();
        unmap_all();
        knit_barrier(world);
        if (first)
            unlink_files();
        knit_module_unload(kn_dsm.mod);
        kn_dsm.mod = NULL;
    }
    return st;
}

knit_status_t kn_dsm_init_layout(knit_ctx_t *ctx, const kn_dsm_layout_t *l)
{
    if (!ctx || !l)
        return KNIT_ERR_INVAL;
    if (kn_dsm.base) {
        kn_dsm_error("the region is mapped already");
        return KNIT_ERR_STATE;
    }
    kn_dsm.err[0] = 0;
    pthread_mutex_lock(&kn_dsm.call);
    failure_reported = 0;
    knit_status_t st = init(ctx, l);
    pthread_mutex_unlock(&kn_dsm.call);
    if (st != KNIT_OK)
        report_failure(ctx, st);
    return st;
}

knit_status_t knit_dsm_init(knit_ctx_t *ctx, size_t size)
{
    size = size ? size : kn_cfg.dsm_size;
    kn_dsm_layout_t l = {.size = size, .heap_from = 0};
    return kn_dsm_init_layout(ctx, &l);
}

/* KNIT_STATS: the node's counters, from its lowest rank. */
static void report(void)
{
    knit_dsm_stats_t s;
    if (knit_dsm_stats(&s) != KNIT_OK)
        return;
    fprintf(stderr,
            "knit[node %d] dsm: %" PRIu64 " faults, %" PRIu64 " pages diffed, %" PRIu64 " runs of %" PRIu64
            " bytes in %" PRIu64 " releases; frames out %" PRIu64 " (%" PRIu64 " B), in %" PRIu64 " (%" PRIu64
            " B); %" PRIu64 " failed their crc\n",
            knit_node(kn_dsm.ctx), s.faults, s.diffs, s.runs, s.released, s.releases, s.frames_out, s.bytes_out,
            s.frames_in, s.bytes_in, s.bad_crc);
    if (kn_dsm.invalidate)
        fprintf(stderr, "knit[node %d] dsm: %" PRIu64 " pages fetched, %" PRIu64 " invalidated; %" PRIu64 " homes moved\n",
                knit_node(kn_dsm.ctx), s.fetches, s.invalidated, s.moved);
}

/* The region's memory in this process, writable again (all of it). */
static void unprotect(void)
{
    const kn_dsm_layout_t *l = &kn_dsm.layout;
    for (int k = 0; k < l->nadopt; k++)
        mprotect(kn_dsm.base + l->adopt[k].off, l->adopt[k].len, PROT_READ | PROT_WRITE);
    mprotect(kn_dsm.base + l->map_from, kn_dsm.size - l->map_from, PROT_READ | PROT_WRITE);
}

static knit_status_t end(knit_ctx_t *ctx, int keep)
{
    if (!ctx || ctx != kn_dsm.ctx || !kn_dsm.base)
        return KNIT_ERR_STATE;
    knit_status_t st = knit_dsm_barrier();
    if (kn_cfg.stats && knit_local_rank(ctx) == 0)
        report();
    pthread_mutex_lock(&kn_dsm.call);
    if (keep)
        unprotect();
    kn_dsm_track_stop();
    if (!keep)
        unmap_all();
    kn_dsm.base = NULL;
    kn_dsm.twin = NULL; /* (detach: the files' mappings stay until the process ends) */
    kn_dsm.meta = NULL;
    knit_status_t st2 = knit_module_unload(kn_dsm.mod); /* collective: the agents let go of the files */
    kn_dsm.mod = NULL;
    if (knit_local_rank(ctx) == 0)
        unlink_files();
    memset(kn_dsm.name, 0, sizeof(kn_dsm.name));
    kn_dsm.nheld = 0;
    kn_dsm.nown = 0;
    kn_dsm.ctx = NULL;
    pthread_mutex_unlock(&kn_dsm.call);
    return st != KNIT_OK ? st : st2;
}

knit_status_t knit_dsm_finalize(knit_ctx_t *ctx)
{
    return end(ctx, 0);
}

knit_status_t kn_dsm_detach(void)
{
    return end(kn_dsm.ctx, 1);
}

knit_status_t knit_dsm_stats(knit_dsm_stats_t *out)
{
    if (!out)
        return KNIT_ERR_INVAL;
    if (!kn_dsm.meta)
        return KNIT_ERR_STATE;
    const kn_dsm_counters_t *c = &kn_dsm.meta->c;
    *out = (knit_dsm_stats_t){
        .faults = atomic_load(&c->faults), .diffs = atomic_load(&c->diffs), .runs = atomic_load(&c->runs),
        .released = atomic_load(&c->released), .releases = atomic_load(&c->releases),
        .frames_out = atomic_load(&c->frames_out), .bytes_out = atomic_load(&c->bytes_out),
        .frames_in = atomic_load(&c->frames_in), .bytes_in = atomic_load(&c->bytes_in),
        .bad_crc = atomic_load(&c->bad_crc), .fetches = atomic_load(&c->fetches), .moved = atomic_load(&c->moved),
        .invalidated = atomic_load(&c->invalidated),
    };
    return KNIT_OK;
}
