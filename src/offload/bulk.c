/*
 * Bulk messages between daemons: a message of KNIT_AGENT_BULK bytes or
 * more, to a daemon whose transport reads peer memory (the network's
 * RDMA), goes as a small descriptor (W_BULK: its header, where its bytes
 * are, the transport's key, an id) instead of being cut into packets of
 * the bounce-buffer size; the receiver reads the bytes straight into the
 * buffer the message is handed over in, and answers W_BULK_DONE, on which
 * the sender frees them.  Against fragments this saves a copy on each
 * side (into the bounce buffer, out of it into the reassembly) and moves
 * the bytes in one transfer of the provider's (the replicated region's
 * update stream, issue 26, runs through here).
 *
 * Order: a sender's messages are handled in the order they were sent.
 * What comes from a sender while one of its bulk messages is being read
 * waits behind it (a copy of each packet; the sender sends its descriptor
 * and goes on with the next messages at once), and reads of consecutive
 * bulk messages overlap.
 */
#include "offload/daemon_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"
#include "util/log.h"

enum { BI_READING, BI_READ, BI_FAILED, BI_PACKET };

typedef struct bulk_item {
    kn_list_t link;
    kn_tl_comp_t comp;
    int src, state;
    knit_status_t st;
    kn_wire_t w;     /* bulk: the message's header; packet: the fragment's */
    uint64_t id;
    char *buf;       /* bulk: the message's bytes */
    size_t len;      /* packet: bytes at pkt (kn_wire_t first) */
    char pkt[];
} bulk_item_t;

/* ------------------------------------------------------------ sending */

int kn_d_bulk_send(int dest, outmsg_t *o)
{
    kn_tl_t *tl = kn_dmn.tl;
    if (!tl->ops->get || !(tl->ops->caps(tl, dest) & KN_TL_CAP_RMA))
        return -1;
    if (!o->bulk_id) { /* first try */
        if (tl->ops->mem_reg && tl->ops->mem_reg(tl, o->data, o->len, &o->rkey, &o->memh) != KNIT_OK)
            return -1; /* (fragments, then) */
        o->bulk_id = ++kn_dmn.bulk_ids;
        o->bulk_dest = dest;
    }
    struct {
        kn_wire_t w;
        kn_wire_bulk_t b;
    } d = {
        .w = {.magic = KN_WIRE_MAGIC, .version = KN_WIRE_VERSION, .type = W_BULK, .auth = kn_dmn.auth,
              .from = kn_dmn.g.self, .total = sizeof(kn_wire_bulk_t)},
        .b = {.w = o->w, .addr = (uint64_t)(uintptr_t)o->data, .rkey = o->rkey, .id = o->bulk_id},
    };
    d.b.w.offset = 0;
    kn_pkt_hdr_t h = {.type = KN_PKT_OFFLOAD, .len = sizeof(d)};
    knit_status_t st = tl->ops->send(tl, dest, &h, &d, sizeof(d));
    if (st == KNIT_ERR_AGAIN)
        return 0;
    if (st != KNIT_OK) {
        kn_error("sending to daemon %d: %s", dest, knit_strerror(st));
        exit(1);
    }
    o->started = 1;
    o->sent = o->len;
    return 2;
}

void kn_d_bulk_hold(outmsg_t *o)
{
    kn_list_push_back(&kn_dmn.bulk_out, &o->link);
}

void kn_d_bulk_freed(int src, uint64_t id)
{
    kn_list_t *pos;
    kn_list_for_each(pos, &kn_dmn.bulk_out)
    {
        outmsg_t *o = kn_list_entry(pos, outmsg_t, link);
        if (o->bulk_id != id || o->bulk_dest != src)
            continue;
        kn_list_del(&o->link);
        if (o->memh)
            kn_dmn.tl->ops->mem_dereg(kn_dmn.tl, o->memh);
        free(o);
        return;
    }
    kn_warn("daemon %d read a bulk message (%llu) this one did not send: ignored", src, (unsigned long long)id);
}

/* ------------------------------------------------------------ receiving */

/* Hand on, in order, what no longer waits for a read. */
static void drain(int src)
{
    kn_bulk_rx_t *rx = &kn_dmn.bulk_rx[src];
    if (rx->draining) /* (the outer call goes on) */
        return;
    rx->draining = 1;
    while (!kn_list_empty(&rx->q)) {
        bulk_item_t *it = kn_list_first(&rx->q, bulk_item_t, link);
        if (it->state == BI_READING)
            break;
        kn_list_del(&it->link);
        if (it->state == BI_PACKET)
            kn_d_packet(src, &it->w, it->pkt, it->len);
        else if (it->state == BI_READ)
            kn_d_message(src, &it->w, it->buf, it->w.total);
        free(it->buf);
        free(it);
    }
    rx->draining = 0;
}

static void read_done(bulk_item_t *it, knit_status_t st)
{
    it->state = st == KNIT_OK ? BI_READ : BI_FAILED;
    if (st != KNIT_OK)
        kn_warn("a %llu-byte message from daemon %d could not be read from its memory (%s): dropped",
                (unsigned long long)it->w.total, it->src, knit_strerror(st));
    kn_d_send_msg(it->src, W_BULK_DONE, 0, it->id, 0, NULL, 0, NULL, 0);
}

static void on_read(kn_tl_comp_t *c, knit_status_t st)
{
    bulk_item_t *it = kn_container_of(c, bulk_item_t, comp);
    read_done(it, st);
    drain(it->src);
}

static void start_read(int src, const kn_wire_bulk_t *b)
{
    bulk_item_t *it = calloc(1, sizeof(*it));
    char *buf = it ? malloc(b->w.total) : NULL;
    if (!buf) {
        free(it);
        kn_error("out of memory for a %llu-byte message from daemon %d: dropped", (unsigned long long)b->w.total,
                 src);
        kn_d_send_msg(src, W_BULK_DONE, 0, b->id, 0, NULL, 0, NULL, 0);
        return;
    }
    *it = (bulk_item_t){.comp = {.cb = on_read}, .src = src, .state = BI_READING, .w = b->w, .id = b->id,
                        .buf = buf};
    kn_list_push_back(&kn_dmn.bulk_rx[src].q, &it->link);
    kn_tl_t *tl = kn_dmn.tl;
    knit_status_t st = tl->ops->get(tl, src, buf, b->w.total, b->addr, b->rkey, &it->comp);
    if (st != KNIT_INPROGRESS) { /* done on return, or failed */
        read_done(it, st);
        drain(src);
    }
}

int kn_d_bulk_take(int src, const kn_wire_t *w, const void *payload, size_t len)
{
    kn_bulk_rx_t *rx = &kn_dmn.bulk_rx[src];
    if (w->type != W_BULK) {
        if (kn_likely(kn_list_empty(&rx->q)))
            return 0;
        bulk_item_t *it = malloc(sizeof(*it) + len);
        if (!it) {
            kn_error("out of memory for a packet from daemon %d that waits behind a bulk message: dropped", src);
            return 1;
        }
        *it = (bulk_item_t){.src = src, .state = BI_PACKET, .w = *w, .len = len};
        memcpy(it->pkt, payload, len);
        kn_list_push_back(&rx->q, &it->link);
        return 1;
    }
    /* a descriptor: one packet (a sender's messages never interleave) */
    const char *body = (const char *)payload + sizeof(*w);
    kn_wire_bulk_t b;
    if (w->offset != 0 || len - sizeof(*w) != w->total || !kn_wire_body_ok(w, body, w->total)) {
        kn_warn("dropped a malformed bulk descriptor from daemon %d (%zu bytes)", src, len);
        return 1;
    }
    memcpy(&b, body, sizeof(b));
    if (!kn_dmn.tl->ops->get) { /* (a sender of another build) */
        kn_warn("daemon %d sent a bulk message, which this transport cannot read: dropped", src);
        kn_d_send_msg(src, W_BULK_DONE, 0, b.id, 0, NULL, 0, NULL, 0);
        return 1;
    }
    start_read(src, &b);
    return 1;
}
