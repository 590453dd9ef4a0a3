/*
 * Bootstrap store client.  One blocking stream socket to knitrun's store;
 * each call sends one request and, where the protocol has one, waits for
 * its reply with poll() bounded by KNIT_BOOT_TIMEOUT (0 = no bound).  A
 * call that failed half-way (timeout, malformed reply) leaves the stream
 * out of step, so the handle is then marked broken and every later call
 * fails at once with KNIT_ERR_STATE.
 */
#include "boot/boot.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boot/kv.h"
#include "boot/proto.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/env.h"
#include "util/log.h"
#include "util/time.h"

#define CONNECT_ATTEMPT_NS (2 * KN_NSEC_PER_SEC)

struct kn_boot {
    int fd;        /* -1: singleton */
    kn_kv_t *kv;   /* singleton only */
    int broken;
};

static uint64_t deadline_from_now(void)
{
    return kn_cfg.boot_timeout ? kn_time_ns() + kn_cfg.boot_timeout : 0;
}

static knit_status_t singleton(kn_boot_t **out)
{
    kn_boot_t *b = calloc(1, sizeof(*b));
    if (!b)
        return KNIT_ERR_NOMEM;
    b->fd = -1;
    knit_status_t st = kn_kv_create(&b->kv);
    if (st != KNIT_OK) {
        free(b);
        return st;
    }
    *out = b;
    return KNIT_OK;
}

/* Connect to one address within the deadline; -errno-ish status. */
static knit_status_t connect_one(const char *text, uint64_t deadline, int *fd_out, int *err)
{
    struct sockaddr_storage ss;
    socklen_t slen;
    if (kn_boot_addr_parse(text, &ss, &slen) != KNIT_OK) {
        kn_error("%s: invalid bootstrap address '%s'", KN_ENV_BOOT_ADDR, text);
        return KNIT_ERR_INVAL;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *err = errno;
        return KNIT_ERR_IO;
    }
    int r = connect(fd, (struct sockaddr *)&ss, slen);
    if (r < 0 && errno == EINPROGRESS) {
        for (;;) {
            int ms = -1;
            if (deadline) {
                uint64_t now = kn_time_ns();
                if (now >= deadline) {
                    errno = ETIMEDOUT;
                    break;
                }
                ms = (int)KN_MIN((deadline - now) / KN_NSEC_PER_MSEC + 1, (uint64_t)INT32_MAX);
            }
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int n = poll(&p, 1, ms);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                if (n == 0)
                    errno = ETIMEDOUT;
                break;
            }
            int soerr = 0;
            socklen_t l = sizeof(soerr);
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l) < 0)
                break;
            errno = soerr;
            r = soerr ? -1 : 0;
            break;
        }
    }
    if (r < 0) {
        *err = errno;
        close(fd);
        return KNIT_ERR_IO;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        *err = errno;
        close(fd);
        return KNIT_ERR_IO;
    }
    if (ss.ss_family != AF_UNIX) {
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    *fd_out = fd;
    return KNIT_OK;
}

/* Wait for a reply of the given type; fails on anything else. */
static knit_status_t wait_reply(kn_boot_t *b, unsigned type, uint8_t **payload, uint32_t *len,
                                uint64_t deadline)
{
    kn_boot_hdr_t h;
    uint8_t *p = NULL;
    knit_status_t st = kn_boot_recv(b->fd, &h, &p, deadline);
    if (st == KNIT_OK && h.type != type) {
        kn_error("bootstrap: store sent '%s' where '%s' was due", kn_boot_type_name(h.type),
                 kn_boot_type_name(type));
        free(p);
        st = KNIT_ERR_PROTO;
    }
    if (st != KNIT_OK) {
        b->broken = 1;
        return st;
    }
    if (payload)
        *payload = p;
    else
        free(p);
    if (len)
        *len = h.len;
    return KNIT_OK;
}

static knit_status_t wait_ack(kn_boot_t *b, uint64_t deadline)
{
    uint8_t *p;
    knit_status_t st = wait_reply(b, KN_BOOT_ACK, &p, NULL, deadline);
    if (st != KNIT_OK)
        return st;
    kn_boot_hdr_t h = {.type = KN_BOOT_ACK, .len = 4};
    kn_boot_msg_t m;
    const char *why;
    st = kn_boot_msg_decode(&h, p, &m, &why);
    free(p);
    if (st != KNIT_OK) {
        kn_error("bootstrap: malformed reply from the store: %s", why);
        b->broken = 1;
        return st;
    }
    return m.status;
}

static knit_status_t hello(kn_boot_t *b, const char *cookie, int role, int id, uint64_t deadline)
{
    uint8_t msg[KN_BOOT_HELLO_LEN];
    kn_boot_msg_t m = {.type = KN_BOOT_HELLO, .cookie = cookie, .role = (uint32_t)role, .id = id};
    knit_status_t st = kn_boot_send(b->fd, KN_BOOT_HELLO, msg, kn_boot_msg_encode(&m, msg), NULL, 0);
    if (st == KNIT_OK)
        st = wait_ack(b, deadline);
    return st;
}

knit_status_t kn_boot_connect(const char *addrs, const char *cookie, int role, int id,
                              kn_boot_t **out)
{
    if (!out)
        return KNIT_ERR_INVAL;
    if (!addrs)
        return singleton(out);
    if (!cookie || !kn_boot_cookie_valid(cookie, strlen(cookie))) {
        kn_error("%s: missing or malformed job cookie", KN_ENV_COOKIE);
        return KNIT_ERR_INVAL;
    }
    if (role < KN_BOOT_ROLE_RANK || role > KN_BOOT_ROLE_DAEMON || id < 0)
        return KNIT_ERR_INVAL;
    char *list = strdup(addrs);
    kn_boot_t *b = calloc(1, sizeof(*b));
    if (!list || !b) {
        free(list);
        free(b);
        return KNIT_ERR_NOMEM;
    }
    b->fd = -1;
    uint64_t deadline = deadline_from_now();
    knit_status_t st = KNIT_ERR_INVAL;
    const char *last = addrs;
    int err = 0;
    /* The store listens before any process starts, so the first round
     * normally succeeds; later rounds (with back-off) only cover a store
     * that is overloaded or an address that is not up yet. */
    for (long backoff_ms = 5;; backoff_ms = KN_MIN(backoff_ms * 2, 200)) {
        char *save = NULL;
        int unreachable = 0; /* only an address we could not connect to is worth a retry */
        strcpy(list, addrs);
        for (char *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
            last = addrs + (a - list);
            /* a silent address must not hold up the next ones for long */
            uint64_t attempt = kn_time_ns() + CONNECT_ATTEMPT_NS;
            st = connect_one(a, deadline && deadline < attempt ? deadline : attempt, &b->fd, &err);
            if (st == KNIT_ERR_INVAL)
                goto out;
            unreachable |= st == KNIT_ERR_IO;
            if (st == KNIT_OK) {
                st = hello(b, cookie, role, id, deadline);
                if (st == KNIT_OK)
                    goto out;
                close(b->fd);
                b->fd = -1;
                b->broken = 0;
                if (st == KNIT_ERR_AUTH)
                    goto out;
            }
            kn_debug("bootstrap: %s: %s", a, st == KNIT_ERR_IO ? strerror(err) : knit_strerror(st));
        }
        if (st == KNIT_ERR_INVAL || !unreachable) /* empty list, or refused everywhere */
            goto out;
        if (deadline && kn_time_ns() + (uint64_t)backoff_ms * KN_NSEC_PER_MSEC >= deadline) {
            st = KNIT_ERR_TIMEOUT;
            break;
        }
        struct timespec ts = {0, backoff_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
out:
    if (st == KNIT_OK) {
        *out = b;
    } else {
        if (st == KNIT_ERR_AUTH)
            kn_error("bootstrap store refused this process (wrong job cookie?)");
        else if (st == KNIT_ERR_TIMEOUT)
            kn_error("cannot connect to the bootstrap store (%s): last error: %s",
                     addrs, err ? strerror(err) : "timed out");
        else if (st != KNIT_ERR_INVAL)
            kn_error("bootstrap store at %.*s: %s", (int)strcspn(last, ","), last,
                     knit_strerror(st));
        free(b);
    }
    free(list);
    return st;
}

knit_status_t kn_boot_connect_env(kn_boot_t **out)
{
    const char *addrs = getenv(KN_ENV_BOOT_ADDR);
    if (!addrs)
        return kn_boot_connect(NULL, NULL, 0, 0, out);
    const char *r = getenv(KN_ENV_RANK);
    char *end;
    errno = 0;
    long rank = r ? strtol(r, &end, 10) : -1;
    if (!r || errno || *end || end == r || rank < 0 || rank > INT32_MAX) {
        kn_error("%s is set but %s is missing or invalid", KN_ENV_BOOT_ADDR, KN_ENV_RANK);
        return KNIT_ERR_INVAL;
    }
    return kn_boot_connect(addrs, getenv(KN_ENV_COOKIE), KN_BOOT_ROLE_RANK, (int)rank, out);
}

int kn_boot_is_singleton(const kn_boot_t *b)
{
    return b && b->fd < 0;
}

static knit_status_t usable(const kn_boot_t *b)
{
    if (!b)
        return KNIT_ERR_INVAL;
    return b->broken ? KNIT_ERR_STATE : KNIT_OK;
}

knit_status_t kn_boot_put(kn_boot_t *b, const char *key, const void *val, size_t len)
{
    knit_status_t st = usable(b);
    if (st != KNIT_OK)
        return st;
    size_t klen = key ? strlen(key) : 0;
    if (!kn_boot_key_valid(key, klen) || len > KN_BOOT_VAL_MAX || (len && !val))
        return KNIT_ERR_INVAL;
    if (b->fd < 0)
        return kn_kv_put(b->kv, key, klen, val, len);
    /* key and value go in one message: length-prefixed key, then value */
    uint8_t *msg = malloc(4 + klen + len);
    if (!msg)
        return KNIT_ERR_NOMEM;
    kn_boot_put32(msg, (uint32_t)klen);
    memcpy(msg + 4, key, klen);
    if (len)
        memcpy(msg + 4 + klen, val, len);
    st = kn_boot_send(b->fd, KN_BOOT_PUT, msg, 4 + klen + len, NULL, 0);
    free(msg);
    if (st != KNIT_OK)
        b->broken = 1;
    return st;
}

knit_status_t kn_boot_get(kn_boot_t *b, const char *key, void *buf, size_t cap, size_t *len)
{
    return kn_boot_wait(b, key, buf, cap, len, kn_cfg.boot_timeout);
}

knit_status_t kn_boot_wait(kn_boot_t *b, const char *key, void *buf, size_t cap, size_t *len,
                           uint64_t timeout_ns)
{
    knit_status_t st = usable(b);
    if (st != KNIT_OK)
        return st;
    size_t klen = key ? strlen(key) : 0;
    if (!kn_boot_key_valid(key, klen) || !len || (cap && !buf))
        return KNIT_ERR_INVAL;
    const void *v;
    size_t vlen;
    uint8_t *p = NULL;
    if (b->fd < 0) {
        v = kn_kv_get(b->kv, key, klen, &vlen);
        if (!v)
            return KNIT_ERR_NOT_FOUND; /* nobody else could ever put it */
    } else {
        st = kn_boot_send(b->fd, KN_BOOT_GET, key, klen, NULL, 0);
        if (st == KNIT_OK) {
            uint32_t l;
            st = wait_reply(b, KN_BOOT_VALUE, &p, &l, timeout_ns ? kn_time_ns() + timeout_ns : 0);
            vlen = l;
        }
        if (st != KNIT_OK) {
            b->broken = 1;
            if (st == KNIT_ERR_TIMEOUT)
                kn_error("bootstrap: no value for key '%s' within %s", key,
                         timeout_ns == kn_cfg.boot_timeout ? "KNIT_BOOT_TIMEOUT" : "its time limit");
            return st;
        }
        v = p;
    }
    if (vlen > cap) {
        *len = vlen;
        free(p);
        return KNIT_ERR_TRUNCATE;
    }
    if (vlen)
        memcpy(buf, v, vlen);
    *len = vlen;
    free(p);
    return KNIT_OK;
}

knit_status_t kn_boot_fence(kn_boot_t *b)
{
    return kn_boot_fence_wait(b, kn_cfg.boot_timeout);
}

knit_status_t kn_boot_fence_wait(kn_boot_t *b, uint64_t timeout_ns)
{
    knit_status_t st = usable(b);
    if (st != KNIT_OK || b->fd < 0)
        return st;
    st = kn_boot_send(b->fd, KN_BOOT_FENCE, NULL, 0, NULL, 0);
    if (st == KNIT_OK)
        st = wait_reply(b, KN_BOOT_FENCE_DONE, NULL, NULL, timeout_ns ? kn_time_ns() + timeout_ns : 0);
    if (st == KNIT_ERR_TIMEOUT)
        kn_error("bootstrap: fence not complete within %s",
                 timeout_ns == kn_cfg.boot_timeout ? "KNIT_BOOT_TIMEOUT" : "its time limit");
    if (st != KNIT_OK)
        b->broken = 1;
    return st;
}

knit_status_t kn_boot_abort(kn_boot_t *b, int code, const char *msg)
{
    if (!b || b->fd < 0)
        return KNIT_ERR_STATE;
    if (!msg)
        msg = "";
    size_t mlen = KN_MIN(strlen(msg), (size_t)KN_BOOT_MSG_MAX);
    uint8_t c[4];
    kn_boot_put32(c, (uint32_t)code);
    /* Even a broken handle can still carry this last message. */
    knit_status_t st = kn_boot_send(b->fd, KN_BOOT_ABORT, c, 4, msg, mlen);
    /* The acknowledgement means knitrun recorded the abort before it can
     * see this process exit, so it reports the abort and not the exit. */
    if (st == KNIT_OK && !b->broken)
        st = wait_ack(b, deadline_from_now());
    return st;
}

knit_status_t kn_boot_finalize(kn_boot_t *b)
{
    knit_status_t st = usable(b);
    if (st == KNIT_OK && b->fd >= 0) {
        st = kn_boot_send(b->fd, KN_BOOT_FINALIZE, NULL, 0, NULL, 0);
        if (st == KNIT_OK)
            st = wait_ack(b, deadline_from_now());
    }
    kn_boot_close(b);
    return st;
}

void kn_boot_close(kn_boot_t *b)
{
    if (!b)
        return;
    if (b->fd >= 0)
        close(b->fd);
    kn_kv_destroy(b->kv);
    free(b);
}

int kn_boot_fd(const kn_boot_t *b)
{
    return b ? b->fd : -1;
}

int kn_boot_release_fd(kn_boot_t *b)
{
    if (!b)
        return -1;
    int fd = b->fd;
    b->fd = -1;
    kn_boot_close(b);
    return fd;
}
