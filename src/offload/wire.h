/*
 * What the daemons accept from other processes, checked in one place that
 * the daemons and the fuzz targets (tests/fuzz) share:
 *
 *   daemon frames   kn_wire_t + bytes between agents and the switch, cut
 *                   into fragments of the transport's packet size, in
 *                   order per sender, reassembled per sender;
 *   queue entries   kn_off_sqe_t a rank writes into its slot of the
 *                   agent's command queue (offload.h).
 *
 * Nothing here has side effects: a check says yes or no (with a reason),
 * the reassembler owns only its buffer.
 */
#ifndef KN_OFFLOAD_WIRE_H
#define KN_OFFLOAD_WIRE_H

#include <stdint.h>

#include "offload/offload.h"
#include "tl/tl.h"

#define KN_WIRE_MAGIC 0x6b6e7764u
#define KN_WIRE_VERSION 1
#define KN_PKT_OFFLOAD 0x40 /* kn_pkt_hdr_t.type of daemon packets */

enum {
    W_LOAD = 1, W_LOAD_ACK, W_LOAD_DONE, W_UNLOAD, W_MSG, W_REQ, W_DONE, W_FAULT, W_UNLOAD_DONE,
    W_BULK,      /* a large message to read from the sender's memory (body kn_wire_bulk_t) */
    W_BULK_DONE, /* read (or not): the sender may free it; a = its id, no body */
    W_MAX
};

/* 56 bytes at the start of every fragment (host byte order: the daemons
 * of a job run one build). */
typedef struct kn_wire {
    uint32_t magic;
    uint16_t version, type;
    uint64_t auth;       /* kn_off_cookie_digest of the job cookie */
    uint32_t mod;
    int32_t from;        /* the sender's daemon id */
    uint64_t total;      /* bytes of the whole message (<= KN_OFF_MSG_MAX) */
    uint64_t offset;     /* of this fragment's bytes in it */
    uint64_t a, b;       /* per type */
} kn_wire_t;
_Static_assert(sizeof(kn_wire_t) == 56, "wire header is 56 bytes");

/* A message of KNIT_OFFLOAD_BULK_MIN bytes or more between daemons whose
 * transport reads peer memory goes as this descriptor instead of
 * fragments (bulk.c): the receiver reads the bytes itself, then answers
 * W_BULK_DONE with the id. */
typedef struct kn_wire_bulk {
    kn_wire_t w;     /* the message's own header (offset 0, total: its bytes) */
    uint64_t addr;   /* its bytes in the sender */
    uint64_t rkey;   /* the transport's key for them */
    uint64_t id;     /* the sender's */
} kn_wire_bulk_t;

/* One packet from daemon src (of nids): packet type, header, this job's
 * digest, sender, type, and the fragment's bytes inside its message.  On
 * KNIT_OK *w is the header; the fragment's bytes follow it in payload. */
knit_status_t kn_wire_check(const kn_pkt_hdr_t *hdr, const void *payload, size_t len, uint64_t auth, int src,
                            int nids, kn_wire_t *w, const char **why);

/* Per type, what a whole message's bytes must be (the checks that need
 * no daemon state): LOAD starts with a KNIT_MOD_NAME_MAX name field and
 * names a placement 1..3 in b; LOAD_ACK, LOAD_DONE and FAULT carry a
 * NUL-terminated text; BULK a descriptor whose message is of this job,
 * from the same sender, of a type other than BULK's two, and not empty;
 * BULK_DONE nothing.  1: acceptable. */
int kn_wire_body_ok(const kn_wire_t *w, const void *p, uint64_t len);

/* Reassembly of one sender's fragments.  Zero-initialized; free with
 * kn_wire_reasm_free. */
typedef struct kn_wire_reasm {
    kn_wire_t w;
    char *buf;
    uint64_t got;
    int active;
} kn_wire_reasm_t;

typedef struct kn_wire_msg {
    kn_wire_t w;          /* the first fragment's header */
    const char *data;     /* total bytes */
    uint64_t len;
    char *owned;          /* to free() once handled (NULL: data is the packet's) */
} kn_wire_msg_t;

/* Add one checked fragment (w, its n bytes at p).  Returns 1 when it
 * completes a message (*out; data may point into p), else 0.  *why is set
 * (else NULL) when something was dropped: the fragment (out of order), or
 * an unfinished message that a new one cut short. */
int kn_wire_reasm_add(kn_wire_reasm_t *r, const kn_wire_t *w, const char *p, uint64_t n, kn_wire_msg_t *out,
                      const char **why);
void kn_wire_reasm_free(kn_wire_reasm_t *r);

/* Take a queue entry out of shared memory (the rank may write it while we
 * read: every field is read once) into *q, and check what the entry alone
 * can tell: version, op, inline length, and per op the fields it needs.
 * On an error *q still has op and id (for the failure's completion) and
 * inl 0. */
knit_status_t kn_off_sqe_read(const kn_off_sqe_t *shared, kn_off_sqe_t *q, const char **why);

#endif
