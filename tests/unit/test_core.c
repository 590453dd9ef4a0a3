/* core: the node's shared-memory plan (core/nodeshm.h), the one function
 * knitrun and knit_init check jobs with. */
#include <stdio.h>
#include <string.h>

#include "core/nodeshm.h"
#include "harness.h"
#include "util/config.h"

static struct kn_config defaults(void)
{
    KN_CHECK_EQ(kn_config_load(), KNIT_OK);
    struct kn_config c = kn_cfg;
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        KN_CHECK_EQ(kn_config_parse(e, e->def, (char *)&c + e->offset, NULL, 0), KNIT_OK);
    }
    return c;
}

KN_TEST(plan_128_ranks_fits_256MiB)
{
    struct kn_config c = defaults();
    kn_node_shm_t p;
    char msg[700];
    KN_CHECK_EQ(kn_node_shm_plan(&c, 128, 1, &p, msg, sizeof(msg)), KNIT_OK);
    KN_CHECK_EQ(c.shm_max, 256u << 20);
    KN_CHECK(p.full <= c.shm_max);
    KN_CHECK(p.p2p + p.agent + p.budget <= c.shm_max);
    KN_CHECK(p.budget >= p.coll); /* the world's collectives' segment always fits */
    KN_CHECK(p.boxes > 128 && p.boxes <= 128 * 8);
    KN_CHECK(p.start < 48u << 20); /* 38.7 MiB at start */
    KN_CHECK_EQ(p.start, p.p2p_start + p.agent);
    /* the boxes take at most half of what is left above the minimum */
    KN_CHECK(p.p2p - (p.minimum - p.coll - p.agent) <= (c.shm_max - p.minimum) / 2);
    /* linear: 256 ranks start with about twice 128's */
    kn_node_shm_t q;
    KN_CHECK_EQ(kn_node_shm_plan(&c, 256, 1, &q, msg, sizeof(msg)), KNIT_OK);
    KN_CHECK(q.start > 2 * p.start - (1u << 20) && q.start < 2 * p.start + (1u << 20));
}

KN_TEST(plan_refuses_what_the_cap_cannot_hold)
{
    struct kn_config c = defaults();
    kn_node_shm_t p;
    char msg[700];
    KN_CHECK_EQ(kn_node_shm_plan(&c, 1000, 1, &p, msg, sizeof(msg)), KNIT_ERR_NOMEM);
    KN_CHECK_STR(msg, "1000 ranks on a node need at least 301.6 MiB of shared memory (/dev/shm), more than "
                      "KNIT_SHM_MAX=256 MiB allows: set KNIT_SHM_MAX=302m or more, or run fewer ranks per node");
    /* the suggestion is enough */
    c.shm_max = 302u << 20;
    KN_CHECK_EQ(kn_node_shm_plan(&c, 1000, 1, &p, msg, sizeof(msg)), KNIT_OK);
    KN_CHECK(p.full <= c.shm_max);
    /* no limit */
    c.shm_max = 0;
    KN_CHECK_EQ(kn_node_shm_plan(&c, 1000, 1, &p, msg, sizeof(msg)), KNIT_OK);
    KN_CHECK_EQ(p.boxes, 8000);
    KN_CHECK_EQ(p.budget, 0);
    /* bad settings are named */
    c = defaults();
    c.shm_fastboxes = -1;
    KN_CHECK_EQ(kn_node_shm_plan(&c, 4, 1, &p, msg, sizeof(msg)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(msg, "KNIT_SHM_FASTBOXES=-1") != NULL);
}

KN_TEST(fits_checks_free_space_at_start)
{
    struct kn_config c = defaults();
    kn_node_shm_t p[2];
    char msg[700];
    KN_CHECK_EQ(kn_node_shm_plan(&c, 16, 1, &p[0], msg, sizeof(msg)), KNIT_OK);
    p[1] = p[0];
    KN_CHECK_EQ(kn_node_shm_fits(p, 1, p[0].start, msg, sizeof(msg)), KNIT_OK);
    KN_CHECK_EQ(kn_node_shm_fits(p, 1, UINT64_MAX, msg, sizeof(msg)), KNIT_OK);
    KN_CHECK_EQ(kn_node_shm_fits(p, 1, p[0].start - 1, msg, sizeof(msg)), KNIT_ERR_NOMEM);
    KN_CHECK(strstr(msg, "set KNIT_SHM_BUFFER=128k or less") != NULL);
    /* two emulated nodes on the host need both */
    KN_CHECK_EQ(kn_node_shm_fits(p, 2, 2 * p[0].start - 1, msg, sizeof(msg)), KNIT_ERR_NOMEM);
    KN_CHECK(strstr(msg, "2 nodes on this host") != NULL);
    KN_CHECK_EQ(kn_node_shm_fits(p, 2, 2 * p[0].start, msg, sizeof(msg)), KNIT_OK);
    /* nothing fits: no setting to suggest */
    KN_CHECK_EQ(kn_node_shm_fits(p, 1, 4096, msg, sizeof(msg)), KNIT_ERR_NOMEM);
    KN_CHECK(strstr(msg, "free space in /dev/shm, or run fewer ranks per node") != NULL);
}
