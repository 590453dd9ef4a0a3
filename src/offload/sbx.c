/* The sandbox segment's rings (sbx.h): shared by the daemon and knit-modhost. */
#include "offload/sbx.h"

#include <stdlib.h>
#include <string.h>

#define REC_ALIGN(x) (((x) + 31u) & ~(uint64_t)31u)
#define SIZE ((uint64_t)KN_SBX_RING) /* never the segment's word for it */

void kn_sbx_seg_init(kn_sbx_seg_t *s)
{
    memset(s, 0, sizeof(*s));
    s->magic = KN_SBX_MAGIC;
    s->version = KN_SBX_VERSION;
    s->size = kn_sbx_seg_size();
}

void kn_sbx_end_init(kn_sbx_end_t *e, kn_sbx_seg_t *s, int which)
{
    kn_sbx_ring_t *rings[3] = {&s->call, &s->reply, &s->svc};
    e->r = rings[which];
    e->data = (unsigned char *)s + kn_sbx_ring_offset(which);
    e->pos = 0;
}

int kn_sbx_put(kn_sbx_end_t *e, const kn_sbx_rec_t *h, const void *p, uint32_t len)
{
    uint64_t need = sizeof(*h) + REC_ALIGN(len);
    uint64_t tail = e->pos, head = __atomic_load_n(&e->r->head, __ATOMIC_ACQUIRE);
    uint64_t to_end = SIZE - tail % SIZE;
    uint64_t pad = to_end < need ? to_end : 0;
    if (len > KN_SBX_FRAG || tail - head > SIZE || SIZE - (tail - head) < pad + need)
        return 0;
    if (pad) {
        kn_sbx_rec_t ph = {.len = (uint32_t)(pad - sizeof(ph)), .type = KN_SBX_PAD};
        memcpy(e->data + tail % SIZE, &ph, sizeof(ph));
        tail += pad;
    }
    kn_sbx_rec_t hh = *h;
    hh.len = len;
    memcpy(e->data + tail % SIZE, &hh, sizeof(hh));
    if (len)
        memcpy(e->data + tail % SIZE + sizeof(hh), p, len);
    e->pos = tail + need;
    __atomic_store_n(&e->r->tail, e->pos, __ATOMIC_RELEASE);
    return 1;
}

int kn_sbx_pending(const kn_sbx_end_t *e)
{
    return __atomic_load_n(&e->r->tail, __ATOMIC_ACQUIRE) != e->pos;
}

int64_t kn_sbx_peek(kn_sbx_end_t *e, kn_sbx_rec_t *h, const void **p)
{
    for (;;) {
        uint64_t head = e->pos, tail = __atomic_load_n(&e->r->tail, __ATOMIC_ACQUIRE);
        if (tail == head)
            return 0;
        uint64_t avail = tail - head, to_end = SIZE - head % SIZE;
        if (avail > SIZE || avail < sizeof(*h))
            return -1;
        memcpy(h, e->data + head % SIZE, sizeof(*h));
        uint64_t n = sizeof(*h) + REC_ALIGN((uint64_t)h->len);
        if (n > avail || n > to_end)
            return -1;
        if (h->type == KN_SBX_PAD) {
            if (n != to_end)
                return -1;
            kn_sbx_pop(e, (int64_t)n);
            continue;
        }
        if (h->len > KN_SBX_FRAG)
            return -1;
        *p = e->data + head % SIZE + sizeof(*h);
        return (int64_t)n;
    }
}

void kn_sbx_pop(kn_sbx_end_t *e, int64_t n)
{
    e->pos += (uint64_t)n;
    __atomic_store_n(&e->r->head, e->pos, __ATOMIC_RELEASE);
}

int kn_sbx_take(kn_sbx_end_t *e, kn_sbx_rx_t *rx, const char **why)
{
    kn_sbx_rec_t h;
    const void *p;
    int64_t sz = kn_sbx_peek(e, &h, &p);
    if (sz <= 0) {
        if (sz < 0)
            *why = "ring out of bounds";
        return (int)sz;
    }
    if (rx->active && h.type != rx->h.type) {
        *why = "a fragment of another message";
        return -1;
    }
    uint64_t have = rx->active ? rx->len : 0;
    if (have + h.len > KN_OFF_MSG_MAX) {
        *why = "a message over 64 MiB";
        return -1;
    }
    if (have + h.len + 1 > rx->cap) {
        uint64_t cap = have + h.len + 1 > 2 * rx->cap ? have + h.len + 1 : 2 * rx->cap;
        char *b = realloc(rx->buf, cap);
        if (!b) {
            *why = "out of memory";
            return -1;
        }
        rx->buf = b;
        rx->cap = cap;
    }
    if (!rx->active) {
        rx->h = h;
        rx->len = 0;
        rx->active = 1;
    }
    memcpy(rx->buf + rx->len, p, h.len);
    rx->len += h.len;
    kn_sbx_pop(e, sz);
    if (h.flags & KN_SBX_F_MORE)
        return 0;
    rx->active = 0;
    return 1;
}

void kn_sbx_rx_free(kn_sbx_rx_t *rx)
{
    free(rx->buf);
    *rx = (kn_sbx_rx_t){0};
}

static int name_ok(const char *n, size_t len)
{
    if (len == 0 || len >= KNIT_MOD_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int kn_sbx_svc_ok(const kn_sbx_rec_t *h, const char *p, uint64_t len, const char **why)
{
    switch (h->type) {
    case KN_SBX_S_LOADED: {
        int32_t st = (int32_t)(uint32_t)h->a;
        if (len == 0 || len > KN_OFF_ERR_MAX || memchr(p, 0, len) != p + len - 1 || st > 0 ||
            (st == 0 && !name_ok(p, len - 1))) {
            *why = "load verdict";
            return 0;
        }
        return 1;
    }
    case KN_SBX_S_READ:
        if (len || h->c > KN_OFF_MSG_MAX) {
            *why = "read_rank";
            return 0;
        }
        return 1;
    case KN_SBX_S_SEND:
        if (h->b > len || h->b > KNIT_MOD_HDR_MAX) {
            *why = "send: a header longer than its message, or than KNIT_MOD_HDR_MAX";
            return 0;
        }
        return 1;
    case KN_SBX_S_MULTICAST:
    case KN_SBX_S_COMPLETE:
    case KN_SBX_S_WRITE:
    case KN_SBX_S_DELIVER:
        return 1;
    }
    *why = "record type";
    return 0;
}
