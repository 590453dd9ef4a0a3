/* offload layer: module file checks, descriptor checks, the fixed-width
 * structs, and host placement in a singleton (no daemons). */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "knit.h"
#include "offload/offload.h"
#include "offload/tree.h"

static char err[256];

static const char *module_path(const char *name)
{
    static char p[1024];
    const char *root = getenv("ROOT"), *build = getenv("BUILD");
    snprintf(p, sizeof(p), "%s/%s/modules/%s.so", root ? root : ".", build ? build : "build", name);
    if (access(p, R_OK) != 0)
        KN_SKIP("%s not built", p);
    return p;
}

KN_TEST(struct_sizes)
{
    KN_CHECK_EQ(sizeof(kn_off_sqe_t), 256);
    KN_CHECK_EQ(sizeof(kn_off_cqe_t), 256);
    KN_CHECK_EQ(sizeof(kn_off_slot_t) % 64, 0);
    KN_CHECK_EQ(sizeof(knit_mod_geometry_t), 64);
    KN_CHECK_EQ(sizeof(knit_mod_request_t), 40);
    KN_CHECK(kn_off_seg_size(4) > kn_off_seg_size(1));
}

KN_TEST(refuses_not_elf)
{
    kn_mod_lib_t lib;
    KN_CHECK_EQ(kn_mod_open("hello, world", 12, &lib, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK_STR(err, "not an ELF file");
    KN_CHECK_EQ(kn_mod_open("", 0, &lib, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK_STR(err, "not an ELF file");
}

KN_TEST(refuses_wrong_arch_and_type)
{
    Elf64_Ehdr eh;
    memset(&eh, 0, sizeof(eh));
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS32;
    kn_mod_lib_t lib;
    KN_CHECK_EQ(kn_mod_open(&eh, sizeof(eh), &lib, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "wrong architecture: 32-bit"));
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_machine = EM_S390;
    KN_CHECK_EQ(kn_mod_open(&eh, sizeof(eh), &lib, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "wrong architecture: ELF for s390"));
#if defined(__x86_64__)
    eh.e_machine = EM_X86_64;
    eh.e_type = ET_EXEC;
    KN_CHECK_EQ(kn_mod_open(&eh, sizeof(eh), &lib, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "not a shared object"));
    eh.e_type = ET_DYN; /* a header alone: refused before dlopen */
    eh.e_ehsize = sizeof(eh);
    KN_CHECK_EQ(kn_mod_open(&eh, sizeof(eh), &lib, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "truncated or corrupt ELF file"));
#endif
}

static int32_t d_init(knit_mod_ctx_t *m, const knit_mod_services_t *s)
{
    (void)m, (void)s;
    return 0;
}

static void d_req(knit_mod_ctx_t *m, const knit_mod_request_t *r, const void *a)
{
    (void)m, (void)r, (void)a;
}

KN_TEST(descriptor_checks)
{
    knit_mod_descriptor_t d = {.abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(d), .name = "ok_name-1.x",
                               .init = d_init, .on_request = d_req};
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_OK);
    KN_CHECK_EQ(kn_mod_check_desc(NULL, err, sizeof(err)), KNIT_ERR_INVAL);
    d.abi_version = 1; /* modules built for ABI 1 keep loading */
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_OK);
    d.abi_version = KNIT_MOD_ABI_VERSION + 1;
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "wrong ABI version 3"));
    d.abi_version = 0;
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
    d.abi_version = KNIT_MOD_ABI_VERSION;
    d.name = "bad name";
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
    d.name = "";
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
    d.name = "this-name-is-far-too-long-for-a-module";
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
    d.name = "x";
    d.on_request = NULL;
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "no on_request"));
    d.on_request = d_req;
    d.size = 8;
    KN_CHECK_EQ(kn_mod_check_desc(&d, err, sizeof(err)), KNIT_ERR_INVAL);
}

KN_TEST(loads_real_module_repeatedly)
{
    const char *p = module_path("echo");
    void *bytes;
    size_t len;
    KN_CHECK_EQ(kn_mod_read_file(p, &bytes, &len, err, sizeof(err)), KNIT_OK);
    /* two at once must be two objects (dlopen would share one name) */
    kn_mod_lib_t a, b;
    KN_CHECK_EQ(kn_mod_open(bytes, len, &a, err, sizeof(err)), KNIT_OK);
    KN_CHECK_EQ(kn_mod_open(bytes, len, &b, err, sizeof(err)), KNIT_OK);
    KN_CHECK(a.dl != b.dl);
    const knit_mod_descriptor_t *d = a.entry();
    KN_CHECK_EQ(kn_mod_check_desc(d, err, sizeof(err)), KNIT_OK);
    KN_CHECK_STR(d->name, "echo");
    kn_mod_close(&a);
    kn_mod_close(&b);
    free(bytes);
    KN_CHECK_EQ(kn_mod_read_file("/nonexistent/x.so", &bytes, &len, err, sizeof(err)), KNIT_ERR_NOT_FOUND);
}

KN_TEST(cookie_digest)
{
    KN_CHECK(kn_off_cookie_digest("abc") == kn_off_cookie_digest("abc"));
    KN_CHECK(kn_off_cookie_digest("abc") != kn_off_cookie_digest("abd"));
}

/* A singleton: no daemons; host placement emulates agent + switch. */
KN_TEST(singleton_host_placement)
{
    char echo[1024], ring[1024];
    snprintf(echo, sizeof(echo), "%s", module_path("echo"));
    snprintf(ring, sizeof(ring), "%s", module_path("ring"));
    unsetenv("KNIT_BOOT_ADDR");
    knit_ctx_t *ctx;
    KN_CHECK_EQ(knit_init(NULL, NULL, &ctx), KNIT_OK);
    knit_module_t *m = NULL;
    KN_CHECK_EQ(knit_module_load(ctx, echo, KNIT_MODULE_AGENT, &m), KNIT_ERR_NOT_SUPPORTED);
    KN_CHECK(strstr(knit_module_last_error(ctx), "no agent"));
    KN_CHECK_EQ(knit_module_load(ctx, echo, KNIT_MODULE_HOST, &m), KNIT_OK);
    KN_CHECK_STR(knit_module_name(m), "echo");
    knit_mreq_t *r;
    char out[16];
    size_t len;
    KN_CHECK_EQ(knit_module_request(m, "hello", 6, &r), KNIT_OK);
    KN_CHECK_EQ(knit_request_wait(&r, out, sizeof(out), &len), KNIT_OK);
    KN_CHECK(r == NULL && len == 6 && !strcmp(out, "hello"));
    KN_CHECK_EQ(knit_module_request(m, "hello", 6, &r), KNIT_OK);
    KN_CHECK_EQ(knit_request_wait(&r, out, 2, &len), KNIT_ERR_TRUNCATE);
    KN_CHECK_EQ(knit_module_request(m, NULL, 1, &r), KNIT_ERR_INVAL);
    KN_CHECK_EQ(knit_module_unload(m), KNIT_OK);
    /* ring: agent 0 -> switch -> agent 0, delivered and completed */
    KN_CHECK_EQ(knit_module_load(ctx, ring, KNIT_MODULE_HOST, &m), KNIT_OK);
    int32_t path[4], posted[4];
    KN_CHECK_EQ(knit_module_post_recv(m, posted, sizeof(posted)), KNIT_OK);
    KN_CHECK_EQ(knit_module_request(m, "r", 1, &r), KNIT_OK);
    KN_CHECK_EQ(knit_request_wait(&r, path, sizeof(path), &len), KNIT_OK);
    KN_CHECK(len == 8 && path[0] == 0 && path[1] == -1);
    void *buf;
    int done;
    KN_CHECK_EQ(knit_module_recv_test(m, &done, &buf, &len), KNIT_OK);
    KN_CHECK(done && buf == posted && len == 8 && posted[1] == -1);
    KN_CHECK_EQ(knit_module_unload(m), KNIT_OK);
    knit_traffic_t t;
    KN_CHECK_EQ(knit_stats(ctx, NULL, &t), KNIT_OK);
    KN_CHECK_EQ(t.queue_in_ops, 0);
    KN_CHECK_EQ(knit_finalize(ctx), KNIT_OK);
}

/* The tree of switches: every node below exactly one switch of each level,
 * children in order covering their parent's nodes, parents and children
 * agreeing, and addresses <-> daemon ids both ways. */
static void check_tree(int nnodes, int fanin, int want_switches, int want_levels)
{
    kn_tree_t t;
    KN_CHECK_EQ(kn_tree_init(&t, nnodes, fanin), 0);
    KN_CHECK_EQ(t.nswitches, want_switches);
    KN_CHECK_EQ(t.nlevels, want_levels);
    knit_mod_place_t root;
    KN_CHECK_EQ(kn_tree_place(&t, KNIT_MOD_SWITCH, &root), KNIT_MOD_OK);
    KN_CHECK(root.parent == KNIT_MOD_NONE && root.first_node == 0 && root.nnodes == nnodes &&
             root.level == want_levels);
    for (int id = 0; id < nnodes + t.nswitches; id++) {
        int32_t a = kn_tree_addr(&t, id);
        KN_CHECK_EQ(kn_tree_id(&t, a), id);
        knit_mod_place_t p, q;
        KN_CHECK_EQ(kn_tree_place(&t, a, &p), KNIT_MOD_OK);
        if (a != KNIT_MOD_SWITCH) { /* my parent has me among its children, covering my nodes */
            KN_CHECK_EQ(kn_tree_place(&t, p.parent, &q), KNIT_MOD_OK);
            KN_CHECK_EQ(q.level, p.level + 1);
            int found = 0;
            for (int i = 0; i < q.nchildren; i++)
                found += q.first_child + i * q.child_step == a;
            KN_CHECK_EQ(found, 1);
            KN_CHECK(p.first_node >= q.first_node && p.first_node + p.nnodes <= q.first_node + q.nnodes);
        }
        if (a < 0) { /* my children cover my nodes, in order */
            KN_CHECK(p.nchildren >= 1 && p.nchildren <= fanin);
            int next = p.first_node;
            for (int i = 0; i < p.nchildren; i++) {
                KN_CHECK_EQ(kn_tree_place(&t, p.first_child + i * p.child_step, &q), KNIT_MOD_OK);
                KN_CHECK_EQ(q.first_node, next);
                next += q.nnodes;
            }
            KN_CHECK_EQ(next, p.first_node + p.nnodes);
            KN_CHECK_EQ(kn_tree_switch_node(&t, -1 - a), p.first_node);
        }
    }
    knit_mod_place_t p;
    KN_CHECK_EQ(kn_tree_place(&t, nnodes, &p), KNIT_MOD_ERR_RANGE);
    KN_CHECK_EQ(kn_tree_place(&t, KNIT_MOD_SWITCH_AT(t.nswitches), &p), KNIT_MOD_ERR_RANGE);
    KN_CHECK_EQ(kn_tree_place(&t, KNIT_MOD_NONE, &p), KNIT_MOD_ERR_RANGE);
}

KN_TEST(switch_tree)
{
    check_tree(1, 32, 1, 1);
    check_tree(8, 32, 1, 1);   /* a star */
    check_tree(32, 32, 1, 1);
    check_tree(33, 32, 3, 2);
    check_tree(8, 2, 7, 3);    /* the tests' three levels */
    check_tree(8, 4, 3, 2);
    check_tree(5, 2, 6, 3);    /* 3 + 2 + 1: an uneven one */
    check_tree(4096, 32, 4 + 128 + 1, 3);
    check_tree(4096, 2, 4095, 12);
    kn_tree_t t;
    KN_CHECK_EQ(kn_tree_init(&t, 8, 1), -1);
    KN_CHECK_EQ(kn_tree_init(&t, 0, 2), -1);
}
