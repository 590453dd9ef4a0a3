/*
 * Layout descriptions and the walks over them: pack, unpack, the block
 * cursor and the strided form.
 *
 * A type's layout is a tree of nodes (dtype_int.h) built once by its
 * constructor, the way MPICH's dataloops and yaksa describe a type: a
 * vector is one node over its element's node whatever its count, so a
 * type of 2^30 blocks costs a few nodes.  The constructors simplify as
 * they build: dense copies become one block, a vector of a vector that
 * continues it becomes one longer vector, byte blocks that touch merge; so
 * the common shapes reach the walkers as a block (sent in place) or a
 * vector of blocks (one copy loop specialized on the block size, no call
 * per element).
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/dtype_int.h"

/* ------------------------------------------------------------- nodes */

static kn_dl_t *node(int kind)
{
    kn_dl_t *n = calloc(1, sizeof(*n));
    if (n) {
        n->kind = kind;
        n->refs = 1;
        n->depth = 1;
    }
    return n;
}

kn_dl_t *kn_dl_empty(void)
{
    return node(KN_DL_BLOCK);
}

kn_dl_t *kn_dl_block(MPI_Aint disp, size_t len)
{
    kn_dl_t *n = node(KN_DL_BLOCK);
    if (n) {
        n->disp = disp;
        n->size = len;
        n->tlb = disp;
        n->tub = disp + (MPI_Aint)len;
    }
    return n;
}

void kn_dl_unref(kn_dl_t *n)
{
    while (n && --n->refs == 0) {
        kn_dl_t *next = n->child;
        if (n->kids)
            for (size_t i = 0; i < n->count; i++)
                kn_dl_unref(n->kids[i]);
        free(n->disps);
        free(n->lens);
        free(n->kids);
        free(n->cexts);
        free(n);
        n = next; /* the child last, without recursion: deep chains are fine */
    }
}

static MPI_Aint lo(MPI_Aint a) { return a < 0 ? a : 0; }
static MPI_Aint hi(MPI_Aint a) { return a > 0 ? a : 0; }

kn_dl_t *kn_dl_vec(MPI_Aint disp, size_t count, MPI_Aint stride, kn_dl_t *c)
{
    if (count == 0 || c->size == 0)
        return kn_dl_empty();
    if (c->kind == KN_DL_BLOCK && (count == 1 || stride == (MPI_Aint)c->size))
        return kn_dl_block(disp + c->disp, count * c->size);
    if (c->kind == KN_DL_VEC && (count == 1 || stride == (MPI_Aint)c->count * c->stride))
        return kn_dl_vec(disp + c->disp, count * c->count, c->stride, c->child);
    kn_dl_t *n = node(KN_DL_VEC);
    if (!n)
        return NULL;
    n->disp = disp;
    n->count = count;
    n->stride = count > 1 ? stride : 0;
    n->child = kn_dl_ref(c);
    n->depth = c->depth + 1;
    n->size = count * c->size;
    MPI_Aint span = (MPI_Aint)(count - 1) * n->stride;
    n->tlb = disp + c->tlb + lo(span);
    n->tub = disp + c->tub + hi(span);
    return n;
}

/* the byte blocks of an IDX whose every block is dense copies: merged */
static kn_dl_t *bytes_node(size_t n, const MPI_Aint *disps, const size_t *lens, size_t blen,
                           kn_dl_t *const *kids, kn_dl_t *kid)
{
    MPI_Aint *d = malloc((n ? n : 1) * sizeof(*d));
    size_t *l = malloc((n ? n : 1) * sizeof(*l));
    if (!d || !l) {
        free(d);
        free(l);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const kn_dl_t *k = kids ? kids[i] : kid;
        size_t len = (lens ? lens[i] : blen) * k->size;
        if (!len)
            continue;
        MPI_Aint at = disps[i] + k->disp;
        if (m && d[m - 1] + (MPI_Aint)l[m - 1] == at) {
            l[m - 1] += len;
            continue;
        }
        d[m] = at;
        l[m++] = len;
    }
    kn_dl_t *r = NULL;
    int regular = m >= 2;
    for (size_t i = 1; i < m && regular; i++)
        regular = l[i] == l[0] && d[i] - d[i - 1] == d[1] - d[0];
    if (m == 0) {
        r = kn_dl_empty();
    } else if (m == 1) {
        r = kn_dl_block(d[0], l[0]);
    } else if (regular) {
        kn_dl_t *b = kn_dl_block(0, l[0]);
        r = b ? kn_dl_vec(d[0], m, d[1] - d[0], b) : NULL;
        kn_dl_unref(b);
    } else if ((r = node(KN_DL_BLKS))) {
        r->count = m;
        r->disps = d;
        r->lens = l;
        d = NULL;
        l = NULL;
        for (size_t i = 0; i < m; i++) {
            r->size += r->lens[i];
            MPI_Aint a = r->disps[i], b = a + (MPI_Aint)r->lens[i];
            if (i == 0 || a < r->tlb)
                r->tlb = a;
            if (i == 0 || b > r->tub)
                r->tub = b;
        }
    }
    free(d);
    free(l);
    return r;
}

kn_dl_t *kn_dl_idx(size_t n, const MPI_Aint *disps, const size_t *lens, size_t blen, kn_dl_t *const *kids,
                   kn_dl_t *kid, const MPI_Aint *cexts, MPI_Aint cext)
{
#define KID(i) (kids ? kids[i] : kid)
#define CEXT(i) (cexts ? cexts[i] : cext)
#define LEN(i) (lens ? lens[i] : blen)
    int all_bytes = 1;
    size_t m = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        const kn_dl_t *k = KID(i);
        if (!LEN(i) || !k->size)
            continue;
        if (!m++)
            first = i;
        if (k->kind != KN_DL_BLOCK || (LEN(i) > 1 && CEXT(i) != (MPI_Aint)k->size))
            all_bytes = 0;
    }
    if (all_bytes)
        return bytes_node(n, disps, lens, blen, kids, kid);
    if (m == 1) { /* one block: a vector of its copies */
        kn_dl_t *v = kn_dl_vec(0, LEN(first), CEXT(first), KID(first));
        kn_dl_t *r = v ? kn_dl_vec(disps[first], 1, 0, v) : NULL;
        kn_dl_unref(v);
        return r;
    }
    kn_dl_t *r = node(KN_DL_IDX);
    if (!r)
        return NULL;
    int same_kid = 1, same_cext = 1, same_len = 1;
    for (size_t i = 0; i < n; i++) {
        if (!LEN(i) || !KID(i)->size)
            continue;
        same_kid &= KID(i) == KID(first);
        same_cext &= CEXT(i) == CEXT(first);
        same_len &= LEN(i) == LEN(first);
    }
    r->count = m;
    r->disps = malloc(m * sizeof(MPI_Aint));
    if (!same_len)
        r->lens = malloc(m * sizeof(size_t));
    if (!same_kid)
        r->kids = calloc(m, sizeof(kn_dl_t *));
    if (!same_cext)
        r->cexts = malloc(m * sizeof(MPI_Aint));
    if (!r->disps || (!same_len && !r->lens) || (!same_kid && !r->kids) || (!same_cext && !r->cexts)) {
        r->count = 0; /* kids are all NULL: unref frees the arrays */
        kn_dl_unref(r);
        return NULL;
    }
    r->blen = LEN(first);
    r->cext = CEXT(first);
    if (same_kid)
        r->child = kn_dl_ref(KID(first));
    int depth = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        kn_dl_t *k = KID(i);
        size_t len = LEN(i);
        if (!len || !k->size)
            continue;
        r->disps[j] = disps[i];
        if (r->lens)
            r->lens[j] = len;
        if (r->kids)
            r->kids[j] = kn_dl_ref(k);
        if (r->cexts)
            r->cexts[j] = CEXT(i);
        if (k->depth > depth)
            depth = k->depth;
        MPI_Aint span = (MPI_Aint)(len - 1) * CEXT(i);
        MPI_Aint a = disps[i] + k->tlb + lo(span), b = disps[i] + k->tub + hi(span);
        if (j == 0 || a < r->tlb)
            r->tlb = a;
        if (j == 0 || b > r->tub)
            r->tub = b;
        r->size += len * k->size;
        j++;
    }
    r->depth = depth + 1;
    return r;
#undef KID
#undef CEXT
#undef LEN
}

/* --------------------------------------------------------- pack, unpack */

#define COPY_LOOP(SZ)                                            \
    for (size_t i = 0; i < cnt; i++, d += dstride, s += sstride) \
        memcpy(d, s, SZ);

/* cnt blocks of blen bytes: a loop per block size, moves inlined */
static inline void copy_blocks(char *d, MPI_Aint dstride, const char *s, MPI_Aint sstride, size_t blen,
                               size_t cnt)
{
    switch (blen) {
    case 1: COPY_LOOP(1) break;
    case 2: COPY_LOOP(2) break;
    case 4: COPY_LOOP(4) break;
    case 8: COPY_LOOP(8) break;
    case 12: COPY_LOOP(12) break;
    case 16: COPY_LOOP(16) break;
    case 24: COPY_LOOP(24) break;
    case 32: COPY_LOOP(32) break;
    default: COPY_LOOP(blen) break;
    }
}

static char *pack_dl(const kn_dl_t *n, const char *src, char *out)
{
    src += n->disp;
    switch (n->kind) {
    case KN_DL_BLOCK:
        memcpy(out, src, n->size);
        return out + n->size;
    case KN_DL_VEC: {
        const kn_dl_t *c = n->child;
        if (c->kind == KN_DL_BLOCK) {
            copy_blocks(out, (MPI_Aint)c->size, src + c->disp, n->stride, c->size, n->count);
            return out + n->size;
        }
        for (size_t i = 0; i < n->count; i++)
            out = pack_dl(c, src + (MPI_Aint)i * n->stride, out);
        return out;
    }
    case KN_DL_BLKS:
        for (size_t i = 0; i < n->count; i++) {
            memcpy(out, src + n->disps[i], n->lens[i]);
            out += n->lens[i];
        }
        return out;
    default:
        for (size_t i = 0; i < n->count; i++) {
            const kn_dl_t *k = n->kids ? n->kids[i] : n->child;
            MPI_Aint ce = n->cexts ? n->cexts[i] : n->cext;
            size_t len = n->lens ? n->lens[i] : n->blen;
            if (k->kind == KN_DL_BLOCK) { /* copies of a block: strided bytes */
                copy_blocks(out, (MPI_Aint)k->size, src + n->disps[i] + k->disp, ce, k->size, len);
                out += len * k->size;
                continue;
            }
            for (size_t j = 0; j < len; j++)
                out = pack_dl(k, src + n->disps[i] + (MPI_Aint)j * ce, out);
        }
        return out;
    }
}

/* Unpack from in into the instance of n at dst until *left bytes are used. */
static const char *unpack_dl(const kn_dl_t *n, char *dst, const char *in, size_t *left)
{
    dst += n->disp;
    switch (n->kind) {
    case KN_DL_BLOCK: {
        size_t k = n->size < *left ? n->size : *left;
        memcpy(dst, in, k);
        *left -= k;
        return in + k;
    }
    case KN_DL_VEC: {
        const kn_dl_t *c = n->child;
        if (c->kind == KN_DL_BLOCK) {
            size_t full = *left / c->size;
            if (full > n->count)
                full = n->count;
            copy_blocks(dst + c->disp, n->stride, in, (MPI_Aint)c->size, c->size, full);
            in += full * c->size;
            *left -= full * c->size;
            if (full < n->count && *left) {
                memcpy(dst + c->disp + (MPI_Aint)full * n->stride, in, *left);
                in += *left;
                *left = 0;
            }
            return in;
        }
        for (size_t i = 0; i < n->count && *left; i++)
            in = unpack_dl(c, dst + (MPI_Aint)i * n->stride, in, left);
        return in;
    }
    case KN_DL_BLKS:
        for (size_t i = 0; i < n->count && *left; i++) {
            size_t k = n->lens[i] < *left ? n->lens[i] : *left;
            memcpy(dst + n->disps[i], in, k);
            in += k;
            *left -= k;
        }
        return in;
    default:
        for (size_t i = 0; i < n->count && *left; i++) {
            const kn_dl_t *k = n->kids ? n->kids[i] : n->child;
            MPI_Aint ce = n->cexts ? n->cexts[i] : n->cext;
            size_t len = n->lens ? n->lens[i] : n->blen;
            for (size_t j = 0; j < len && *left; j++)
                in = unpack_dl(k, dst + n->disps[i] + (MPI_Aint)j * ce, in, left);
        }
        return in;
    }
}

/* count elements of a vector of blocks that continue each other (a vector
 * type of extent count * stride): one longer vector */
static int vec_continues(const kn_mpi_type_t *t, size_t count)
{
    const kn_dl_t *n = t->dl;
    return count > 1 && n->kind == KN_DL_VEC && n->child->kind == KN_DL_BLOCK &&
           t->extent == (MPI_Aint)n->count * n->stride;
}

void kn_mpi_pack(const kn_mpi_type_t *t, const void *buf, size_t count, void *out)
{
    char *o = out;
    const char *b = buf;
    if (t->contig) {
        memcpy(o, b + t->true_lb, count * t->size);
        return;
    }
    if (!t->size)
        return;
    if (vec_continues(t, count)) {
        const kn_dl_t *n = t->dl, *c = n->child;
        copy_blocks(o, (MPI_Aint)c->size, b + n->disp + c->disp, n->stride, c->size, n->count * count);
        return;
    }
    for (size_t k = 0; k < count; k++, b += t->extent)
        o = pack_dl(t->dl, b, o);
}

void kn_mpi_unpack(const kn_mpi_type_t *t, const void *in, size_t nbytes, void *buf, size_t count)
{
    const char *p = in;
    char *b = buf;
    size_t all = count * t->size, left = nbytes < all ? nbytes : all;
    if (t->contig) {
        memcpy(b + t->true_lb, p, left);
        return;
    }
    if (vec_continues(t, count)) {
        const kn_dl_t *n = t->dl;
        kn_dl_t c = *n; /* the same vector, count times longer; not kept */
        c.count *= count;
        unpack_dl(&c, b, p, &left);
        return;
    }
    for (size_t k = 0; k < count && left; k++, b += t->extent)
        p = unpack_dl(t->dl, b, p, &left);
}

/* ------------------------------------------------------------- cursor */

void kn_mpi_tcur_init(kn_mpi_tcur_t *c, const kn_mpi_type_t *t, const void *buf, size_t count)
{
    c->t = t;
    c->elem = buf;
    c->k = 0;
    c->count = t->size ? count : 0;
    c->sp = 0;
    if (c->count && !t->contig) {
        c->st[0].n = t->dl;
        c->st[0].base = buf;
        c->st[0].i = c->st[0].j = 0;
        c->sp = 1;
    }
}

size_t kn_mpi_tcur_next(kn_mpi_tcur_t *c, char **addr)
{
    const kn_mpi_type_t *t = c->t;
    if (c->k >= c->count)
        return 0;
    if (t->contig) { /* all of it at once */
        *addr = (char *)c->elem + t->true_lb;
        c->k = c->count;
        return c->count * t->size;
    }
    for (;;) {
        if (c->sp == 0) { /* the next element */
            if (++c->k >= c->count)
                return 0;
            c->elem += t->extent;
            c->st[0].n = t->dl;
            c->st[0].base = c->elem;
            c->st[0].i = c->st[0].j = 0;
            c->sp = 1;
        }
        __typeof__(c->st[0]) *f = &c->st[c->sp - 1];
        const kn_dl_t *n = f->n;
        const char *at = f->base + n->disp;
        switch (n->kind) {
        case KN_DL_BLOCK:
            c->sp--;
            if (!n->size)
                continue;
            *addr = (char *)at;
            return n->size;
        case KN_DL_BLKS:
            if (f->i >= n->count) {
                c->sp--;
                continue;
            }
            *addr = (char *)at + n->disps[f->i];
            return n->lens[f->i++];
        case KN_DL_VEC: {
            if (f->i >= n->count) {
                c->sp--;
                continue;
            }
            const kn_dl_t *ch = n->child;
            const char *e = at + (MPI_Aint)f->i++ * n->stride;
            if (ch->kind == KN_DL_BLOCK) {
                *addr = (char *)e + ch->disp;
                return ch->size;
            }
            __typeof__(c->st[0]) *g = f + 1;
            g->n = ch;
            g->base = e;
            g->i = g->j = 0;
            c->sp++;
            continue;
        }
        default: {
            while (f->i < n->count && f->j >= (n->lens ? n->lens[f->i] : n->blen)) {
                f->i++;
                f->j = 0;
            }
            if (f->i >= n->count) {
                c->sp--;
                continue;
            }
            const kn_dl_t *k = n->kids ? n->kids[f->i] : n->child;
            MPI_Aint ce = n->cexts ? n->cexts[f->i] : n->cext;
            __typeof__(c->st[0]) *g = f + 1;
            g->n = k;
            g->base = at + n->disps[f->i] + (MPI_Aint)f->j++ * ce;
            g->i = g->j = 0;
            c->sp++;
            continue;
        }
        }
    }
}

int kn_mpi_type_strided(const kn_mpi_type_t *t, size_t count, MPI_Aint *first, int64_t cnt[3],
                        int64_t stride[2], int *levels)
{
    if (count == 0 || t->size == 0) {
        *first = 0;
        cnt[0] = 0;
        *levels = 0;
        return 1;
    }
    if (t->contig) {
        *first = t->true_lb;
        cnt[0] = (int64_t)(count * t->size);
        *levels = 0;
        return 1;
    }
    const kn_dl_t *n = t->dl;
    if (n->kind == KN_DL_BLOCK) {
        *first = n->disp;
        cnt[0] = (int64_t)n->size;
        cnt[1] = 1;
        stride[0] = 0;
        *levels = 1;
    } else if (n->kind == KN_DL_VEC && n->child->kind == KN_DL_BLOCK) {
        *first = n->disp + n->child->disp;
        cnt[0] = (int64_t)n->child->size;
        cnt[1] = (int64_t)n->count;
        stride[0] = (int64_t)n->stride;
        *levels = 1;
    } else if (count == 1 && n->kind == KN_DL_VEC && n->child->kind == KN_DL_VEC &&
               n->child->child->kind == KN_DL_BLOCK) {
        const kn_dl_t *m = n->child;
        *first = n->disp + m->disp + m->child->disp;
        cnt[0] = (int64_t)m->child->size;
        cnt[1] = (int64_t)m->count;
        stride[0] = (int64_t)m->stride;
        cnt[2] = (int64_t)n->count;
        stride[1] = (int64_t)n->stride;
        *levels = 2;
        return 1;
    } else {
        return 0;
    }
    if (count > 1) {
        cnt[2] = (int64_t)count;
        stride[1] = (int64_t)t->extent;
        *levels = 2;
    }
    return 1;
}
