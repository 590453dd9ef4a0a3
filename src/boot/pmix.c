/*
 * PMIx client: Debian's libpmix, opened with dlopen when a job runs under
 * a PMIx server (PMIX_RANK, PMIX_NAMESPACE), so that a process started by
 * knitrun never loads it.  Only types come from the header.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "boot/launcher.h"

static struct {
    pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
    pmix_status_t (*finalize)(const pmix_info_t *, size_t);
    pmix_status_t (*get)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t, pmix_value_t **);
    pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
    pmix_status_t (*commit)(void);
    pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
    pmix_status_t (*abort)(int, const char *, pmix_proc_t *, size_t);
    void (*value_destruct)(pmix_value_t *);
    const char *(*error_string)(pmix_status_t);
    pmix_proc_t me;
} X;

static void release(pmix_value_t *v)
{
    if (!v)
        return;
    X.value_destruct(v);
    free(v);
}

static knit_status_t pmix_init(kn_launcher_t *l, char *why, size_t len)
{
    void *h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, len, "PMIX_RANK is set but libpmix cannot be loaded (%s): install libpmix2", dlerror());
        return KNIT_ERR_NOT_SUPPORTED;
    }
#define SYM(f, name) (X.f = (__typeof__(X.f))dlsym(h, name))
    if (!SYM(init, "PMIx_Init") || !SYM(finalize, "PMIx_Finalize") || !SYM(get, "PMIx_Get") ||
        !SYM(put, "PMIx_Put") || !SYM(commit, "PMIx_Commit") || !SYM(fence, "PMIx_Fence") ||
        !SYM(abort, "PMIx_Abort") || !SYM(value_destruct, "PMIx_Value_destruct") ||
        !SYM(error_string, "PMIx_Error_string")) {
        snprintf(why, len, "libpmix.so.2 lacks a function knit needs (PMIx_Init ... PMIx_Value_destruct)");
        return KNIT_ERR_NOT_SUPPORTED;
    }
#undef SYM
    pmix_status_t rc = X.init(&X.me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        snprintf(why, len, "PMIx_Init: %s (is the PMIx server of PMIX_NAMESPACE=%s still there?)",
                 X.error_string(rc), getenv("PMIX_NAMESPACE") ? getenv("PMIX_NAMESPACE") : "");
        return KNIT_ERR_IO;
    }
    pmix_proc_t all = X.me;
    all.rank = PMIX_RANK_WILDCARD;
    pmix_value_t *v = NULL;
    rc = X.get(&all, PMIX_JOB_SIZE, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->type != PMIX_UINT32) {
        snprintf(why, len, "PMIx_Get(PMIX_JOB_SIZE): %s", rc == PMIX_SUCCESS ? "not a uint32" : X.error_string(rc));
        release(v);
        return KNIT_ERR_PROTO;
    }
    l->size = (int)v->data.uint32;
    l->rank = (int)X.me.rank;
    release(v);
    return KNIT_OK;
}

/* The launcher's node id of every rank; a server without PMIX_NODEID
 * (older Slurm plugins) gives host names, numbered as they first come. */
static int node_ids(kn_launcher_t *l, int *node_of)
{
    for (int r = 0; r < l->size; r++) {
        pmix_proc_t p = X.me;
        p.rank = (pmix_rank_t)r;
        pmix_value_t *v = NULL;
        int ok = X.get(&p, PMIX_NODEID, NULL, 0, &v) == PMIX_SUCCESS && v->type == PMIX_UINT32;
        if (ok)
            node_of[r] = (int)v->data.uint32;
        release(v);
        if (!ok)
            return 0;
    }
    return 1;
}

static knit_status_t pmix_nodes(kn_launcher_t *l, int *node_of, char *why, size_t len)
{
    if (node_ids(l, node_of))
        return KNIT_OK;
    char **hosts = calloc((size_t)l->size, sizeof(char *));
    int nhosts = 0;
    knit_status_t st = hosts ? KNIT_OK : KNIT_ERR_NOMEM;
    for (int r = 0; r < l->size && st == KNIT_OK; r++) {
        pmix_proc_t p = X.me;
        p.rank = (pmix_rank_t)r;
        pmix_value_t *v = NULL;
        pmix_status_t rc = X.get(&p, PMIX_HOSTNAME, NULL, 0, &v);
        if (rc != PMIX_SUCCESS || v->type != PMIX_STRING) {
            snprintf(why, len, "PMIx gives neither the node id nor the host name of rank %d", r);
            st = KNIT_ERR_PROTO;
        } else {
            int n = 0;
            while (n < nhosts && strcmp(hosts[n], v->data.string))
                n++;
            if (n == nhosts && !(hosts[nhosts++] = strdup(v->data.string)))
                st = KNIT_ERR_NOMEM;
            node_of[r] = n;
        }
        release(v);
    }
    for (int i = 0; i < nhosts; i++)
        free(hosts[i]);
    free(hosts);
    return st;
}

static knit_status_t pmix_put(kn_launcher_t *l, const char *key, const char *val)
{
    (void)l;
    pmix_value_t v = {.type = PMIX_STRING};
    v.data.string = (char *)val;
    return X.put(PMIX_GLOBAL, key, &v) == PMIX_SUCCESS ? KNIT_OK : KNIT_ERR_IO;
}

static knit_status_t pmix_fence(kn_launcher_t *l)
{
    (void)l;
    if (X.commit() != PMIX_SUCCESS)
        return KNIT_ERR_IO;
    pmix_proc_t all = X.me;
    all.rank = PMIX_RANK_WILDCARD;
    pmix_info_t info;
    memset(&info, 0, sizeof(info));
    snprintf(info.key, sizeof(info.key), "%s", PMIX_COLLECT_DATA);
    info.value.type = PMIX_BOOL;
    info.value.data.flag = true;
    return X.fence(&all, 1, &info, 1) == PMIX_SUCCESS ? KNIT_OK : KNIT_ERR_IO;
}

static knit_status_t pmix_get(kn_launcher_t *l, int rank, const char *key, char *buf, size_t cap)
{
    (void)l;
    pmix_proc_t p = X.me;
    p.rank = (pmix_rank_t)rank;
    pmix_value_t *v = NULL;
    pmix_status_t rc = X.get(&p, key, NULL, 0, &v);
    knit_status_t st = KNIT_OK;
    if (rc != PMIX_SUCCESS)
        st = rc == PMIX_ERR_NOT_FOUND ? KNIT_ERR_NOT_FOUND : KNIT_ERR_IO;
    else if (v->type != PMIX_STRING || strlen(v->data.string) >= cap)
        st = KNIT_ERR_PROTO;
    else
        strcpy(buf, v->data.string);
    release(v);
    return st;
}

static void pmix_abort(kn_launcher_t *l, int code, const char *msg)
{
    (void)l;
    X.abort(code, msg, NULL, 0); /* NULL: the whole namespace */
}

static void pmix_finalize(kn_launcher_t *l)
{
    (void)l;
    X.finalize(NULL, 0);
}

kn_launcher_t kn_launch_pmix = {
    .name = "PMIx", .init = pmix_init, .nodes = pmix_nodes, .put = pmix_put, .fence = pmix_fence,
    .get = pmix_get, .abort = pmix_abort, .finalize = pmix_finalize,
};
