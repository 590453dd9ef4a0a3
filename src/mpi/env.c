/* MPI environment: init/finalize, handle tables, time, versions, info
 * objects, handle conversions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knit/rma.h"
#include "mpi/mpi_impl.h"

kn_mpi_state_t kn_mpi = {
    .comms = {.kind = KN_K_COMM},
    .groups = {.kind = KN_K_GROUP},
    .types = {.kind = KN_K_TYPE},
    .reqs = {.kind = KN_K_REQ},
    .errhs = {.kind = KN_K_ERRH},
    .infos = {.kind = KN_K_INFO},
    .msgs = {.kind = KN_K_MSG},
    .keyvals = {.kind = KN_K_KEYVAL},
};

/* ------------------------------------------------------- handle tables */

int kn_mpi_tbl_add(kn_mpi_tbl_t *t, void *obj, int idx)
{
    int reserved = idx >= 0;
    if (idx < 0 && t->nfree > 0)
        idx = t->free_idx[--t->nfree];
    if (idx < 0)
        idx = t->used;
    if (idx >= 0xffffff)
        return -1;
    if (idx >= t->cap) {
        int cap = t->cap ? t->cap * 2 : 64;
        while (cap <= idx)
            cap *= 2;
        void **s = realloc(t->slot, (size_t)cap * sizeof(*s));
        if (!s)
            return -1;
        int *f = realloc(t->free_idx, (size_t)cap * sizeof(*f));
        if (!f) {
            t->slot = s;
            return -1;
        }
        memset(s + t->cap, 0, (size_t)(cap - t->cap) * sizeof(*s));
        t->slot = s;
        t->free_idx = f;
        t->cap = cap;
    }
    /* a reserved index below the high-water mark may be on the free stack
     * (one popped from it is not: no scan on the requests' hot path) */
    for (int i = 0; reserved && i < t->nfree && idx < t->used; i++)
        if (t->free_idx[i] == idx) {
            t->free_idx[i] = t->free_idx[--t->nfree];
            break;
        }
    while (t->used <= idx) {
        if (t->used < idx)
            t->free_idx[t->nfree++] = t->used;
        t->used++;
    }
    t->slot[idx] = obj;
    return KN_MPI_H(t->kind, idx);
}

void kn_mpi_tbl_del(kn_mpi_tbl_t *t, int h)
{
    if (!kn_mpi_tbl_get(t, h))
        return;
    int idx = h & 0xffffff;
    t->slot[idx] = NULL;
    t->free_idx[t->nfree++] = idx;
}

void kn_mpi_tbl_destroy(kn_mpi_tbl_t *t)
{
    free(t->slot);
    free(t->free_idx);
    int kind = t->kind;
    memset(t, 0, sizeof(*t));
    t->kind = kind;
}

/* --------------------------------------------------------- init / fini */

static int init_common(int *argc, char ***argv, int required, int *provided, const char *fn)
{
    if (kn_mpi.initialized) {
        fprintf(stderr, "%s: %s: MPI is already initialized\n", fn, kn_mpi_class_text(MPI_ERR_OTHER));
        return MPI_ERR_OTHER;
    }
    /* a failure is reported once, by the error handler (MPI_COMM_WORLD's
     * default, fatal, is the only one a program can have yet): the job ends
     * with the reason knit would have logged */
    char why[512];
    knit_status_t st = knit_init_quiet(argc, argv, why, sizeof(why), &kn_mpi.ctx);
    if (st != KNIT_OK) {
        kn_mpi.ctx = NULL;
        kn_mpi.init_failed = 1;
        return kn_mpi_error_st(NULL, fn, st, "%s", why);
    }
    kn_mpi.init_failed = 0;
    /* knitrun's report of a rank that exits without finalizing names ours */
    knit_set_finalize_name(kn_mpi.ctx, "MPI_Finalize");
    kn_mpi.rank = knit_rank(kn_mpi.ctx);
    kn_mpi.size = knit_size(kn_mpi.ctx);
    kn_mpi.main_thread = pthread_self();
    /* the engine is used by one thread at a time: SERIALIZED is the most
     * that is true */
    kn_mpi.thread_level = required > MPI_THREAD_SERIALIZED ? MPI_THREAD_SERIALIZED
                          : required < MPI_THREAD_SINGLE  ? MPI_THREAD_SINGLE
                                                          : required;
    if (provided)
        *provided = kn_mpi.thread_level;
    kn_mpi_errhs_init();
    kn_mpi_infos_init();
    kn_mpi_types_init();
    kn_mpi.initialized = 1;
    int err = kn_mpi_comms_init();
    if (err != MPI_SUCCESS)
        return kn_mpi_error(NULL, fn, err, "cannot create MPI_COMM_WORLD");
    return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv)
{
    return init_common(argc, argv, MPI_THREAD_SINGLE, NULL, __func__);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return init_common(argc, argv, required, provided, __func__);
}

int MPI_Initialized(int *flag)
{
    if (!flag)
        return MPI_ERR_ARG;
    *flag = kn_mpi.initialized;
    return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
    if (!flag)
        return MPI_ERR_ARG;
    *flag = kn_mpi.finalized;
    return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
    KN_MPI_READY();
    /* MPI_COMM_SELF's attributes go first: libraries hook their cleanup there */
    kn_mpi_comm_t *self = kn_mpi_tbl_get(&kn_mpi.comms, MPI_COMM_SELF);
    if (self)
        kn_mpi_attrs_delete(KN_K_COMM, MPI_COMM_SELF, &self->attrs);
    kn_mpi_bsend_fini();
    kn_mpi_reqs_poll_detached(1);
    kn_mpi_reqs_fini();
    kn_mpi_wins_fini();
    kn_mpi_ops_fini();
    kn_mpi_comms_fini();
    kn_mpi_types_fini();
    kn_mpi_infos_fini();
    knit_status_t st = knit_finalize(kn_mpi.ctx);
    kn_mpi.ctx = NULL;
    kn_mpi.finalized = 1;
    if (st != KNIT_OK) {
        fprintf(stderr, "MPI_Finalize: %s: %s\n", kn_mpi_class_text(MPI_ERR_OTHER), knit_strerror(st));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "MPI_Abort called on %s with error code %d",
             kn_mpi.initialized && kn_mpi_comm(comm) ? kn_mpi_comm_label(kn_mpi_comm(comm))
                                                     : "a communicator", errorcode);
    if (kn_mpi.ctx)
        knit_abort(kn_mpi.ctx, errorcode ? errorcode : 1, msg);
    fprintf(stderr, "%s\n", msg);
    _exit(errorcode & 0xff ? errorcode & 0xff : 1);
}

double MPI_Wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double MPI_Wtick(void)
{
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0)
        return 1e-9;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int MPI_Get_processor_name(char *name, int *resultlen)
{
    KN_MPI_READY();
    if (!name || !resultlen)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "%s is NULL", name ? "resultlen" : "name");
    char host[MPI_MAX_PROCESSOR_NAME];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    /* emulated nodes share a host: give each its own name, so that
     * programs grouping ranks by name agree with MPI_Comm_split_type */
    if (knit_nnodes(kn_mpi.ctx) > 1 && getenv("KNIT_HOSTNAME") == NULL)
        snprintf(name, MPI_MAX_PROCESSOR_NAME, "%.200s-node%d", host, knit_node(kn_mpi.ctx));
    else
        snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", getenv("KNIT_HOSTNAME") ? getenv("KNIT_HOSTNAME") : host);
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
    if (!version || !subversion)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen)
{
    if (!version || !resultlen)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    /* MPI_Get_version says 3.1, the standard the calls follow; knit has a
     * subset of it, and says so here */
    snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
             "knit MPI %s: a subset of MPI %d.%d over knit (docs/mpi.md lists what is not supported)",
             KNIT_VERSION_STRING, MPI_VERSION, MPI_SUBVERSION);
    *resultlen = (int)strlen(version);
    return MPI_SUCCESS;
}

int MPI_Query_thread(int *provided)
{
    KN_MPI_READY();
    if (!provided)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "provided is NULL");
    *provided = kn_mpi.thread_level;
    return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag)
{
    KN_MPI_READY();
    if (!flag)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "flag is NULL");
    *flag = pthread_equal(pthread_self(), kn_mpi.main_thread);
    return MPI_SUCCESS;
}

int MPI_Pcontrol(const int level, ...)
{
    (void)level; /* no profiling layer: defined to do nothing */
    return MPI_SUCCESS;
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    KN_MPI_READY();
    (void)info;
    if (size < 0 || !baseptr)
        return kn_mpi_error(NULL, __func__, size < 0 ? MPI_ERR_SIZE : MPI_ERR_ARG,
                            "size %ld, baseptr %p", (long)size, baseptr);
    void *p = knit_rma_alloc((size_t)size); /* where the node's peers copy with memcpy (one-sided) */
    if (!p)
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "cannot allocate %ld bytes", (long)size);
    memcpy(baseptr, &p, sizeof(p));
    return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
    KN_MPI_READY();
    free(base);
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- info */

typedef struct kn_info {
    int n, cap;
    char **keys, **vals;
} kn_info_t;

static kn_info_t *info_arg(MPI_Info h, const char *fn, int *err)
{
    kn_info_t *i = kn_mpi_tbl_get(&kn_mpi.infos, h);
    if (!i)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_INFO, "invalid info object 0x%x", (unsigned)h);
    return i;
}

static int key_ok(const char *key)
{
    return key && *key && strlen(key) <= MPI_MAX_INFO_KEY;
}

static int info_find(const kn_info_t *i, const char *key)
{
    for (int k = 0; k < i->n; k++)
        if (!strcmp(i->keys[k], key))
            return k;
    return -1;
}

static void info_free(kn_info_t *i)
{
    for (int k = 0; k < i->n; k++) {
        free(i->keys[k]);
        free(i->vals[k]);
    }
    free(i->keys);
    free(i->vals);
    free(i);
}

static kn_info_t info_env; /* MPI_INFO_ENV: empty */

void kn_mpi_infos_init(void)
{
    kn_mpi_tbl_add(&kn_mpi.infos, &info_env, 0);
}

int MPI_Info_create(MPI_Info *info)
{
    KN_MPI_READY();
    if (!info)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "info is NULL");
    kn_info_t *i = calloc(1, sizeof(*i));
    int h = i ? kn_mpi_tbl_add(&kn_mpi.infos, i, -1) : -1;
    if (h < 0) {
        free(i);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "no memory for an info object");
    }
    *info = h;
    return MPI_SUCCESS;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!key_ok(key))
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_KEY, "invalid key");
    if (!value || strlen(value) > MPI_MAX_INFO_VAL)
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_VALUE, "invalid value for key %s", key);
    int k = info_find(i, key);
    char *v = strdup(value);
    if (!v)
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    if (k >= 0) {
        free(i->vals[k]);
        i->vals[k] = v;
        return MPI_SUCCESS;
    }
    if (i->n == i->cap) {
        int cap = i->cap ? 2 * i->cap : 8;
        char **nk = realloc(i->keys, (size_t)cap * sizeof(*nk));
        if (nk)
            i->keys = nk;
        char **nv = nk ? realloc(i->vals, (size_t)cap * sizeof(*nv)) : NULL;
        if (!nv) {
            free(v);
            return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
        }
        i->vals = nv;
        i->cap = cap;
    }
    i->keys[i->n] = strdup(key);
    if (!i->keys[i->n]) {
        free(v);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    i->vals[i->n++] = v;
    return MPI_SUCCESS;
}

int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!key_ok(key))
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_KEY, "invalid key");
    if (!flag || valuelen < 0 || (!value && valuelen > 0))
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "invalid value buffer or flag");
    int k = info_find(i, key);
    *flag = k >= 0;
    if (k >= 0 && value) {
        snprintf(value, (size_t)valuelen + 1, "%s", i->vals[k]);
    }
    return MPI_SUCCESS;
}

int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!key_ok(key))
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_KEY, "invalid key");
    if (!flag || !buflen || *buflen < 0 || (!value && *buflen > 0))
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "invalid value buffer or flag");
    int k = info_find(i, key);
    *flag = k >= 0;
    if (k >= 0) {
        int need = (int)strlen(i->vals[k]) + 1;
        if (*buflen > 0)
            snprintf(value, (size_t)*buflen, "%s", i->vals[k]);
        *buflen = need;
    }
    return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!key_ok(key))
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_KEY, "invalid key");
    if (!flag || !valuelen)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    int k = info_find(i, key);
    *flag = k >= 0;
    if (k >= 0)
        *valuelen = (int)strlen(i->vals[k]);
    return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!nkeys)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "nkeys is NULL");
    *nkeys = i->n;
    return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (n < 0 || n >= i->n || !key)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "key number %d not in [0, %d)", n, i->n);
    snprintf(key, MPI_MAX_INFO_KEY + 1, "%s", i->keys[n]);
    return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!key_ok(key))
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_KEY, "invalid key");
    int k = info_find(i, key);
    if (k < 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO_NOKEY, "no key %s", key);
    free(i->keys[k]);
    free(i->vals[k]);
    memmove(i->keys + k, i->keys + k + 1, (size_t)(i->n - k - 1) * sizeof(char *));
    memmove(i->vals + k, i->vals + k + 1, (size_t)(i->n - k - 1) * sizeof(char *));
    i->n--;
    return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    KN_MPI_READY();
    int err;
    kn_info_t *i = info_arg(info, __func__, &err);
    if (!i)
        return err;
    if (!newinfo)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "newinfo is NULL");
    MPI_Info h;
    if ((err = MPI_Info_create(&h)) != MPI_SUCCESS)
        return err;
    for (int k = 0; k < i->n; k++)
        if ((err = MPI_Info_set(h, i->keys[k], i->vals[k])) != MPI_SUCCESS) {
            MPI_Info_free(&h);
            return err;
        }
    *newinfo = h;
    return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info)
{
    KN_MPI_READY();
    int err;
    if (!info)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "info is NULL");
    kn_info_t *i = info_arg(*info, __func__, &err);
    if (!i)
        return err;
    if (i == &info_env)
        return kn_mpi_error(NULL, __func__, MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed");
    kn_mpi_tbl_del(&kn_mpi.infos, *info);
    info_free(i);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}

void kn_mpi_infos_fini(void)
{
    for (int k = 0; k < kn_mpi.infos.used; k++) {
        kn_info_t *i = kn_mpi.infos.slot[k];
        if (i && i != &info_env)
            info_free(i);
    }
    kn_mpi_tbl_destroy(&kn_mpi.infos);
}

/* ----------------------------------------------------- handle conversion */

#define C2F(T, name)                                        \
    MPI_Fint MPI_##name##_c2f(T h) { return (MPI_Fint)h; }  \
    T MPI_##name##_f2c(MPI_Fint f) { return (T)f; }
C2F(MPI_Comm, Comm)
C2F(MPI_Datatype, Type)
C2F(MPI_Group, Group)
C2F(MPI_Request, Request)
C2F(MPI_Op, Op)
C2F(MPI_Info, Info)
C2F(MPI_Errhandler, Errhandler)
C2F(MPI_Message, Message)
C2F(MPI_Win, Win)
