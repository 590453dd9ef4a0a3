/* The loopback transport: packets a rank sends to itself wait in a local
 * FIFO until the next progress; bulk copies are memcpy. */
#include <stdlib.h>
#include <string.h>

#include "p2p/self.h"
#include "util/list.h"
#include "util/log.h"

typedef struct self_pkt {
    kn_list_t link;
    kn_pkt_hdr_t hdr;
    size_t len;
    char data[];
} self_pkt_t;

typedef struct self_tl {
    kn_tl_t base;
    int rank;
    kn_list_t fifo;
} self_tl_t;

static knit_status_t self_send(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr, const void *payload, size_t len)
{
    self_tl_t *s = (self_tl_t *)tl;
    (void)peer;
    self_pkt_t *p = malloc(sizeof(*p) + len);
    if (!p)
        return KNIT_ERR_AGAIN; /* retried from the pending queue */
    p->hdr = *hdr;
    p->len = len;
    if (len)
        memcpy(p->data, payload, len);
    kn_list_push_back(&s->fifo, &p->link);
    return KNIT_OK;
}

static int self_progress(kn_tl_t *tl)
{
    self_tl_t *s = (self_tl_t *)tl;
    int n = 0;
    /* only what is queued now: handlers may queue more (FIN, CTS) */
    kn_list_t batch;
    kn_list_init(&batch);
    if (kn_list_empty(&s->fifo))
        return 0;
    batch.next = s->fifo.next;
    batch.prev = s->fifo.prev;
    batch.next->prev = &batch;
    batch.prev->next = &batch;
    kn_list_init(&s->fifo);
    kn_list_t *e;
    while ((e = kn_list_pop_front(&batch))) {
        self_pkt_t *p = kn_list_entry(e, self_pkt_t, link);
        tl->recv_cb(tl->cb_arg, s->rank, &p->hdr, p->data, p->len);
        free(p);
        n++;
    }
    return n;
}

static unsigned self_caps(kn_tl_t *tl, int peer)
{
    (void)tl;
    (void)peer;
    return KN_TL_CAP_RMA;
}

static knit_status_t self_get(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr, uint64_t rkey,
                              kn_tl_comp_t *comp)
{
    (void)tl, (void)peer, (void)rkey, (void)comp;
    memmove(local, (const void *)(uintptr_t)raddr, len);
    return KNIT_OK;
}

static knit_status_t self_put(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                              uint64_t rkey, kn_tl_comp_t *comp)
{
    (void)tl, (void)peer, (void)rkey, (void)comp;
    memmove((void *)(uintptr_t)raddr, local, len);
    return KNIT_OK;
}

/* the pieces of both sides, matched in order (memmove: they may overlap) */
static knit_status_t self_rwv(kn_tl_t *tl, int peer, int write, const struct iovec *local, int nl,
                              const struct iovec *remote, int nr)
{
    (void)tl, (void)peer;
    int i = 0, j = 0;
    size_t io = 0, jo = 0;
    while (i < nl && j < nr) {
        size_t n = KN_MIN(local[i].iov_len - io, remote[j].iov_len - jo);
        char *l = (char *)local[i].iov_base + io, *r = (char *)remote[j].iov_base + jo;
        if (n)
            memmove(write ? r : l, write ? l : r, n);
        if ((io += n) == local[i].iov_len)
            i++, io = 0;
        if ((jo += n) == remote[j].iov_len)
            j++, jo = 0;
    }
    return KNIT_OK;
}

static void *self_map(kn_tl_t *tl, int peer, uint64_t raddr, size_t len)
{
    (void)tl, (void)peer, (void)len;
    return (void *)(uintptr_t)raddr;
}

static void self_destroy(kn_tl_t *tl)
{
    self_tl_t *s = (self_tl_t *)tl;
    kn_list_t *e;
    while ((e = kn_list_pop_front(&s->fifo)))
        free(kn_list_entry(e, self_pkt_t, link));
    free(s);
}

static const kn_tl_ops_t self_ops = {
    .name = "self",
    .send = self_send,
    .progress = self_progress,
    .caps = self_caps,
    .get = self_get,
    .put = self_put,
    .rwv = self_rwv,
    .map = self_map,
    .arm = NULL,
    .disarm = NULL,
    .destroy = self_destroy,
};

knit_status_t kn_self_create(int rank, kn_tl_recv_cb_t cb, void *cb_arg, kn_tl_t **out)
{
    self_tl_t *s = calloc(1, sizeof(*s));
    if (!s)
        return KNIT_ERR_NOMEM;
    s->base.ops = &self_ops;
    s->base.max_inline = 1u << 30;
    s->base.max_payload = 1u << 30;
    s->base.bulk_inflight = 1;
    s->base.recv_cb = cb;
    s->base.cb_arg = cb_arg;
    s->rank = rank;
    kn_list_init(&s->fifo);
    *out = &s->base;
    return KNIT_OK;
}
