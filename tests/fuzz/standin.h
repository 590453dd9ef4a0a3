/*
 * What every stand-in agent of the module targets (fuzz_rmamod.c,
 * fuzz_dsmmod.c) has alike: the instance's one pointer of state, a log
 * that says nothing, the tokens handed to requests, the queue of what the
 * module sent to itself, and the script that drives it:
 *   0  a request from local rank (u8 % 2): args of u16 bytes
 *   1  a message from instance (u8 % nfrom, mapped by the target): u16 bytes
 *   2  deliver what the module sent to itself, oldest first (16 at most)
 * Include after knit/module.h (the module's .c).
 */
#ifndef KN_TESTS_FUZZ_STANDIN_H
#define KN_TESTS_FUZZ_STANDIN_H

#define MAXTOK 256
#define MAXQ 64

static struct {
    void *state;
    uint8_t done[MAXTOK]; /* 1: given, 2: completed */
    struct {
        uint8_t *b;
        uint64_t len;
    } q[MAXQ];
    int nq;
} zs;

static void z_set_state(knit_mod_ctx_t *m, void *s)
{
    (void)m;
    zs.state = s;
}

static void *z_state(knit_mod_ctx_t *m)
{
    (void)m;
    return zs.state;
}

static void z_log(knit_mod_ctx_t *m, int32_t level, const char *fmt, ...)
{
    (void)m, (void)level, (void)fmt;
}

/* A message to oneself, kept for a later delivery (a full queue drops it,
 * as a lost peer would). */
static void z_queue(const void *p1, uint64_t l1, const void *p2, uint64_t l2)
{
    if (zs.nq == MAXQ)
        return;
    uint8_t *b = malloc(l1 + l2 ? l1 + l2 : 1);
    if (l1)
        memcpy(b, p1, l1);
    if (l2)
        memcpy(b + l1, p2, l2);
    zs.q[zs.nq].b = b;
    zs.q[zs.nq++].len = l1 + l2;
}

typedef void (*z_request_fn)(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args);
typedef void (*z_message_fn)(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len);

/* Run the script of f against the module; at the end the queue is freed. */
static void z_script(kn_fz_t *f, knit_mod_ctx_t *m, z_request_fn request, z_message_fn message, int nfrom,
                     int32_t (*from_of)(int i))
{
    uint64_t next = 1;
    for (int steps = 0; f->n && steps < 200; steps++) {
        uint8_t what = kn_fz_u8(f) % 3;
        if (what == 0 && next < MAXTOK) {
            int32_t rank = kn_fz_u8(f) % 2;
            size_t got;
            const uint8_t *p = kn_fz_bytes(f, kn_fz_u16(f), &got);
            uint8_t *args = kn_fz_dup(p, got); /* the agent's copy, as long as the call */
            knit_mod_request_t req = {.token = next, .rank = rank, .node = 0, .len = got};
            zs.done[next++] = 1;
            request(m, &req, args);
            kn_fz_free(args, got);
        } else if (what == 1) {
            int32_t from = from_of(kn_fz_u8(f) % nfrom);
            size_t got;
            const uint8_t *p = kn_fz_bytes(f, kn_fz_u16(f), &got);
            uint8_t *msg = kn_fz_dup(p, got);
            message(m, from, msg, got);
            kn_fz_free(msg, got);
        } else {
            int k = zs.nq < 16 ? zs.nq : 16; /* what it sends meanwhile waits for the next round */
            while (k-- > 0) {
                uint8_t *b = zs.q[0].b;
                uint64_t len = zs.q[0].len;
                memmove(&zs.q[0], &zs.q[1], (size_t)(zs.nq - 1) * sizeof(zs.q[0]));
                zs.nq--;
                message(m, 0, b, len);
                free(b);
            }
        }
    }
    for (int i = 0; i < zs.nq; i++)
        free(zs.q[i].b);
    zs.nq = 0;
}

#endif
