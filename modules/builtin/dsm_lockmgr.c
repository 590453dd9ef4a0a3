/*
 * The lockmgr: node 0's agent's part of the dsm module (docs/dsm.md): the
 * region's named locks (FIFO grants; under invalidate a grant carries
 * the acquire's pages), its memory (a first-fit list of free extents in
 * address order, and a table of the blocks handed out, so that any rank
 * may free any block and a bad free is refused), and under invalidate the
 * log of write notices that acquires read (kept until every rank has
 * seen an entry).
 */
#include "dsm.h"

/* ------------------------------------------------------------ node 0: locks */

static lock_t *lock_of(state_t *s, uint64_t id, int make)
{
    for (lock_t *l = s->locks; l; l = l->next)
        if (l->id == id)
            return l;
    if (!make)
        return NULL;
    lock_t *l = calloc(1, sizeof(*l));
    if (l) {
        l->id = id;
        l->holder = -1;
        l->next = s->locks;
        s->locks = l;
    }
    return l;
}

/* ------------------------------------------------------------ node 0: write notices */

static int log_add(state_t *s, int32_t node, const uint32_t *pages, uint64_t n)
{
    if (s->log_len + n > s->log_cap) {
        uint64_t cap = s->log_cap ? s->log_cap : 1024;
        while (cap < s->log_len + n)
            cap *= 2;
        uint32_t *lp = realloc(s->log_page, cap * sizeof(uint32_t));
        if (lp)
            s->log_page = lp;
        int32_t *ln = lp ? realloc(s->log_node, cap * sizeof(int32_t)) : NULL;
        if (ln)
            s->log_node = ln;
        if (!lp || !ln)
            return -1;
        s->log_cap = cap;
    }
    for (uint64_t i = 0; i < n; i++) {
        s->log_page[s->log_len + i] = pages[i];
        s->log_node[s->log_len + i] = node;
    }
    s->log_len += n;
    return 0;
}

/* write notices held for the next barrier's moves, at most */
#define HOLD_MAX (1ull << 22)

/* Drop the entries every rank has seen. */
static void log_trim(state_t *s)
{
    /* (the next barrier's moves read from bar_pos on, unless the log grew
     * too long since: that barrier moves nothing) */
    uint64_t end = s->log_first + s->log_len, low = UINT64_MAX;
    if (s->migrate && !s->bar_lost && end - s->bar_pos > HOLD_MAX)
        s->bar_lost = 1;
    if (s->migrate && !s->bar_lost)
        low = s->bar_pos;
    for (int32_t r = 0; r < s->nranks; r++)
        if (s->rank_pos[r] < low)
            low = s->rank_pos[r];
    if (low <= s->log_first || (low - s->log_first) * 2 < s->log_len)
        return;
    uint64_t drop = low - s->log_first;
    memmove(s->log_page, s->log_page + drop, (s->log_len - drop) * sizeof(uint32_t));
    memmove(s->log_node, s->log_node + drop, (s->log_len - drop) * sizeof(int32_t));
    s->log_len -= drop;
    s->log_first = low;
}

/* Answer `token` at `node` with the pages other nodes wrote since pos
 * (each once): the rank's acquire. */
static void send_delta(knit_mod_ctx_t *m, state_t *s, int32_t node, int64_t rank, uint64_t pos, uint64_t token)
{
    uint64_t end = s->log_first + s->log_len;
    if (pos < s->log_first)
        pos = s->log_first; /* (cannot be: nothing is dropped before every rank saw it) */
    if (pos > end)
        pos = end;
    uint64_t cap = end - pos;
    char *msg = malloc(sizeof(kn_dsm_msg_t) + cap * sizeof(uint32_t));
    if (!msg) {
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = token, .b = (uint64_t)(int64_t)KNIT_MOD_ERR_NOMEM};
        K->send(m, node, &r, sizeof(r));
        return;
    }
    uint32_t *out = (uint32_t *)(msg + sizeof(kn_dsm_msg_t));
    uint64_t n = 0;
    for (uint64_t i = pos - s->log_first; i < s->log_len; i++) {
        uint32_t pg = s->log_page[i];
        if (s->log_node[i] == node || (s->mark[pg / 64] & (1ull << (pg % 64))))
            continue;
        s->mark[pg / 64] |= 1ull << (pg % 64);
        out[n++] = pg;
    }
    for (uint64_t i = 0; i < n; i++)
        s->mark[out[i] / 64] &= ~(1ull << (out[i] % 64));
    *(kn_dsm_msg_t *)msg = (kn_dsm_msg_t){.type = KN_DSM_M_DELTA, .ticket = token, .a = end,
                                          .bytes = n * sizeof(uint32_t)};
    K->send(m, node, msg, sizeof(kn_dsm_msg_t) + n * sizeof(uint32_t));
    free(msg);
    if (rank >= 0 && rank < s->nranks) {
        s->rank_pos[rank] = end;
        log_trim(s);
    }
}

static void grant(knit_mod_ctx_t *m, state_t *s, int32_t node, int64_t rank, uint64_t pos, uint64_t token)
{
    if (s->protocol) { /* the grant is the acquire's answer */
        send_delta(m, s, node, rank, pos, token);
        return;
    }
    kn_dsm_msg_t g = {.type = KN_DSM_M_GRANT, .ticket = token};
    K->send(m, node, &g, sizeof(g));
}

static void lock_req(knit_mod_ctx_t *m, state_t *s, int32_t node, const kn_dsm_msg_t *h)
{
    lock_t *l = lock_of(s, h->a, 1);
    if (l && l->holder >= 0 && h->bytes == 1) { /* a try */
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket, .b = (uint64_t)(int64_t)KNIT_MOD_ERR_AGAIN};
        K->send(m, node, &r, sizeof(r));
        return;
    }
    lwait_t *w = l && l->holder >= 0 ? malloc(sizeof(*w)) : NULL;
    if (!l || (l->holder >= 0 && !w)) {
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket, .b = (uint64_t)(int64_t)KNIT_MOD_ERR_NOMEM};
        K->send(m, node, &r, sizeof(r));
        return;
    }
    if (l->holder < 0) {
        l->holder = (int64_t)h->b;
        grant(m, s, node, (int64_t)h->b, h->c, h->ticket);
        return;
    }
    *w = (lwait_t){.node = node, .token = h->ticket, .rank = (int64_t)h->b, .pos = h->c};
    if (l->tail)
        l->tail->next = w;
    else
        l->head = w;
    l->tail = w;
}

static void unlock_req(knit_mod_ctx_t *m, state_t *s, const kn_dsm_msg_t *h)
{
    lock_t *l = lock_of(s, h->a, 0);
    if (!l || l->holder != (int64_t)h->b) {
        K->log(m, KNIT_MOD_LOG_WARN, "dsm: rank %lld unlocked lock %llu, which it does not hold", (long long)h->b,
               (unsigned long long)h->a);
        return;
    }
    lwait_t *w = l->head;
    if (!w) {
        l->holder = -1;
        return;
    }
    l->head = w->next;
    if (!l->head)
        l->tail = NULL;
    l->holder = w->rank;
    grant(m, s, w->node, w->rank, w->pos, w->token);
    free(w);
}

/* ------------------------------------------------------------ node 0: memory */

#define ALIGN_MIN 16u

static uint64_t blk_slot(const state_t *s, uint64_t off)
{
    uint64_t h = (off / ALIGN_MIN) * 0x9e3779b97f4a7c15ull;
    return (h >> 17) & (s->blk_cap - 1);
}

static int blk_put(state_t *s, uint64_t off, uint64_t len);

static int blk_grow(state_t *s)
{
    blk_t *old = s->blk;
    uint64_t oc = s->blk_cap;
    uint64_t cap = oc ? 2 * oc : 1024;
    blk_t *b = calloc(cap, sizeof(*b));
    if (!b)
        return -1;
    s->blk = b;
    s->blk_cap = cap;
    s->nblk = 0;
    for (uint64_t i = 0; i < oc; i++)
        if (old[i].len)
            blk_put(s, old[i].off, old[i].len);
    free(old);
    return 0;
}

static int blk_put(state_t *s, uint64_t off, uint64_t len)
{
    if ((s->nblk + 1) * 2 > s->blk_cap && blk_grow(s) < 0)
        return -1;
    uint64_t i = blk_slot(s, off);
    while (s->blk[i].len)
        i = (i + 1) & (s->blk_cap - 1);
    s->blk[i] = (blk_t){off, len};
    s->nblk++;
    return 0;
}

/* Remove the block at off: its length, 0 when there is none. */
static uint64_t blk_take(state_t *s, uint64_t off)
{
    if (!s->blk_cap)
        return 0;
    uint64_t i = blk_slot(s, off);
    while (s->blk[i].len && s->blk[i].off != off)
        i = (i + 1) & (s->blk_cap - 1);
    uint64_t len = s->blk[i].len;
    if (!len)
        return 0;
    s->blk[i].len = 0;
    s->nblk--;
    /* put back the run after it (linear probing) */
    for (uint64_t j = (i + 1) & (s->blk_cap - 1); s->blk[j].len; j = (j + 1) & (s->blk_cap - 1)) {
        blk_t b = s->blk[j];
        s->blk[j].len = 0;
        s->nblk--;
        blk_put(s, b.off, b.len);
    }
    return len;
}

static int ext_insert(state_t *s, uint64_t at, ext_t e)
{
    if (s->nfree == s->free_cap) {
        uint64_t cap = s->free_cap ? 2 * s->free_cap : 64;
        ext_t *f = realloc(s->free, cap * sizeof(*f));
        if (!f)
            return -1;
        s->free = f;
        s->free_cap = cap;
    }
    memmove(&s->free[at + 1], &s->free[at], (s->nfree - at) * sizeof(ext_t));
    s->free[at] = e;
    s->nfree++;
    return 0;
}

static void ext_remove(state_t *s, uint64_t at)
{
    memmove(&s->free[at], &s->free[at + 1], (s->nfree - at - 1) * sizeof(ext_t));
    s->nfree--;
}

/* First fit: the lowest free extent that holds len bytes at align. */
static int32_t mem_alloc(state_t *s, uint64_t len, uint64_t align, uint64_t *out)
{
    if (!len || len > s->size || !align || (align & (align - 1)) || align > s->size)
        return KNIT_MOD_ERR_INVAL;
    if (align < ALIGN_MIN)
        align = ALIGN_MIN;
    len = (len + ALIGN_MIN - 1) & ~(uint64_t)(ALIGN_MIN - 1);
    for (uint64_t i = 0; i < s->nfree; i++) {
        ext_t e = s->free[i];
        uint64_t start = (e.off + align - 1) & ~(align - 1);
        if (start - e.off > e.len || e.len - (start - e.off) < len)
            continue;
        uint64_t head = start - e.off, tail = e.len - head - len;
        if (blk_put(s, start, len) < 0)
            return KNIT_MOD_ERR_NOMEM;
        ext_remove(s, i);
        if (tail && ext_insert(s, i, (ext_t){start + len, tail}) < 0)
            return KNIT_MOD_ERR_NOMEM;
        if (head && ext_insert(s, i, (ext_t){e.off, head}) < 0)
            return KNIT_MOD_ERR_NOMEM;
        *out = start;
        return KNIT_MOD_OK;
    }
    return KNIT_MOD_ERR_NOMEM;
}

static int32_t mem_free(state_t *s, uint64_t off, uint64_t *len_out)
{
    uint64_t len = blk_take(s, off);
    if (!len)
        return KNIT_MOD_ERR_NOT_FOUND;
    *len_out = len;
    uint64_t lo = 0, hi = s->nfree; /* the first extent after off */
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (s->free[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    int prev = lo > 0 && s->free[lo - 1].off + s->free[lo - 1].len == off;
    int next = lo < s->nfree && off + len == s->free[lo].off;
    if (prev && next) {
        s->free[lo - 1].len += len + s->free[lo].len;
        ext_remove(s, lo);
    } else if (prev) {
        s->free[lo - 1].len += len;
    } else if (next) {
        s->free[lo].off = off;
        s->free[lo].len += len;
    } else if (ext_insert(s, lo, (ext_t){off, len}) < 0) {
        return KNIT_MOD_ERR_NOMEM; /* the bytes are lost to later allocations, nothing else */
    }
    return KNIT_MOD_OK;
}

static void mem_req(knit_mod_ctx_t *m, state_t *s, int32_t node, const kn_dsm_msg_t *h)
{
    kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket};
    int32_t st;
    if (!s->mapped) {
        st = KNIT_MOD_ERR_STATE;
    } else if (!s->nfree && !s->nblk && !s->free_cap) { /* first use: the region is free from heap_from */
        st = ext_insert(s, 0, (ext_t){s->heap_from, s->size - s->heap_from}) < 0 ? KNIT_MOD_ERR_NOMEM : KNIT_MOD_OK;
    } else {
        st = KNIT_MOD_OK;
    }
    if (st == KNIT_MOD_OK)
        st = h->type == KN_DSM_M_ALLOC ? mem_alloc(s, h->a, h->b, &r.a) : mem_free(s, h->a, &r.a);
    r.b = (uint64_t)(int64_t)st;
    K->send(m, node, &r, sizeof(r));
}

/* ------------------------------------------------------------ node 0: counters */

/* COUNT: a step of counter h->a towards its limit h->c (dsm_mod.h). */
static void count_req(knit_mod_ctx_t *m, state_t *s, int32_t from, const kn_dsm_msg_t *h, uint64_t len)
{
    kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket, .bytes = 2 * sizeof(uint64_t)};
    const kn_dsm_count_q_t *q = (const kn_dsm_count_q_t *)(h + 1);
    if (len != sizeof(*h) + sizeof(*q) || !q->askers || ((q->flags & KN_DSM_QF_GUIDED) && !q->parts)) {
        r.b = (uint64_t)(int64_t)KNIT_MOD_ERR_INVAL;
        K->send(m, from, &r, sizeof(r));
        return;
    }
    counter_t **pp = &s->counters, *c;
    while ((c = *pp) && c->id != h->a)
        pp = &c->next;
    if (!c && !(c = calloc(1, sizeof(*c)))) {
        r.b = (uint64_t)(int64_t)KNIT_MOD_ERR_NOMEM;
        K->send(m, from, &r, sizeof(r));
        return;
    }
    if (!*pp) {
        c->id = h->a;
        c->next = s->counters;
        s->counters = c;
        pp = &s->counters;
    }
    uint64_t left = c->value < h->c ? h->c - c->value : 0, step = h->b;
    if ((q->flags & KN_DSM_QF_GUIDED) && step && (left + q->parts - 1) / q->parts > step)
        step = ((left + q->parts - 1) / q->parts + step - 1) / step * step; /* (whole steps of b) */
    if (step > left)
        step = left;
    r.a = c->value;
    r.c = step;
    c->value += step;
    if (q->flags & KN_DSM_QF_ORDERED ? c->value >= h->c : !left && ++c->told >= q->askers) {
        *pp = c->next;
        free(c);
    }
    K->send(m, from, &r, sizeof(r));
}

/* ------------------------------------------------------------ node 0: homes that follow their writers */

/* The pages one node alone wrote since the last barrier, homed elsewhere
 * (the stacks' zone stays): their moves, into *out (malloc'd); how many,
 * -1 without memory.  The log's end becomes the next barrier's start. */
static int64_t moves_find(state_t *s, kn_dsm_move_t **out)
{
    uint64_t npages = s->size / KN_DSM_PAGE, from = s->bar_pos - s->log_first, n = 0;
    *out = NULL;
    if (s->bar_lost) { /* (some of the interval's notes are gone: who wrote what is not known) */
        s->bar_lost = 0;
        s->bar_pos = s->log_first + s->log_len;
        return 0;
    }
    if (!s->who && !(s->who = calloc(npages, sizeof(int32_t))))
        return -1;
    uint32_t *touched = s->log_len > from ? malloc((s->log_len - from) * sizeof(uint32_t)) : NULL;
    if (s->log_len > from && !touched)
        return -1;
    uint64_t nt = 0;
    for (uint64_t i = from; i < s->log_len; i++) {
        uint32_t pg = s->log_page[i];
        int32_t w = s->log_node[i] + 1;
        if (!s->who[pg]) {
            s->who[pg] = w;
            touched[nt++] = pg;
        } else if (s->who[pg] != w) {
            s->who[pg] = -1;
        }
    }
    kn_dsm_move_t *mv = nt ? malloc(nt * sizeof(*mv)) : NULL;
    for (uint64_t i = 0; i < nt; i++) {
        uint32_t pg = touched[i];
        int32_t w = s->who[pg];
        s->who[pg] = 0;
        if (mv && w > 0 && !kn_dsm_in_zone(&s->homes, pg) && kn_dsm_home(&s->homes, pg) != w - 1)
            mv[n++] = (kn_dsm_move_t){.page = pg, .home = w - 1};
    }
    free(touched);
    if (nt && !mv)
        return -1;
    s->bar_pos = s->log_first + s->log_len;
    if (!n) {
        free(mv);
        mv = NULL;
    }
    *out = mv;
    return (int64_t)n;
}

/* A barrier's acquire, answered: its pages, or (sticky: the nodes may
 * disagree on homes since) why moves failed. */
static void acq_answer(knit_mod_ctx_t *m, state_t *s, int32_t node, int64_t rank, uint64_t pos, uint64_t token)
{
    if (s->move_error) {
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = token, .b = (uint64_t)(int64_t)s->move_error};
        K->send(m, node, &r, sizeof(r));
    } else {
        send_delta(m, s, node, rank, pos, token);
    }
}

/* Answer the acquires held for the moves. */
static void held_answer(knit_mod_ctx_t *m, state_t *s)
{
    acqwait_t *a = s->held;
    s->held = NULL;
    while (a) {
        acqwait_t *next = a->next;
        acq_answer(m, s, a->node, a->rank, a->pos, a->token);
        free(a);
        a = next;
    }
}

/* A barrier's acquire (number bar): the first one of a barrier moves the
 * homes of the pages written by one node alone since the last, at every
 * node, before any rank learns the barrier's pages; the acquires wait
 * for that (a rank invalidates by the new homes, and fetches from them). */
static void barrier_acq(knit_mod_ctx_t *m, state_t *s, int32_t node, const kn_dsm_msg_t *h)
{
    uint64_t bar = h->c;
    if (s->move_error || (bar <= s->bar_done && !s->moving)) {
        acq_answer(m, s, node, (int64_t)h->b, h->a, h->ticket);
        return;
    }
    acqwait_t *a = malloc(sizeof(*a));
    if (!a) {
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket, .b = (uint64_t)(int64_t)KNIT_MOD_ERR_NOMEM};
        K->send(m, node, &r, sizeof(r));
        return;
    }
    *a = (acqwait_t){.next = s->held, .node = node, .rank = (int64_t)h->b, .pos = h->a, .token = h->ticket};
    s->held = a;
    if (s->moving) /* (this barrier's, or a later one's: ranks wait for the barrier before) */
        return;
    kn_dsm_move_t *mv;
    int64_t n = moves_find(s, &mv);
    s->moving = bar;
    s->move_error = n < 0 ? KNIT_MOD_ERR_NOMEM : kn_dsm_moves_apply(s, mv, n > 0 ? (uint64_t)n : 0);
    s->moves_left = 0;
    if (n > 0 && !s->move_error) {
        size_t len = sizeof(kn_dsm_msg_t) + (size_t)n * sizeof(*mv);
        char *msg = malloc(len);
        if (!msg) {
            s->move_error = KNIT_MOD_ERR_NOMEM;
        } else {
            *(kn_dsm_msg_t *)msg = (kn_dsm_msg_t){.type = KN_DSM_M_MOVE, .origin = 0, .a = bar,
                                                  .bytes = (uint64_t)n * sizeof(*mv)};
            memcpy(msg + sizeof(kn_dsm_msg_t), mv, (size_t)n * sizeof(*mv));
        }
        for (int32_t k = 1; msg && k < s->nnodes; k++) {
            if (K->send(m, k, msg, len) == KNIT_MOD_OK)
                s->moves_left++;
            else
                s->move_error = KNIT_MOD_ERR_IO;
        }
        free(msg);
        atomic_fetch_add(&s->meta->c.moved, (uint64_t)n);
    }
    free(mv);
    if (s->move_error)
        K->log(m, KNIT_MOD_LOG_ERROR, "dsm: the homes of barrier %llu's pages could not move (%d): its acquires fail",
               (unsigned long long)bar, s->move_error);
    if (!s->moves_left) {
        s->bar_done = bar;
        s->moving = 0;
        held_answer(m, s);
    }
}

static void moved(knit_mod_ctx_t *m, state_t *s, int32_t from, const kn_dsm_msg_t *h)
{
    if (!s->moving || h->a != s->moving || s->moves_left <= 0) {
        K->log(m, KNIT_MOD_LOG_WARN, "dsm: node %d answered moves of barrier %llu, which were not asked for", from,
               (unsigned long long)h->a);
        return;
    }
    if ((int32_t)(int64_t)h->b != KNIT_MOD_OK && !s->move_error) {
        s->move_error = (int32_t)(int64_t)h->b;
        K->log(m, KNIT_MOD_LOG_ERROR, "dsm: node %d could not move the homes of barrier %llu's pages (%d)", from,
               (unsigned long long)h->a, s->move_error);
    }
    if (--s->moves_left == 0) {
        s->bar_done = s->moving;
        s->moving = 0;
        held_answer(m, s);
    }
}

/* ------------------------------------------------------------ messages */

static void note_req(knit_mod_ctx_t *m, state_t *s, int32_t from, const kn_dsm_msg_t *h, uint64_t len)
{
    kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket};
    uint64_t n = h->bytes / sizeof(uint32_t);
    const uint32_t *pg = (const uint32_t *)(h + 1);
    int32_t st = len == sizeof(*h) + h->bytes ? KNIT_MOD_OK : KNIT_MOD_ERR_INVAL;
    for (uint64_t i = 0; st == KNIT_MOD_OK && i < n; i++)
        if (pg[i] >= s->size / KN_DSM_PAGE)
            st = KNIT_MOD_ERR_RANGE;
    if (st == KNIT_MOD_OK && log_add(s, from, pg, n) < 0)
        st = KNIT_MOD_ERR_NOMEM;
    r.a = s->log_first + s->log_len;
    r.b = (uint64_t)(int64_t)st;
    K->send(m, from, &r, sizeof(r));
}

int kn_lockmgr_message(knit_mod_ctx_t *m, state_t *s, int32_t from, const kn_dsm_msg_t *h, uint64_t len)
{
    switch (h->type) {
    case KN_DSM_M_LOCK:
        if (s->self == 0)
            lock_req(m, s, from, h);
        return 1;
    case KN_DSM_M_UNLOCK:
        if (s->self == 0)
            unlock_req(m, s, h);
        return 1;
    case KN_DSM_M_ALLOC:
    case KN_DSM_M_FREE:
        if (s->self == 0)
            mem_req(m, s, from, h);
        return 1;
    case KN_DSM_M_COUNT:
        if (s->self == 0)
            count_req(m, s, from, h, len);
        return 1;
    case KN_DSM_M_NOTE:
        if (s->self == 0 && s->mark)
            note_req(m, s, from, h, len);
        return 1;
    case KN_DSM_M_ACQ:
        if (s->self == 0 && s->mark && h->c && s->migrate)
            barrier_acq(m, s, from, h);
        else if (s->self == 0 && s->mark)
            send_delta(m, s, from, (int64_t)h->b, h->a, h->ticket);
        return 1;
    case KN_DSM_M_MOVED:
        if (s->self == 0)
            moved(m, s, from, h);
        return 1;
    }
    return 0;
}

void kn_lockmgr_fini(state_t *s)
{
    for (counter_t *c = s->counters, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    for (lock_t *l = s->locks, *n; l; l = n) {
        n = l->next;
        for (lwait_t *w = l->head, *wn; w; w = wn) {
            wn = w->next;
            free(w);
        }
        free(l);
    }
    free(s->free);
    free(s->blk);
    free(s->log_page);
    free(s->log_node);
    free(s->rank_pos);
    free(s->mark);
    free(s->who);
    for (acqwait_t *a = s->held, *n; a; a = n) {
        n = a->next;
        free(a);
    }
}
