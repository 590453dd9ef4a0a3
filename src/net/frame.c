/* The network transport's framing checks: see frame.h. */
#include "net/frame.h"

#include <string.h>

knit_status_t kn_net_frame_check(const void *buf, size_t len, size_t rx_size, int nranks, net_hdr_t *out,
                                 const char **why)
{
    net_hdr_t h;
    const char *bad = NULL;
    if (len < sizeof(h) || len > rx_size) {
        bad = "bad message size";
        goto out;
    }
    memcpy(&h, buf, sizeof(h));
    unsigned kind = h.ver_kind & 0xf;
    if (h.ver_kind >> 4 != NET_VERSION)
        bad = "unknown version";
    else if (kind != NK_PKT && kind != NK_CREDIT)
        bad = "unknown kind";
    else if (nranks < 0 || h.src >= (uint32_t)nranks)
        bad = "sender out of range";
    else if (kind == NK_PKT && len < NET_HDRS)
        bad = "packet shorter than its headers";
out:
    if (bad) {
        *why = bad;
        return KNIT_ERR_PROTO;
    }
    *out = h;
    return KNIT_OK;
}
