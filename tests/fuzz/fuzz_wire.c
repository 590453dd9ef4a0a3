/*
 * Module frames between daemons (src/offload/wire.c, used by daemon.c's
 * on_packet and handle_msg): packets from daemons that may say anything,
 * checked, reassembled per sender, and the whole messages checked per
 * type.  The first byte gives the number of daemons; then packets, each
 * either built from fields (a header that passes the job check, so that
 * the fuzzer reaches reassembly with fragments in and out of order) or
 * raw bytes.
 * Properties: an accepted fragment lies inside its message; a message
 * that comes out is exactly the bytes of the fragments accepted for it,
 * in order, total bytes long, with its first fragment's header; its
 * per-type check holds what handle_msg relies on (a name field for LOAD,
 * NUL-terminated text for LOAD_ACK, LOAD_DONE, FAULT).
 */
#include "fuzz.h"
#include "offload/wire.h"

#define MAXIDS 9
#define AUTH 0x1234567887654321ull

KN_FUZZ_TARGET(wire)
{
    kn_fz_t f = {data, size};
    int nids = kn_fz_u8(&f) % (MAXIDS - 1) + 2;
    kn_wire_reasm_t rx[MAXIDS];
    struct {
        uint8_t *buf;
        uint64_t len;
        int on;
        kn_wire_t first;
    } model[MAXIDS];
    memset(rx, 0, sizeof(rx));
    memset(model, 0, sizeof(model));
    while (f.n) {
        uint8_t mode = kn_fz_u8(&f);
        int src = (int8_t)kn_fz_u8(&f) % (MAXIDS + 1);
        kn_pkt_hdr_t hdr = {.type = mode & 2 ? (uint8_t)kn_fz_u8(&f) : KN_PKT_OFFLOAD};
        uint8_t *pkt;
        size_t len;
        if (mode & 1) { /* raw */
            size_t got;
            const uint8_t *p = kn_fz_bytes(&f, kn_fz_u16(&f), &got);
            pkt = kn_fz_dup(p, got);
            len = got;
        } else {
            kn_wire_t w = {.magic = KN_WIRE_MAGIC, .version = KN_WIRE_VERSION, .auth = AUTH, .from = src};
            w.type = kn_fz_u8(&f) % (W_MAX + 1);
            w.mod = kn_fz_u8(&f) % 3;
            w.total = kn_fz_u16(&f) % 600;
            w.offset = kn_fz_u16(&f) % 600;
            w.a = kn_fz_u8(&f);
            w.b = kn_fz_u8(&f) % 5;
            if (mode & 4)
                w.auth ^= 1;
            if (mode & 8)
                w.total = kn_fz_u64(&f);
            size_t got;
            const uint8_t *p = kn_fz_bytes(&f, kn_fz_u16(&f) % 600, &got);
            uint8_t tmp[sizeof(w) + 600];
            memcpy(tmp, &w, sizeof(w));
            if (got)
                memcpy(tmp + sizeof(w), p, got);
            len = sizeof(w) + got;
            pkt = kn_fz_dup(tmp, len);
        }
        kn_wire_t w;
        const char *why = NULL;
        if (kn_wire_check(&hdr, pkt, len, AUTH, src, nids, &w, &why) != KNIT_OK) {
            KN_FUZZ_CHECK(why != NULL);
            kn_fz_free(pkt, len);
            continue; /* dropped, the daemon goes on */
        }
        const char *body = (const char *)pkt + sizeof(w);
        uint64_t n = len - sizeof(w);
        KN_FUZZ_CHECK(src >= 0 && src < nids && w.from == src && w.auth == AUTH);
        KN_FUZZ_CHECK(w.type > 0 && w.type < W_MAX && w.total <= KN_OFF_MSG_MAX);
        KN_FUZZ_CHECK(w.offset <= w.total && n <= w.total - w.offset);
        kn_wire_msg_t m;
        int whole = kn_wire_reasm_add(&rx[src], &w, body, n, &m, &why);
        /* the model: what was accepted since the message's first fragment */
        typeof(&model[0]) md = &model[src];
        int dropped = why && !strcmp(why, "fragment out of order");
        if (w.offset == 0) {
            free(md->buf);
            md->buf = NULL;
            md->len = 0;
            md->on = why == NULL || strcmp(why, "out of memory reassembling a message");
            md->first = w;
        }
        if (!dropped && md->on) {
            KN_FUZZ_CHECK(md->len == w.offset);
            md->buf = realloc(md->buf, md->len + n + 1);
            KN_FUZZ_CHECK(md->buf);
            if (n)
                memcpy(md->buf + md->len, body, n);
            md->len += n;
        }
        if (whole) {
            KN_FUZZ_CHECK(md->on && m.len == m.w.total && m.len == md->len);
            KN_FUZZ_CHECK(!memcmp(&m.w, &md->first, sizeof(m.w)));
            KN_FUZZ_CHECK(m.len == 0 || !memcmp(m.data, md->buf, m.len));
            if (kn_wire_body_ok(&m.w, m.data, m.len)) {
                if (m.w.type == W_LOAD)
                    KN_FUZZ_CHECK(m.len >= KNIT_MOD_NAME_MAX && m.w.b >= 1 && m.w.b <= 3);
                if (m.w.type == W_LOAD_ACK || m.w.type == W_LOAD_DONE || m.w.type == W_FAULT)
                    KN_FUZZ_CHECK(m.len > 0 && m.data[m.len - 1] == '\0' && strlen(m.data) < m.len);
                if (m.w.type == W_BULK) { /* a message of this sender to read, of a real type, in bounds */
                    kn_wire_bulk_t b;
                    KN_FUZZ_CHECK(m.len == sizeof(b));
                    memcpy(&b, m.data, sizeof(b));
                    KN_FUZZ_CHECK(b.w.from == m.w.from && b.w.auth == m.w.auth && b.w.type > 0 &&
                                  b.w.type < W_BULK && b.w.total > 0 && b.w.total <= KN_OFF_MSG_MAX);
                }
                if (m.w.type == W_BULK_DONE)
                    KN_FUZZ_CHECK(m.len == 0);
            }
            free(m.owned);
            free(md->buf);
            md->buf = NULL;
            md->len = 0;
            md->on = 0;
        }
        kn_fz_free(pkt, len);
    }
    for (int i = 0; i < MAXIDS; i++) {
        kn_wire_reasm_free(&rx[i]);
        free(model[i].buf);
    }
    return 0;
}
