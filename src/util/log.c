#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kn_log_level = KN_LOG_WARN;
static char log_prefix[64] = "knit";

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};
static kn_log_capture_t capture;

kn_log_capture_t kn_log_capture_begin(char *buf, size_t len)
{
    kn_log_capture_t prev = capture;
    if (buf && len)
        buf[0] = '\0';
    capture.buf = len ? buf : NULL;
    capture.len = len;
    return prev;
}

void kn_log_capture_end(kn_log_capture_t prev)
{
    capture = prev;
}

void kn_log_set_prefix(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log_prefix, sizeof(log_prefix), fmt, ap);
    va_end(ap);
}

const char *kn_log_prefix(void)
{
    return log_prefix;
}

void kn_log_set_level(int level)
{
    kn_log_level = level;
}

void kn_vlog(int level, const char *fmt, va_list ap)
{
    char line[1024];
    int saved = errno;
    if (level <= KN_LOG_ERROR && capture.buf && !capture.buf[0]) {
        vsnprintf(capture.buf, capture.len, fmt, ap);
        errno = saved;
        return;
    }
    if (level < 0)
        level = 0;
    if (level > KN_LOG_TRACE)
        level = KN_LOG_TRACE;
    int n = snprintf(line, sizeof(line), "knit[%s] %s: ", log_prefix, level_names[level]);
    errno = saved; /* keep %m meaningful */
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    errno = saved;
}

void kn_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kn_vlog(level, fmt, ap);
    va_end(ap);
}

void kn_fatal(void (*handler)(void *arg, const char *msg), void *arg, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    kn_error("%s", msg);
    if (handler)
        handler(arg, msg);
    abort(); /* the handler must not return */
}

void kn_fmt_bytes(uint64_t b, char *buf, size_t len)
{
    if (b >= 10ull << 20)
        snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= 10ull << 10)
        snprintf(buf, len, "%.1f KiB", (double)b / 1024);
    else
        snprintf(buf, len, "%llu B", (unsigned long long)b);
}
