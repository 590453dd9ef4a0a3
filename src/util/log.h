/*
 * Leveled logging.  Every line: "knit[<prefix>] <level>: <message>" on
 * stderr, where the prefix names the process ("rank 3", "knitrun",
 * "agent 1").  Level from KNIT_LOG_LEVEL (error|warn|info|debug|trace,
 * default warn).  Messages are lowercase, no trailing period; use %m for
 * errno.  Thread safe (one write(2) per line).
 */
#ifndef KN_UTIL_LOG_H
#define KN_UTIL_LOG_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>

enum kn_log_level {
    KN_LOG_ERROR = 0,
    KN_LOG_WARN,
    KN_LOG_INFO,
    KN_LOG_DEBUG,
    KN_LOG_TRACE,
};

extern int kn_log_level;

void kn_log_set_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *kn_log_prefix(void);
void kn_log_set_level(int level);
/* "12 B", "34.5 KiB", "67.8 MiB" (the unit changes at 10 of the next) */
void kn_fmt_bytes(uint64_t b, char *buf, size_t len);
void kn_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kn_vlog(int level, const char *fmt, va_list ap);
/*
 * Capture: from kn_log_capture_begin on, the first error line logged (by
 * this thread or another) is kept in buf, without the "knit[...] error: "
 * prefix, instead of being written; later error lines are written as
 * usual.  For a caller that reports the error itself (knit_init_quiet: the
 * MPI layer puts it in the job's abort message), or that passes it on
 * (the node segment's creator tells the node's other ranks).  Captures
 * nest: kn_log_capture_end restores the one begin replaced.
 */
typedef struct kn_log_capture {
    char *buf;
    size_t len;
} kn_log_capture_t;
kn_log_capture_t kn_log_capture_begin(char *buf, size_t len);
void kn_log_capture_end(kn_log_capture_t prev);

/* A fatal error of a layer: log it, hand the message to the layer's
 * handler (which ends the job; NULL: none), and abort should it return. */
void kn_fatal(void (*handler)(void *arg, const char *msg), void *arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define KN_LOG_AT(lvl, ...)                                   \
    do {                                                      \
        if (__builtin_expect((lvl) <= kn_log_level, 0))       \
            kn_log((lvl), __VA_ARGS__);                       \
    } while (0)
#define kn_error(...) KN_LOG_AT(KN_LOG_ERROR, __VA_ARGS__)
#define kn_warn(...) KN_LOG_AT(KN_LOG_WARN, __VA_ARGS__)
#define kn_info(...) KN_LOG_AT(KN_LOG_INFO, __VA_ARGS__)
#define kn_debug(...) KN_LOG_AT(KN_LOG_DEBUG, __VA_ARGS__)
#define kn_trace(...) KN_LOG_AT(KN_LOG_TRACE, __VA_ARGS__)

#endif
