/* Framed nonblocking connections of the bootstrap protocol (store side
 * and proxy side).  Headers are checked before their payload is read, so
 * a peer cannot make us buffer more than the type's length bound. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "knitrun.h"
#include "util/log.h"

#define OUT_MAX (256u << 20) /* a peer that stops reading gets cut off */

static kn_list_t dead_conns = KN_LIST_INIT(dead_conns);

static void conn_ready(kl_watch_t *w, uint32_t events);

kconn_t *kc_new(int fd, const char *peer,
                int (*on_msg)(kconn_t *, const kn_boot_hdr_t *, const uint8_t *),
                void (*on_close)(kconn_t *, const char *))
{
    kconn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        kn_error("out of memory for a connection");
        close(fd);
        return NULL;
    }
    c->w.fd = fd;
    c->w.fn = conn_ready;
    c->on_msg = on_msg;
    c->on_close = on_close;
    c->id = -1;
    kn_list_init(&c->link);
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    if (kl_add(&c->w, EPOLLIN) < 0) {
        close(fd);
        free(c);
        return NULL;
    }
    return c;
}

void kc_close(kconn_t *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    kl_del(&c->w);
    close(c->w.fd);
    c->w.fd = -1;
    kn_list_del(&c->link);
    kn_list_push_back(&dead_conns, &c->link);
}

void kc_reap_dead(void)
{
    kn_list_t *e;
    while ((e = kn_list_pop_front(&dead_conns))) {
        kconn_t *c = kn_list_entry(e, kconn_t, link);
        free(c->in);
        free(c->out);
        free(c->pending_key);
        free(c);
    }
}

static void end(kconn_t *c, const char *why)
{
    if (c->dead)
        return;
    if (c->on_close)
        c->on_close(c, why);
    kc_close(c);
}

static int flush(kconn_t *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->w.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            /* a peer that died or closed: the same as its EOF (a rank
             * SIGTERMed while a reply to it was on its way, not an error
             * worth a line after the job's verdict) */
            end(c, errno == EPIPE || errno == ECONNRESET ? "connection closed" : strerror(errno));
            return -1;
        }
        c->out_off += (size_t)n;
    }
    int want_out = c->out_off < c->out_len;
    if (!want_out)
        c->out_off = c->out_len = 0;
    return kl_mod(&c->w, EPOLLIN | (want_out ? EPOLLOUT : 0));
}

int kc_send(kconn_t *c, unsigned type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (c->dead)
        return -1;
    size_t need = KN_BOOT_HDR_SIZE + alen + blen;
    if (c->out_len + need > OUT_MAX) {
        kn_error("%s: peer does not read, closing", c->peer);
        end(c, "peer does not read");
        return -1;
    }
    if (c->out_len + need > c->out_cap) {
        /* compact, then grow */
        if (c->out_off) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        size_t cap = KN_MAX(c->out_cap * 2, c->out_len + need + 4096);
        uint8_t *o = realloc(c->out, cap);
        if (!o) {
            kn_error("out of memory for a message");
            return -1;
        }
        c->out = o;
        c->out_cap = cap;
    }
    uint8_t *p = c->out + c->out_len;
    kn_boot_hdr_encode(p, type, (uint32_t)(alen + blen));
    if (alen)
        memcpy(p + KN_BOOT_HDR_SIZE, a, alen);
    if (blen)
        memcpy(p + KN_BOOT_HDR_SIZE + alen, b, blen);
    c->out_len += need;
    return flush(c);
}

/* Hand every complete message in the input buffer to on_msg. */
static void parse(kconn_t *c)
{
    while (!c->dead && c->in_len - c->in_off >= KN_BOOT_HDR_SIZE) {
        kn_boot_hdr_t h;
        const char *why;
        if (kn_boot_hdr_decode(c->in + c->in_off, &h, &why) != KNIT_OK) {
            char msg[96];
            snprintf(msg, sizeof(msg), "malformed header (%s)", why);
            end(c, msg);
            return;
        }
        size_t total = KN_BOOT_HDR_SIZE + (size_t)h.len;
        if (c->in_len - c->in_off < total)
            break;
        if (c->on_msg(c, &h, c->in + c->in_off + KN_BOOT_HDR_SIZE) < 0) {
            kc_close(c);
            return;
        }
        c->in_off += total;
    }
    if (c->in_off == c->in_len)
        c->in_off = c->in_len = 0;
}

/* Room for the next message (its header, once known, says how much). */
static int make_room(kconn_t *c)
{
    size_t need = KN_BOOT_HDR_SIZE;
    kn_boot_hdr_t h;
    if (c->in_len - c->in_off >= KN_BOOT_HDR_SIZE &&
        kn_boot_hdr_decode(c->in + c->in_off, &h, NULL) == KNIT_OK)
        need += h.len;
    need = KN_MAX(need, (size_t)4096);
    if (c->in_off + need <= c->in_cap && c->in_len < c->in_cap)
        return 0;
    if (c->in_off) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    if (c->in_cap >= need && c->in_len < c->in_cap)
        return 0;
    uint8_t *in = realloc(c->in, need);
    if (!in) {
        kn_error("out of memory for a message");
        return -1;
    }
    c->in = in;
    c->in_cap = need;
    return 0;
}

static void conn_ready(kl_watch_t *w, uint32_t events)
{
    kconn_t *c = kn_container_of(w, kconn_t, w);
    if ((events & EPOLLOUT) && flush(c) < 0)
        return;
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    for (int rounds = 0; rounds < 64 && !c->dead; rounds++) {
        if (make_room(c) < 0) {
            end(c, "out of memory");
            return;
        }
        ssize_t n = read(c->w.fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ECONNRESET) /* a peer that died: same as EOF */
                end(c, "connection closed");
            else if (errno != EAGAIN)
                end(c, strerror(errno));
            return;
        }
        if (n == 0) {
            end(c, c->in_len > c->in_off ? "connection closed inside a message"
                                          : "connection closed");
            return;
        }
        c->in_len += (size_t)n;
        parse(c);
    }
}
