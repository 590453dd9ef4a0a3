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

/* ------------------------------------------------------------ payloads */

knit_status_t kn_boot_msg_decode(const kn_boot_hdr_t *h, const uint8_t *p, kn_boot_msg_t *m,
                                 const char **why)
{
    const char *bad = NULL;
    kn_boot_msg_t d = {.type = h->type, .data = p, .len = h->len};
    if (h->len < kn_boot_len_min(h->type) || h->len > kn_boot_len_max(h->type)) {
        bad = "bad length for message type";
        goto out;
    }
    switch (h->type) {
    case KN_BOOT_HELLO:
        d.cookie = (const char *)p;
        d.role = kn_boot_get32(p + KN_BOOT_COOKIE_LEN);
        d.id = (int32_t)kn_boot_get32(p + KN_BOOT_COOKIE_LEN + 4);
        d.data = NULL, d.len = 0;
        if (!kn_boot_cookie_valid(d.cookie, KN_BOOT_COOKIE_LEN))
            bad = "malformed cookie in hello";
        break;
    case KN_BOOT_ACK:
        d.status = (int32_t)kn_boot_get32(p);
        d.data = NULL, d.len = 0;
        if (d.status > 0)
            bad = "positive status in ack";
        break;
    case KN_BOOT_PUT:
        d.klen = kn_boot_get32(p);
        d.key = (const char *)p + 4;
        if (d.klen > h->len - 4 || !kn_boot_key_valid(d.key, d.klen) ||
            h->len - 4 - d.klen > KN_BOOT_VAL_MAX) {
            bad = "malformed put";
            break;
        }
        d.data = p + 4 + d.klen;
        d.len = h->len - 4 - d.klen;
        break;
    case KN_BOOT_GET:
        d.key = (const char *)p;
        d.klen = h->len;
        d.data = NULL, d.len = 0;
        if (!kn_boot_key_valid(d.key, d.klen))
            bad = "malformed key in get";
        break;
    case KN_BOOT_ABORT:
        d.code = (int32_t)kn_boot_get32(p);
        d.data = p + 4;
        d.len = h->len - 4;
        break;
    case KN_BOOT_OUTPUT:
        d.rank = kn_boot_get32(p);
        d.stream = kn_boot_get32(p + 4);
        d.data = p + 8;
        d.len = h->len - 8;
        if (d.stream != 1 && d.stream != 2)
            bad = "bad output stream";
        break;
    case KN_BOOT_EXIT:
        d.rank = kn_boot_get32(p);
        d.how = kn_boot_get32(p + 4);
        d.value = (int32_t)kn_boot_get32(p + 8);
        d.data = NULL, d.len = 0;
        if ((d.how != KN_BOOT_EXITED && d.how != KN_BOOT_SIGNALED) || d.value < 0 || d.value > 255)
            bad = "malformed exit report";
        break;
    case KN_BOOT_SIGNAL:
        d.signo = kn_boot_get32(p);
        d.data = NULL, d.len = 0;
        if (d.signo == 0 || d.signo > KN_BOOT_SIG_MAX)
            bad = "bad signal number";
        break;
    case KN_BOOT_FENCE:
    case KN_BOOT_FENCE_DONE:
    case KN_BOOT_FINALIZE:
        d.data = NULL;
        break;
    case KN_BOOT_VALUE:
    case KN_BOOT_JOB:
        break;
    default:
        bad = "unknown message type";
    }
out:
    if (bad) {
        if (why)
            *why = bad;
        return KNIT_ERR_PROTO;
    }
    *m = d;
    return KNIT_OK;
}

uint32_t kn_boot_msg_encode(const kn_boot_msg_t *m, uint8_t *out)
{
    uint32_t n = 0;
    switch (m->type) {
    case KN_BOOT_HELLO:
        memcpy(out, m->cookie, KN_BOOT_COOKIE_LEN);
        kn_boot_put32(out + KN_BOOT_COOKIE_LEN, m->role);
        kn_boot_put32(out + KN_BOOT_COOKIE_LEN + 4, (uint32_t)m->id);
        return KN_BOOT_HELLO_LEN;
    case KN_BOOT_ACK:
        kn_boot_put32(out, (uint32_t)m->status);
        return 4;
    case KN_BOOT_PUT:
        kn_boot_put32(out, m->klen);
        memcpy(out + 4, m->key, m->klen);
        n = 4 + m->klen;
        break;
    case KN_BOOT_GET:
        memcpy(out, m->key, m->klen);
        return m->klen;
    case KN_BOOT_ABORT:
        kn_boot_put32(out, (uint32_t)m->code);
        n = 4;
        break;
    case KN_BOOT_OUTPUT:
        kn_boot_put32(out, m->rank);
        kn_boot_put32(out + 4, m->stream);
        n = 8;
        break;
    case KN_BOOT_EXIT:
        kn_boot_put32(out, m->rank);
        kn_boot_put32(out + 4, m->how);
        kn_boot_put32(out + 8, (uint32_t)m->value);
        return 12;
    case KN_BOOT_SIGNAL:
        kn_boot_put32(out, m->signo);
        return 4;
    case KN_BOOT_VALUE:
    case KN_BOOT_JOB:
        break;
    default:
        return 0;
    }
    if (m->len)
        memcpy(out + n, m->data, m->len);
    return n + m->len;
}

knit_status_t kn_boot_job_decode(const uint8_t *p, uint32_t len, kn_boot_job_t *job, const char **why)
{
    const char *bad = NULL;
    kn_boot_job_t j = {0};
    if (len < 16 || len > KN_BOOT_JOB_MAX) {
        bad = "bad length";
        goto out;
    }
    j.first = kn_boot_get32(p);
    j.count = kn_boot_get32(p + 4);
    j.nenv = kn_boot_get32(p + 8);
    j.nargs = kn_boot_get32(p + 12);
    j.strs = (const char *)p + 16;
    j.strs_len = len - 16;
    if (j.first > INT32_MAX || j.count == 0 || j.count > 1u << 20 || j.nargs == 0) {
        bad = "bad rank range or no program";
        goto out;
    }
    /* every string takes at least its NUL: counts beyond the bytes fail
     * here, before the walk */
    if ((uint64_t)j.nenv + 1 + j.nargs > j.strs_len) {
        bad = "more strings than bytes";
        goto out;
    }
    const char *s = j.strs, *end = j.strs + j.strs_len;
    for (uint64_t i = 0; i < (uint64_t)j.nenv + 1 + j.nargs; i++) {
        const char *z = memchr(s, '\0', (size_t)(end - s));
        if (!z) {
            bad = "unterminated string";
            goto out;
        }
        if (i < j.nenv) {
            const char *eq = memchr(s, '=', (size_t)(z - s));
            if (!eq || eq == s) {
                bad = "environment string without NAME=";
                goto out;
            }
        }
        s = z + 1;
    }
    if (s != end)
        bad = "bytes after the last string";
out:
    if (bad) {
        if (why)
            *why = bad;
        return KNIT_ERR_PROTO;
    }
    *job = j;
    return KNIT_OK;
}

size_t kn_boot_job_size(char *const env[], size_t nenv, const char *cwd, char *const argv[], size_t nargs)
{
    size_t len = 16 + strlen(cwd) + 1;
    for (size_t i = 0; i < nenv; i++)
        len += strlen(env[i]) + 1;
    for (size_t i = 0; i < nargs; i++)
        len += strlen(argv[i]) + 1;
    return len;
}

void kn_boot_job_encode(uint8_t *out, uint32_t first, uint32_t count, char *const env[], size_t nenv,
                        const char *cwd, char *const argv[], size_t nargs)
{
    kn_boot_put32(out, first);
    kn_boot_put32(out + 4, count);
    kn_boot_put32(out + 8, (uint32_t)nenv);
    kn_boot_put32(out + 12, (uint32_t)nargs);
    char *q = (char *)out + 16;
    for (size_t i = 0; i < nenv; i++)
        q = stpcpy(q, env[i]) + 1;
    q = stpcpy(q, cwd) + 1;
    for (size_t i = 0; i < nargs; i++)
        q = stpcpy(q, argv[i]) + 1;
}

knit_status_t kn_boot_launch_line_decode(char *line, const char **cookie, int *node, const char **addrs)
{
    char *sp = strchr(line, ' ');
    if (!sp || !kn_boot_cookie_valid(line, (size_t)(sp - line)))
        return KNIT_ERR_INVAL;
    *sp = '\0';
    char *p = sp + 1;
    long long v = 0;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
        return KNIT_ERR_INVAL; /* knitrun writes %d: no sign, no leading zero */
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return KNIT_ERR_INVAL;
    }
    if (*p != ' ' || !p[1] || p[1] == ' ')
        return KNIT_ERR_INVAL;
    *cookie = line;
    *node = (int)v;
    *addrs = p + 1;
    return KNIT_OK;
}
