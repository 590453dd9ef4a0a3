/*
 * What a module process sends its daemon (KNIT_MODULE_ISOLATION=process):
 * the svc ring of its segment, which the module's code can scribble over
 * at will (src/offload/sbx.c's kn_sbx_take and kn_sbx_svc_ok, used by
 * src/offload/sandbox.c's serve_some).  The input is a script: records
 * put the proper way (random types, flags, payloads), or raw bytes and a
 * raw producer index written straight into the ring.  The daemon's side
 * then takes everything there is.
 * Properties: every read stays inside the ring (ASan, and the segment is
 * one allocation); taking ends (each call consumes or reports); a whole
 * message is exactly the payloads of its records, in order, and at most
 * KN_OFF_MSG_MAX long; one that kn_sbx_svc_ok accepts has what serve()
 * relies on (a NUL-terminated verdict, a bounded read).
 */
#include "fuzz.h"
#include "offload/sbx.h"

static kn_sbx_seg_t *seg;

KN_FUZZ_TARGET(sbx)
{
    if (!seg) {
        seg = malloc(kn_sbx_seg_size());
        KN_FUZZ_CHECK(seg);
    }
    kn_sbx_seg_init(seg);
    kn_sbx_end_t prod, cons;
    kn_sbx_end_init(&prod, seg, KN_SBX_SVC);
    kn_sbx_end_init(&cons, seg, KN_SBX_SVC);
    kn_sbx_rx_t rx = {0};
    kn_fz_t f = {data, size};
    /* the model: payload bytes of the records put since the last whole message */
    static uint8_t model[1 << 16];
    size_t mlen = 0;
    int raw = 0;
    while (f.n) {
        uint8_t mode = kn_fz_u8(&f);
        if (mode & 1) { /* scribble: bytes at an offset of the ring, and the index */
            size_t got;
            uint32_t off = kn_fz_u32(&f) % KN_SBX_RING;
            const uint8_t *p = kn_fz_bytes(&f, kn_fz_u16(&f) % 512, &got);
            if (got > KN_SBX_RING - off)
                got = KN_SBX_RING - off;
            memcpy(prod.data + off, p, got);
            seg->svc.tail = kn_fz_u64(&f);
            raw = 1;
        } else {
            kn_sbx_rec_t h = {.type = (uint16_t)(kn_fz_u8(&f) % (KN_SBX_TYPE_MAX + 2)),
                              .flags = (uint16_t)(kn_fz_u8(&f) & 1), .a = kn_fz_u64(&f), .b = kn_fz_u8(&f),
                              .c = kn_fz_u32(&f)};
            size_t got;
            const uint8_t *p = kn_fz_bytes(&f, kn_fz_u16(&f) % 2048, &got);
            if (!raw && kn_sbx_put(&prod, &h, p, (uint32_t)got) && mlen + got <= sizeof(model)) {
                memcpy(model + mlen, p, got);
                mlen += got;
            }
        }
        /* the daemon takes what is there */
        for (int guard = 0; guard < 100000; guard++) {
            const char *why = NULL;
            int r = kn_sbx_take(&cons, &rx, &why);
            if (r < 0) {
                KN_FUZZ_CHECK(why != NULL);
                kn_sbx_rx_free(&rx);
                return 0; /* the daemon kills such a host */
            }
            if (r == 0 && !kn_sbx_pending(&cons))
                break;
            if (r > 0) {
                KN_FUZZ_CHECK(rx.len <= KN_OFF_MSG_MAX);
                if (!raw)
                    KN_FUZZ_CHECK(rx.len == mlen && !memcmp(rx.buf, model, mlen));
                mlen = 0;
                if (kn_sbx_svc_ok(&rx.h, rx.buf, rx.len, &why)) {
                    if (rx.h.type == KN_SBX_S_LOADED)
                        KN_FUZZ_CHECK(rx.len > 0 && rx.buf[rx.len - 1] == '\0' && rx.len <= KN_OFF_ERR_MAX &&
                                      (int32_t)(uint32_t)rx.h.a <= 0);
                    if (rx.h.type == KN_SBX_S_READ)
                        KN_FUZZ_CHECK(rx.len == 0 && rx.h.c <= KN_OFF_MSG_MAX);
                } else {
                    KN_FUZZ_CHECK(why != NULL);
                }
            }
            KN_FUZZ_CHECK(guard < 99999);
        }
    }
    kn_sbx_rx_free(&rx);
    return 0;
}
