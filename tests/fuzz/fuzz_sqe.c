/*
 * Command-queue entries a rank writes into the agent's shared memory
 * (kn_off_sqe_t, src/offload/wire.c's kn_off_sqe_read, used by
 * agent/agent.c's poll_queues): the input is one 256-byte entry.
 * Properties: an accepted entry's copy is the entry (fixed part and its
 * inline bytes), its inline length is within the entry, a request whose
 * arguments are inline has exactly len of them (the agent hands q->data
 * with q->len to the module), a load's name is NUL-terminated inside the
 * entry; a refused one keeps op and id and has no inline bytes.
 */
#include "fuzz.h"
#include "offload/wire.h"

KN_FUZZ_TARGET(sqe)
{
    kn_off_sqe_t *shared = calloc(1, sizeof(*shared)); /* the ring slot */
    KN_FUZZ_CHECK(shared);
    memcpy(shared, data, size < sizeof(*shared) ? size : sizeof(*shared));
    kn_off_sqe_t q;
    memset(&q, 0x5a, sizeof(q));
    const char *why = NULL;
    if (kn_off_sqe_read(shared, &q, &why) != KNIT_OK) {
        KN_FUZZ_CHECK(why != NULL && q.inl == 0 && q.op == shared->op && q.id == shared->id);
        free(shared);
        return 0;
    }
    KN_FUZZ_CHECK(!memcmp(&q, shared, offsetof(kn_off_sqe_t, data)));
    KN_FUZZ_CHECK(q.version == KN_OFF_VERSION && q.op > 0 && q.op < KN_SQ_OP_MAX);
    KN_FUZZ_CHECK(q.inl <= KN_OFF_INLINE && !memcmp(q.data, shared->data, q.inl));
    if (q.op == KN_SQ_REQUEST && !q.addr)
        KN_FUZZ_CHECK(q.len == q.inl);
    if (q.op == KN_SQ_REQUEST && q.addr)
        KN_FUZZ_CHECK(q.len <= KN_OFF_MSG_MAX && q.inl == 0);
    if (q.op == KN_SQ_LOAD) {
        KN_FUZZ_CHECK(q.inl > 0 && q.data[q.inl - 1] == '\0');
        if (q.reserved != 1)
            KN_FUZZ_CHECK(strlen((const char *)q.data) < KNIT_MOD_NAME_MAX && q.addr &&
                          q.flags >= KNIT_MOD_AT_AGENT && q.flags <= KNIT_MOD_AT_SWITCH);
    }
    free(shared);
    return 0;
}
