/*
 * Bootstrap wire protocol, shared by the client (boot.c), knitrun's store
 * and knitrun's per-host proxies.  docs/protocols.md describes it for
 * readers; this header is the reference.
 *
 * A connection is a byte stream (TCP or Unix) of messages, each a 16-byte
 * header followed by len payload bytes.  Every integer on the wire is
 * big-endian (network order).  The header is checked on receipt
 * (kn_boot_hdr_decode): magic, version, reserved == 0, a known type and a
 * length within that type's bound; a bad header ends the connection.
 *
 *   offset size field
 *        0    4 magic     "KNBT" (0x4b4e4254)
 *        4    2 version   KN_BOOT_VERSION
 *        6    2 type      enum kn_boot_type
 *        8    4 len       payload bytes that follow
 *       12    4 reserved  0
 *
 * Conversation (client -> store unless marked <-):
 *   HELLO    cookie[32] role:u32 id:u32      <- ACK status:i32 (0 or KNIT_ERR_AUTH, ...)
 *   PUT      keylen:u32 key value             (no reply; ordered before later requests)
 *   GET      key                              <- VALUE value   (store waits until key exists)
 *   FENCE    -                                <- FENCE_DONE    (once every rank entered)
 *   ABORT    code:i32 msg                     <- ACK 0
 *   FINALIZE -                                <- ACK 0, then the client closes
 * Proxy connections (role PROXY, id = node) additionally:
 *   <- JOB   what to start (kn_boot_job_* layout below), right after the ACK
 *   OUTPUT   rank:u32 stream:u32 bytes        (a rank's stdout (1) / stderr (2))
 *   EXIT     rank:u32 how:u32 value:i32       (how: 0 exited with value, 1 killed by signal value)
 *   <- SIGNAL signo:u32                       (deliver to every rank of the node)
 *   <- the store closing the connection ends the proxy (it kills what is left).
 *
 * Reserved key: a rank's PUT of KN_BOOT_KEY_FINALIZE_CALL names the call
 * that ends its part in the job (a C identifier of at most 63 bytes, e.g.
 * "MPI_Finalize"), for the store's report of a rank that exits 0 without
 * FINALIZE; the key is stored like any other.
 *
 * JOB payload: first:u32 count:u32 (the node's ranks are first ..
 * first + count - 1) nenv:u32 nargs:u32, then nenv NUL-terminated "NAME=value"
 * strings (the environment every rank of the node gets on top of the
 * proxy's own, KNIT_NODE_SIZES and KNIT_NODE included), the working
 * directory (NUL-terminated), and nargs NUL-terminated argv strings.
 */
#ifndef KN_BOOT_PROTO_H
#define KN_BOOT_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "knit.h"

#define KN_BOOT_MAGIC 0x4b4e4254u /* "KNBT" */
#define KN_BOOT_VERSION 1
#define KN_BOOT_HDR_SIZE 16
#define KN_BOOT_COOKIE_LEN 32     /* hex digits (128 bits) */
#define KN_BOOT_HELLO_LEN (KN_BOOT_COOKIE_LEN + 8)
#define KN_BOOT_MSG_MAX 1024      /* abort message */
#define KN_BOOT_OUTPUT_MAX 65536  /* one OUTPUT chunk */
#define KN_BOOT_JOB_MAX (1u << 20)
#define KN_BOOT_KEY_FINALIZE_CALL "knit.finalize_call"
#define KN_BOOT_FINALIZE_CALL_MAX 63

enum kn_boot_type {
    KN_BOOT_HELLO = 1,
    KN_BOOT_ACK,
    KN_BOOT_PUT,
    KN_BOOT_GET,
    KN_BOOT_VALUE,
    KN_BOOT_FENCE,
    KN_BOOT_FENCE_DONE,
    KN_BOOT_ABORT,
    KN_BOOT_FINALIZE,
    KN_BOOT_JOB,
    KN_BOOT_OUTPUT,
    KN_BOOT_EXIT,
    KN_BOOT_SIGNAL,
    KN_BOOT_TYPE_END
};

/* EXIT "how" */
enum { KN_BOOT_EXITED = 0, KN_BOOT_SIGNALED = 1 };

typedef struct kn_boot_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t len;
    uint32_t reserved;
} kn_boot_hdr_t;

static inline void kn_boot_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t kn_boot_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Largest payload a message of this type may carry (0 for unknown types). */
uint32_t kn_boot_len_max(unsigned type);
/* Smallest payload (fixed parts). */
uint32_t kn_boot_len_min(unsigned type);
const char *kn_boot_type_name(unsigned type);

void kn_boot_hdr_encode(uint8_t out[KN_BOOT_HDR_SIZE], unsigned type, uint32_t len);
/* Decode and check a received header: KNIT_ERR_PROTO with a reason in
 * *why (static string) when it is not acceptable. */
knit_status_t kn_boot_hdr_decode(const uint8_t in[KN_BOOT_HDR_SIZE], kn_boot_hdr_t *out,
                                 const char **why);

/*
 * One message's payload, decoded: pointers into the payload, which must
 * outlive it.  kn_boot_msg_decode checks what the payload alone can tell
 * (the header was checked by kn_boot_hdr_decode); whether the message is
 * acceptable in the conversation is the receiver's business.
 *   HELLO    cookie (KN_BOOT_COOKIE_LEN lowercase hex digits), role, id
 *   ACK      status (0 or negative)
 *   PUT      key/klen (a valid key), data/len (the value)
 *   GET      key/klen (a valid key)
 *   VALUE    data/len
 *   ABORT    code, data/len (the message, any bytes)
 *   JOB      data/len (see kn_boot_job_decode)
 *   OUTPUT   rank, stream (1 or 2), data/len
 *   EXIT     rank, how (KN_BOOT_EXITED/SIGNALED), value (0..255)
 *   SIGNAL   signo (1..KN_BOOT_SIG_MAX)
 */
#define KN_BOOT_SIG_MAX 64
typedef struct kn_boot_msg {
    unsigned type;
    const char *cookie;
    uint32_t role;
    int32_t id;
    int32_t status, code, value;
    uint32_t rank, stream, how, signo;
    const char *key;
    uint32_t klen;
    const uint8_t *data;
    uint32_t len;
} kn_boot_msg_t;

knit_status_t kn_boot_msg_decode(const kn_boot_hdr_t *h, const uint8_t *payload, kn_boot_msg_t *m,
                                 const char **why);
/* The payload of m (as kn_boot_msg_decode reads it) into out, which has
 * room for kn_boot_len_max(m->type) bytes; returns its length.  With
 * kn_boot_hdr_encode(type, length) in front, a message on the wire. */
uint32_t kn_boot_msg_encode(const kn_boot_msg_t *m, uint8_t *out);

/*
 * The JOB payload (layout above): decoded without copying.  Checks: a
 * first rank >= 0, 1..2^20 ranks, at least one argv string, exactly
 * nenv + 1 + nargs NUL-terminated strings filling the payload, every
 * environment string of the form NAME=value.  strs points at the first
 * environment string; the strings follow one another.
 */
typedef struct kn_boot_job {
    uint32_t first, count, nenv, nargs;
    const char *strs;
    size_t strs_len;
} kn_boot_job_t;
knit_status_t kn_boot_job_decode(const uint8_t *p, uint32_t len, kn_boot_job_t *job, const char **why);
/* Bytes a JOB payload of these strings takes (cwd: one string). */
size_t kn_boot_job_size(char *const env[], size_t nenv, const char *cwd, char *const argv[], size_t nargs);
/* Write it into out (kn_boot_job_size bytes). */
void kn_boot_job_encode(uint8_t *out, uint32_t first, uint32_t count, char *const env[], size_t nenv,
                        const char *cwd, char *const argv[], size_t nargs);

/*
 * The line knitrun writes on a proxy's stdin: "<cookie> <node> <store
 * addresses>".  line is modified (the cookie is cut out of it); *addrs
 * points into it.  The cookie must be KN_BOOT_COOKIE_LEN lowercase hex
 * digits, the node a decimal in 0..INT32_MAX, the addresses non-empty.
 */
knit_status_t kn_boot_launch_line_decode(char *line, const char **cookie, int *node, const char **addrs);

/* 1..KN_BOOT_KEY_MAX printable ASCII bytes (0x21..0x7e). */
int kn_boot_key_valid(const char *key, size_t len);
/* Exactly KN_BOOT_COOKIE_LEN lowercase hex digits. */
int kn_boot_cookie_valid(const char *cookie, size_t len);
/* Compare in constant time (a and b: KN_BOOT_COOKIE_LEN bytes). */
int kn_boot_cookie_equal(const char *a, const char *b);
/* A fresh random cookie from getrandom(2), NUL-terminated. */
knit_status_t kn_boot_cookie_new(char out[KN_BOOT_COOKIE_LEN + 1]);

/*
 * One address of KNIT_BOOT_ADDR: "unix:/path", "A.B.C.D:port" (also
 * "ipv4:A.B.C.D:port"), "[v6addr]:port" or "name:port".
 */
knit_status_t kn_boot_addr_parse(const char *text, struct sockaddr_storage *ss,
                                 socklen_t *len);

/* Blocking helpers for a socket in blocking mode.  deadline_ns: absolute
 * kn_time_ns() value, 0 = no limit.  Send writes header + both parts. */
knit_status_t kn_boot_send(int fd, unsigned type, const void *a, size_t alen,
                           const void *b, size_t blen);
knit_status_t kn_boot_read_full(int fd, void *buf, size_t len, uint64_t deadline_ns);
/* Read one message: its checked header, and its payload into a malloc'd
 * buffer (*payload, NUL-terminated for convenience; free it). */
knit_status_t kn_boot_recv(int fd, kn_boot_hdr_t *h, uint8_t **payload, uint64_t deadline_ns);

#endif
