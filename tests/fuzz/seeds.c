/*
 * Writes the seed corpus of the fuzz targets (make fuzz-seeds): real,
 * valid messages of every kind, made by the encoders the real code uses,
 * and for the script-driven targets (pkt, wire, net) short scripts that
 * walk the protocols' main paths.
 *   seeds CORPUS_DIR MODULE.so
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "boot/proto.h"
#include "dsm/dsm_mod.h"
#include "net/frame.h"
#include "offload/sbx.h"
#include "offload/wire.h"
#include "rma/rma.h"
#include "fuzz.h"
#include "util/config.h"
#include "util/crc32c.h"

static const char *top;

/* A growing byte string. */
typedef struct {
    uint8_t b[1 << 16];
    size_t n;
} buf_t;

static void put(buf_t *b, const void *p, size_t n)
{
    if (b->n + n > sizeof(b->b)) {
        fprintf(stderr, "seeds: buffer full\n");
        exit(1);
    }
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void u8(buf_t *b, uint8_t v) { put(b, &v, 1); }
static void u16(buf_t *b, uint16_t v) { put(b, &v, 2); }
static void u64(buf_t *b, uint64_t v) { put(b, &v, 8); }

static void emit(const char *target, const char *name, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", top, target);
    mkdir(top, 0755);
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", top, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f)) {
        perror(path);
        exit(1);
    }
}

/* ------------------------------------------------------------ boot */

static const char cookie[] = "0123456789abcdef0123456789abcdef";

static void msg(buf_t *b, const kn_boot_msg_t *m)
{
    static uint8_t p[KN_BOOT_JOB_MAX + 16];
    uint32_t n = kn_boot_msg_encode(m, p);
    uint8_t h[KN_BOOT_HDR_SIZE];
    kn_boot_hdr_encode(h, m->type, n);
    put(b, h, sizeof(h));
    put(b, p, n);
}

static void boot(void)
{
    static buf_t b;
    struct {
        const char *name;
        kn_boot_msg_t m;
    } one[] = {
        {"hello_rank", {.type = KN_BOOT_HELLO, .cookie = cookie, .role = 1, .id = 3}},
        {"hello_proxy", {.type = KN_BOOT_HELLO, .cookie = cookie, .role = 2, .id = 0}},
        {"ack_ok", {.type = KN_BOOT_ACK, .status = 0}},
        {"ack_auth", {.type = KN_BOOT_ACK, .status = KNIT_ERR_AUTH}},
        {"put", {.type = KN_BOOT_PUT, .key = "net.addr.0", .klen = 10, .data = (const uint8_t *)"\x01\x02\x03", .len = 3}},
        {"get", {.type = KN_BOOT_GET, .key = "net.addr.0", .klen = 10}},
        {"value", {.type = KN_BOOT_VALUE, .data = (const uint8_t *)"\x01\x02\x03", .len = 3}},
        {"fence", {.type = KN_BOOT_FENCE}},
        {"fence_done", {.type = KN_BOOT_FENCE_DONE}},
        {"abort", {.type = KN_BOOT_ABORT, .code = 3, .data = (const uint8_t *)"bad input", .len = 9}},
        {"finalize", {.type = KN_BOOT_FINALIZE}},
        {"output", {.type = KN_BOOT_OUTPUT, .rank = 2, .stream = 1, .data = (const uint8_t *)"hello\n", .len = 6}},
        {"exit", {.type = KN_BOOT_EXIT, .rank = 2, .how = KN_BOOT_SIGNALED, .value = 9}},
        {"signal", {.type = KN_BOOT_SIGNAL, .signo = 15}},
    };
    for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
        b.n = 0;
        msg(&b, &one[i].m);
        emit("boot", one[i].name, b.b, b.n);
    }
    /* a rank's whole conversation, and the store's replies */
    b.n = 0;
    int conv[] = {0, 4, 5, 7, 10};
    for (size_t i = 0; i < sizeof(conv) / sizeof(conv[0]); i++)
        msg(&b, &one[conv[i]].m);
    emit("boot", "rank_conversation", b.b, b.n);
    b.n = 0;
    int replies[] = {2, 6, 8, 2};
    for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++)
        msg(&b, &one[replies[i]].m);
    emit("boot", "store_replies", b.b, b.n);
}

/* ------------------------------------------------------------ pmi */

/* A PMI-2 message as the server frames it. */
static void frame2(buf_t *b, const char *body)
{
    char len[24];
    snprintf(len, sizeof(len), "%-6zu", strlen(body) % 1000000);
    put(b, len, 6);
    put(b, body, strlen(body));
}

static void pmi(void)
{
    static buf_t b;
    static const char *const v1[] = {
        "cmd=my_kvsname kvsname=kvs_7_0 rc=0\n", "cmd=get_result rc=0 value=(vector,(0,3,1))\n",
        "cmd=put_result rc=0 msg=success\n", "cmd=barrier_out\n", "cmd=get_result rc=0 value=a!b!c\n",
        "cmd=finalize_ack\n"};
    for (int mode = 0; mode < 2; mode++) { /* negotiated, and insisted on */
        b.n = 0;
        u8(&b, (uint8_t)mode);
        const char *init = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n";
        put(&b, init, strlen(init));
        for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++)
            put(&b, v1[i], strlen(v1[i]));
        emit("pmi", mode ? "v1" : "v1_negotiated", b.b, b.n);
    }
    b.n = 0;
    u8(&b, 2);
    const char *init = "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n";
    put(&b, init, strlen(init));
    frame2(&b, "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=3;appnum=0;");
    frame2(&b, "cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,2),(1,1,1));");
    frame2(&b, "cmd=kvs-put-response;rc=0;");
    frame2(&b, "cmd=kvs-fence-response;rc=0;");
    frame2(&b, "cmd=kvs-get-response;rc=0;found=TRUE;value=a!b;;c;");
    frame2(&b, "cmd=finalize-response;rc=0;");
    emit("pmi", "v2", b.b, b.n);
}

/* ------------------------------------------------------------ proxy */

static void proxy(void)
{
    static buf_t b;
    char *env[] = {"KNIT_SIZE=4", "KNIT_NODE=1", "KNIT_JOBID=host.123.abcd", "KNIT_HOSTNAME=beta",
                   "KNIT_OFFLOAD=1"};
    char *argv[] = {"./app", "-n", "10"};
    size_t len = kn_boot_job_size(env, 5, "/home/user", argv, 3);
    uint8_t *p = malloc(len);
    kn_boot_job_encode(p, 2, 2, env, 5, "/home/user", argv, 3);
    b.n = 0;
    u8(&b, 0);
    put(&b, p, len);
    emit("proxy", "job", b.b, b.n);
    free(p);
    char *argv1[] = {"x"};
    len = kn_boot_job_size(NULL, 0, "/", argv1, 1);
    p = malloc(len);
    kn_boot_job_encode(p, 0, 1, NULL, 0, "/", argv1, 1);
    b.n = 0;
    u8(&b, 0);
    put(&b, p, len);
    emit("proxy", "job_small", b.b, b.n);
    free(p);
    const char *lines[] = {"0123456789abcdef0123456789abcdef 1 10.0.0.1:4242,unix:/tmp/knit.sock",
                           "0123456789abcdef0123456789abcdef 0 [::1]:9"};
    for (int i = 0; i < 2; i++) {
        b.n = 0;
        u8(&b, 1);
        put(&b, lines[i], strlen(lines[i]));
        emit("proxy", i ? "line_v6" : "line", b.b, b.n);
    }
}

/* ------------------------------------------------------------ pkt */

/* The script of fuzz_pkt.c. */
static void recv_(buf_t *b, int peer, int tag, int comm, uint16_t len)
{
    u8(b, 0), u8(b, (uint8_t)(peer + 1)), u8(b, (uint8_t)(tag + 1)), u8(b, (uint8_t)comm), u16(b, len), u8(b, 0);
}
static void send_(buf_t *b, int peer, int tag, int comm, uint16_t len, int sync)
{
    u8(b, 1), u8(b, (uint8_t)peer), u8(b, (uint8_t)tag), u8(b, (uint8_t)comm), u16(b, len), u8(b, (uint8_t)sync);
}
static void pkt(buf_t *b, int src, int type, int comm, int tag, uint16_t seq, uint64_t len, const void *p,
                uint16_t plen)
{
    u8(b, 2), u8(b, (uint8_t)src), u8(b, (uint8_t)type), u8(b, 0), u8(b, 0), u8(b, (uint8_t)comm);
    u8(b, (uint8_t)tag), u16(b, seq), u8(b, 0x80), u64(b, len), u16(b, plen);
    put(b, p, plen);
}
static void op(buf_t *b, int o) { u8(b, (uint8_t)o); }

static void pkts(void)
{
    static buf_t b;
    static uint8_t data[4096];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)i;
    uint64_t id0 = 1ull << 32; /* the first request: index 0, generation 1 */
    /* an inline message into a posted receive */
    b.n = 0, u8(&b, 4);
    recv_(&b, 1, 0, 0, 100);
    pkt(&b, 1, KN_PKT_INLINE, 0, 0, 0, 20, data, 20);
    op(&b, 5);
    emit("pkt", "inline_posted", b.b, b.n);
    /* eager, unexpected, then received */
    b.n = 0, u8(&b, 4);
    pkt(&b, 2, KN_PKT_EAGER, 1, 3, 0, 1000, data, 1000);
    recv_(&b, -1, -1, 1, 2000);
    op(&b, 5);
    emit("pkt", "eager_unexpected", b.b, b.n);
    /* a multi-packet eager message (transport eager limit 64k) */
    b.n = 0, u8(&b, 5);
    recv_(&b, 3, 2, 0, 10000);
    pkt(&b, 3, KN_PKT_EAGER, 0, 2, 0, 6000, data, 4096);
    pkt(&b, 3, KN_PKT_MORE, 0, 2, 0, 4096, data, 6000 - 4096);
    op(&b, 5);
    emit("pkt", "eager_more", b.b, b.n);
    /* rendezvous: RTS matched by a posted receive, pulled, FIN sent */
    kn_pkt_rts_t rts = {.sreq = 77, .addr = 0x10000, .rkey = 0};
    b.n = 0, u8(&b, 4);
    recv_(&b, 1, 0, 0, 60000);
    pkt(&b, 1, KN_PKT_RTS, 0, 0, 0, 50000, &rts, sizeof(rts));
    op(&b, 4), op(&b, 4), op(&b, 5);
    emit("pkt", "rts_pull", b.b, b.n);
    /* rendezvous without RMA: CTS and DATA packets */
    b.n = 0, u8(&b, 0);
    recv_(&b, 1, 0, 0, 8000);
    pkt(&b, 1, KN_PKT_RTS, 0, 0, 0, 8000, &rts, sizeof(rts));
    op(&b, 4);
    pkt(&b, 1, KN_PKT_DATA, 0, 0, 1, 0, data, 4096);
    pkt(&b, 1, KN_PKT_DATA, 0, 0, 1, 4096, data, 8000 - 4096);
    op(&b, 5);
    emit("pkt", "cts_data", b.b, b.n);
    /* our send: RTS out, the receiver's CTS, DATA streamed; or its FIN */
    kn_pkt_ids_t ids = {.sreq = id0, .rreq = 5};
    b.n = 0, u8(&b, 0);
    send_(&b, 2, 1, 0, 30000, 0);
    op(&b, 4);
    pkt(&b, 2, KN_PKT_CTS, 0, 0, 0, 30000, &ids, sizeof(ids));
    for (int i = 0; i < 12; i++)
        op(&b, 4);
    op(&b, 5);
    emit("pkt", "send_cts", b.b, b.n);
    b.n = 0, u8(&b, 4);
    send_(&b, 2, 1, 0, 30000, 1);
    op(&b, 4);
    pkt(&b, 2, KN_PKT_FIN, 0, 0, 0, 0, &ids, sizeof(ids));
    op(&b, 5);
    emit("pkt", "send_fin", b.b, b.n);
    /* announced receive: RTR from the receiver, we push, PUSHED */
    kn_pkt_rtr_t rtr = {.rreq = 9, .addr = 0x20000, .cap = 40000, .rkey = 0};
    b.n = 0, u8(&b, 4);
    pkt(&b, 3, KN_PKT_RTR, 0, 0, 0, 0, &rtr, offsetof(kn_pkt_rtr_t, rkey));
    send_(&b, 3, 0, 0, 30000, 0);
    for (int i = 0; i < 4; i++)
        op(&b, 4);
    op(&b, 5);
    emit("pkt", "rtr_push", b.b, b.n);
    /* we announce (posted first, RMA, push preferred), the sender pushes */
    kn_pkt_ids_t pushed = {.sreq = 3, .rreq = id0};
    b.n = 0, u8(&b, 6);
    recv_(&b, 1, 4, 0, 40000);
    op(&b, 4);
    pkt(&b, 1, KN_PKT_PUSHED, 0, 4, 0, 30000, &pushed, sizeof(pushed));
    op(&b, 5);
    emit("pkt", "pushed", b.b, b.n);
    /* cancel an announced receive: REVOKE out, REVOKE_ACK in */
    b.n = 0, u8(&b, 6);
    recv_(&b, 1, 0, 0, 40000);
    op(&b, 4), op(&b, 6), u8(&b, 0);
    pkt(&b, 1, KN_PKT_REVOKE_ACK, 0, 0, 0, 0, &pushed, sizeof(pushed));
    op(&b, 5);
    emit("pkt", "revoke", b.b, b.n);
    /* probe and matched receive of an unexpected message; no credit */
    b.n = 0, u8(&b, 4);
    pkt(&b, 2, KN_PKT_INLINE, 0, 1, 0, 8, data, 8);
    op(&b, 7), u8(&b, 1), u8(&b, 3), u8(&b, 2), u8(&b, 0), u16(&b, 8);
    op(&b, 7), u8(&b, 0), u8(&b, 2), u8(&b, 1);
    send_(&b, 1, 0, 0, 10, 0);
    op(&b, 4), op(&b, 4), op(&b, 4), op(&b, 5);
    emit("pkt", "probe_again", b.b, b.n);
}

/* ------------------------------------------------------------ net */

static void frame(buf_t *b, int kind, int credits, uint16_t seq, uint32_t src, uint16_t plen)
{
    net_hdr_t h = {.ver_kind = NET_VERSION << 4 | kind, .credits = (uint8_t)credits, .seq = seq, .src = src};
    uint16_t len = (uint16_t)(sizeof(h) + (kind == NK_PKT ? sizeof(kn_pkt_hdr_t) + plen : 0));
    u16(b, len);
    put(b, &h, sizeof(h));
    if (kind == NK_PKT) {
        kn_pkt_hdr_t ph = {.type = KN_PKT_INLINE, .len = plen};
        put(b, &ph, sizeof(ph));
        for (uint16_t i = 0; i < plen; i++)
            u8(b, (uint8_t)i);
    }
}

static void net(void)
{
    static buf_t b;
    b.n = 0;
    u8(&b, 3), u8(&b, 18), u16(&b, 8256), u16(&b, 0);
    frame(&b, NK_PKT, 0, 0, 1, 16);
    frame(&b, NK_PKT, 1, 1, 1, 0);
    frame(&b, NK_CREDIT, 8, 0, 2, 0);
    frame(&b, NK_PKT, 0, 2, 1, 100);
    emit("net", "in_order", b.b, b.n);
    b.n = 0;
    u8(&b, 1), u8(&b, 18), u16(&b, 8256), u16(&b, 65534);
    frame(&b, NK_PKT, 0, 65535, 1, 8);
    frame(&b, NK_PKT, 0, 0, 1, 8);
    frame(&b, NK_PKT, 0, 65534, 1, 8);
    frame(&b, NK_CREDIT, 4, 1, 1, 0);
    emit("net", "reordered_wrap", b.b, b.n);
}

/* ------------------------------------------------------------ wire */

static void frag(buf_t *b, int src, int type, int mod, uint16_t total, uint16_t offset, uint8_t bsel, const void *p,
                 uint16_t n)
{
    u8(b, 0), u8(b, (uint8_t)src), u8(b, (uint8_t)type), u8(b, (uint8_t)mod), u16(b, total), u16(b, offset);
    u8(b, 7), u8(b, bsel), u16(b, n);
    put(b, p, n);
}

static void wire(void)
{
    static buf_t b;
    static char text[600];
    memset(text, 'x', sizeof(text));
    memcpy(text, "echo", 5);
    b.n = 0, u8(&b, 1);
    frag(&b, 0, W_LOAD, 1, 100, 0, 1, text, 100);
    emit("wire", "load", b.b, b.n);
    b.n = 0, u8(&b, 2);
    frag(&b, 1, W_MSG, 2, 500, 0, 0, text, 200);
    frag(&b, 1, W_MSG, 2, 500, 200, 0, text + 200, 200);
    frag(&b, 2, W_REQ, 1, 10, 0, 0, text, 10);
    frag(&b, 1, W_MSG, 2, 500, 400, 0, text + 400, 100);
    emit("wire", "fragments", b.b, b.n);
    b.n = 0, u8(&b, 1);
    frag(&b, 1, W_LOAD_ACK, 1, 3, 0, 0, "ok", 3);
    frag(&b, 0, W_LOAD_DONE, 1, 3, 0, 0, "ok", 3);
    frag(&b, 2, W_FAULT, 1, 7, 0, 0, "SIGSEGV", 7);
    frag(&b, 2, W_FAULT, 1, 8, 0, 0, "SIGSEGV", 8);
    frag(&b, 1, W_UNLOAD, 1, 0, 0, 0, "", 0);
    frag(&b, 2, W_DONE, 1, 4, 0, 0, "abcd", 4);
    emit("wire", "texts", b.b, b.n);
    b.n = 0, u8(&b, 1);
    frag(&b, 1, W_MSG, 2, 300, 100, 0, text, 100);
    frag(&b, 1, W_MSG, 2, 300, 0, 0, text, 100);
    frag(&b, 1, W_MSG, 2, 300, 200, 0, text, 100);
    frag(&b, 1, W_MSG, 2, 300, 0, 0, text, 300);
    emit("wire", "out_of_order", b.b, b.n);
}

/* ------------------------------------------------------------ sqe */

static void sqe(void)
{
    kn_off_sqe_t q[] = {
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .mod = 0x101, .id = 1, .len = 4, .inl = 4,
         .data = {1, 2, 3, 4}},
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .mod = 0x101, .id = 2, .addr = 0x7f0000001000,
         .len = 1 << 20},
        {.op = KN_SQ_POST_RECV, .version = KN_OFF_VERSION, .mod = 0x101, .id = 3, .addr = 0x7f0000002000, .len = 4096},
        {.op = KN_SQ_LOAD, .version = KN_OFF_VERSION, .flags = KNIT_MOD_AT_AGENT, .id = 4, .addr = 0x7f0000003000,
         .len = 18936, .aux = 1, .inl = 5, .data = "echo"},
        {.op = KN_SQ_LOAD, .version = KN_OFF_VERSION, .id = 5, .aux = 2, .reserved = 1, .inl = 13,
         .data = "no such file"},
        {.op = KN_SQ_JOIN, .version = KN_OFF_VERSION, .id = 6, .aux = 1},
        {.op = KN_SQ_UNLOAD, .version = KN_OFF_VERSION, .id = 7, .mod = 0x101},
        {.op = KN_SQ_FETCH, .version = KN_OFF_VERSION, .id = 8, .aux = 42, .addr = 0x7f0000004000, .len = 1 << 16},
        {.op = KN_SQ_INFO, .version = KN_OFF_VERSION, .id = 9},
    };
    const char *names[] = {"request_inline", "request_addr", "post_recv", "load", "load_reason",
                           "join", "unload", "fetch", "info"};
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
        emit("sqe", names[i], &q[i], sizeof(q[i]));
}

/* ------------------------------------------------------------ loader, config */

static void loader(const char *module)
{
    static buf_t b;
    FILE *f = fopen(module, "rb");
    if (!f) {
        perror(module);
        exit(1);
    }
    b.n = 0;
    u8(&b, 0);
    b.n += fread(b.b + b.n, 1, sizeof(b.b) - b.n, f);
    fclose(f);
    emit("loader", "module", b.b, b.n);
    b.n = 0;
    u8(&b, 1), u8(&b, 1), u8(&b, 1), u8(&b, 3);
    put(&b, "echo", 5);
    emit("loader", "descriptor", b.b, b.n);
}

static void config(void)
{
    static buf_t b;
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        b.n = 0;
        u8(&b, (uint8_t)i);
        put(&b, e->def, strlen(e->def));
        char name[96];
        snprintf(name, sizeof(name), "%s", e->name);
        for (char *c = name; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        emit("config", name, b.b, b.n);
    }
}

/* ------------------------------------------------------------ sbx */

static void u32(buf_t *b, uint32_t v) { put(b, &v, 4); }

/* A record put the proper way (fuzz_sbx.c's script). */
static void sbx_rec(buf_t *b, uint16_t type, int more, uint64_t a, uint8_t bb, uint32_t c, const void *p, uint16_t n)
{
    u8(b, 0);
    u8(b, (uint8_t)type);
    u8(b, (uint8_t)more);
    u64(b, a);
    u8(b, bb);
    u32(b, c);
    u16(b, n);
    put(b, p, n);
}

static void sbx(void)
{
    static buf_t b;
    b.n = 0;
    sbx_rec(&b, KN_SBX_S_LOADED, 0, 0, KN_SBX_HAS_MESSAGE, 0, "echo", 5);
    emit("sbx", "loaded", b.b, b.n);
    b.n = 0;
    sbx_rec(&b, KN_SBX_S_LOADED, 0, (uint32_t)KNIT_ERR_INVAL, 0, 0, "init failed (status -1)", 24);
    emit("sbx", "refused", b.b, b.n);
    b.n = 0;
    char msg[1500];
    memset(msg, 'm', sizeof(msg));
    sbx_rec(&b, KN_SBX_S_SEND, 1, 1, 0, 0, msg, 1000);
    sbx_rec(&b, KN_SBX_S_SEND, 1, 1, 0, 0, msg, 1500);
    sbx_rec(&b, KN_SBX_S_SEND, 0, 1, 0, 0, msg, 7);
    sbx_rec(&b, KN_SBX_S_COMPLETE, 0, 1ull << 32 | 3, 0, 0, "ok", 3);
    emit("sbx", "fragments", b.b, b.n);
    b.n = 0;
    sbx_rec(&b, KN_SBX_S_READ, 0, 2, 0, 4096, NULL, 0);
    sbx_rec(&b, KN_SBX_S_WRITE, 0, 2, 0, 0, msg, 64);
    sbx_rec(&b, KN_SBX_S_DELIVER, 0, 2, 0, 0, msg, 16);
    sbx_rec(&b, KN_SBX_S_MULTICAST, 0, 0, 0, 0, msg, 8);
    emit("sbx", "services", b.b, b.n);
    b.n = 0;
    sbx_rec(&b, KN_SBX_S_SEND, 0, 0, 0, 0, msg, 40);
    u8(&b, 1); /* the module scribbles over the ring and its index */
    u32(&b, 0);
    u16(&b, 64);
    put(&b, msg, 64);
    u64(&b, 200);
    emit("sbx", "scribbled", b.b, b.n);
}

/* ------------------------------------------------------------ rmamod */

/* fuzz_rmamod's script: request (0, rank, u16 length, the request), then
 * deliveries (2) of what the module sent itself */
static void rma_request(buf_t *b, int rank, const kn_rma_mreq_t *q, const kn_rma_seg_t *segs, int nseg)
{
    u8(b, 0);
    u8(b, (uint8_t)rank);
    u16(b, (uint16_t)(sizeof(*q) + (size_t)nseg * sizeof(*segs)));
    put(b, q, sizeof(*q));
    put(b, segs, (size_t)nseg * sizeof(*segs));
}

static void rmamod(void)
{
    const uint64_t base = 0x10000000ull;
    kn_rma_mreq_t s = {.version = KN_RMA_MOD_VERSION, .kind = KN_RMA_K_PUT, .form = KN_RMA_F_STRIDED, .target = 1,
                       .target_node = 0, .total = 128, .laddr = base, .raddr = base + 4096};
    s.ldesc = (kn_rma_desc_t){.levels = 1, .count = {8, 16}, .stride = {16}};
    s.rdesc = (kn_rma_desc_t){.levels = 1, .count = {8, 16}, .stride = {24}};
    static const char *names[] = {"put", "get", "acc", "put_local_fence"};
    for (int k = 0; k < 4; k++) {
        buf_t b = {.n = 0};
        kn_rma_mreq_t q = s;
        q.kind = (uint8_t)(k == 1 ? KN_RMA_K_GET : k == 2 ? KN_RMA_K_ACC : KN_RMA_K_PUT);
        if (k == 2)
            q.dtype = KNIT_INT32, q.op = KNIT_OP_SUM;
        if (k == 3)
            q.flags = KN_RMA_MF_LOCAL;
        rma_request(&b, 0, &q, NULL, 0);
        if (k == 3) {
            kn_rma_mreq_t fence = {.version = KN_RMA_MOD_VERSION, .kind = KN_RMA_K_FENCE, .form = KN_RMA_F_STRIDED,
                                   .target = 0, .target_node = 0};
            rma_request(&b, 0, &fence, NULL, 0);
        }
        for (int i = 0; i < 4; i++)
            u8(&b, 2);
        emit("rmamod", names[k], b.b, b.n);
    }
    buf_t b = {.n = 0};
    kn_rma_mreq_t l = {.version = KN_RMA_MOD_VERSION, .kind = KN_RMA_K_PUT, .form = KN_RMA_F_LIST, .target = 1,
                       .target_node = 0, .total = 96, .nseg = 2};
    kn_rma_seg_t segs[2] = {{base, base + 1000, 32}, {base + 64, base + 2000, 64}};
    rma_request(&b, 1, &l, segs, 2);
    kn_rma_mreq_t w = {.version = KN_RMA_MOD_VERSION, .kind = KN_RMA_K_RMW, .form = KN_RMA_F_STRIDED, .target = 0,
                       .target_node = 0, .total = 8, .raddr = base + 8, .dtype = KNIT_INT64, .op = 1, .operand = 5};
    rma_request(&b, 1, &w, NULL, 0);
    for (int i = 0; i < 4; i++)
        u8(&b, 2);
    emit("rmamod", "list_and_atomic", b.b, b.n);
}

/* ------------------------------------------------------------ rmadefer */

/* knit_rma_barrier's messages of held puts (kn_rma_drec_t records) into
 * fuzz_rmadefer's window of 64 KiB at KN_FZ_DEFER_BASE */
static void drec(buf_t *b, uint32_t form, uint64_t raddr, const kn_rma_desc_t *d, const kn_rma_dpiece_t *pc,
                 uint64_t npc, uint64_t total)
{
    kn_rma_drec_t r = {.magic = KN_RMA_DREC_MAGIC, .form = form, .raddr = raddr, .total = total, .nseg = npc};
    if (d)
        r.rdesc = *d;
    put(b, &r, sizeof(r));
    put(b, pc, npc * sizeof(*pc));
    for (uint64_t i = 0; i < (total + 7) / 8 * 8; i++)
        u8(b, (uint8_t)(i * 3 + 1));
}

static void rmadefer(void)
{
    const uint64_t base = KN_FZ_DEFER_BASE;
    kn_rma_desc_t d = {.levels = 2, .count = {8, 16, 4}, .stride = {24, 1024}};
    kn_rma_dpiece_t pc[3] = {{base + 100, 8}, {base + 5000, 32}, {base + 65536 - 16, 16}};
    buf_t b = {.n = 0};
    drec(&b, KN_RMA_F_STRIDED, base + 64, &d, NULL, 0, 8 * 16 * 4);
    emit("rmadefer", "strided", b.b, b.n);
    b.n = 0;
    drec(&b, KN_RMA_F_LIST, 0, NULL, pc, 3, 56);
    emit("rmadefer", "list", b.b, b.n);
    b.n = 0;
    drec(&b, KN_RMA_F_STRIDED, base + 64, &d, NULL, 0, 8 * 16 * 4);
    drec(&b, KN_RMA_F_LIST, 0, NULL, pc, 3, 56);
    kn_rma_desc_t one = {.levels = 0, .count = {100}};
    drec(&b, KN_RMA_F_STRIDED, base + 60000, &one, NULL, 0, 100);
    emit("rmadefer", "three", b.b, b.n);
    b.n = 0; /* the last record reaches past the window: nothing applied */
    drec(&b, KN_RMA_F_LIST, 0, NULL, pc, 3, 56);
    drec(&b, KN_RMA_F_STRIDED, base + 65500, &one, NULL, 0, 100);
    emit("rmadefer", "outside", b.b, b.n);
}

/* ------------------------------------------------------------ dsmmod */

/* fuzz_dsmmod's script: protocol, home block, then requests (0, rank, u16
 * length, the request), messages (1, from, u16 length, the message) and
 * deliveries (2) of what the module sent itself */
static void dsm_req(buf_t *b, int rank, const void *q, size_t n)
{
    u8(b, 0);
    u8(b, (uint8_t)rank);
    u16(b, (uint16_t)n);
    put(b, q, n);
}

static void dsm_msg(buf_t *b, int from, const void *m, size_t n)
{
    u8(b, 1);
    u8(b, (uint8_t)from);
    u16(b, (uint16_t)n);
    put(b, m, n);
}

/* an update message of one plain frame and one masked one */
static size_t dsm_update(uint8_t *out, uint32_t type, int32_t origin)
{
    kn_dsm_msg_t *h = (kn_dsm_msg_t *)out;
    uint8_t *at = (uint8_t *)(h + 1);
    kn_dsm_frame_t *f = (kn_dsm_frame_t *)at;
    *f = (kn_dsm_frame_t){.off = 4096 + 100, .len = 24};
    memset(f + 1, 7, 24);
    uint32_t c = kn_crc32c(0, &f->off, sizeof(f->off) + sizeof(f->len));
    f->crc = kn_crc32c(c, f + 1, 24);
    at += sizeof(*f) + 24;
    f = (kn_dsm_frame_t *)at;
    *f = (kn_dsm_frame_t){.off = 3 * 4096 + 64, .len = 64 | KN_DSM_FRAME_MASKED};
    uint8_t *d = (uint8_t *)(f + 1);
    for (int i = 0; i < 8; i++)
        d[i] = 0x55;          /* every other byte */
    memset(d + 8, 9, 64);
    c = kn_crc32c(0, &f->off, sizeof(f->off) + sizeof(f->len));
    f->crc = kn_crc32c(c, d, 72);
    at += sizeof(*f) + 72;
    *h = (kn_dsm_msg_t){.type = type, .origin = origin, .ticket = 1, .a = 24 + 72,
                        .bytes = (uint64_t)(at - (uint8_t *)(h + 1))};
    return (size_t)(at - out);
}

static void dsmmod(void)
{
    uint8_t m[4096];
    for (int proto = 0; proto < 2; proto++) {
        buf_t b = {.n = 0};
        u8(&b, (uint8_t)proto);
        u8(&b, 0); /* homes by the page */
        struct {
            kn_dsm_q_t q;
            kn_dsm_run_t r[2];
            uint8_t mask[KN_DSM_MASK];
            uint32_t notes[2];
        } rel = {.q = {.op = KN_DSM_Q_RELEASE, .a = 1, .b = 1, .nruns = 2, .nmasks = 1, .nnotes = proto ? 2 : 0},
                 .r = {{.off = 4096 * 2, .len = 100}, {.off = 4096 * 5 + 8, .len = 16, .mask = 1}},
                 .notes = {2, 5}};
        rel.mask[0] = 0x81;
        rel.mask[1] = 0x3c;
        dsm_req(&b, 0, &rel, sizeof(rel) - (proto ? 0 : sizeof(rel.notes)));
        u8(&b, 2);
        dsm_msg(&b, 2, m, dsm_update(m, proto ? KN_DSM_M_HUPD : KN_DSM_M_UPD, 2));
        kn_dsm_msg_t ack = {.type = KN_DSM_M_ACK, .origin = 0, .ticket = 1, .a = 100};
        dsm_msg(&b, 1, &ack, sizeof(ack));
        kn_dsm_q_t lk = {.op = KN_DSM_Q_LOCK, .a = 9}, ul = {.op = KN_DSM_Q_UNLOCK, .a = 9};
        kn_dsm_q_t al = {.op = KN_DSM_Q_ALLOC, .a = 5000, .b = 4096}, fr = {.op = KN_DSM_Q_FREE, .a = 0};
        dsm_req(&b, 0, &lk, sizeof(lk));
        dsm_req(&b, 1, &lk, sizeof(lk));
        u8(&b, 2);
        dsm_req(&b, 0, &ul, sizeof(ul));
        dsm_req(&b, 1, &al, sizeof(al));
        u8(&b, 2);
        dsm_req(&b, 1, &fr, sizeof(fr));
        u8(&b, 2);
        u8(&b, 2);
        /* komp's: a loop's counter (a guided step, then spent), a try of a held lock */
        kn_dsm_q_t cn = {.op = KN_DSM_Q_COUNT, .flags = KN_DSM_QF_GUIDED, .a = 77, .b = 3, .nruns = 20, .nmasks = 2,
                         .nnotes = 4};
        kn_dsm_q_t tl = {.op = KN_DSM_Q_LOCK, .flags = KN_DSM_QF_TRY, .a = 9};
        dsm_req(&b, 0, &cn, sizeof(cn));
        u8(&b, 2);
        dsm_req(&b, 1, &cn, sizeof(cn));
        u8(&b, 2);
        dsm_req(&b, 0, &lk, sizeof(lk));
        dsm_req(&b, 1, &tl, sizeof(tl));
        u8(&b, 2);
        if (proto) {
            kn_dsm_q_t acq = {.op = KN_DSM_Q_ACQUIRE}, fe = {.op = KN_DSM_Q_FETCH, .a = 7, .b = 1};
            dsm_req(&b, 1, &acq, sizeof(acq));
            u8(&b, 2);
            u8(&b, 2);
            dsm_req(&b, 0, &fe, sizeof(fe));
            kn_dsm_msg_t *pg = (kn_dsm_msg_t *)m;
            memset(pg + 1, 3, 4096 - sizeof(*pg));
            /* (a page message: the home's answer, 4 KiB: too long for this
             * buffer's message, so a short one that fails its check) */
            *pg = (kn_dsm_msg_t){.type = KN_DSM_M_PAGE, .origin = 1, .ticket = 9, .a = 7, .c = 1, .bytes = 4096};
            dsm_msg(&b, 1, m, 2048);
            kn_dsm_msg_t fetch = {.type = KN_DSM_M_FETCH, .ticket = 3, .a = 0, .b = 2};
            dsm_msg(&b, 2, &fetch, sizeof(fetch));
            /* a barrier's acquire: pages 2 and 5, noted by node 0 alone,
             * move there; the acquire waits for both other nodes' MOVED;
             * a MOVE from a node other than 0 is refused */
            kn_dsm_q_t bacq = {.op = KN_DSM_Q_ACQUIRE, .flags = KN_DSM_QF_BARRIER, .b = 1};
            dsm_req(&b, 0, &bacq, sizeof(bacq));
            u8(&b, 2);
            kn_dsm_msg_t mvd = {.type = KN_DSM_M_MOVED, .origin = 1, .a = 1};
            dsm_msg(&b, 1, &mvd, sizeof(mvd));
            mvd.origin = 2;
            dsm_msg(&b, 2, &mvd, sizeof(mvd));
            struct {
                kn_dsm_msg_t h;
                kn_dsm_move_t mv;
            } bad = {.h = {.type = KN_DSM_M_MOVE, .origin = 2, .a = 1, .bytes = sizeof(kn_dsm_move_t)},
                     .mv = {.page = 3, .home = 2}};
            dsm_msg(&b, 2, &bad, sizeof(bad));
        } else {
            uint32_t tok[2 * 3 + 0];
            kn_dsm_msg_t *t = (kn_dsm_msg_t *)m;
            *t = (kn_dsm_msg_t){.type = KN_DSM_M_TOKEN, .origin = 2};
            memset(tok, 0, sizeof(tok));
            tok[3 + 1] = 1; /* node 1 wants it */
            memcpy(t + 1, tok, sizeof(tok));
            kn_dsm_msg_t want = {.type = KN_DSM_M_WANT, .origin = 2, .a = 1};
            dsm_msg(&b, 2, &want, sizeof(want));
            dsm_msg(&b, 2, m, sizeof(*t) + sizeof(tok));
        }
        emit("dsmmod", proto ? "invalidate" : "update", b.b, b.n);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: seeds CORPUS_DIR MODULE.so\n");
        return 2;
    }
    top = argv[1];
    boot();
    proxy();
    pmi();
    pkts();
    net();
    wire();
    sqe();
    sbx();
    loader(argv[2]);
    config();
    rmamod();
    rmadefer();
    dsmmod();
    return 0;
}
