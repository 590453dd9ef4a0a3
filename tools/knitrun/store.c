/*
 * The bootstrap store knitrun serves (protocol: src/boot/proto.h).
 *
 * Connection states: a new connection may send only HELLO; a wrong cookie,
 * a malformed header or any other first message gets it refused, logged
 * and closed, and the job goes on.  After HELLO the role decides what it
 * may send: ranks PUT/GET/FENCE/ABORT/FINALIZE, daemons the same but
 * FENCE, proxies OUTPUT/EXIT.  A GET for a missing key parks on its
 * connection (a client has one request outstanding at a time) until a PUT
 * of that key; FENCE completes when every rank of the job is in it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/kv.h"
#include "knitrun.h"
#include "util/log.h"

static kl_watch_t listeners[2];
static int nlisteners;
static char unix_path[108];
static kn_kv_t *kv;
static kn_list_t conns = KN_LIST_INIT(conns);

const char *store_role_name(int role)
{
    switch (role) {
    case KN_BOOT_ROLE_RANK: return "rank";
    case KN_BOOT_ROLE_PROXY: return "proxy";
    case KN_BOOT_ROLE_DAEMON: return "daemon";
    }
    return "unknown";
}

static int ack(kconn_t *c, knit_status_t st)
{
    uint8_t p[4];
    kn_boot_put32(p, (uint32_t)st);
    return kc_send(c, KN_BOOT_ACK, p, 4, NULL, 0);
}

static int refuse(kconn_t *c, const char *why, knit_status_t st)
{
    kn_warn("refused bootstrap connection from %s: %s", c->peer, why);
    ack(c, st);
    return -1;
}

static int protocol_error(kconn_t *c, const char *why)
{
    kn_warn("closing bootstrap connection of %s %d (%s): %s", store_role_name(c->role), c->id, c->peer,
            why);
    return -1;
}

static int on_hello(kconn_t *c, const kn_boot_msg_t *m)
{
    if (!job_check_cookie(m->cookie))
        return refuse(c, "bad cookie", KNIT_ERR_AUTH);
    int role = (int)m->role;
    int64_t id = m->id;
    int ok;
    switch (role) {
    case KN_BOOT_ROLE_RANK:
        ok = id >= 0 && id < job_size() && job_rank_hello(c, (int)id) == 0;
        break;
    case KN_BOOT_ROLE_PROXY:
        ok = id >= 0 && id < job_nnodes() && job_proxy_hello(c, (int)id) == 0;
        break;
    case KN_BOOT_ROLE_DAEMON:
        ok = id >= 0 && job_daemon_hello(c) == 0;
        break;
    default:
        return refuse(c, "unknown role", KNIT_ERR_INVAL);
    }
    if (!ok) {
        char why[64];
        snprintf(why, sizeof(why), "%s id %lld not valid here", store_role_name(role), (long long)id);
        return refuse(c, why, KNIT_ERR_INVAL);
    }
    c->role = role;
    c->id = (int)id;
    kn_info("%s %d connected from %s", store_role_name(role), c->id, c->peer);
    if (ack(c, KNIT_OK) < 0)
        return -1;
    if (role == KN_BOOT_ROLE_PROXY)
        return job_send_job(c);
    return 0;
}

static int send_value(kconn_t *c, const void *v, size_t len)
{
    return kc_send(c, KN_BOOT_VALUE, v, len, NULL, 0);
}

static int on_put(kconn_t *c, const kn_boot_msg_t *m)
{
    const char *key = m->key;
    const uint8_t *val = m->data;
    size_t klen = m->klen, vlen = m->len;
    if (kn_kv_put(kv, key, klen, val, vlen) != KNIT_OK) {
        kn_error("out of memory for bootstrap key");
        return -1;
    }
    if (c->role == KN_BOOT_ROLE_RANK && klen == strlen(KN_BOOT_KEY_FINALIZE_CALL) &&
        !memcmp(key, KN_BOOT_KEY_FINALIZE_CALL, klen))
        job_rank_finalize_call(c->id, (const char *)val, vlen);
    kn_list_t *e;
    kn_list_for_each(e, &conns) {
        kconn_t *w = kn_list_entry(e, kconn_t, link);
        if (w->pending_key && strlen(w->pending_key) == klen &&
            !memcmp(w->pending_key, key, klen)) {
            free(w->pending_key);
            w->pending_key = NULL;
            send_value(w, val, vlen);
        }
    }
    return 0;
}

static int on_get(kconn_t *c, const kn_boot_msg_t *m)
{
    const uint8_t *p = (const uint8_t *)m->key;
    uint32_t len = m->klen;
    if (c->pending_key)
        return protocol_error(c, "get while a get is pending");
    size_t vlen;
    const void *v = kn_kv_get(kv, (const char *)p, len, &vlen);
    if (v)
        return send_value(c, v, vlen);
    c->pending_key = strndup((const char *)p, len);
    return c->pending_key ? 0 : -1;
}

static int on_fence(kconn_t *c)
{
    if (c->role != KN_BOOT_ROLE_RANK)
        return protocol_error(c, "only ranks take part in a fence");
    int r = job_fence_enter(c->id);
    if (r < 0)
        return protocol_error(c, "fence entered twice");
    if (r == 1)
        job_fence_release();
    return 0;
}

void store_fence_done(kconn_t *c)
{
    kc_send(c, KN_BOOT_FENCE_DONE, NULL, 0, NULL, 0);
}

static int on_abort(kconn_t *c, const kn_boot_msg_t *m)
{
    char msg[KN_BOOT_MSG_MAX + 1];
    /* keep the message on one printable line */
    for (uint32_t i = 0; i < m->len; i++)
        msg[i] = m->data[i] < 0x20 || m->data[i] == 0x7f ? ' ' : (char)m->data[i];
    msg[m->len] = '\0';
    if (c->role == KN_BOOT_ROLE_PROXY) { /* a proxy refusing to start its ranks expects no answer */
        job_abort(c, m->code, msg);
        return 0;
    }
    /* the answer first: stopping the job sends SIGTERM to this rank too */
    int rc = ack(c, KNIT_OK);
    job_abort(c, m->code, msg);
    return rc;
}

static int on_proxy_msg(kconn_t *c, const kn_boot_msg_t *m)
{
    int rank = (int)m->rank;
    if (m->rank > INT32_MAX || !job_proxy_owns(c->id, rank))
        return protocol_error(c, "rank not on this proxy's node");
    if (m->type == KN_BOOT_OUTPUT)
        job_rank_output(rank, (int)m->stream, (const char *)m->data, m->len);
    else
        job_rank_exit(rank, (int)m->how, m->value);
    return 0;
}

static int on_msg(kconn_t *c, const kn_boot_hdr_t *h, const uint8_t *p)
{
    kn_boot_msg_t m;
    const char *bad;
    knit_status_t st = kn_boot_msg_decode(h, p, &m, &bad);
    if (!c->role) {
        if (h->type != KN_BOOT_HELLO)
            return refuse(c, "first message is not hello", KNIT_ERR_PROTO);
        if (st != KNIT_OK)
            return refuse(c, "bad cookie", KNIT_ERR_AUTH);
        return on_hello(c, &m);
    }
    if (st != KNIT_OK)
        return protocol_error(c, bad);
    int rank_like = c->role == KN_BOOT_ROLE_RANK || c->role == KN_BOOT_ROLE_DAEMON;
    switch (h->type) {
    case KN_BOOT_PUT:
        if (rank_like)
            return on_put(c, &m);
        break;
    case KN_BOOT_GET:
        if (rank_like)
            return on_get(c, &m);
        break;
    case KN_BOOT_FENCE:
        return on_fence(c);
    case KN_BOOT_ABORT:
        if (rank_like || c->role == KN_BOOT_ROLE_PROXY)
            return on_abort(c, &m);
        break;
    case KN_BOOT_FINALIZE:
        if (!rank_like)
            break;
        if (c->role == KN_BOOT_ROLE_RANK)
            job_rank_finalized(c->id);
        return ack(c, KNIT_OK);
    case KN_BOOT_OUTPUT:
    case KN_BOOT_EXIT:
        if (c->role == KN_BOOT_ROLE_PROXY)
            return on_proxy_msg(c, &m);
        break;
    }
    char why[64];
    snprintf(why, sizeof(why), "unexpected '%s' message", kn_boot_type_name(h->type));
    return protocol_error(c, why);
}

static void on_close(kconn_t *c, const char *why)
{
    if (!c->role && !strcmp(why, "connection closed") && !job_running())
        /* a process stopped with the job while it connected */
        kn_debug("bootstrap connection from %s closed before hello", c->peer);
    else if (!c->role)
        kn_warn("refused bootstrap connection from %s: %s", c->peer,
                strcmp(why, "connection closed") ? why : "closed before hello");
    else if (strncmp(why, "connection closed", 17))
        kn_warn("closing bootstrap connection of %s %d (%s): %s", store_role_name(c->role), c->id,
                c->peer, why);
    job_conn_lost(c);
}

static void peer_name(int fd, const struct sockaddr_storage *ss, char *out, size_t len)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
        snprintf(out, len, "%s:%d", a, ntohs(in->sin_port));
        return;
    }
    struct ucred cred;
    socklen_t l = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) == 0)
        snprintf(out, len, "unix socket (pid %d)", (int)cred.pid);
    else
        snprintf(out, len, "unix socket");
}

static void accept_ready(kl_watch_t *w, uint32_t events)
{
    (void)events;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN)
                kn_error("accept: %m");
            return;
        }
        if (ss.ss_family == AF_INET) {
            int one = 1;
            (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        char peer[96];
        peer_name(fd, &ss, peer, sizeof(peer));
        kconn_t *c = kc_new(fd, peer, on_msg, on_close);
        if (c)
            kn_list_push_back(&conns, &c->link);
    }
}

static int add_listener(int fd)
{
    if (listen(fd, SOMAXCONN) < 0) {
        kn_error("listen: %m");
        close(fd);
        return -1;
    }
    kl_watch_t *w = &listeners[nlisteners];
    w->fd = fd;
    w->fn = accept_ready;
    if (kl_add(w, EPOLLIN) < 0) {
        close(fd);
        return -1;
    }
    nlisteners++;
    return 0;
}

int store_listen(const char *path, int *port)
{
    if (kn_kv_create(&kv) != KNIT_OK)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        kn_error("socket: %m");
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t sl = sizeof(in);
    if (bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0 ||
        getsockname(fd, (struct sockaddr *)&in, &sl) < 0) {
        kn_error("bind/getsockname (tcp): %m");
        close(fd);
        return -1;
    }
    *port = ntohs(in.sin_port);
    if (add_listener(fd) < 0)
        return -1;
    if (!path)
        return 0;
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(un.sun_path)) {
        kn_warn("unix socket path too long, using tcp only: %s", path);
        return 0;
    }
    strcpy(un.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        kn_error("socket(AF_UNIX): %m");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
        kn_warn("bind %s: %m (using tcp only)", path);
        close(fd);
        return 0;
    }
    snprintf(unix_path, sizeof(unix_path), "%s", path);
    return add_listener(fd) < 0 ? -1 : 1;
}

void store_close(void)
{
    for (int i = 0; i < nlisteners; i++) {
        kl_del(&listeners[i]);
        close(listeners[i].fd);
    }
    nlisteners = 0;
    if (unix_path[0] && unlink(unix_path) < 0 && errno != ENOENT)
        kn_warn("unlink %s: %m", unix_path);
    unix_path[0] = '\0';
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &conns) {
        kc_close(kn_list_entry(e, kconn_t, link));
    }
    kc_reap_dead();
    kn_kv_destroy(kv);
    kv = NULL;
}

static void for_each_proxy(void (*fn)(kconn_t *c, int arg), int arg)
{
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &conns) {
        kconn_t *c = kn_list_entry(e, kconn_t, link);
        if (c->role == KN_BOOT_ROLE_PROXY)
            fn(c, arg);
    }
}

static void send_signal(kconn_t *c, int sig)
{
    uint8_t p[4];
    kn_boot_put32(p, (uint32_t)sig);
    kc_send(c, KN_BOOT_SIGNAL, p, 4, NULL, 0);
}

static void close_one(kconn_t *c, int unused)
{
    (void)unused;
    kc_close(c);
}

void store_broadcast_signal(int sig)
{
    for_each_proxy(send_signal, sig);
}

void store_close_proxies(void)
{
    for_each_proxy(close_one, 0);
}
