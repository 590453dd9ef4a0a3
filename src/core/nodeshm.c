/* The shared memory a job takes on a node (nodeshm.h). */
#include "core/nodeshm.h"

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "coll/coll.h"
#include "offload/offload.h"
#include "util/compiler.h"

#define MIB (1024.0 * 1024.0)

static int int_in(int64_t v, int64_t lo, int64_t hi, const char *name, char *msg, size_t len)
{
    if (v >= lo && v <= hi)
        return 1;
    snprintf(msg, len, "KNIT_%s=%lld is out of range (%lld to %lld)", name, (long long)v, (long long)lo,
             (long long)hi);
    return 0;
}

/* "12.3 MiB", or "256 MiB" for whole ones. */
static const char *mib(uint64_t b, char *buf, size_t len)
{
    if (b % (1u << 20) == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
    else
        snprintf(buf, len, "%.1f MiB", (double)b / MIB);
    return buf;
}

knit_status_t kn_node_shm_plan(const struct kn_config *cfg, int ranks, int offload, kn_node_shm_t *out, char *msg,
                               size_t len)
{
    memset(out, 0, sizeof(*out));
    msg[0] = '\0';
    out->ranks = ranks;
    out->offload = offload;
    out->cap = cfg->shm_max;
    if (!int_in(cfg->shm_queue, 2, 1 << 16, "SHM_QUEUE", msg, len) ||
        !int_in(cfg->shm_ring, 2, 1 << 16, "SHM_RING", msg, len) ||
        !int_in(cfg->shm_fastboxes, 0, 65535, "SHM_FASTBOXES", msg, len) ||
        !int_in(cfg->shm_fastbox_after, 0, UINT32_MAX, "SHM_FASTBOX_AFTER", msg, len))
        return KNIT_ERR_INVAL;
    kn_shm_params_t *p = &out->params;
    *p = (kn_shm_params_t){
        .local_size = ranks, .cma_mode = cfg->cma, .queue_entries = (unsigned)cfg->shm_queue,
        .buf_size = cfg->shm_buffer, .ring_entries = (unsigned)cfg->shm_ring,
        .fbox_max = (unsigned)cfg->shm_fastboxes, .fbox_after = (unsigned)cfg->shm_fastbox_after,
        .coop_chunk = cfg->coop_chunk, .membarrier = cfg->shm_membarrier,
    };
    out->coll = kn_shmc_segment_bytes(cfg, ranks);
    out->agent = offload ? kn_off_seg_size((unsigned)ranks) : 0;
    int with_p2p = ranks > 1 && !cfg->net_only;
    uint64_t others = out->coll + out->agent;
    kn_shm_layout_t lay = {0};
    if (with_p2p && kn_shm_layout(p, &lay) != KNIT_OK) { /* unlimited: the minimum, and every box wanted */
        snprintf(msg, len, "invalid KNIT_SHM_* setting (see above)");
        return KNIT_ERR_INVAL;
    }
    out->minimum = lay.minimum + others;
    char a[32], b[32];
    if (out->cap && out->minimum > out->cap) {
        snprintf(msg, len,
                 "%d ranks on a node need at least %s of shared memory (/dev/shm), more than KNIT_SHM_MAX=%s "
                 "allows: set KNIT_SHM_MAX=%llum or more, or run fewer ranks per node",
                 ranks, mib(out->minimum, a, sizeof(a)), mib(out->cap, b, sizeof(b)),
                 (unsigned long long)((out->minimum + (1u << 20) - 1) >> 20));
        return KNIT_ERR_NOMEM;
    }
    /* fast boxes take at most half of what the cap leaves beyond the
     * minimum; collectives' segments (the world's always fits) the rest */
    if (with_p2p && out->cap) {
        p->max_bytes = lay.minimum + (out->cap - out->minimum) / 2;
        if (kn_shm_layout(p, &lay) != KNIT_OK) {
            snprintf(msg, len, "invalid KNIT_SHM_* setting (see above)");
            return KNIT_ERR_INVAL;
        }
    }
    out->p2p = with_p2p ? lay.size : 0;
    out->p2p_start = with_p2p ? lay.reserved : 0;
    out->boxes = lay.boxes;
    out->box_size = lay.box_size;
    out->budget = out->cap ? out->cap - out->p2p - out->agent : 0;
    p->budget = out->budget;
    out->start = out->p2p_start + out->agent;
    out->full = out->p2p + out->coll + out->agent;
    return KNIT_OK;
}

/* What the nodes of plans allocate at start with a send buffer of buf
 * bytes (0: theirs). */
static uint64_t start_with(const kn_node_shm_t *plans, int nplans, size_t buf)
{
    uint64_t sum = 0;
    for (int i = 0; i < nplans; i++) {
        if (!buf || !plans[i].p2p) {
            sum += plans[i].start;
            continue;
        }
        kn_shm_params_t p = plans[i].params;
        p.buf_size = buf;
        kn_shm_layout_t lay;
        if (kn_shm_layout(&p, &lay) != KNIT_OK)
            return UINT64_MAX;
        sum += lay.reserved + plans[i].agent;
    }
    return sum;
}

knit_status_t kn_node_shm_fits(const kn_node_shm_t *plans, int nplans, uint64_t free_bytes, char *msg,
                               size_t len)
{
    uint64_t start = start_with(plans, nplans, 0), full = 0;
    for (int i = 0; i < nplans; i++)
        full += plans[i].full;
    if (free_bytes == UINT64_MAX || start <= free_bytes)
        return KNIT_OK;
    char a[32], b[32], c[32], where[96];
    if (nplans > 1)
        snprintf(where, sizeof(where), "%d nodes on this host", nplans);
    else
        snprintf(where, sizeof(where), "%d ranks", plans[0].ranks);
    /* the largest send buffer that would fit (a power of two, 4k at least) */
    char fix[96] = "free space in /dev/shm, or run fewer ranks per node";
    for (size_t buf = plans[0].params.buf_size / 2; buf >= 4096; buf /= 2) {
        if (start_with(plans, nplans, buf) <= free_bytes) {
            snprintf(fix, sizeof(fix), "set KNIT_SHM_BUFFER=%zuk or less, or free space in /dev/shm", buf >> 10);
            break;
        }
    }
    snprintf(msg, len,
             "the job needs %s of shared memory at start (/dev/shm, %s; up to %s with its collectives' "
             "segment and every fast box), but /dev/shm has %s free: %s",
             mib(start, a, sizeof(a)), where, mib(full, c, sizeof(c)), mib(free_bytes, b, sizeof(b)), fix);
    return KNIT_ERR_NOMEM;
}

uint64_t kn_node_shm_free(void)
{
    struct statvfs v;
    if (statvfs("/dev/shm", &v) < 0)
        return UINT64_MAX;
    return (uint64_t)v.f_bavail * v.f_frsize;
}
