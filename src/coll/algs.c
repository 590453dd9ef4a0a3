/*
 * Collective algorithms, written once as schedule builders over a group
 * (the communicator, one node's ranks, or the node leaders); blocking and
 * nonblocking collectives, and the node-aware compositions, all use them.
 *
 * Order of reductions.  Every reduction combines in an order fixed by the
 * algorithm, never by arrival, so results do not depend on timing, and
 * every rank of an allreduce ends with the same bits (each partial result
 * is computed once and copied, or computed from the same operands in
 * commutative predefined ops).  The builders that keep rank order
 * (recursive doubling with its remainder step, binomial with root 0,
 * the scans) serve non-commutative ops; the others require commutativity
 * and the selection in api.c never gives them a non-commutative op.
 *
 * Non-powers of two: recursive doubling and recursive halving fold the
 * first 2*rem ranks pairwise (even into odd) onto a power of two, run on
 * that, and unfold at the end (MPICH's scheme).
 */
#include <string.h>

#include "coll/coll.h"

static int pof2_below(int p)
{
    int x = 1;
    while (x * 2 <= p)
        x *= 2;
    return x;
}

/* ------------------------------------------------------------ barrier */

void kn_alg_barrier_dissem(kn_sched_t *s, const kn_grp_t *g, int sub)
{
    int p = g->size, r = g->rank;
    for (int d = 1; d < p; d <<= 1) {
        kn_sched_recv(s, g, (r - d + p) % p, NULL, 0, sub);
        kn_sched_send(s, g, (r + d) % p, NULL, 0, sub);
        kn_sched_round(s);
    }
}

/* ------------------------------------------------------------ bcast */

void kn_alg_bcast_binomial(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t len, int root, int sub)
{
    int p = g->size, r = g->rank, vr = (r - root + p) % p;
    int mask = 1;
    while (mask < p) {
        if (vr & mask) {
            kn_sched_recv(s, g, (r - mask + p) % p, buf, len, sub);
            kn_sched_round(s);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < p)
            kn_sched_send(s, g, (r + mask) % p, buf, len, sub);
    kn_sched_round(s);
}

void kn_alg_bcast_linear(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t len, int root, int sub)
{
    int p = g->size, r = g->rank;
    if (r == root) {
        for (int k = 1; k < p; k++)
            kn_sched_send(s, g, (r + k) % p, buf, len, sub);
    } else {
        kn_sched_recv(s, g, root, buf, len, sub);
    }
    kn_sched_round(s);
}

/* byte range of chunks [a, b) of len bytes cut in chunks of cs */
static size_t clampz(size_t x, size_t len) { return x < len ? x : len; }

void kn_alg_bcast_scatter_allgather(kn_sched_t *s, const kn_grp_t *g, void *buf_, size_t len, int root,
                                    int sub)
{
    char *buf = buf_;
    int p = g->size, r = g->rank, vr = (r - root + p) % p;
    size_t cs = (len + (size_t)p - 1) / (size_t)p;
    /* binomial scatter: relative rank v ends up with chunk v */
    int mask = 1;
    while (mask < p) {
        if (vr & mask) {
            int hi = vr + mask < p ? vr + mask : p;
            size_t a = clampz((size_t)vr * cs, len), b = clampz((size_t)hi * cs, len);
            kn_sched_recv(s, g, (r - mask + p) % p, buf + a, b - a, sub);
            kn_sched_round(s);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        int c = vr + mask;
        if (c < p) {
            int hi = c + mask < p ? c + mask : p;
            size_t a = clampz((size_t)c * cs, len), b = clampz((size_t)hi * cs, len);
            kn_sched_send(s, g, (r + mask) % p, buf + a, b - a, sub);
        }
    }
    kn_sched_round(s);
    /* ring allgather of the chunks: rank a holds chunk (a - root) mod p */
    size_t *off = kn_sched_alloc(s, 2 * (size_t)p * sizeof(size_t));
    if (!off)
        return;
    size_t *ln = off + p;
    for (int a = 0; a < p; a++) {
        int v = (a - root + p) % p;
        off[a] = clampz((size_t)v * cs, len);
        ln[a] = clampz((size_t)(v + 1) * cs, len) - off[a];
    }
    kn_alg_allgatherv_ring(s, g, buf, ln, off, NULL, sub);
}

/* ------------------------------------------------------------ allgather */

void kn_alg_allgatherv_ring(kn_sched_t *s, const kn_grp_t *g, char *buf, const size_t *len,
                            const size_t *off, const char *own, int sub)
{
    int p = g->size, r = g->rank;
    int left = (r - 1 + p) % p, right = (r + 1) % p;
    for (int k = 0; k < p - 1; k++) {
        int sb = (r - k + p) % p, rb = (r - k - 1 + p) % p;
        kn_sched_recv(s, g, left, buf + off[rb], len[rb], sub);
        kn_sched_send(s, g, right, k == 0 && own ? own : buf + off[sb], len[sb], sub);
        if (k == 0 && own)
            kn_sched_copy(s, own, buf + off[r], len[r]);
        kn_sched_round(s);
    }
    if (p == 1 && own)
        kn_sched_copy(s, own, buf + off[r], len[r]);
}

void kn_alg_allgatherv_linear(kn_sched_t *s, const kn_grp_t *g, char *buf, const size_t *len,
                              const size_t *off, const char *own, int sub)
{
    int p = g->size, r = g->rank;
    for (int k = 1; k < p; k++) {
        int i = (r - k + p) % p;
        kn_sched_recv(s, g, i, buf + off[i], len[i], sub);
    }
    for (int k = 1; k < p; k++)
        kn_sched_send(s, g, (r + k) % p, own ? own : buf + off[r], len[r], sub);
    if (own)
        kn_sched_copy(s, own, buf + off[r], len[r]);
    kn_sched_round(s);
}

void kn_alg_allgather_ring_or_linear(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own,
                                     int sub, int linear)
{
    int p = g->size;
    size_t *off = kn_sched_alloc(s, 2 * (size_t)p * sizeof(size_t));
    if (!off)
        return;
    for (int i = 0; i < p; i++) {
        off[i] = (size_t)i * len;
        off[p + i] = len;
    }
    (linear ? kn_alg_allgatherv_linear : kn_alg_allgatherv_ring)(s, g, buf, off + p, off, own, sub);
}

void kn_alg_allgather_leader(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own, int sub)
{
    int p = g->size, r = g->rank;
    size_t total = (size_t)p * len;
    if (r == 0) {
        for (int i = 1; i < p; i++)
            kn_sched_recv(s, g, i, buf + (size_t)i * len, len, sub);
        if (own)
            kn_sched_copy(s, own, buf, len);
        kn_sched_round(s);
        for (int i = 1; i < p; i++)
            kn_sched_send(s, g, i, buf, total, sub);
    } else {
        /* the vector comes back over my block (in place) only once the
         * leader has it: a round apart, whatever the protocol */
        kn_sched_send(s, g, 0, own ? own : buf + (size_t)r * len, len, sub);
        kn_sched_round(s);
        kn_sched_recv(s, g, 0, buf, total, sub);
    }
    kn_sched_round(s);
}

/* first original rank of folded rank nr (see the remainder scheme) */
static int unfold(int nr, int rem) { return nr < rem ? 2 * nr : nr + rem; }
static int fold_peer(int nr, int rem) { return nr < rem ? 2 * nr + 1 : nr + rem; }

void kn_alg_allgather_rd(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own, int sub)
{
    int p = g->size, r = g->rank, pof2 = pof2_below(p), rem = p - pof2;
    size_t mine = (size_t)r * len;
    int nr;
    if (r < 2 * rem) {
        if (r % 2 == 0) { /* folded away: hand my block over, get everything back (mine too) */
            kn_sched_send(s, g, r + 1, own ? own : buf + mine, len, sub);
            kn_sched_round(s);
            kn_sched_recv(s, g, r + 1, buf, (size_t)p * len, sub);
            kn_sched_round(s);
            return;
        }
        kn_sched_recv(s, g, r - 1, buf + (size_t)(r - 1) * len, len, sub);
        if (own)
            kn_sched_copy(s, own, buf + mine, len);
        kn_sched_round(s);
        nr = r / 2;
        own = NULL; /* in buf now */
    } else {
        nr = r - rem;
    }
    for (int mask = 1; mask < pof2; mask <<= 1) {
        int pn = nr ^ mask;
        int mb = nr & ~(mask - 1), pb = pn & ~(mask - 1);
        size_t ma = (size_t)unfold(mb, rem) * len, me = (size_t)unfold(mb + mask, rem) * len;
        size_t pa = (size_t)unfold(pb, rem) * len, pe = (size_t)unfold(pb + mask, rem) * len;
        kn_sched_recv(s, g, fold_peer(pn, rem), buf + pa, pe - pa, sub);
        /* the first round sends my block alone (ma == mine, me - ma == len) */
        kn_sched_send(s, g, fold_peer(pn, rem), own ? own : buf + ma, me - ma, sub);
        if (own)
            kn_sched_copy(s, own, buf + mine, len);
        own = NULL;
        kn_sched_round(s);
    }
    if (own) /* one rank */
        kn_sched_copy(s, own, buf + mine, len);
    if (r < 2 * rem) {
        kn_sched_send(s, g, r - 1, buf, (size_t)p * len, sub);
        kn_sched_round(s);
    }
}

void kn_alg_allgather_bruck(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own, int sub)
{
    int p = g->size, r = g->rank;
    char *tmp = kn_sched_alloc(s, (size_t)p * len);
    if (!tmp)
        return;
    /* tmp block j = rank (r + j)'s block; the first round sends mine alone */
    const char *mine = own ? own : buf + (size_t)r * len;
    if (!own)
        kn_sched_copy(s, mine, tmp, len);
    for (int d = 1; d < p; d <<= 1) {
        int n = d < p - d ? d : p - d;
        kn_sched_recv(s, g, (r + d) % p, tmp + (size_t)d * len, (size_t)n * len, sub);
        kn_sched_send(s, g, (r - d + p) % p, d == 1 ? mine : tmp, (size_t)n * len, sub);
        if (d == 1 && own)
            kn_sched_copy(s, own, tmp, len);
        kn_sched_round(s);
    }
    if (p == 1 && own)
        kn_sched_copy(s, own, tmp, len);
    kn_sched_copy(s, tmp, buf + (size_t)r * len, (size_t)(p - r) * len);
    kn_sched_copy(s, tmp + (size_t)(p - r) * len, buf, (size_t)r * len);
    kn_sched_round(s);
}

/* ------------------------------------------------------------ reduce */

void kn_alg_reduce_linear(kn_sched_t *s, const kn_grp_t *g, const void *sbuf, void *rbuf, size_t count, int root,
                          int sub)
{
    int p = g->size, r = g->rank;
    size_t bytes = count * kn_coll_esize(s);
    if (r != root) {
        kn_sched_send(s, g, root, sbuf, bytes, sub);
        kn_sched_round(s);
        return;
    }
    /* slot q holds rank q's input (mine copied: sbuf may be rbuf) */
    char *in = kn_sched_alloc(s, (size_t)p * bytes);
    if (!in)
        return;
    for (int q = 0; q < p; q++)
        if (q != r)
            kn_sched_recv(s, g, q, in + (size_t)q * bytes, bytes, sub);
    kn_sched_copy(s, sbuf, in + (size_t)r * bytes, bytes);
    kn_sched_round(s);
    /* x0 op (x1 op (... op x(p-1))): rank order, one association */
    kn_sched_copy(s, in + (size_t)(p - 1) * bytes, rbuf, bytes);
    for (int q = p - 2; q >= 0; q--)
        kn_sched_reduce(s, in + (size_t)q * bytes, rbuf, count);
    kn_sched_round(s);
}

void kn_alg_reduce_binomial(kn_sched_t *s, const kn_grp_t *g, const void *sbuf, void *rbuf, size_t count,
                            int root, int sub)
{
    int p = g->size, r = g->rank;
    size_t bytes = count * kn_coll_esize(s);
    int comm = kn_coll_commutative(s);
    /* non-commutative: a tree rooted at 0 keeps rank order; 0 forwards */
    int troot = comm ? root : 0;
    int vr = (r - troot + p) % p;
    int nchild = 0, top = 1;
    while (top < p && !(vr & top)) {
        if (vr + top < p)
            nchild++;
        top <<= 1;
    }
    const void *acc = sbuf;
    if (nchild) {
        void *a = (r == root && r == troot) ? rbuf : kn_sched_alloc(s, bytes);
        /* the first child lands in a itself (a = mine op a, no copy of
         * mine), unless mine is there already (in place) */
        int direct = a != sbuf;
        char *tmp = nchild > direct ? kn_sched_alloc(s, (size_t)(nchild - direct) * bytes) : NULL;
        if (!a || (nchild > direct && !tmp))
            return;
        int k = 0;
        for (int m = 1; m < top; m <<= 1)
            if (vr + m < p) {
                void *dst = direct && k == 0 ? a : tmp + (size_t)(k - direct) * bytes;
                kn_sched_recv(s, g, (r + m) % p, dst, bytes, sub);
                k++;
            }
        kn_sched_round(s);
        /* children cover ascending rank ranges after mine: acc = mine op
         * child 1 op child 2 ..., in that order whatever the op */
        if (direct)
            kn_sched_reduce(s, sbuf, a, count);
        for (int i = 0; i < nchild - direct; i++)
            kn_sched_reduce_r(s, tmp + (size_t)i * bytes, a, count);
        acc = a;
    } else if (r == root && r == troot) {
        kn_sched_copy(s, sbuf, rbuf, bytes);
    }
    if (vr) /* to the parent */
        kn_sched_send(s, g, (r - (vr & -vr) + p) % p, acc, bytes, sub);
    kn_sched_round(s);
    if (troot != root) {
        if (r == troot)
            kn_sched_send(s, g, root, acc, bytes, sub);
        else if (r == root)
            kn_sched_recv(s, g, troot, rbuf, bytes, sub);
        kn_sched_round(s);
    }
}

/*
 * Recursive halving reduce-scatter (Rabenseifner), commutative ops.  buf
 * holds count elements, cut in pof2 chunks (cnt/disp in elements).  On
 * return *own is the chunk this rank holds reduced (-1 if folded away),
 * and the simulated index state is left for the allgather that undoes it.
 */
typedef struct rab {
    int pof2, rem, nr;
    size_t *cnt, *disp;
    int send_idx, last_idx, mask;
} rab_t;

static int rab_init(kn_sched_t *s, rab_t *x, int p, size_t count)
{
    x->pof2 = pof2_below(p);
    x->rem = p - x->pof2;
    x->cnt = kn_sched_alloc(s, 2 * (size_t)x->pof2 * sizeof(size_t));
    if (!x->cnt)
        return 0;
    x->disp = x->cnt + x->pof2;
    size_t q = count / (size_t)x->pof2, rr = count % (size_t)x->pof2, at = 0;
    for (int i = 0; i < x->pof2; i++) {
        x->cnt[i] = q + ((size_t)i < rr);
        x->disp[i] = at;
        at += x->cnt[i];
    }
    return 1;
}

static size_t rab_sum(const rab_t *x, int a, int b)
{
    size_t n = 0;
    for (int i = a; i < b; i++)
        n += x->cnt[i];
    return n;
}

/* the chunk folded rank nr holds after the halving (simulated) */
static int rab_owned(int nr, int pof2)
{
    int send_idx = 0, recv_idx = 0;
    for (int mask = 1; mask < pof2; mask <<= 1) {
        if (nr < (nr ^ mask))
            send_idx = recv_idx + pof2 / (mask * 2);
        else
            recv_idx = send_idx + pof2 / (mask * 2);
        send_idx = recv_idx;
    }
    return send_idx;
}

static void rab_halving(kn_sched_t *s, const kn_grp_t *g, char *buf, char *tmp, rab_t *x, const char *src,
                        int sub)
{
    int r = g->rank, rem = x->rem, pof2 = x->pof2;
    size_t es = kn_coll_esize(s), count = rab_sum(x, 0, pof2);
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            kn_sched_send(s, g, r + 1, src ? src : buf, count * es, sub);
            kn_sched_round(s);
            x->nr = -1;
            return;
        }
        kn_sched_recv(s, g, r - 1, tmp, count * es, sub);
        if (src)
            kn_sched_copy(s, src, buf, count * es);
        src = NULL;
        kn_sched_round(s);
        kn_sched_reduce(s, tmp, buf, count);
        x->nr = r / 2;
    } else {
        x->nr = r - rem;
    }
    int nr = x->nr, send_idx = 0, recv_idx = 0, last_idx = pof2, mask = 1;
    for (; mask < pof2; mask <<= 1) {
        int pn = nr ^ mask, dst = fold_peer(pn, rem);
        size_t scnt, rcnt;
        if (nr < pn) {
            send_idx = recv_idx + pof2 / (mask * 2);
            scnt = rab_sum(x, send_idx, last_idx);
            rcnt = rab_sum(x, recv_idx, send_idx);
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            scnt = rab_sum(x, send_idx, recv_idx);
            rcnt = rab_sum(x, recv_idx, last_idx);
        }
        kn_sched_recv(s, g, dst, tmp + x->disp[recv_idx] * es, rcnt * es, sub);
        kn_sched_send(s, g, dst, (src ? src : buf) + x->disp[send_idx] * es, scnt * es, sub);
        if (src) /* only the half kept here is needed in buf */
            kn_sched_copy(s, src + x->disp[recv_idx] * es, buf + x->disp[recv_idx] * es, rcnt * es);
        src = NULL;
        kn_sched_round(s);
        kn_sched_reduce(s, tmp + x->disp[recv_idx] * es, buf + x->disp[recv_idx] * es, rcnt);
        send_idx = recv_idx;
        if (mask * 2 < pof2)
            last_idx = recv_idx + pof2 / (mask * 2);
    }
    if (src) /* one rank */
        kn_sched_copy(s, src, buf, count * es);
    kn_sched_round(s); /* the last reduce */
    x->send_idx = send_idx;
    x->last_idx = last_idx;
    x->mask = mask;
}

void kn_alg_allreduce_rabenseifner(kn_sched_t *s, const kn_grp_t *g, void *buf_, size_t count, const void *src,
                                   int sub)
{
    char *buf = buf_;
    int p = g->size, r = g->rank;
    size_t es = kn_coll_esize(s);
    rab_t x;
    char *tmp = kn_sched_alloc(s, count * es);
    if (!tmp || !rab_init(s, &x, p, count))
        return;
    rab_halving(s, g, buf, tmp, &x, src, sub);
    if (x.nr >= 0) {
        int nr = x.nr, pof2 = x.pof2, send_idx = x.send_idx, last_idx = x.last_idx, recv_idx;
        for (int mask = x.mask >> 1; mask > 0; mask >>= 1) {
            int pn = nr ^ mask, dst = fold_peer(pn, x.rem);
            size_t scnt, rcnt;
            if (nr < pn) {
                if (mask != pof2 / 2)
                    last_idx = last_idx + pof2 / (mask * 2);
                recv_idx = send_idx + pof2 / (mask * 2);
                scnt = rab_sum(&x, send_idx, recv_idx);
                rcnt = rab_sum(&x, recv_idx, last_idx);
            } else {
                recv_idx = send_idx - pof2 / (mask * 2);
                scnt = rab_sum(&x, send_idx, last_idx);
                rcnt = rab_sum(&x, recv_idx, send_idx);
            }
            kn_sched_recv(s, g, dst, buf + x.disp[recv_idx] * es, rcnt * es, sub);
            kn_sched_send(s, g, dst, buf + x.disp[send_idx] * es, scnt * es, sub);
            kn_sched_round(s);
            if (nr > pn)
                send_idx = recv_idx;
        }
    }
    if (r < 2 * x.rem) {
        if (r % 2)
            kn_sched_send(s, g, r - 1, buf, count * es, sub);
        else
            kn_sched_recv(s, g, r + 1, buf, count * es, sub);
        kn_sched_round(s);
    }
}

void kn_alg_reduce_rabenseifner(kn_sched_t *s, const kn_grp_t *g, const void *sbuf, void *rbuf,
                                size_t count, int root, int sub)
{
    int p = g->size, r = g->rank;
    size_t es = kn_coll_esize(s);
    rab_t x;
    char *work = r == root ? rbuf : kn_sched_alloc(s, count * es);
    char *tmp = kn_sched_alloc(s, count * es);
    if (!work || !tmp || !rab_init(s, &x, p, count))
        return;
    rab_halving(s, g, work, tmp, &x, sbuf == work ? NULL : sbuf, sub);
    /* every folded rank sends its chunk straight to the root */
    if (r == root) {
        for (int q = 0; q < p; q++) {
            int nq = q < 2 * x.rem ? (q % 2 ? q / 2 : -1) : q - x.rem;
            if (nq < 0 || q == r)
                continue;
            int c = rab_owned(nq, x.pof2);
            kn_sched_recv(s, g, q, work + x.disp[c] * es, x.cnt[c] * es, sub);
        }
    } else if (x.nr >= 0) {
        int c = x.send_idx;
        kn_sched_send(s, g, root, work + x.disp[c] * es, x.cnt[c] * es, sub);
    }
    kn_sched_round(s);
}

/* ------------------------------------------------------------ allreduce */

void kn_alg_allreduce_rd(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t count, const void *src, int sub)
{
    int p = g->size, r = g->rank, pof2 = pof2_below(p), rem = p - pof2;
    size_t bytes = count * kn_coll_esize(s);
    char *tmp = kn_sched_alloc(s, bytes);
    if (!tmp)
        return;
    int nr;
    if (r < 2 * rem) {
        if (r % 2 == 0) { /* folded away: the result comes back whole */
            kn_sched_send(s, g, r + 1, src ? src : buf, bytes, sub);
            kn_sched_round(s);
            kn_sched_recv(s, g, r + 1, buf, bytes, sub);
            kn_sched_round(s);
            return;
        }
        kn_sched_recv(s, g, r - 1, tmp, bytes, sub);
        if (src)
            kn_sched_copy(s, src, buf, bytes);
        src = NULL;
        kn_sched_round(s);
        kn_sched_reduce(s, tmp, buf, count); /* lower rank's first */
        nr = r / 2;
    } else {
        nr = r - rem;
    }
    for (int mask = 1; mask < pof2; mask <<= 1) {
        int dst = fold_peer(nr ^ mask, rem);
        kn_sched_recv(s, g, dst, tmp, bytes, sub);
        kn_sched_send(s, g, dst, src ? src : buf, bytes, sub);
        if (src)
            kn_sched_copy(s, src, buf, bytes);
        src = NULL;
        kn_sched_round(s);
        if (dst < r)
            kn_sched_reduce(s, tmp, buf, count);
        else
            kn_sched_reduce_r(s, tmp, buf, count);
    }
    if (src) /* one rank */
        kn_sched_copy(s, src, buf, bytes);
    kn_sched_round(s);
    if (r < 2 * rem) {
        kn_sched_send(s, g, r - 1, buf, bytes, sub);
        kn_sched_round(s);
    }
}

size_t *kn_alg_ring_chunks(kn_sched_t *s, int p, size_t count)
{
    size_t es = kn_coll_esize(s), q = count / (size_t)p, rr = count % (size_t)p, at = 0;
    size_t *cnt = kn_sched_alloc(s, 2 * (size_t)p * sizeof(size_t));
    if (!cnt)
        return NULL;
    for (int i = 0; i < p; i++) {
        cnt[i] = q + ((size_t)i < rr);
        cnt[p + i] = at * es;
        at += cnt[i];
    }
    return cnt;
}

void kn_alg_ring_reduce_scatter(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t count, const size_t *cnt,
                                const char *src, int sub)
{
    int p = g->size, r = g->rank, left = (r - 1 + p) % p, right = (r + 1) % p;
    size_t es = kn_coll_esize(s);
    const size_t *off = cnt + p;
    char *tmp = kn_sched_alloc(s, cnt[0] * es); /* chunk 0 is the largest */
    if (!tmp)
        return;
    for (int k = 0; k < p - 1; k++) {
        int sc = (r - k + p) % p, rc = (r - k - 1 + p) % p;
        kn_sched_recv(s, g, left, tmp, cnt[rc] * es, sub);
        kn_sched_send(s, g, right, (src ? src : buf) + off[sc], cnt[sc] * es, sub);
        if (src)
            kn_sched_copy(s, src, buf, count * es);
        src = NULL;
        kn_sched_round(s);
        kn_sched_reduce(s, tmp, buf + off[rc], cnt[rc]);
    }
    if (src) /* one rank */
        kn_sched_copy(s, src, buf, count * es);
}

void kn_alg_ring_allgather(kn_sched_t *s, const kn_grp_t *g, char *buf, const size_t *cnt, int sub)
{
    int p = g->size, r = g->rank, left = (r - 1 + p) % p, right = (r + 1) % p;
    size_t es = kn_coll_esize(s);
    const size_t *off = cnt + p;
    for (int k = 0; k < p - 1; k++) {
        int sc = (r + 1 - k + p) % p, rc = (r - k + p) % p;
        kn_sched_recv(s, g, left, buf + off[rc], cnt[rc] * es, sub);
        kn_sched_send(s, g, right, buf + off[sc], cnt[sc] * es, sub);
        kn_sched_round(s);
    }
    kn_sched_round(s);
}

void kn_alg_allreduce_ring(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t count, const void *src, int sub)
{
    size_t *cnt = kn_alg_ring_chunks(s, g->size, count);
    if (!cnt)
        return;
    kn_alg_ring_reduce_scatter(s, g, buf, count, cnt, src, sub);
    kn_alg_ring_allgather(s, g, buf, cnt, sub);
}
