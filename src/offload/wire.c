/* Checks of what the daemons receive: daemon frames and their reassembly,
 * command-queue entries.  See wire.h. */
#include "offload/wire.h"

#include <stdlib.h>
#include <string.h>

knit_status_t kn_wire_check(const kn_pkt_hdr_t *hdr, const void *payload, size_t len, uint64_t auth, int src,
                            int nids, kn_wire_t *out, const char **why)
{
    kn_wire_t w;
    const char *bad = NULL;
    if (hdr->type != KN_PKT_OFFLOAD || len < sizeof(w) || src < 0 || src >= nids) {
        bad = "malformed packet";
        goto out;
    }
    memcpy(&w, payload, sizeof(w));
    uint64_t n = len - sizeof(w);
    if (w.magic != KN_WIRE_MAGIC || w.version != KN_WIRE_VERSION || w.auth != auth || w.from != src)
        bad = "not of this job";
    else if (w.type == 0 || w.type >= W_MAX)
        bad = "unknown message type";
    else if (w.total > KN_OFF_MSG_MAX || w.offset > w.total || n > w.total - w.offset)
        bad = "fragment outside its message";
out:
    if (bad) {
        *why = bad;
        return KNIT_ERR_PROTO;
    }
    *out = w;
    return KNIT_OK;
}

static int text_ok(const char *p, uint64_t len)
{
    return len > 0 && p[len - 1] == '\0';
}

int kn_wire_body_ok(const kn_wire_t *w, const void *p, uint64_t len)
{
    switch (w->type) {
    case W_LOAD: {
        uint64_t where = w->b & ~(uint64_t)KN_OFF_LOAD_INPROCESS;
        return len >= KNIT_MOD_NAME_MAX && where >= KNIT_MOD_AT_AGENT && where <= KNIT_MOD_AT_HOST;
    }
    case W_LOAD_ACK:
    case W_LOAD_DONE:
    case W_FAULT:
        return text_ok(p, len);
    case W_BULK: {
        kn_wire_bulk_t b;
        if (len != sizeof(b))
            return 0;
        memcpy(&b, p, sizeof(b));
        return b.w.magic == w->magic && b.w.version == w->version && b.w.auth == w->auth && b.w.from == w->from &&
               b.w.type > 0 && b.w.type < W_BULK && b.w.offset == 0 && b.w.total > 0 &&
               b.w.total <= KN_OFF_MSG_MAX && b.addr != 0;
    }
    case W_BULK_DONE:
        return len == 0;
    }
    return w->type > 0 && w->type < W_MAX;
}

int kn_wire_reasm_add(kn_wire_reasm_t *r, const kn_wire_t *w, const char *p, uint64_t n, kn_wire_msg_t *out,
                      const char **why)
{
    *why = NULL;
    if (w->offset == 0 && r->active) {
        /* a new message while one was unfinished: the old one is lost */
        *why = "message cut short";
        free(r->buf);
        r->buf = NULL;
        r->active = 0;
    }
    if (w->offset == 0 && n == w->total) { /* whole: no copy */
        *out = (kn_wire_msg_t){.w = *w, .data = p, .len = n};
        return 1;
    }
    if (w->offset == 0) {
        r->buf = malloc(w->total);
        if (!r->buf) {
            *why = "out of memory reassembling a message";
            return 0;
        }
        r->w = *w;
        r->got = 0;
        r->active = 1;
    } else if (!r->active || w->offset != r->got || w->total != r->w.total || w->type != r->w.type ||
               w->mod != r->w.mod) {
        *why = "fragment out of order";
        return 0;
    }
    if (n)
        memcpy(r->buf + r->got, p, n);
    r->got += n;
    if (r->got < r->w.total)
        return 0;
    *out = (kn_wire_msg_t){.w = r->w, .data = r->buf, .len = r->w.total, .owned = r->buf};
    r->buf = NULL;
    r->active = 0;
    return 1;
}

void kn_wire_reasm_free(kn_wire_reasm_t *r)
{
    free(r->buf);
    r->buf = NULL;
    r->active = 0;
}

knit_status_t kn_off_sqe_read(const kn_off_sqe_t *shared, kn_off_sqe_t *q, const char **why)
{
    const char *bad = NULL;
    /* the fixed part once, then at most the inline bytes it announced */
    memcpy(q, shared, offsetof(kn_off_sqe_t, data));
    if (q->version != KN_OFF_VERSION || q->op == 0 || q->op >= KN_SQ_OP_MAX || q->inl > KN_OFF_INLINE) {
        bad = "malformed queue entry";
        goto out;
    }
    memcpy(q->data, shared->data, q->inl);
    switch (q->op) {
    case KN_SQ_REQUEST:
        /* args inline (inl == len), or len bytes at addr to read */
        if (q->addr ? q->inl != 0 || q->len > KN_OFF_MSG_MAX : q->inl != q->len)
            bad = "malformed request entry";
        break;
    case KN_SQ_LOAD: {
        /* reserved 1: rank 0 could not read the file; the inline text is
         * the reason every rank gets */
        unsigned where = q->flags & ~KN_OFF_LOAD_INPROCESS;
        if (q->reserved == 1 ? !q->inl || q->data[q->inl - 1]
                             : !q->inl || q->inl > KNIT_MOD_NAME_MAX || q->data[q->inl - 1] ||
                                   where < KNIT_MOD_AT_AGENT || where > KNIT_MOD_AT_SWITCH || !q->addr)
            bad = "malformed load entry";
        break;
    }
    }
out:
    if (bad) {
        q->inl = 0;
        *why = bad;
        return KNIT_ERR_PROTO;
    }
    return KNIT_OK;
}
