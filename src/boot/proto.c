/* Bootstrap wire protocol: header codec, checks, blocking I/O helpers. */
#include "boot/proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "boot/boot.h"
#include "util/log.h"
#include "util/time.h"

static const struct {
    const char *name;
    uint32_t min, max;
} types[KN_BOOT_TYPE_END] = {
    [KN_BOOT_HELLO] = {"hello", KN_BOOT_HELLO_LEN, KN_BOOT_HELLO_LEN},
    [KN_BOOT_ACK] = {"ack", 4, 4},
    [KN_BOOT_PUT] = {"put", 5, 4 + KN_BOOT_KEY_MAX + KN_BOOT_VAL_MAX},
    [KN_BOOT_GET] = {"get", 1, KN_BOOT_KEY_MAX},
    [KN_BOOT_VALUE] = {"value", 0, KN_BOOT_VAL_MAX},
    [KN_BOOT_FENCE] = {"fence", 0, 0},
    [KN_BOOT_FENCE_DONE] = {"fence-done", 0, 0},
    [KN_BOOT_ABORT] = {"abort", 4, 4 + KN_BOOT_MSG_MAX},
    [KN_BOOT_FINALIZE] = {"finalize", 0, 0},
    [KN_BOOT_JOB] = {"job", 16, KN_BOOT_JOB_MAX},
    [KN_BOOT_OUTPUT] = {"output", 8, 8 + KN_BOOT_OUTPUT_MAX},
    [KN_BOOT_EXIT] = {"exit", 12, 12},
    [KN_BOOT_SIGNAL] = {"signal", 4, 4},
};

static int type_known(unsigned t)
{
    return t > 0 && t < KN_BOOT_TYPE_END;
}

uint32_t kn_boot_len_max(unsigned t)
{
    return type_known(t) ? types[t].max : 0;
}

uint32_t kn_boot_len_min(unsigned t)
{
    return type_known(t) ? types[t].min : 0;
}

const char *kn_boot_type_name(unsigned t)
{
    return type_known(t) ? types[t].name : "unknown";
}

void kn_boot_hdr_encode(uint8_t out[KN_BOOT_HDR_SIZE], unsigned type, uint32_t len)
{
    kn_boot_put32(out, KN_BOOT_MAGIC);
    out[4] = (uint8_t)(KN_BOOT_VERSION >> 8);
    out[5] = (uint8_t)KN_BOOT_VERSION;
    out[6] = (uint8_t)(type >> 8);
    out[7] = (uint8_t)type;
    kn_boot_put32(out + 8, len);
    kn_boot_put32(out + 12, 0);
}

knit_status_t kn_boot_hdr_decode(const uint8_t in[KN_BOOT_HDR_SIZE], kn_boot_hdr_t *out,
                                 const char **why)
{
    kn_boot_hdr_t h = {
        .magic = kn_boot_get32(in),
        .version = (uint16_t)(in[4] << 8 | in[5]),
        .type = (uint16_t)(in[6] << 8 | in[7]),
        .len = kn_boot_get32(in + 8),
        .reserved = kn_boot_get32(in + 12),
    };
    const char *bad = NULL;
    if (h.magic != KN_BOOT_MAGIC)
        bad = "bad magic";
    else if (h.version != KN_BOOT_VERSION)
        bad = "unsupported protocol version";
    else if (h.reserved != 0)
        bad = "reserved field not zero";
    else if (!type_known(h.type))
        bad = "unknown message type";
    else if (h.len < types[h.type].min || h.len > types[h.type].max)
        bad = "bad length for message type";
    if (bad) {
        if (why)
            *why = bad;
        return KNIT_ERR_PROTO;
    }
    *out = h;
    return KNIT_OK;
}

int kn_boot_key_valid(const char *key, size_t len)
{
    if (!key || len == 0 || len > KN_BOOT_KEY_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (key[i] < 0x21 || key[i] > 0x7e)
            return 0;
    return 1;
}

int kn_boot_cookie_valid(const char *c, size_t len)
{
    if (!c || len != KN_BOOT_COOKIE_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((c[i] >= '0' && c[i] <= '9') || (c[i] >= 'a' && c[i] <= 'f')))
            return 0;
    return 1;
}

int kn_boot_cookie_equal(const char *a, const char *b)
{
    unsigned diff = 0;
    for (size_t i = 0; i < KN_BOOT_COOKIE_LEN; i++)
        diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
    return diff == 0;
}

knit_status_t kn_boot_cookie_new(char out[KN_BOOT_COOKIE_LEN + 1])
{
    uint8_t raw[KN_BOOT_COOKIE_LEN / 2];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            kn_error("getrandom: %m");
            return KNIT_ERR_IO;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[KN_BOOT_COOKIE_LEN] = '\0';
    return KNIT_OK;
}

static knit_status_t parse_port(const char *s, uint16_t *port)
{
    char *end;
    errno = 0;
    long p = strtol(s, &end, 10);
    if (errno || end == s || *end || p <= 0 || p > 65535)
        return KNIT_ERR_INVAL;
    *port = (uint16_t)p;
    return KNIT_OK;
}

knit_status_t kn_boot_addr_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    if (!strncmp(text, "unix:", 5)) {
        struct sockaddr_un *un = (struct sockaddr_un *)ss;
        const char *path = text + 5;
        if (!*path || strlen(path) >= sizeof(un->sun_path))
            return KNIT_ERR_INVAL;
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, path);
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
        return KNIT_OK;
    }
    if (!strncmp(text, "ipv4:", 5))
        text += 5;
    char host[256];
    const char *colon;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
            return KNIT_ERR_INVAL;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || colon == text || (size_t)(colon - text) >= sizeof(host))
            return KNIT_ERR_INVAL;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
    }
    uint16_t port;
    if (parse_port(colon + 1, &port) != KNIT_OK)
        return KNIT_ERR_INVAL;
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        *len = sizeof(*in4);
        return KNIT_OK;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *len = sizeof(*in6);
        return KNIT_OK;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return KNIT_ERR_INVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    if (ss->ss_family == AF_INET)
        in4->sin_port = htons(port);
    else
        in6->sin6_port = htons(port);
    return KNIT_OK;
}

knit_status_t kn_boot_send(int fd, unsigned type, const void *a, size_t alen,
                           const void *b, size_t blen)
{
    uint8_t hdr[KN_BOOT_HDR_SIZE];
    kn_boot_hdr_encode(hdr, type, (uint32_t)(alen + blen));
    struct iovec iov[3] = {{hdr, sizeof(hdr)}, {(void *)a, alen}, {(void *)b, blen}};
    struct iovec *v = iov;
    int cnt = 3;
    while (cnt > 0) {
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)cnt};
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE || errno == ECONNRESET)
                return KNIT_ERR_PEER;
            kn_error("bootstrap send: %m");
            return KNIT_ERR_IO;
        }
        while (cnt > 0 && (size_t)n >= v->iov_len) {
            n -= (ssize_t)v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= (size_t)n;
        }
    }
    return KNIT_OK;
}

knit_status_t kn_boot_read_full(int fd, void *buf, size_t len, uint64_t deadline)
{
    size_t got = 0;
    while (got < len) {
        if (deadline) {
            uint64_t now = kn_time_ns();
            if (now >= deadline)
                return KNIT_ERR_TIMEOUT;
            uint64_t ms = (deadline - now + KN_NSEC_PER_MSEC - 1) / KN_NSEC_PER_MSEC;
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int r = poll(&p, 1, ms > INT32_MAX ? INT32_MAX : (int)ms);
            if (r < 0 && errno != EINTR) {
                kn_error("bootstrap poll: %m");
                return KNIT_ERR_IO;
            }
            if (r <= 0)
                continue;
        }
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n == 0)
            return KNIT_ERR_PEER;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ECONNRESET)
                return KNIT_ERR_PEER;
            kn_error("bootstrap read: %m");
            return KNIT_ERR_IO;
        }
        got += (size_t)n;
    }
    return KNIT_OK;
}

knit_status_t kn_boot_recv(int fd, kn_boot_hdr_t *h, uint8_t **payload, uint64_t deadline)
{
    uint8_t raw[KN_BOOT_HDR_SIZE];
    knit_status_t st = kn_boot_read_full(fd, raw, sizeof(raw), deadline);
    if (st != KNIT_OK)
        return st;
    const char *why;
    if (kn_boot_hdr_decode(raw, h, &why) != KNIT_OK) {
        kn_error("bootstrap: malformed message from the store: %s", why);
        return KNIT_ERR_PROTO;
    }
    uint8_t *p = malloc((size_t)h->len + 1);
    if (!p)
        return KNIT_ERR_NOMEM;
    st = kn_boot_read_full(fd, p, h->len, deadline);
    if (st != KNIT_OK) {
        free(p);
        return st;
    }
    p[h->len] = '\0';
    *payload = p;
    return KNIT_OK;
}
