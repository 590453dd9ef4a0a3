/*
 * PMI-1 and PMI-2 clients: the wire protocols of MPICH's hydra and of
 * Slurm's --mpi=pmi2, spoken on the socket the launcher passes in PMI_FD.
 *
 * Both start with the same line, "cmd=init pmi_version=V pmi_subversion=S";
 * the answer names the version the server will speak.
 *   PMI-1: lines "cmd=NAME key=value ...\n"; the job's key-value space is
 *     named (get_my_kvsname); barrier_in/barrier_out is the fence.
 *   PMI-2: each message is its length in 6 characters ("%-6d") and then
 *     "cmd=NAME;key=value;...;", a ';' inside a value doubled.
 * PMI_process_mapping, "(vector,(first node,nodes,ranks per node),...)",
 * says where the ranks run (a key under PMI-1, a job attribute under
 * PMI-2).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/launcher.h"
#include "util/config.h"

#define MSG_MAX 4096

static struct {
    int fd;
    char kvs[256];
    pthread_mutex_t lock;
} P = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* A launcher that went away is an error, not a SIGPIPE. */
static int write_all(const char *buf, size_t len)
{
    while (len) {
        ssize_t w = send(P.fd, buf, len, MSG_NOSIGNAL);
        if (w < 0 && errno == ENOTSOCK)
            w = write(P.fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

static int read_all(char *buf, size_t len)
{
    while (len) {
        ssize_t r = read(P.fd, buf, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        buf += r;
        len -= (size_t)r;
    }
    return 0;
}

/* PMI-1: one line, without its newline.  Byte by byte: what follows the
 * line belongs to the next answer. */
static int read_line(char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        char c;
        if (read_all(&c, 1) < 0)
            return -1;
        if (c == '\n')
            break;
        if (n + 1 < cap)
            buf[n++] = c;
    }
    buf[n] = '\0';
    return 0;
}

/* The value of key in a PMI-1 line ("cmd=x a=1 b=2"), into out. */
static int v1_field(const char *line, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = line; *p;) {
        while (*p == ' ')
            p++;
        const char *end = p + strcspn(p, " ");
        if ((size_t)(end - p) > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = (size_t)(end - p) - kl - 1;
            if (vl >= cap)
                return -1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = '\0';
            return 0;
        }
        p = end;
    }
    return -1;
}

/* The value of key in a PMI-2 body ("cmd=x;a=1;b=2;"), unescaped. */
static int v2_field(const char *body, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    const char *p = body;
    while (*p) {
        int match = !strncmp(p, key, kl) && p[kl] == '=';
        const char *v = match ? p + kl + 1 : strchr(p, '=');
        if (!v)
            return -1;
        if (!match)
            v++;
        size_t o = 0;
        for (; *v; v++) {
            if (*v == ';' && v[1] == ';') {
                v++;
            } else if (*v == ';') {
                v++;
                break;
            }
            if (match && o + 1 < cap)
                out[o++] = *v;
            else if (match)
                return -1;
        }
        if (match) {
            out[o] = '\0';
            return 0;
        }
        p = v;
    }
    return -1;
}

/* PMI-2: send "cmd=...;" framed, read the framed answer into reply. */
static knit_status_t v2_call(const char *body, char *reply, size_t cap)
{
    char frame[MSG_MAX + 8];
    size_t len = strlen(body);
    if (len > MSG_MAX)
        return KNIT_ERR_INVAL;
    snprintf(frame, sizeof(frame), "%-6zu%s", len, body);
    char lenbuf[7];
    if (write_all(frame, 6 + len) < 0 || read_all(lenbuf, 6) < 0)
        return KNIT_ERR_IO;
    lenbuf[6] = '\0';
    char *end;
    long n = strtol(lenbuf, &end, 10);
    if (end == lenbuf || n < 0 || (size_t)n >= cap)
        return KNIT_ERR_PROTO;
    if (read_all(reply, (size_t)n) < 0)
        return KNIT_ERR_IO;
    reply[n] = '\0';
    char rc[16];
    if (v2_field(reply, "rc", rc, sizeof(rc)) == 0 && strcmp(rc, "0"))
        return KNIT_ERR_IO;
    return KNIT_OK;
}

/* PMI-1: send a line, read the answer line; rc=N other than 0 fails. */
static knit_status_t v1_call(const char *line, char *reply, size_t cap)
{
    if (write_all(line, strlen(line)) < 0 || read_line(reply, cap) < 0)
        return KNIT_ERR_IO;
    char rc[16];
    if (v1_field(reply, "rc", rc, sizeof(rc)) == 0 && strcmp(rc, "0"))
        return KNIT_ERR_NOT_FOUND;
    return KNIT_OK;
}

/* "cmd=init": the version the server speaks, or -1. */
static int handshake(int want)
{
    char line[128], reply[256], v[16];
    snprintf(line, sizeof(line), "cmd=init pmi_version=%d pmi_subversion=%d\n", want, want == 1 ? 1 : 0);
    if (v1_call(line, reply, sizeof(reply)) != KNIT_OK || v1_field(reply, "pmi_version", v, sizeof(v)) < 0)
        return -1;
    return atoi(v);
}

static knit_status_t pmi_init(kn_launcher_t *l, char *why, size_t len)
{
    if (kn_env_count("PMI_FD", 1 << 30, &P.fd) < 1 || kn_env_count("PMI_RANK", 1 << 30, &l->rank) < 1 ||
        kn_env_count("PMI_SIZE", 1 << 30, &l->size) < 1 || l->size < 1 || l->rank >= l->size) {
        snprintf(why, len, "PMI_FD=%s PMI_RANK=%s PMI_SIZE=%s: not a PMI launcher's environment",
                 getenv("PMI_FD") ? getenv("PMI_FD") : "(unset)", getenv("PMI_RANK") ? getenv("PMI_RANK") : "(unset)",
                 getenv("PMI_SIZE") ? getenv("PMI_SIZE") : "(unset)");
        return KNIT_ERR_INVAL;
    }
    /* the launcher's socket is this process's, not its children's (the
     * offload daemons it starts) */
    if (fcntl(P.fd, F_SETFD, FD_CLOEXEC) < 0) {
        snprintf(why, len, "PMI_FD=%d: %s", P.fd, strerror(errno));
        return KNIT_ERR_INVAL;
    }
    int want = l->version ? l->version : 2;
    int got = handshake(want);
    if (got != want && !l->version && got == 1)
        want = 1; /* a PMI-1 server: it answered in its version */
    if (got != want) {
        snprintf(why, len, "the PMI server on PMI_FD=%d does not speak PMI-%d (it answered %d)", P.fd, want, got);
        return KNIT_ERR_PROTO;
    }
    l->version = want;
    l->name = want == 2 ? "PMI-2" : "PMI-1";
    char reply[MSG_MAX];
    if (want == 2) {
        char body[192], v[32];
        /* Slurm wants the job id its PMI_JOBID gives (hydra gives none) */
        const char *job = getenv("PMI_JOBID");
        if (job && (strlen(job) > 64 || strpbrk(job, ";=")))
            job = NULL;
        snprintf(body, sizeof(body), "cmd=fullinit;%s%s%spmirank=%d;threaded=FALSE;", job ? "pmijobid=" : "",
                 job ? job : "", job ? ";" : "", l->rank);
        if (v2_call(body, reply, sizeof(reply)) != KNIT_OK || v2_field(reply, "size", v, sizeof(v)) < 0 ||
            atoi(v) != l->size) {
            snprintf(why, len, "PMI-2 fullinit failed (answer: %.200s)", reply);
            return KNIT_ERR_PROTO;
        }
        return KNIT_OK;
    }
    if (v1_call("cmd=get_my_kvsname\n", reply, sizeof(reply)) != KNIT_OK ||
        v1_field(reply, "kvsname", P.kvs, sizeof(P.kvs)) < 0) {
        snprintf(why, len, "PMI-1 get_my_kvsname failed");
        return KNIT_ERR_PROTO;
    }
    return KNIT_OK;
}

static knit_status_t pmi_put(kn_launcher_t *l, const char *key, const char *val)
{
    char msg[MSG_MAX], reply[MSG_MAX];
    if (l->version == 2) {
        snprintf(msg, sizeof(msg), "cmd=kvs-put;key=%s;value=%s;", key, val);
        return v2_call(msg, reply, sizeof(reply));
    }
    snprintf(msg, sizeof(msg), "cmd=put kvsname=%s key=%s value=%s\n", P.kvs, key, val);
    return v1_call(msg, reply, sizeof(reply));
}

static knit_status_t pmi_fence(kn_launcher_t *l)
{
    char reply[MSG_MAX];
    if (l->version == 2)
        return v2_call("cmd=kvs-fence;", reply, sizeof(reply));
    return v1_call("cmd=barrier_in\n", reply, sizeof(reply));
}

static knit_status_t pmi_get(kn_launcher_t *l, int rank, const char *key, char *buf, size_t cap)
{
    char msg[MSG_MAX], reply[MSG_MAX], found[16];
    knit_status_t st;
    if (l->version == 2) {
        snprintf(msg, sizeof(msg), "cmd=kvs-get;srcid=%d;key=%s;", rank, key);
        st = v2_call(msg, reply, sizeof(reply));
        if (st == KNIT_OK && (v2_field(reply, "found", found, sizeof(found)) < 0 || strcmp(found, "TRUE")))
            return KNIT_ERR_NOT_FOUND;
        return st == KNIT_OK && v2_field(reply, "value", buf, cap) < 0 ? KNIT_ERR_PROTO : st;
    }
    snprintf(msg, sizeof(msg), "cmd=get kvsname=%s key=%s\n", P.kvs, key);
    st = v1_call(msg, reply, sizeof(reply));
    return st == KNIT_OK && v1_field(reply, "value", buf, cap) < 0 ? KNIT_ERR_PROTO : st;
}

/* One decimal in 0..1<<24 at *p, which moves past it. */
static int num(const char **p, int min)
{
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (errno || end == *p || v < min || v > 1 << 24)
        return -1;
    *p = end;
    return (int)v;
}

/* "(vector,(0,2,2),(2,1,1))": triples (first node, nodes, ranks each),
 * dealt out again from the first until every rank has a node. */
static knit_status_t parse_mapping(const char *map, int size, int *node_of)
{
    int t[64][3], nt = 0;
    const char *p = map;
    if (strncmp(p, "(vector,", 8))
        return KNIT_ERR_PROTO;
    p += 8;
    while (*p == '(' && nt < 64) {
        p++;
        for (int i = 0; i < 3; i++) {
            if ((t[nt][i] = num(&p, i ? 1 : 0)) < 0 || *p != (i < 2 ? ',' : ')'))
                return KNIT_ERR_PROTO;
            p++;
        }
        nt++;
        if (*p == ',')
            p++;
    }
    if (nt == 0 || strcmp(p, ")"))
        return KNIT_ERR_PROTO;
    int r = 0;
    while (r < size)
        for (int i = 0; i < nt && r < size; i++)
            for (int n = 0; n < t[i][1] && r < size; n++)
                for (int k = 0; k < t[i][2] && r < size; k++)
                    node_of[r++] = t[i][0] + n;
    return KNIT_OK;
}

static knit_status_t pmi_nodes(kn_launcher_t *l, int *node_of, char *why, size_t len)
{
    char reply[MSG_MAX], map[1024], found[16];
    knit_status_t st;
    if (l->version == 2) {
        st = v2_call("cmd=info-getjobattr;key=PMI_process_mapping;", reply, sizeof(reply));
        if (st == KNIT_OK && (v2_field(reply, "found", found, sizeof(found)) < 0 || strcmp(found, "TRUE") ||
                              v2_field(reply, "value", map, sizeof(map)) < 0))
            st = KNIT_ERR_NOT_FOUND;
    } else {
        st = pmi_get(l, -1, "PMI_process_mapping", map, sizeof(map));
    }
    if (st == KNIT_OK && (st = parse_mapping(map, l->size, node_of)) != KNIT_OK)
        snprintf(why, len, "%s: cannot read PMI_process_mapping '%s'", l->name, map);
    else if (st != KNIT_OK)
        snprintf(why, len, "%s gives no PMI_process_mapping", l->name);
    return st;
}

static void pmi_abort(kn_launcher_t *l, int code, const char *msg)
{
    char m[MSG_MAX], esc[1024];
    size_t o = 0;
    pthread_mutex_lock(&P.lock);
    if (l->version == 2) {
        for (const char *p = msg; *p && o + 3 < sizeof(esc); p++) {
            esc[o++] = *p == '\n' ? ' ' : *p;
            if (*p == ';')
                esc[o++] = ';';
        }
        esc[o] = '\0';
        snprintf(m, sizeof(m), "cmd=abort;isworldabort=TRUE;msg=%s;", esc);
        char frame[MSG_MAX + 8];
        int n = snprintf(frame, sizeof(frame), "%-6zu%s", strlen(m), m);
        (void)write_all(frame, (size_t)n); /* no answer: the launcher kills us */
    }
    /* PMI-1 has no abort: a process that exits without finalize ends
     * the job (hydra: "BAD TERMINATION"), as MPICH's own PMI_Abort does */
    (void)code;
    pthread_mutex_unlock(&P.lock);
}

static void pmi_finalize(kn_launcher_t *l)
{
    char reply[MSG_MAX];
    pthread_mutex_lock(&P.lock);
    if (l->version == 2)
        (void)v2_call("cmd=finalize;", reply, sizeof(reply));
    else
        (void)v1_call("cmd=finalize\n", reply, sizeof(reply));
    pthread_mutex_unlock(&P.lock);
}

kn_launcher_t kn_launch_pmi = {
    .name = "PMI", .init = pmi_init, .nodes = pmi_nodes, .put = pmi_put, .fence = pmi_fence,
    .get = pmi_get, .abort = pmi_abort, .finalize = pmi_finalize,
};
