/*
 * Bootstrap store protocol (src/boot/proto.c), both directions: the input
 * is the byte stream one end of a connection receives.  Messages are cut
 * as the receivers cut them (header first, checked, then its payload),
 * each decoded as the store (tools/knitrun/store.c), the clients
 * (src/boot/boot.c) and the proxies decode them, and PUT/GET go through
 * the store's table (src/boot/kv.c).
 * Properties: a header that decodes encodes back to the same 16 bytes; a
 * payload that decodes encodes back to the same bytes, no longer than
 * the header said; a GET after a PUT of the same key finds its value.
 */
#include "boot/boot.h"
#include "boot/kv.h"
#include "boot/proto.h"
#include "fuzz.h"
#include "util/log.h"

KN_FUZZ_TARGET(boot)
{
    kn_log_set_level(-1);
    kn_kv_t *kv;
    KN_FUZZ_CHECK(kn_kv_create(&kv) == KNIT_OK);
    /* the last value put under the last key put */
    char last_key[KN_BOOT_KEY_MAX];
    size_t last_klen = 0, last_vlen = 0;
    uint8_t *last_val = NULL;
    size_t off = 0;
    while (size - off >= KN_BOOT_HDR_SIZE) {
        kn_boot_hdr_t h;
        const char *why = NULL;
        if (kn_boot_hdr_decode(data + off, &h, &why) != KNIT_OK) {
            KN_FUZZ_CHECK(why != NULL);
            break; /* the receiver ends the connection */
        }
        uint8_t again[KN_BOOT_HDR_SIZE];
        kn_boot_hdr_encode(again, h.type, h.len);
        KN_FUZZ_CHECK(!memcmp(again, data + off, KN_BOOT_HDR_SIZE));
        KN_FUZZ_CHECK(h.len >= kn_boot_len_min(h.type) && h.len <= kn_boot_len_max(h.type));
        off += KN_BOOT_HDR_SIZE;
        if (size - off < h.len)
            break; /* the rest of the message never came */
        uint8_t *p = kn_fz_dup(data + off, h.len);
        off += h.len;
        kn_boot_msg_t m;
        if (kn_boot_msg_decode(&h, p, &m, &why) != KNIT_OK) {
            KN_FUZZ_CHECK(why != NULL);
            kn_fz_free(p, h.len);
            break;
        }
        KN_FUZZ_CHECK(m.type == h.type);
        if (m.len)
            KN_FUZZ_CHECK(m.data >= p && m.data + m.len <= p + h.len);
        if (m.klen)
            KN_FUZZ_CHECK((const uint8_t *)m.key >= p && (const uint8_t *)m.key + m.klen <= p + h.len);
        uint8_t *out = kn_fz_dup(NULL, h.len);
        uint32_t n = kn_boot_msg_encode(&m, out);
        KN_FUZZ_CHECK(n == h.len && !memcmp(out, p, n));
        kn_fz_free(out, h.len);
        switch (m.type) {
        case KN_BOOT_HELLO:
            KN_FUZZ_CHECK(kn_boot_cookie_valid(m.cookie, KN_BOOT_COOKIE_LEN));
            break;
        case KN_BOOT_PUT:
            KN_FUZZ_CHECK(kn_boot_key_valid(m.key, m.klen) && m.len <= KN_BOOT_VAL_MAX);
            KN_FUZZ_CHECK(kn_kv_put(kv, m.key, m.klen, m.data, m.len) == KNIT_OK);
            memcpy(last_key, m.key, m.klen);
            last_klen = m.klen;
            kn_fz_free(last_val, last_vlen);
            last_val = kn_fz_dup(m.data, m.len);
            last_vlen = m.len;
            break;
        case KN_BOOT_GET: {
            size_t vlen;
            const uint8_t *v = kn_kv_get(kv, m.key, m.klen, &vlen);
            if (last_val && m.klen == last_klen && !memcmp(m.key, last_key, m.klen))
                KN_FUZZ_CHECK(v && vlen == last_vlen && (!vlen || !memcmp(v, last_val, vlen)));
            break;
        }
        case KN_BOOT_OUTPUT:
            KN_FUZZ_CHECK(m.stream == 1 || m.stream == 2);
            break;
        case KN_BOOT_EXIT:
            KN_FUZZ_CHECK(m.value >= 0 && m.value <= 255 && m.how <= 1);
            break;
        case KN_BOOT_SIGNAL:
            KN_FUZZ_CHECK(m.signo >= 1 && m.signo <= KN_BOOT_SIG_MAX);
            break;
        case KN_BOOT_ACK:
            KN_FUZZ_CHECK(m.status <= 0);
            break;
        }
        kn_fz_free(p, h.len);
    }
    kn_fz_free(last_val, last_vlen);
    kn_kv_destroy(kv);
    return 0;
}
