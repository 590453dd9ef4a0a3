/* knit_init / knit_finalize: the process's place in the job, and the
 * layers started in order (util, boot, transports, p2p). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "boot/proto.h"
#include "coll/coll.h"
#include "core/ctx.h"
#include "core/launch.h"
#include "core/nodeshm.h"
#include "p2p/p2p.h"
#include "p2p/self.h"
#include "rma/rma.h"
#include "net/net.h"
#include "offload/offload.h"
#include "shm/shm.h"
#include "util/config.h"
#include "util/env.h"
#include "util/log.h"
#include "util/nodemap.h"
#include "util/time.h"

static knit_ctx_t *the_ctx;
/* The bootstrap connection of a failed knit_init_quiet: the caller reports
 * the failure through knit_abort(NULL, ...), which must still reach knitrun. */
static kn_boot_t *failed_boot;

static int env_int(const char *name, int def, int *ok)
{
    int x = def, r = kn_env_count(name, 1 << 30, &x);
    if (r < 0) {
        kn_error("%s: invalid value '%s' (expected a non-negative integer)", name, getenv(name));
        *ok = 0;
    }
    return r == 1 ? x : def;
}

knit_status_t kn_ctx_set_geometry(knit_ctx_t *ctx, const char *sizes, int size)
{
    int *first, nnodes = kn_node_sizes_parse(sizes, size, &first);
    if (nnodes < 0) {
        kn_error("%s: invalid node map '%s' for %d ranks", KN_ENV_NODE_SIZES, sizes, size);
        return KNIT_ERR_INVAL;
    }
    int *node_of = malloc((size_t)size * sizeof(int));
    if (!node_of) {
        free(first);
        return KNIT_ERR_NOMEM;
    }
    for (int n = 0; n < nnodes; n++)
        for (int r = first[n]; r < first[n + 1]; r++)
            node_of[r] = n;
    free(ctx->node_of);
    free(ctx->node_first);
    ctx->node_of = node_of;
    ctx->node_first = first;
    ctx->nnodes = nnodes;
    return KNIT_OK;
}

static void core_fatal(void *arg, const char *msg)
{
    knit_abort(arg, 1, msg);
}

static void transports_stop(knit_ctx_t *ctx)
{
    if (ctx->shm_tl)
        ctx->shm_tl->ops->destroy(ctx->shm_tl);
    if (ctx->self_tl)
        ctx->self_tl->ops->destroy(ctx->self_tl);
    if (ctx->net_tl)
        ctx->net_tl->ops->destroy(ctx->net_tl);
    kn_p2p_destroy(ctx->p2p);
    ctx->shm_tl = ctx->self_tl = ctx->net_tl = NULL;
    ctx->p2p = NULL;
}

static knit_status_t fence(knit_ctx_t *ctx)
{
    knit_status_t st = kn_boot_fence_wait(ctx->boot, 0);
    if (st != KNIT_OK)
        kn_error("bootstrap fence failed: %s", knit_strerror(st));
    return st;
}

/* Locality in one place: is peer reached over the network (else shared
 * memory, or the loopback transport for oneself)? */
static inline int kn_by_net(const knit_ctx_t *ctx, int peer)
{
    return peer != ctx->rank && (kn_cfg.net_only || ctx->node_of[peer] != ctx->node);
}

/* Open the network transport and publish its address (before a fence). */
static knit_status_t net_open(knit_ctx_t *ctx)
{
    unsigned char *mask = calloc((size_t)ctx->size, 1);
    if (!mask)
        return KNIT_ERR_NOMEM;
    for (int i = 0; i < ctx->size; i++)
        mask[i] = (unsigned char)kn_by_net(ctx, i);
    kn_net_params_t np = {
        .rank = ctx->rank, .size = ctx->size, .peers = mask,
        .provider = kn_cfg.net_provider, .iface = kn_cfg.net_iface,
        .credits = (unsigned)kn_cfg.net_credits, .bounce_size = kn_cfg.net_bounce_size,
        .eager_max = kn_cfg.net_eager_max,
        .tx_bufs = (unsigned)kn_cfg.net_tx_bufs, .inflight = (unsigned)kn_cfg.net_inflight,
        .rcache_max = kn_cfg.rcache_max, .rcache_verify = kn_cfg.rcache_verify,
        .timeout_ns = kn_cfg.net_timeout, .fatal = core_fatal, .fatal_arg = ctx,
    };
    knit_status_t st = kn_net_open(&np, kn_p2p_recv_cb(), ctx->p2p, &ctx->net_tl);
    free(mask);
    if (st != KNIT_OK)
        return st;
    char name[256], key[64];
    size_t len = sizeof(name);
    st = kn_net_name(ctx->net_tl, name, &len);
    if (st != KNIT_OK)
        return st;
    snprintf(key, sizeof(key), "knit.net.%d", ctx->rank);
    st = kn_boot_put(ctx->boot, key, name, len);
    if (st != KNIT_OK)
        kn_error("publishing the network address: %s", knit_strerror(st));
    return st;
}

/* After the fence: every network peer's address, and the engine's map. */
static knit_status_t net_connect(knit_ctx_t *ctx)
{
    for (int i = 0; i < ctx->size; i++) {
        if (!kn_by_net(ctx, i))
            continue;
        char name[256], key[64];
        size_t len;
        snprintf(key, sizeof(key), "knit.net.%d", i);
        knit_status_t st = kn_boot_get(ctx->boot, key, name, sizeof(name), &len);
        if (st != KNIT_OK) {
            kn_error("network address of rank %d: %s", i, knit_strerror(st));
            return st;
        }
        st = kn_net_connect(ctx->net_tl, i, name, len);
        if (st != KNIT_OK)
            return st;
    }
    for (int i = 0; i < ctx->size;) { /* runs of network peers */
        int j = i;
        while (j < ctx->size && kn_by_net(ctx, j))
            j++;
        if (j > i)
            kn_p2p_set_tl(ctx->p2p, ctx->net_tl, i, j - i);
        i = j + 1;
    }
    /* The first rank of every node checks that it reaches the others'
     * over the network, now, while every rank is starting: later
     * connections wait for peers at the application's pace, unbounded.
     * (After the engine has its transport: peers that are through may
     * send already.) */
    if (ctx->local_rank == 0 && ctx->nnodes > 1) {
        int *leaders = malloc((size_t)ctx->nnodes * sizeof(int)), n = 0;
        if (!leaders)
            return KNIT_ERR_NOMEM;
        for (int node = 0; node < ctx->nnodes; node++)
            if (node != ctx->node && kn_by_net(ctx, ctx->node_first[node]))
                leaders[n++] = ctx->node_first[node];
        knit_status_t st = kn_net_wireup(ctx->net_tl, leaders, n);
        free(leaders);
        if (st != KNIT_OK)
            return st;
    }
    return KNIT_OK;
}

/*
 * The p2p engine and its transports.  The node segment is created by local
 * rank 0, attached by all after a fence, and probed (and unlinked) after a
 * second one; every rank runs both fences, whatever its node looks like.
 */
static knit_status_t transports_start(knit_ctx_t *ctx)
{
    kn_p2p_params_t pp = {
        .rank = ctx->rank, .size = ctx->size, .node_of = ctx->node_of, .node = ctx->node,
        .fatal = core_fatal, .fatal_arg = ctx,
    };
    knit_status_t st = kn_p2p_create(&pp, &ctx->p2p);
    if (st != KNIT_OK)
        return st;
    /* every rank plans alike, and fails alike; local rank 0 says why, the
     * others defer to its report (KNIT_ERR_PEER) */
    kn_node_shm_t plan;
    char why[600];
    int agent = !kn_boot_is_singleton(ctx->boot) && kn_cfg.offload;
    knit_status_t create_st = kn_node_shm_plan(&kn_cfg, ctx->local_size, agent, &plan, why, sizeof(why));
    if (create_st != KNIT_OK) {
        if (ctx->local_rank == 0) {
            kn_error("%s", why);
        } else {
            kn_debug("%s", why);
            create_st = KNIT_ERR_PEER;
        }
    }
    kn_shm_params_t sp = plan.params;
    sp.jobid = ctx->jobid;
    sp.node = ctx->node;
    sp.local_rank = ctx->local_rank;
    sp.first_rank = ctx->first_local;
    int use_shm = ctx->local_size > 1 && !kn_cfg.net_only;
    int use_net = 0;
    for (int i = 0; i < ctx->size; i++)
        use_net |= kn_by_net(ctx, i);
    char key[64];
    snprintf(key, sizeof(key), "knit.shm.n%d", ctx->node);
    if (use_shm && ctx->local_rank == 0 && create_st == KNIT_OK) {
        /* knitrun checked this host before it started us; another launcher
         * did not.  The node's other ranks learn why it failed (else they
         * would each report the segment as missing): "" or the reason,
         * before the fence */
        create_st = kn_node_shm_fits(&plan, 1, kn_node_shm_free(), why, sizeof(why));
        if (create_st == KNIT_OK) {
            why[0] = '\0';
            kn_log_capture_t cap = kn_log_capture_begin(why, sizeof(why));
            create_st = kn_shm_create(&sp);
            kn_log_capture_end(cap);
            if (create_st != KNIT_OK && !why[0])
                snprintf(why, sizeof(why), "cannot create the node segment: %s", knit_strerror(create_st));
        }
        if (create_st != KNIT_OK)
            kn_error("%s", why);
        st = kn_boot_put(ctx->boot, key, create_st == KNIT_OK ? "" : why,
                         create_st == KNIT_OK ? 0 : strlen(why));
        if (st != KNIT_OK && create_st == KNIT_OK)
            create_st = st;
    }
    /* everyone fences, even after a failure, so that no one waits forever */
    st = fence(ctx);
    if (st != KNIT_OK)
        return st;
    if (create_st != KNIT_OK)
        return create_st;
    if (use_shm) {
        kn_log_capture_t cap = kn_log_capture_begin(why, sizeof(why));
        st = kn_shm_attach(&sp, kn_p2p_recv_cb(), ctx->p2p, &ctx->shm_tl);
        kn_log_capture_end(cap);
        if (st != KNIT_OK) {
            /* the creator's failure, if it failed, is the cause (its key was
             * put before the fence: the get answers at once) */
            char cause[512];
            size_t len = 0;
            if (ctx->local_rank != 0 &&
                kn_boot_get(ctx->boot, key, cause, sizeof(cause) - 1, &len) == KNIT_OK && len > 0) {
                cause[len] = '\0';
                kn_error("rank %d could not create the node segment: %s", ctx->first_local, cause);
                return KNIT_ERR_PEER;
            }
            kn_error("%s", why[0] ? why : knit_strerror(st));
            return st;
        }
    }
    if (use_net) {
        st = net_open(ctx);
        if (st != KNIT_OK)
            return st;
    }
    st = fence(ctx);
    if (st != KNIT_OK)
        return st;
    if (use_net) {
        st = net_connect(ctx);
        if (st != KNIT_OK)
            return st;
    }
    if (use_shm) {
        st = kn_shm_ready(ctx->shm_tl);
        if (st != KNIT_OK)
            return st;
        kn_p2p_set_tl(ctx->p2p, ctx->shm_tl, ctx->first_local, ctx->local_size);
    }
    st = kn_self_create(ctx->rank, kn_p2p_recv_cb(), ctx->p2p, &ctx->self_tl);
    if (st != KNIT_OK)
        return st;
    kn_p2p_set_tl(ctx->p2p, ctx->self_tl, ctx->rank, 1);
    /* emulated nodes share the host's cores: count every rank on the host */
    int ok = 1, host_procs = env_int(KN_ENV_HOST_PROCS, ctx->local_size, &ok);
    kn_p2p_set_wait(ctx->p2p, ok && host_procs > ctx->local_size ? host_procs : ctx->local_size);
    return KNIT_OK;
}

/* keep_boot: after a failure the bootstrap connection stays open in
 * failed_boot (knit_init_quiet) */
static knit_status_t init(int *argc, char ***argv, knit_ctx_t **out, int keep_boot)
{
    (void)argc;
    (void)argv;
    if (!out)
        return KNIT_ERR_INVAL;
    if (the_ctx)
        return KNIT_ERR_STATE;
    if (failed_boot) { /* a second try after a failure */
        kn_boot_close(failed_boot);
        failed_boot = NULL;
    }
    knit_status_t st = kn_config_load();
    if (st != KNIT_OK)
        return st;
    st = kn_launch_start(); /* under another launcher: knitrun's environment */
    if (st != KNIT_OK)
        return st;

    knit_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return KNIT_ERR_NOMEM;
    int ok = 1;
    ctx->size = env_int(KN_ENV_SIZE, 1, &ok);
    ctx->rank = env_int(KN_ENV_RANK, 0, &ok);
    ctx->node = env_int(KN_ENV_NODE, 0, &ok);
    if (!ok || ctx->size < 1 || ctx->rank >= ctx->size) {
        if (ok)
            kn_error("%s=%d is not below %s=%d", KN_ENV_RANK, ctx->rank, KN_ENV_SIZE, ctx->size);
        st = KNIT_ERR_INVAL;
        goto err;
    }
    kn_log_set_prefix("rank %d", ctx->rank);

    char one[16];
    const char *sizes = getenv(KN_ENV_NODE_SIZES);
    if (!sizes) {
        snprintf(one, sizeof(one), "%d", ctx->size); /* all on one node */
        sizes = one;
    }
    st = kn_ctx_set_geometry(ctx, sizes, ctx->size);
    if (st != KNIT_OK)
        goto err;
    if (ctx->node_of[ctx->rank] != ctx->node) {
        kn_error("%s=%d disagrees with %s for rank %d", KN_ENV_NODE, ctx->node,
                 KN_ENV_NODE_SIZES, ctx->rank);
        st = KNIT_ERR_INVAL;
        goto err;
    }
    ctx->first_local = ctx->node_first[ctx->node];
    ctx->local_size = ctx->node_first[ctx->node + 1] - ctx->first_local;
    ctx->local_rank = ctx->rank - ctx->first_local;

    const char *jobid = getenv(KN_ENV_JOBID);
    if (jobid)
        snprintf(ctx->jobid, sizeof(ctx->jobid), "%s", jobid);
    else
        snprintf(ctx->jobid, sizeof(ctx->jobid), "s%d", (int)getpid()); /* singleton */
    /* the host's name in the job (knitrun's host list), else the kernel's */
    const char *host = getenv(KN_ENV_HOSTNAME);
    if (host && *host)
        snprintf(ctx->hostname, sizeof(ctx->hostname), "%s", host);
    else if (gethostname(ctx->hostname, sizeof(ctx->hostname)) < 0)
        snprintf(ctx->hostname, sizeof(ctx->hostname), "localhost");
    ctx->hostname[sizeof(ctx->hostname) - 1] = '\0';

    st = kn_boot_connect_env(&ctx->boot);
    if (st != KNIT_OK) {
        kn_error("cannot reach the bootstrap store: %s", knit_strerror(st));
        goto err;
    }
    st = kn_launch_watch(kn_boot_fd(ctx->boot));
    if (st != KNIT_OK)
        goto err_boot;
    st = transports_start(ctx);
    if (st != KNIT_OK)
        goto err_boot;
    /* offload: connect to this node's agent when knitrun started one */
    kn_off_params_t op = {
        .ctx = ctx, .rank = ctx->rank, .size = ctx->size, .node = ctx->node, .nnodes = ctx->nnodes,
        .local_rank = ctx->local_rank, .local_size = ctx->local_size, .first_local = ctx->first_local,
        .node_of = ctx->node_of, .jobid = ctx->jobid, .boot = ctx->boot,
        .agent = !kn_boot_is_singleton(ctx->boot) && kn_cfg.offload, .p2p = ctx->p2p,
    };
    st = kn_off_open(&op);
    if (st != KNIT_OK)
        goto err_boot;
    kn_coll_params_t cp = {.ctx = ctx, .p2p = ctx->p2p, .rank = ctx->rank, .size = ctx->size,
                           .node_of = ctx->node_of, .jobid = ctx->jobid};
    st = kn_coll_create(&cp, &ctx->coll); /* owns the world communicator */
    if (st != KNIT_OK)
        goto err_boot;
    (void)kn_coll_offload_start(ctx); /* KNIT_COLL_OFFLOAD=on: the agents' collectives */
    kn_rma_params_t rp = {.ctx = ctx, .p2p = ctx->p2p, .net = ctx->net_tl, .rank = ctx->rank, .node = ctx->node,
                          .agents = op.agent};
    st = kn_rma_open(&rp); /* collective: loads its module where there are agents */
    if (st != KNIT_OK)
        goto err_boot;
    the_ctx = ctx;
    *out = ctx;
    return KNIT_OK;

err_boot:
    kn_off_close();
    transports_stop(ctx);
    if (keep_boot)
        failed_boot = ctx->boot;
    else
        kn_boot_close(ctx->boot);
err:
    free(ctx->node_of);
    free(ctx->node_first);
    free(ctx);
    return st;
}

knit_ctx_t *knit_ctx_current(void)
{
    return the_ctx;
}

knit_status_t knit_init(int *argc, char ***argv, knit_ctx_t **out)
{
    return init(argc, argv, out, 0);
}

knit_status_t knit_init_quiet(int *argc, char ***argv, char *why, size_t len, knit_ctx_t **out)
{
    char first[512];
    kn_log_capture_t prev = kn_log_capture_begin(first, sizeof(first));
    knit_status_t st = init(argc, argv, out, 1);
    kn_log_capture_end(prev);
    if (st == KNIT_OK) {
        if (first[0]) /* an error that did not stop the start: said as usual */
            kn_error("%s", first);
    } else if (why && len) {
        snprintf(why, len, "%s", first[0] ? first : knit_strerror(st));
    }
    return st;
}

/* KNIT_STATS: what crossed between this rank and its "network interface":
 * the network (libfabric: messages to and from other nodes, with their
 * headers; RMA counted at the side that issues it) and its node's agent
 * (queue entries, the agent's reads and writes of the rank's memory). */
static void report_bus(knit_ctx_t *ctx)
{
    kn_net_traffic_t t = {0};
    if (ctx->net_tl)
        kn_net_traffic(ctx->net_tl, &t);
    knit_traffic_t a;
    if (knit_stats(ctx, NULL, &a) != KNIT_OK)
        memset(&a, 0, sizeof(a));
    uint64_t net_out = t.sent_bytes + t.write_bytes, net_in = t.recv_bytes + t.read_bytes;
    uint64_t to_agent = a.queue_in_bytes + a.agent_read_bytes, from_agent = a.queue_out_bytes + a.agent_write_bytes;
    char b[5][32];
    kn_fmt_bytes(net_out, b[0], 32);
    kn_fmt_bytes(net_in, b[1], 32);
    kn_fmt_bytes(to_agent, b[2], 32);
    kn_fmt_bytes(from_agent, b[3], 32);
    kn_fmt_bytes(net_out + net_in + to_agent + from_agent, b[4], 32);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr,
            "knit[rank %d] stats: bus: network out %s, in %s (%llu, %llu msgs); agent out %s, in %s; total %s "
            "(%llu B); cpu %.3f ms\n",
            ctx->rank, b[0], b[1], (unsigned long long)t.sent_msgs, (unsigned long long)t.recv_msgs, b[2], b[3],
            b[4], (unsigned long long)(net_out + net_in + to_agent + from_agent), kn_rusage_ms(&ru, NULL, NULL));
}

knit_status_t knit_finalize(knit_ctx_t *ctx)
{
    if (!ctx || ctx != the_ctx || ctx->finalized)
        return KNIT_ERR_STATE;
    if (kn_cfg.stats)
        report_bus(ctx);
    kn_rma_close();
    kn_off_close(); /* the agent forgets this rank's modules and buffers */
    if (ctx->net_tl)
        kn_net_quiesce(ctx->net_tl); /* what we sent leaves before we stop progressing */
    /* unbounded: ranks finish their work at their own pace, and a rank
     * that dies on the way ends the job through its launcher */
    knit_status_t st = kn_boot_fence_wait(ctx->boot, 0);
    kn_coll_destroy(ctx->coll);
    ctx->coll = NULL;
    transports_stop(ctx);
    kn_launch_unwatch();
    knit_status_t st2 = kn_boot_finalize(ctx->boot);
    kn_launch_end();
    if (st == KNIT_OK)
        st = st2;
    ctx->finalized = 1;
    free(ctx->node_of);
    free(ctx->node_first);
    free(ctx);
    the_ctx = NULL;
    return st;
}

knit_status_t knit_set_finalize_name(knit_ctx_t *ctx, const char *name)
{
    if (!ctx || ctx != the_ctx || !name)
        return KNIT_ERR_INVAL;
    size_t len = strlen(name);
    if (len == 0 || len > KN_BOOT_FINALIZE_CALL_MAX || (name[0] >= '0' && name[0] <= '9'))
        return KNIT_ERR_INVAL;
    for (size_t i = 0; i < len; i++)
        if (!(name[i] == '_' || (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
              (name[i] >= '0' && name[i] <= '9')))
            return KNIT_ERR_INVAL;
    return kn_boot_put(ctx->boot, KN_BOOT_KEY_FINALIZE_CALL, name, len);
}

void knit_abort(knit_ctx_t *ctx, int code, const char *msg)
{
    if (code == 0)
        code = 1;
    if (!ctx)
        ctx = the_ctx;
    kn_boot_t *b = ctx ? ctx->boot : failed_boot;
    if (kn_launch_active()) {
        /* another launcher ends the job; knit's store stops the others at once */
        kn_error("abort (code %d): %s", code, msg ? msg : "");
        if (b)
            kn_boot_abort(b, code, msg ? msg : "");
        kn_launch_abort(code, msg);
    }
    if (b && !kn_boot_is_singleton(b))
        kn_boot_abort(b, code, msg ? msg : ""); /* knitrun says why */
    else
        kn_error("abort (code %d): %s", code, msg ? msg : "");
    _exit(code & 0xff ? code & 0xff : 1);
}

/* How long an error caused by another process waits for that process's
 * own report to end the job: it comes within milliseconds when it comes
 * (the cause is told at once, and knitrun stops every process on the
 * first report); the bound only matters when the other process handles
 * its error and goes on.  Generous for a host whose cpus are shared by
 * many more processes than it has. */
#define ABORT_DEFER_NS (5 * KN_NSEC_PER_SEC)

void knit_abort_secondary(knit_ctx_t *ctx, int code, const char *msg)
{
    if (!ctx)
        ctx = the_ctx;
    kn_boot_t *b = ctx ? ctx->boot : failed_boot;
    if (b && !kn_boot_is_singleton(b)) {
        /* progress meanwhile: what tells the other process may still wait
         * for a credit in our queue towards it */
        uint64_t end = kn_time_ns() + ABORT_DEFER_NS;
        struct timespec ms = {0, 1000000};
        while (kn_time_ns() < end) {
            if (ctx && ctx->p2p)
                kn_p2p_progress(ctx->p2p);
            nanosleep(&ms, NULL);
        }
    }
    knit_abort(ctx, code, msg);
}

int knit_rank(const knit_ctx_t *c) { return c->rank; }
int knit_size(const knit_ctx_t *c) { return c->size; }
int knit_node(const knit_ctx_t *c) { return c->node; }
int knit_nnodes(const knit_ctx_t *c) { return c->nnodes; }
int knit_local_rank(const knit_ctx_t *c) { return c->local_rank; }
int knit_local_size(const knit_ctx_t *c) { return c->local_size; }
int knit_first_local(const knit_ctx_t *c) { return c->first_local; }

int knit_node_of(const knit_ctx_t *c, int rank)
{
    return rank >= 0 && rank < c->size ? c->node_of[rank] : -1;
}
