/* The ranks' side of offload: objects shared by api.c (queue client,
 * public calls) and host.c (host placement: the module wrapper). */
#ifndef KN_OFFLOAD_HOST_H
#define KN_OFFLOAD_HOST_H

#include "offload/offload.h"
#include "util/list.h"

typedef struct kn_hmod kn_hmod_t;

struct knit_module {
    kn_list_t link;          /* in the client's list */
    int where;
    uint32_t id;             /* job-wide (agent, switch placements) */
    char name[KNIT_MOD_NAME_MAX];
    kn_list_t posted;        /* buffers for deliver(), oldest first */
    kn_list_t delivered;     /* filled, for recv_test */
    kn_hmod_t *host;         /* host placement */
};

struct knit_mreq {
    knit_module_t *mod;
    uint64_t id;             /* in the client's table; 0 when not there */
    int kind;
    int done, fetching, host;
    knit_status_t status;
    uint64_t aux;
    uint64_t len;            /* result bytes */
    uint32_t inl_len;
    unsigned char inl[KN_OFF_INLINE];
    void *big;               /* result of more than KN_OFF_INLINE bytes */
};

const kn_off_params_t *kn_off_params(void);
const int *kn_off_node_first(void);
void kn_off_set_error(const char *msg);
void kn_off_module_free(knit_module_t *m);
int32_t kn_off_host_deliver(knit_module_t *m, const void *data, uint64_t len);
knit_status_t kn_off_builtin_request(knit_mreq_t **out);

/* host.c */
knit_status_t kn_host_load(knit_module_t *m, const char *path);
void kn_host_unload(knit_module_t *m);
knit_status_t kn_host_request(knit_module_t *m, knit_mreq_t *r, const void *args, size_t len);
/* Run queued messages and due timers of every host module: how many. */
int kn_host_progress(void);

#endif
