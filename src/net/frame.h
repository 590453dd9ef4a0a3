/*
 * The network transport's own framing (net.c describes the protocol):
 * the 8-byte header in front of every message, and where a message falls
 * in its sender's sequence.  Pure functions, shared by net.c and the fuzz
 * target tests/fuzz/fuzz_net.c.
 */
#ifndef KN_NET_FRAME_H
#define KN_NET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "knit.h"
#include "tl/tl.h"

#define NET_VERSION 1
#define NK_PKT 1
#define NK_CREDIT 2

typedef struct net_hdr {
    uint8_t ver_kind;  /* version (high nibble) and kind */
    uint8_t credits;   /* receive buffers the sender freed for us */
    uint16_t seq;      /* message number from this sender to us (mod 2^16) */
    uint32_t src;      /* the sender's job rank */
} net_hdr_t;
_Static_assert(sizeof(net_hdr_t) == 8, "net header is 8 bytes");

#define NET_HDRS (sizeof(net_hdr_t) + sizeof(kn_pkt_hdr_t))

/* A received message of len bytes (into a buffer of rx_size): at least a
 * header and at most the buffer, our version, a known kind, a sender in
 * 0..nranks-1, and for a packet the engine's header too.  KNIT_OK with
 * the header in *h, else KNIT_ERR_PROTO and a reason. */
knit_status_t kn_net_frame_check(const void *buf, size_t len, size_t rx_size, int nranks, net_hdr_t *h,
                                 const char **why);

/* The window of early messages held per sender, for in_flight messages
 * a sender can have under way: a power of two, so that a message's slot
 * (seq % window) stays distinct from every other in the window across the
 * 16-bit wrap of seq (65536 % window == 0).  With credits + 3 = 18 slots,
 * a message 17 ahead just after the wrap took the slot of one just before
 * it, and came out in its place (fuzz_net). */
static inline unsigned kn_net_window(unsigned in_flight)
{
    unsigned w = 1;
    while (w < in_flight && w < 65536)
        w <<= 1;
    return w;
}

/* How far message seq is ahead of next, the one its sender's order says
 * is due: 0 (deliver now), 1..window-1 (hold it), or -1 (outside the
 * window of messages a sender can have in flight: a protocol error). */
static inline int kn_net_seq_ahead(uint16_t seq, uint16_t next, unsigned window)
{
    uint16_t d = (uint16_t)(seq - next);
    return d < window ? (int)d : -1;
}

#endif
