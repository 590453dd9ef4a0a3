/* Forwarding of the job's stdout/stderr, one whole line per write(2), so
 * that lines of different ranks never mix mid-line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knitrun.h"
#include "util/log.h"

/* A partial line longer than this is written out as a line of its own. */
#define LINE_MAX_PENDING 65536

static int out_broken[3];

static void write_all(int fd, const char *p, size_t n)
{
    while (n && !out_broken[fd]) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EPIPE)
                kn_error("write to fd %d: %m", fd);
            out_broken[fd] = 1; /* our reader is gone: drop output, keep running */
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Emit data (whole lines, the last one possibly without '\n'), each line
 * prefixed with tag, in one write. */
static void emit(int fd, const char *tag, const char *data, size_t n, int add_nl)
{
    size_t tlen = tag ? strlen(tag) : 0;
    size_t lines = add_nl;
    for (size_t i = 0; i < n; i++)
        lines += data[i] == '\n';
    if (!tlen && !add_nl) {
        write_all(fd, data, n);
        return;
    }
    char *buf = malloc(n + lines * tlen + tlen + 1);
    if (!buf) {
        write_all(fd, data, n);
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(data + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - data) + 1 : n;
        memcpy(buf + o, tag, tlen);
        o += tlen;
        memcpy(buf + o, data + i, end - i);
        o += end - i;
        i = end;
    }
    if (add_nl)
        buf[o++] = '\n';
    write_all(fd, buf, o);
    free(buf);
}

void out_feed(outbuf_t *o, int fd, const char *tag, const char *data, size_t n)
{
    const char *last_nl = n ? memrchr(data, '\n', n) : NULL;
    if (!last_nl) {
        if (o->len + n > LINE_MAX_PENDING) {
            out_flush(o, fd, tag);
            emit(fd, tag, data, n, 1);
            return;
        }
    } else {
        size_t head = (size_t)(last_nl - data) + 1;
        if (o->len) {
            /* complete the pending line first, then the rest, as one write */
            size_t first_nl = (size_t)((const char *)memchr(data, '\n', n) - data) + 1;
            char *line = malloc(o->len + first_nl);
            if (line) {
                memcpy(line, o->buf, o->len);
                memcpy(line + o->len, data, first_nl);
                emit(fd, tag, line, o->len + first_nl, 0);
                free(line);
            } else {
                emit(fd, tag, o->buf, o->len, 0);
                emit(fd, NULL, data, first_nl, 0);
            }
            o->len = 0;
            data += first_nl;
            n -= first_nl;
            head -= first_nl;
        }
        if (head)
            emit(fd, tag, data, head, 0);
        data += head;
        n -= head;
    }
    if (!n)
        return;
    if (o->len + n > o->cap) {
        size_t cap = KN_MAX(o->cap * 2, o->len + n);
        char *b = realloc(o->buf, cap);
        if (!b) {
            emit(fd, tag, data, n, 1);
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, data, n);
    o->len += n;
}

void out_flush(outbuf_t *o, int fd, const char *tag)
{
    if (o->len)
        emit(fd, tag, o->buf, o->len, 1);
    o->len = 0;
}

void out_free(outbuf_t *o)
{
    free(o->buf);
    o->buf = NULL;
    o->len = o->cap = 0;
}
