/*
 * Header handlers (module ABI 2): a message sent with send_hdr carries
 * the length of its header in its frames (kn_wire_t.b).  Where the
 * receiving instance has on_header (on the daemon's thread), it runs as
 * soon as the first fragment brings the header in, and says where the
 * message goes: the daemon then streams each fragment on to those
 * instances as it arrives, without the module copying anything and
 * without waiting for the whole message (a switch passes a broadcast's
 * payload down while it is still coming up), and hands the whole to
 * on_message as well where the module takes it.  A message whose header
 * did not fit its first fragment is routed once it is whole
 * (kn_d_route_whole): the same verdict, only later.  The forwarded copies
 * queue behind what their destination already waits for (frames of one
 * sender to one daemon never interleave), and go out as far as they have
 * come in.  A bulk message (bulk.c) comes in whole, and is routed so.
 */
#include "offload/daemon_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* A message that stopped coming (a new one from its sender began, or a
 * fragment came out of place): its copies end where they are, and their
 * receivers drop them as cut short, as they would the original. */
static void stream_cut(kn_stream_t *s)
{
    for (int i = 0; i < s->ndest; i++) {
        outmsg_t *o = s->out[i];
        if (!o)
            continue;
        o->len = o->avail;
        o->started = 1; /* nothing more, not even an empty frame */
        kn_d_out_kick(s->dest[i]);
    }
}

static void stream_end(kn_stream_t *s)
{
    free(s->out);
    free(s->dest);
    memset(s, 0, sizeof(*s));
}

/* Where on_header sends a message: its destinations' daemon ids in
 * *dest (malloc'ed), how many, and take; -1: nobody routes it here (no
 * handler: the usual path), -2: dropped (the handler refused it or
 * faulted). */
static int route(kn_inst_t *in, int32_t from, const kn_wire_t *w, const char *hdr, int **dest, int *take)
{
    knit_mod_route_t r;
    int32_t st;
    if (!kn_d_inst_header(in, from, hdr, w->b, w->total - w->b, &r, &st))
        return -1;
    if (st != KNIT_OK) /* refused, or faulted */
        return -2;
    *dest = r.ndest ? malloc((size_t)r.ndest * sizeof(int)) : NULL;
    if (r.ndest && !*dest) {
        kn_error("out of memory routing a message of module %s: dropped", in->name);
        return -2;
    }
    for (int i = 0; i < r.ndest; i++)
        (*dest)[i] = kn_tree_id(&kn_dmn.tree, r.dest[i]);
    *take = r.take;
    return r.ndest;
}

/* An empty copy of message w (its total bytes), sent on from here. */
static outmsg_t *copy_for(const kn_wire_t *w)
{
    outmsg_t *o = malloc(sizeof(*o) + w->total);
    if (!o)
        return NULL;
    memset(o, 0, sizeof(*o));
    o->w = *w;
    o->w.from = kn_dmn.g.self;
    o->w.offset = 0;
    o->data = (char *)(o + 1);
    o->len = w->total;
    return o;
}

int kn_d_stream_fragment(int src, const kn_wire_t *w, const char *p, uint64_t n)
{
    kn_stream_t *s = &kn_dmn.streams[src];
    if (s->active && w->offset != s->got) { /* the last one was cut short */
        kn_warn("daemon %d: a routed message of %llu bytes stopped at %llu", src, (unsigned long long)s->total,
                (unsigned long long)s->got);
        stream_cut(s);
        stream_end(s);
    }
    if (w->offset == 0) {
        kn_inst_t *in = w->b ? kn_d_inst(w->mod) : NULL;
        if (!in || w->b > n || w->b > KNIT_MOD_HDR_MAX || w->b > w->total)
            return 0; /* not routed, or routed once whole (kn_d_route_whole) */
        int *dest = NULL, take = 0;
        int nd = route(in, kn_tree_addr(&kn_dmn.tree, src), w, p, &dest, &take);
        if (nd == -1)
            return 0;
        if (nd == -2)
            return 1; /* dropped: consumed */
        s->out = nd ? calloc((size_t)nd, sizeof(*s->out)) : NULL;
        if (nd && !s->out) {
            free(dest);
            kn_error("out of memory routing a message of module %s: dropped", in->name);
            return 1;
        }
        s->active = 1;
        s->take = take;
        s->total = w->total;
        s->ndest = nd;
        s->dest = dest;
        for (int i = 0; i < nd; i++) {
            if (!(s->out[i] = copy_for(w)))
                kn_error("out of memory streaming a message on to daemon %d: it gets none", dest[i]);
            else
                kn_d_out_queue(dest[i], s->out[i]); /* waits there until bytes come */
        }
    }
    if (!s->active)
        return 0;
    int take = s->take ? 2 : 1;
    s->got = w->offset + n;
    for (int i = 0; i < s->ndest; i++) {
        outmsg_t *o = s->out[i];
        if (!o)
            continue;
        memcpy(o->data + w->offset, p, n);
        o->avail = w->offset + n;
        kn_d_out_kick(s->dest[i]); /* may send it all, and free it */
    }
    if (w->offset + n >= s->total)
        stream_end(s);
    return take;
}

int kn_d_route_whole(kn_inst_t *in, int32_t from, const kn_wire_t *w, const char *p, uint64_t len)
{
    if (w->b > KNIT_MOD_HDR_MAX || w->b > len)
        return 0;
    int *dest = NULL, take = 0;
    int nd = route(in, from, w, p, &dest, &take);
    if (nd == -1)
        return 0;
    for (int i = 0; i < nd; i++)
        kn_d_send_msg(dest[i], W_MSG, w->mod, w->a, w->b, p, len, NULL, 0);
    free(dest);
    if (nd >= 0 && take)
        kn_d_inst_message(in, from, p, len, 0);
    return 1;
}
