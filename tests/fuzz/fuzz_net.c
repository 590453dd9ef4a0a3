/*
 * The network transport's own framing (src/net/frame.c, used by net.c's
 * rx_complete): the 8-byte header in front of every message and where a
 * message falls in its sender's order.  The first input bytes give the
 * receiver's shape (ranks, window, bounce-buffer size); then messages,
 * each a 16-bit length and its bytes.  They are checked as rx_complete
 * checks them and ordered as it orders them: delivered when due, held
 * when ahead within the window, a protocol error otherwise (the job ends:
 * here the input ends).
 * Properties: an accepted message has a header, fits the buffer, names a
 * real sender and a known kind, and a packet has room for the engine's
 * header; per sender, messages come out exactly once each, in sequence
 * order across the 16-bit wrap; no more than window - 1 are ever held.
 */
#include "fuzz.h"
#include "net/frame.h"

#define MAXRANKS 8
#define MAXWIN 512

KN_FUZZ_TARGET(net)
{
    kn_fz_t f = {data, size};
    int nranks = kn_fz_u8(&f) % MAXRANKS + 1;
    unsigned window = kn_net_window(kn_fz_u8(&f) % 258 + 1); /* credits + 3, as net.c */
    size_t rx_size = kn_fz_u16(&f) % 9000;
    static struct {
        uint16_t next;
        unsigned nheld;
        uint8_t held[MAXWIN]; /* 1: a message with seq == next + d (mod window slot) is held */
        uint16_t held_seq[MAXWIN];
    } peers[MAXRANKS];
    memset(peers, 0, sizeof(peers));
    /* where the sender's numbering starts: senders start at 0, but the
     * window arithmetic must hold anywhere (the counter wraps) */
    uint16_t start = kn_fz_u16(&f);
    for (int i = 0; i < MAXRANKS; i++)
        peers[i].next = start;
    while (f.n) {
        size_t want = kn_fz_u16(&f), got;
        const uint8_t *p = kn_fz_bytes(&f, want, &got);
        uint8_t *msg = kn_fz_dup(p, got);
        net_hdr_t h;
        const char *why = NULL;
        knit_status_t st = kn_net_frame_check(msg, got, rx_size, nranks, &h, &why);
        kn_fz_free(msg, got);
        if (st != KNIT_OK) {
            KN_FUZZ_CHECK(why != NULL);
            break;
        }
        unsigned kind = h.ver_kind & 0xf;
        KN_FUZZ_CHECK(got >= sizeof(h) && got <= rx_size && h.ver_kind >> 4 == NET_VERSION);
        KN_FUZZ_CHECK(kind == NK_PKT || kind == NK_CREDIT);
        KN_FUZZ_CHECK(h.src < (uint32_t)nranks);
        KN_FUZZ_CHECK(kind != NK_PKT || got >= NET_HDRS);
        typeof(&peers[0]) pe = &peers[h.src];
        int d = kn_net_seq_ahead(h.seq, pe->next, window);
        KN_FUZZ_CHECK(d >= -1 && d < (int)window);
        if (d < 0 || (d > 0 && pe->held[h.seq % window]))
            break; /* protocol error: the job ends */
        if (d > 0) {
            KN_FUZZ_CHECK((uint16_t)(pe->next + d) == h.seq);
            pe->held[h.seq % window] = 1;
            pe->held_seq[h.seq % window] = h.seq;
            pe->nheld++;
            KN_FUZZ_CHECK(pe->nheld < window);
            continue;
        }
        KN_FUZZ_CHECK(h.seq == pe->next);
        pe->next++;
        while (pe->nheld && pe->held[pe->next % window]) {
            KN_FUZZ_CHECK(pe->held_seq[pe->next % window] == pe->next);
            pe->held[pe->next % window] = 0;
            pe->nheld--;
            pe->next++;
        }
    }
    return 0;
}
