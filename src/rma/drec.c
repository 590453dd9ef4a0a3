/*
 * The records of held puts in knit_rma_barrier's messages (rma.h,
 * kn_rma_drec_t; defer.c makes and sends them): walked, and checked whole
 * against the receiving member's window before any byte lands.  Apart
 * from defer.c so that its fuzz target (tests/fuzz/fuzz_rmadefer.c) needs
 * nothing else.
 */
#include <string.h>

#include "rma/rma.h"
#include "util/log.h"

/* The blocks of d from base and one contiguous buffer, block by block
 * (the odometer of direct_mapped in ops.c), small blocks as single moves:
 * 1024 blocks of 8 B are most of a held put's cost otherwise. */
static inline void strided_copy(char *buf, const kn_rma_desc_t *d, uint64_t base, int to_blocks)
{
    uint64_t bs = (uint64_t)d->count[0], nb = kn_rma_desc_blocks(d), off = 0;
    int64_t idx[KN_RMA_MOD_LEVELS + 1] = {0};
    char *b = (char *)(uintptr_t)base;
    for (uint64_t k = 0; k < nb; k++, buf += bs) {
        char *dst = to_blocks ? b + off : buf;
        const char *src = to_blocks ? buf : b + off;
        switch (bs) {
        case 4: { uint32_t v; memcpy(&v, src, 4); memcpy(dst, &v, 4); break; }
        case 8: { uint64_t v; memcpy(&v, src, 8); memcpy(dst, &v, 8); break; }
        case 16: { char v[16]; memcpy(v, src, 16); memcpy(dst, v, 16); break; }
        default: memcpy(dst, src, bs);
        }
        for (uint32_t i = 1; i <= d->levels; i++) {
            off += (uint64_t)d->stride[i - 1];
            if (++idx[i] < d->count[i])
                break;
            off -= (uint64_t)d->count[i] * (uint64_t)d->stride[i - 1];
            idx[i] = 0;
        }
    }
}

void kn_rma_strided_gather(char *buf, const kn_rma_desc_t *d, uint64_t base)
{
    strided_copy(buf, d, base, 0);
}

void kn_rma_strided_scatter(const char *buf, const kn_rma_desc_t *d, uint64_t base)
{
    strided_copy((char *)buf, d, base, 1);
}

const kn_rma_drec_t *kn_rma_drec_next(const char *buf, size_t len, size_t *off, kn_rma_drec_t *r,
                                     const kn_rma_dpiece_t **pieces, const char **data, int *bad)
{
    *bad = 0;
    if (*off == len)
        return NULL;
    if (len - *off < sizeof(*r)) {
        *bad = 1;
        return NULL;
    }
    memcpy(r, buf + *off, sizeof(*r));
    size_t left = len - *off - sizeof(*r);
    if (r->magic != KN_RMA_DREC_MAGIC || (r->form != KN_RMA_F_STRIDED && r->form != KN_RMA_F_LIST) ||
        r->nseg > left / sizeof(kn_rma_dpiece_t) || r->total > left - r->nseg * sizeof(kn_rma_dpiece_t) ||
        KN_RMA_PAD8(r->total) > left - r->nseg * sizeof(kn_rma_dpiece_t) || (r->form == KN_RMA_F_STRIDED && r->nseg)) {
        *bad = 1;
        return NULL;
    }
    *pieces = (const kn_rma_dpiece_t *)(buf + *off + sizeof(*r));
    *data = (const char *)(*pieces + r->nseg);
    *off += sizeof(*r) + r->nseg * sizeof(kn_rma_dpiece_t) + KN_RMA_PAD8(r->total);
    return r;
}

knit_status_t kn_rma_defer_apply(const kn_rma_peer_t *me, const void *msg, size_t len, int origin)
{
    const char *buf = msg;
    kn_rma_drec_t r;
    const kn_rma_dpiece_t *pc;
    const char *data;
    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 0;
        while (kn_rma_drec_next(buf, len, &off, &r, &pc, &data, &bad)) {
            if (r.form == KN_RMA_F_LIST) {
                uint64_t sum = 0;
                for (uint64_t i = 0; i < r.nseg; i++) {
                    uint64_t a = pc[i].raddr, n = pc[i].len;
                    if (a < me->base || n > me->size || a - me->base > me->size - n || n > r.total - sum) {
                        bad = 1;
                        break;
                    }
                    sum += n;
                    if (pass)
                        memcpy((void *)(uintptr_t)a, data + sum - n, n);
                }
                if (sum != r.total)
                    bad = 1;
            } else {
                const kn_rma_desc_t *d = &r.rdesc;
                uint64_t blocks = 1, ext;
                int ok = d->levels <= KN_RMA_MOD_LEVELS && d->count[0] > 0;
                for (uint32_t i = 1; ok && i <= d->levels; i++) {
                    ok = d->count[i] > 0 && d->stride[i - 1] >= 0 && blocks <= UINT64_MAX / (uint64_t)d->count[i];
                    if (ok)
                        blocks *= (uint64_t)d->count[i];
                }
                ok = ok && blocks <= UINT64_MAX / (uint64_t)d->count[0] && blocks * (uint64_t)d->count[0] == r.total;
                ext = ok ? (uint64_t)d->count[0] : 0;
                for (uint32_t i = 1; ok && i <= d->levels; i++) {
                    uint64_t s = (uint64_t)d->stride[i - 1], c = (uint64_t)d->count[i] - 1;
                    ok = !s || c <= (UINT64_MAX - ext) / s;
                    if (ok)
                        ext += c * s;
                }
                if (!ok || r.raddr < me->base || ext > me->size || r.raddr - me->base > me->size - ext) {
                    bad = 1;
                } else if (pass) {
                    kn_rma_strided_scatter(data, d, r.raddr);
                }
            }
            if (bad)
                break;
        }
        if (bad) {
            kn_error("one-sided: the puts rank %d held for knit_rma_barrier came malformed or outside this "
                     "rank's window [%#llx, +%llu): none applied",
                     origin, (unsigned long long)me->base, (unsigned long long)me->size);
            return KNIT_ERR_PEER;
        }
    }
    return KNIT_OK;
}
