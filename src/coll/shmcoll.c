/*
 * Blocking collectives of small vectors through a segment the ranks of a
 * one-node communicator share, of larger ones through it in pieces (the
 * staged forms), and of large ones straight from the ranks' buffers,
 * synchronized through it (the direct forms, at the end).
 *
 * Each member has a flag line (seq: the number of the last collective it
 * entered; left: the last whose set it no longer reads) and SHMC_SETS
 * slots, used by collectives in turn.  In collective k a rank writes its
 * part into its slot of set k % SHMC_SETS, stores seq = k (release), wakes
 * sleeping members, and reads the parts it needs from the others' slots
 * once their seq reaches k (acquire).  A rank writes set k only after
 * every left reached k - SHMC_SETS, the last user of that set.  A rank
 * entering k says it left k - 1 (the direct forms read k's addresses until
 * their closing barrier, which nobody passes before every rank is done
 * with them); in the staged allgather, whose ranks put pieces in ahead of
 * taking the others' out, left lags further behind.  So a root that only gives
 * (bcast) or ranks that only give (reduce) run up to 7 collectives ahead,
 * as eager messages would let them, instead of in lockstep (4 ranks,
 * 8-byte reduce: 2.8 us with 2 sets, 1.6 with 8).  Every rank combines the
 * parts itself, in rank order, so a reduction gives the same bits
 * everywhere.
 *
 * What it saves is messages, not copies: a barrier or an 8-byte allreduce
 * is one store and one scan of p flags, where messages cost every rank
 * log2(p) rounds or a leader p-1 receptions, and on a crowded host every
 * message may wait for its receiver to be scheduled.
 *
 * The segment is made on a communicator's first eligible collective: rank 0
 * creates it (/dev/shm/knit-<jobid>-n<node>-coll<pid>.<k>), sends the name
 * over messages, the others map it, all agree it worked (else the
 * communicator keeps the message algorithms), and rank 0 unlinks it.
 * Rank 0 charges its size to the node budget (util/shmfile.h: what
 * KNIT_SHM_MAX leaves after the node segment and the offload queue, which
 * always has room for one communicator of every rank of the node) and
 * gives it back when the communicator is freed.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll/coll.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/shmfile.h"

#define SHMC_MAGIC 0x6b6e6974636f6c31ull /* "knitcol1" */
#define SHMC_MAX_RANKS 256
#define SHMC_MAX_SLOT (64 * 1024)
#define SHMC_BUDGET (8u << 20) /* slot bytes of one communicator, at most (1 MiB / p per slot) */
#define SHMC_SETS 8 /* collectives a rank may run ahead of the slowest, less one */
#define SHMC_PIECE (16 * 1024) /* staged forms: one rank's piece (below) */
#define SHMC_PAIR_SMALL 2048 /* 2-rank communicators: parts through the slots, at most */

/* What a rank of a direct collective publishes in its slot. */
typedef struct direct_part {
    uint64_t src; /* what the others read from me */
    uint64_t res; /* allreduce: my result buffer */
} direct_part_t;

typedef struct shmc_hdr {
    uint64_t magic;
    uint64_t nranks;
    uint64_t slot;
    uint64_t size;
} shmc_hdr_t;

typedef struct shmc_flag {
    _Atomic uint64_t seq;  /* the last collective this rank entered (its part is there) */
    _Atomic uint64_t left; /* the last whose set it no longer reads */
    char pad[KN_CACHELINE - 2 * sizeof(uint64_t)];
} shmc_flag_t;

struct kn_shmc {
    void *base;
    size_t size, slot;
    shmc_flag_t *flags;   /* [p] */
    char *data;           /* [SHMC_SETS][p][slot] */
    size_t small;         /* parts up to this go through the slots */
    size_t piece;         /* staged forms: what one rank's slot carries per step */
    int direct;           /* every member can read every other's memory */
    uint64_t seq;         /* collectives entered */
    uint64_t all_seen;    /* every seq was at least this */
    uint64_t all_left;    /* every left was at least this */
    void *scratch;        /* direct allreduce: two blocks of one part */
    size_t scratch_len;
    size_t charged;       /* rank 0: bytes charged to the node budget */
};

/* knit_comm.shm_state while it has no segment (c->shm) */
enum { SHMC_UNTRIED = 0, SHMC_OFF, SHMC_SETTING_UP };

static size_t seg_size(int p, size_t slot)
{
    return KN_ALIGN_UP(sizeof(shmc_hdr_t), KN_CACHELINE) + (size_t)p * sizeof(shmc_flag_t) +
           SHMC_SETS * (size_t)p * slot;
}

static void seg_map(kn_shmc_t *m, void *base, size_t size, int p, size_t slot)
{
    m->base = base;
    m->size = size;
    m->slot = slot;
    m->flags = (shmc_flag_t *)((char *)base + KN_ALIGN_UP(sizeof(shmc_hdr_t), KN_CACHELINE));
    m->data = (char *)(m->flags + p);
}

/* A communicator of p ranks: the slot size, and what parts go through
 * the slots (small). */
static size_t seg_slot(const struct kn_config *cfg, int p, size_t *small_out)
{
    size_t most = SHMC_BUDGET / SHMC_SETS / (size_t)p;
    size_t small = KN_MIN(KN_MIN(cfg->coll_shm_max, SHMC_MAX_SLOT), most);
    /* between 2 ranks a collective is one message each way: beyond 2 KiB
     * that message's copies beat the segment's, whose lines the other
     * core owns from the last call (2 ranks bound, 16 KiB: bcast 2.1 ->
     * 1.7 us, allreduce 4.2 -> 3.3, timed as OSU does and back to back) */
    if (p == 2)
        small = KN_MIN(small, SHMC_PAIR_SMALL);
    /* a slot holds at least the addresses of the direct forms, and a piece
     * of the staged ones */
    size_t slot = KN_MAX(KN_MAX(small, sizeof(direct_part_t)), KN_MIN(SHMC_PIECE, most));
    if (small_out)
        *small_out = small;
    return KN_ALIGN_UP(slot, KN_CACHELINE);
}

static int seg_wanted(const struct kn_config *cfg)
{
    return cfg->coll_shm_max > 0 || cfg->coll_direct_min > 0 || cfg->coll_staged_max > 0 ||
           cfg->coll_staged_pair_max > 0;
}

size_t kn_shmc_segment_bytes(const struct kn_config *cfg, int p)
{
    if (p < 2 || p > SHMC_MAX_RANKS || !seg_wanted(cfg))
        return 0;
    return seg_size(p, seg_slot(cfg, p, NULL));
}

/* Rank 0: a new segment, its name in name (empty on failure): a job's node
 * file (knitrun removes what a crash leaves), unique per creating process. */
static void *seg_create(const knit_comm_t *c, char *name, size_t namelen, size_t size, int p, size_t slot)
{
    static unsigned made;
    const kn_coll_t *coll = c->coll;
    snprintf(name, namelen, "/knit-%s-n%d-coll%d.%u", kn_coll_jobid(coll),
             kn_coll_node_of(coll, kn_coll_job_rank(coll)), (int)getpid(), made++);
    if (kn_shm_budget_take(size) < 0) {
        kn_info("collectives keep messages: a segment of %zu bytes would pass what KNIT_SHM_MAX leaves "
                "the node's collectives", size);
        name[0] = 0;
        return NULL;
    }
    int fd = kn_shm_file_create(name, size, size, 0);
    void *base = fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        kn_info("collectives keep messages: segment %s of %zu bytes in /dev/shm: %m", name, size);
        if (fd >= 0) {
            close(fd);
            shm_unlink(name);
        }
        kn_shm_budget_give(size);
        name[0] = 0;
        return NULL;
    }
    close(fd);
    shmc_hdr_t *h = base;
    *h = (shmc_hdr_t){.magic = SHMC_MAGIC, .nranks = (uint64_t)p, .slot = slot, .size = size};
    return base;
}

static void *seg_open(const char *name, int p, size_t *size, size_t *slot)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        kn_info("collectives keep messages: shm_open %s: %m", name);
        return NULL;
    }
    struct stat st;
    void *base = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(shmc_hdr_t))
        base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED)
        return NULL;
    const shmc_hdr_t *h = base;
    if (h->magic != SHMC_MAGIC || h->nranks != (uint64_t)p || h->size != (uint64_t)st.st_size ||
        h->slot % KN_CACHELINE || h->size != seg_size(p, h->slot)) {
        kn_warn("collective segment %s has an unexpected layout", name);
        munmap(base, (size_t)st.st_size);
        return NULL;
    }
    *size = h->size;
    *slot = h->slot;
    return base;
}

/* Whether the transport to every other member can do something. */
static int every_peer(const knit_comm_t *c, int (*can)(kn_p2p_t *, int))
{
    kn_p2p_t *p2p = kn_coll_p2p(c->coll);
    for (int i = 0; i < c->g.size; i++)
        if (i != c->g.rank && !can(p2p, c->g.job[i]))
            return 0;
    return 1;
}

/* The segment, made collectively; the message algorithms serve meanwhile
 * (state SETTING_UP) and afterwards if any member failed. */
static void setup(knit_comm_t *c)
{
    int p = c->g.size, me = c->g.rank;
    size_t small;
    size_t slot = seg_slot(&kn_cfg, p, &small);
    size_t size = seg_size(p, slot);
    char name[128] = "";
    void *base = me == 0 ? seg_create(c, name, sizeof(name), size, p, slot) : NULL;
    c->shm_state = SHMC_SETTING_UP;
    int ok[2] = {0, 0}, all_ok[2] = {0, 0}; /* mapped; can read every member's memory */
    kn_shmc_t *m = calloc(1, sizeof(*m));
    knit_status_t st = knit_bcast(c, name, sizeof(name), KNIT_BYTE, 0);
    if (st == KNIT_OK && name[0]) {
        name[sizeof(name) - 1] = 0;
        if (me)
            base = seg_open(name, p, &size, &slot);
        ok[0] = base && m; /* everything this rank needs, before all agree */
    }
    ok[1] = kn_cfg.coll_direct_min > 0 && every_peer(c, kn_p2p_can_get);
    knit_op_t min = {.kind = KNIT_OP_MIN};
    if (st == KNIT_OK)
        st = knit_allreduce(c, ok, all_ok, 2, KNIT_INT, &min);
    if (me == 0 && name[0])
        shm_unlink(name);
    if (st != KNIT_OK || !all_ok[0]) {
        if (base)
            munmap(base, size);
        if (me == 0 && name[0])
            kn_shm_budget_give(size);
        free(m);
        c->shm_state = SHMC_OFF;
        return;
    }
    seg_map(m, base, size, p, slot);
    m->charged = me == 0 ? size : 0;
    m->small = small;
    m->piece = KN_MIN(slot, SHMC_PIECE);
    m->direct = all_ok[1];
    c->shm = m;
    if (me == 0)
        kn_info("collectives of %d ranks share a segment (%zu-byte slots); large ones copy %s", p, slot,
                m->direct                  ? "straight from the ranks' buffers"
                : kn_cfg.coll_direct_min ? "by messages: a member cannot read another's memory"
                                         : "by messages (KNIT_COLL_DIRECT_MIN=0)");
}

/* The communicator's segment, set up on its first eligible collective;
 * NULL: messages only. */
static kn_shmc_t *segment(knit_comm_t *c)
{
    if (kn_likely(c->shm != NULL) || c->shm_state != SHMC_UNTRIED)
        return c->shm;
    /* the same answer on every member: the communicator's shape, the
     * settings (alike everywhere), and the transports between its ranks */
    if (seg_wanted(&kn_cfg) && c->nnodes == 1 && c->g.size > 1 &&
        c->g.size <= SHMC_MAX_RANKS && every_peer(c, kn_p2p_can_wake))
        setup(c);
    else
        c->shm_state = SHMC_OFF;
    return c->shm;
}

int kn_shmc_usable(knit_comm_t *c, size_t bytes)
{
    kn_shmc_t *m = segment(c);
    return m && bytes <= m->small;
}

int kn_shmc_staged(knit_comm_t *c)
{
    return segment(c) != NULL;
}

int kn_shmc_direct(knit_comm_t *c, size_t bytes)
{
    if (!kn_cfg.coll_direct_min || bytes < kn_cfg.coll_direct_min)
        return 0;
    kn_shmc_t *m = segment(c);
    return m && m->direct;
}

void kn_shmc_free(knit_comm_t *c)
{
    if (c->shm) {
        munmap(c->shm->base, c->shm->size);
        kn_shm_budget_give(c->shm->charged);
        free(c->shm->scratch);
        free(c->shm);
        c->shm = NULL;
    }
    c->shm_state = SHMC_OFF;
}

/* ------------------------------------------------------------ waiting */

typedef struct shmc_wait {
    kn_shmc_t *m;
    int p, next;          /* ranks below next seen */
    int who;              /* one rank, or -1: every rank */
    int left;             /* their left, not their seq */
    uint64_t k;
} shmc_wait_t;

static inline uint64_t flag_of(const shmc_wait_t *w, int r)
{
    shmc_flag_t *f = &w->m->flags[r];
    return atomic_load_explicit(w->left ? &f->left : &f->seq, memory_order_acquire);
}

static int arrived(void *arg)
{
    shmc_wait_t *w = arg;
    if (w->who >= 0)
        return flag_of(w, w->who) >= w->k;
    while (w->next < w->p && flag_of(w, w->next) >= w->k)
        w->next++;
    return w->next == w->p;
}

/* Whether one rank's seq (who < 0: every rank's; left: their left)
 * reached k, waiting for it where block. */
static int reached(knit_comm_t *c, int who, int left, uint64_t k, int block)
{
    kn_shmc_t *m = c->shm;
    uint64_t *all = left ? &m->all_left : &m->all_seen;
    if (who < 0 && *all >= k)
        return 1;
    shmc_wait_t w = {.m = m, .p = c->g.size, .who = who, .left = left, .k = k};
    if (!arrived(&w)) {
        if (!block)
            return 0;
        kn_p2p_wait(kn_coll_p2p(c->coll), arrived, &w);
    }
    if (who < 0)
        *all = k;
    return 1;
}

static void wait_for(knit_comm_t *c, int who, uint64_t k)
{
    (void)reached(c, who, 0, k, 1);
}

/* Whether collective k may write its set: every rank left the last
 * collective that used it. */
static int set_free(knit_comm_t *c, uint64_t k, int block)
{
    return k <= SHMC_SETS || reached(c, -1, 1, k - SHMC_SETS, block);
}

static void wake_all(knit_comm_t *c)
{
    kn_p2p_t *p2p = kn_coll_p2p(c->coll);
    for (int i = 0; i < c->g.size; i++)
        if (i != c->g.rank)
            kn_p2p_wake(p2p, c->g.job[i]);
}

static inline char *slot_of(const kn_shmc_t *m, int p, uint64_t k, int r)
{
    return m->data + ((size_t)(k % SHMC_SETS) * (size_t)p + (size_t)r) * m->slot;
}

/* Enter the next collective, having left collective `left` (the one
 * before, but for the staged allgather's pieces): wait until its set is
 * free, put my part (len bytes, may be 0) in the set from slot `at` on
 * (mine, or the whole set for a root that alone gives), publish, wake the
 * sleepers. */
static uint64_t enter_at(knit_comm_t *c, int at, const void *part, size_t len, uint64_t left)
{
    kn_shmc_t *m = c->shm;
    int p = c->g.size, me = c->g.rank;
    uint64_t k = ++m->seq;
    (void)set_free(c, k, 1);
    if (len)
        memcpy(slot_of(m, p, k, at), part, len);
    atomic_store_explicit(&m->flags[me].left, left, memory_order_release);
    atomic_store_explicit(&m->flags[me].seq, k, memory_order_release);
    wake_all(c);
    return k;
}

static uint64_t enter(knit_comm_t *c, const void *part, size_t len)
{
    return enter_at(c, c->g.rank, part, len, c->shm->seq);
}

/* ------------------------------------------------------------ collectives */

void kn_shmc_barrier(knit_comm_t *c)
{
    wait_for(c, -1, enter(c, NULL, 0));
}

void kn_shmc_bcast(knit_comm_t *c, void *buf, size_t bytes, int root)
{
    int me = c->g.rank;
    uint64_t k = enter(c, buf, me == root ? bytes : 0);
    if (me != root) {
        wait_for(c, root, k);
        memcpy(buf, slot_of(c->shm, c->g.size, k, root), bytes);
    }
}

/* ------------------------------------------------------------ staged forms
 *
 * Larger vectors go through the sets in pieces, one collective of the
 * sets' sequence per piece: a giver copies a piece in, the others copy it
 * out.  That is one plain copy more than cross-memory attach (each rank
 * reads the giver's buffer), but a plain copy here runs at twice the speed
 * of the kernel's (1 MiB: 60 vs 135 us) and the pieces pipeline: a root
 * may run SHMC_SETS - 1 pieces ahead of its slowest reader, and a reader
 * takes each piece as soon as it is there, while the messages' rendezvous
 * first waits for the root to run (8 ranks on 2 cpus, 1 MiB: bcast 755 ->
 * 452 us, allgather 8.8 -> 5.3 ms; docs/collectives.md). */

/* Whether p ranks writing result bytes each should copy pieces out with
 * non-temporal stores (KNIT_COLL_STAGED_NT_MIN): where all those results
 * do not stay in the caches anyway, a plain store would first read every
 * line it overwrites (8 ranks on 2 cpus: allgather 1 MiB, 64 MiB in all,
 * 10.4 -> 6.3 ms; bcast 4 MiB, 32 MiB, 3.19 -> 2.32 ms; but 16 MiB in all
 * is a tie or a loss: allgather 256 KiB 1555 vs 1522 us, bcast 4 MiB at 4
 * ranks 1.65 vs 2.73 ms). */
static int past_caches(int p, size_t result)
{
    return kn_cfg.coll_staged_nt_min && (size_t)p * result >= kn_cfg.coll_staged_nt_min;
}

static inline void copy_out(int nt, void *dst, const void *src, size_t n)
{
    if (nt)
        kn_copy_nt(dst, src, n);
    else
        memcpy(dst, src, n);
}

void kn_shmc_bcast_staged(knit_comm_t *c, void *buf, size_t bytes, int root)
{
    kn_shmc_t *m = c->shm;
    int p = c->g.size, me = c->g.rank;
    size_t piece = (size_t)p * m->piece; /* the root alone gives: the whole set */
    int nt = past_caches(p, bytes);
    for (size_t off = 0; off < bytes; off += piece) {
        size_t n = KN_MIN(piece, bytes - off);
        uint64_t k = enter_at(c, 0, (char *)buf + off, me == root ? n : 0, m->seq);
        if (me != root) {
            wait_for(c, root, k);
            copy_out(nt, (char *)buf + off, slot_of(m, p, k, 0), n);
        }
    }
}

/* Each rank puts in its pieces as far ahead as the sets allow before it
 * takes out the others' (the sets' sequence runs on while its left lags
 * behind), so that a rank, once it runs, does all it can before it waits:
 * with 8 ranks on 2 cpus every piece waited for would be a switch of each
 * rank. */
void kn_shmc_allgather_staged(knit_comm_t *c, const void *sb, void *rb, size_t len)
{
    kn_shmc_t *m = c->shm;
    int p = c->g.size, me = c->g.rank;
    char *out = rb;
    const char *mine = sb ? sb : out + (size_t)me * len;
    size_t np = (len + m->piece - 1) / m->piece, put = 0, got = 0;
    uint64_t base = m->seq; /* piece i is collective base + 1 + i */
    int nt = past_caches(p, (size_t)p * len);
    while (got < np) {
        /* without waiting where there is a piece to take out */
        while (put < np && (put == got || set_free(c, base + 1 + put, 0))) {
            size_t off = put * m->piece, n = KN_MIN(m->piece, len - off);
            enter_at(c, me, mine + off, n, base + got);
            if (sb)
                memcpy(out + (size_t)me * len + off, mine + off, n);
            put++;
        }
        size_t off = got * m->piece, n = KN_MIN(m->piece, len - off);
        uint64_t k = base + 1 + got;
        wait_for(c, -1, k);
        for (int j = 1; j < p; j++) { /* from my right: not all from one slot at once */
            int i = (me + j) % p;
            copy_out(nt, out + (size_t)i * len + off, slot_of(m, p, k, i), n);
        }
        got++;
        atomic_store_explicit(&m->flags[me].left, k, memory_order_release);
        wake_all(c);
    }
}

void kn_shmc_reduce(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t, const knit_op_t *op,
                    int root)
{
    int p = c->g.size, me = c->g.rank;
    size_t bytes = count * knit_dtype_size(t);
    uint64_t k = enter(c, sb, bytes);
    if (root >= 0 && me != root)
        return;
    wait_for(c, -1, k);
    /* rb = x0 op (x1 op (... op x[p-1])): rank order, whatever the op */
    kn_shmc_t *m = c->shm;
    memcpy(rb, slot_of(m, p, k, p - 1), bytes);
    for (int i = p - 2; i >= 0; i--)
        knit_reduce_local(slot_of(m, p, k, i), rb, count, t, op); /* op checked by the caller */
}

static uint64_t enter_direct(knit_comm_t *c, const void *src, const void *res);

/* An allgather's start, through the slots or direct: my block published
 * and in place, everyone's published. */
static uint64_t allgather_start(knit_comm_t *c, const void *sb, char *out, size_t len, int direct)
{
    int me = c->g.rank;
    const void *mine = sb ? sb : out + (size_t)me * len;
    uint64_t k = direct ? enter_direct(c, mine, NULL) : enter(c, mine, len);
    if (sb)
        memcpy(out + (size_t)me * len, sb, len);
    wait_for(c, -1, k);
    return k;
}

void kn_shmc_allgather(knit_comm_t *c, const void *sb, void *rb, size_t len)
{
    int p = c->g.size, me = c->g.rank;
    char *out = rb;
    uint64_t k = allgather_start(c, sb, out, len, 0);
    for (int i = 0; i < p; i++)
        if (i != me)
            memcpy(out + (size_t)i * len, slot_of(c->shm, p, k, i), len);
}

void kn_shmc_alltoall(knit_comm_t *c, const void *sb, void *rb, size_t len)
{
    int p = c->g.size, me = c->g.rank;
    char *out = rb;
    uint64_t k = enter(c, sb ? sb : rb, (size_t)p * len);
    wait_for(c, -1, k);
    for (int i = 0; i < p; i++)
        memcpy(out + (size_t)i * len, slot_of(c->shm, p, k, i) + (size_t)me * len, len);
}

/* ------------------------------------------------------------ direct forms
 *
 * Large parts are not copied through the slots: every rank publishes the
 * address of its buffer in its slot and the others copy straight from it
 * (kn_p2p_get: cross-memory attach), each as soon as it runs.  Messages
 * would move the same bytes in log2(p) or p-1 rounds where each waits for
 * a peer to be scheduled; on a crowded host that waiting is most of the
 * time.  A rank leaves only when nobody reads its buffers any more: a
 * last flag round (a barrier).  Broadcast keeps messages: a root that
 * waits for its readers measured slower than one whose sends complete as
 * they are taken (2 ranks, 1 MiB: 217 vs 132 us). */

static uint64_t enter_direct(knit_comm_t *c, const void *src, const void *res)
{
    direct_part_t d = {.src = (uint64_t)(uintptr_t)src, .res = (uint64_t)(uintptr_t)res};
    return enter(c, &d, sizeof(d));
}

static inline const direct_part_t *part_of(const knit_comm_t *c, uint64_t k, int r)
{
    return (const direct_part_t *)slot_of(c->shm, c->g.size, k, r);
}

static knit_status_t get_from(knit_comm_t *c, int r, void *dst, size_t len, uint64_t addr)
{
    return len ? kn_p2p_get(kn_coll_p2p(c->coll), c->g.job[r], dst, len, addr) : KNIT_OK;
}

/* Block r of out (len bytes) from every other rank r, at off in the buffer
 * r published, starting from my right (not all from one rank at once);
 * then the last flag round: nobody reads my buffers any more. */
static knit_status_t get_blocks(knit_comm_t *c, uint64_t k, char *out, size_t len, uint64_t off)
{
    int p = c->g.size, me = c->g.rank;
    knit_status_t st = KNIT_OK;
    for (int j = 1; j < p && st == KNIT_OK; j++) {
        int r = (me + j) % p;
        st = get_from(c, r, out + (size_t)r * len, len, part_of(c, k, r)->src + off);
    }
    kn_shmc_barrier(c);
    return st;
}

knit_status_t kn_shmc_allgather_direct(knit_comm_t *c, const void *sb, void *rb, size_t len)
{
    uint64_t k = allgather_start(c, sb, rb, len, 1);
    return get_blocks(c, k, rb, len, 0);
}

knit_status_t kn_shmc_alltoall_direct(knit_comm_t *c, const void *sb, void *rb, size_t len)
{
    size_t mine = (size_t)c->g.rank * len;
    uint64_t k = enter_direct(c, sb, NULL);
    memcpy((char *)rb + mine, (const char *)sb + mine, len);
    wait_for(c, -1, k);
    return get_blocks(c, k, rb, len, mine);
}

/* Allreduce: rank r combines block r of every input, in rank order, into
 * block r of its result (so every rank ends with the same bits), then
 * everyone copies the other blocks from their owners' results. */
knit_status_t kn_shmc_allreduce_direct(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                       const knit_op_t *op)
{
    kn_shmc_t *m = c->shm;
    int p = c->g.size, me = c->g.rank;
    size_t es = knit_dtype_size(t), per = (count + (size_t)p - 1) / (size_t)p;
#define BLOCK_LO(r) KN_MIN((size_t)(r) * per, count)
#define BLOCK_N(r) (BLOCK_LO((r) + 1) - BLOCK_LO(r))
    if (m->scratch_len < 2 * per * es) {
        void *b = realloc(m->scratch, 2 * per * es);
        if (!b)
            return KNIT_ERR_NOMEM; /* the others wait, as for any rank that leaves a collective */
        m->scratch = b;
        m->scratch_len = 2 * per * es;
    }
    const char *in = sb ? sb : rb;
    char *out = rb;
    uint64_t k = enter_direct(c, in, rb);
    wait_for(c, -1, k);
    /* my block: acc = x0 op (x1 op (... op x[p-1])) */
    size_t lo = BLOCK_LO(me) * es, n = BLOCK_N(me), bytes = n * es;
    char *acc = sb ? out + lo : m->scratch, *tmp = (char *)m->scratch + per * es;
    knit_status_t st = KNIT_OK;
    if (n) {
        if (p - 1 == me)
            memcpy(acc, in + lo, bytes);
        else
            st = get_from(c, p - 1, acc, bytes, part_of(c, k, p - 1)->src + lo);
        for (int i = p - 2; i >= 0 && st == KNIT_OK; i--) {
            const char *x = in + lo;
            if (i != me) {
                st = get_from(c, i, tmp, bytes, part_of(c, k, i)->src + lo);
                x = tmp;
            }
            knit_reduce_local(x, acc, n, t, op);
        }
        if (acc != out + lo)
            memcpy(out + lo, acc, bytes);
    }
    kn_shmc_barrier(c); /* every block is final, and nobody reads inputs any more */
    for (int j = 1; j < p && st == KNIT_OK; j++) {
        int r = (me + j) % p;
        st = get_from(c, r, out + BLOCK_LO(r) * es, BLOCK_N(r) * es, part_of(c, k, r)->res + BLOCK_LO(r) * es);
    }
#undef BLOCK_LO
#undef BLOCK_N
    kn_shmc_barrier(c); /* nobody reads my buffers any more */
    return st;
}
