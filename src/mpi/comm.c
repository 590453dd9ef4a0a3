/*
 * Communicators and groups.
 *
 * Creating a communicator is collective over its parent: the members agree
 * on a context id by AND-ing their masks of free ids (binomial reduce to
 * the parent's rank 0, then broadcast), and on membership by an allgather
 * (split).  These exchanges run over point-to-point on the parent's
 * internal context (ctx_id | KN_MPI_CTX_INTERNAL), so they never match the
 * program's messages nor the collectives' (KNIT_COLL_CTX_BIT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_impl.h"

/* knit_comm_create arrives with the collectives layer: until libknit
 * defines it (mk/mpi.mk checks), MPI communicators carry no knit_comm_t. */
#ifndef KN_MPI_HAVE_KNIT_COMM
#define KN_MPI_HAVE_KNIT_COMM 0
#endif

static const char *const predef_name[] = {"MPI_COMM_WORLD", "MPI_COMM_SELF"};

const char *kn_mpi_comm_label(const kn_mpi_comm_t *c)
{
    return c->name[0] ? c->name : "an unnamed communicator";
}

kn_mpi_comm_t *kn_mpi_comm_arg_error(MPI_Comm h, const char *fn, int *err)
{
    *err = kn_mpi_error(NULL, fn, MPI_ERR_COMM, "%s",
                        h == MPI_COMM_NULL ? "communicator is MPI_COMM_NULL" : "not a valid communicator handle");
    return NULL;
}

/* ------------------------------------------------- internal exchanges */

/* A set of processes exchanging on one context and tag (a communicator's
 * members, or a group's for MPI_Comm_create_group). */
typedef kn_mpi_xset_t xset_t;

static xset_t xset_of(const kn_mpi_comm_t *c)
{
    xset_t x = {c->ctx_id | KN_MPI_CTX_INTERNAL, KN_MPI_TAG_INTERNAL, c->size, c->rank, c->ranks};
    return x;
}

static int xsend(const xset_t *x, int to, const void *buf, size_t len)
{
    return kn_mpi_class_of(knit_send(kn_mpi.ctx, buf, len, x->ranks[to], x->tag, x->ctx));
}

static int xrecv(const xset_t *x, int from, void *buf, size_t len)
{
    return kn_mpi_class_of(knit_recv(kn_mpi.ctx, buf, len, x->ranks[from], x->tag, x->ctx, NULL));
}

/* Binomial broadcast of len bytes from member 0. */
static int xbcast(const xset_t *x, void *buf, size_t len)
{
    int err = MPI_SUCCESS, mask = 1;
    while (mask < x->n) {
        if (x->me & mask) {
            err = xrecv(x, x->me - mask, buf, len);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0 && err == MPI_SUCCESS; mask >>= 1)
        if (x->me + mask < x->n && !(x->me & (mask - 1)) && !(x->me & mask))
            err = xsend(x, x->me + mask, buf, len);
    return err;
}

/* AND of n words over the set, result everywhere. */
static int xallreduce_and(const xset_t *x, uint32_t *v, int n)
{
    uint32_t *tmp = malloc((size_t)n * sizeof(*tmp));
    if (!tmp)
        return MPI_ERR_NO_MEM;
    int err = MPI_SUCCESS;
    for (int mask = 1; mask < x->n && err == MPI_SUCCESS; mask <<= 1) {
        if (x->me & mask) {
            err = xsend(x, x->me - mask, v, (size_t)n * sizeof(*v));
            break;
        }
        if (x->me + mask < x->n) {
            err = xrecv(x, x->me + mask, tmp, (size_t)n * sizeof(*v));
            for (int i = 0; i < n; i++)
                v[i] &= tmp[i];
        }
    }
    free(tmp);
    if (err == MPI_SUCCESS)
        err = xbcast(x, v, (size_t)n * sizeof(*v));
    return err;
}

/* Every member's len bytes, in member order, into all (n*len). */
static int xallgather(const xset_t *x, const void *mine, size_t len, void *all)
{
    int err = MPI_SUCCESS;
    if (x->me == 0) {
        memcpy(all, mine, len);
        for (int i = 1; i < x->n && err == MPI_SUCCESS; i++)
            err = xrecv(x, i, (char *)all + (size_t)i * len, len);
    } else {
        err = xsend(x, 0, mine, len);
    }
    if (err == MPI_SUCCESS)
        err = xbcast(x, all, (size_t)x->n * len);
    return err;
}

kn_mpi_xset_t kn_mpi_xset_of(const kn_mpi_comm_t *c)
{
    return xset_of(c);
}

int kn_mpi_xbcast(const kn_mpi_xset_t *x, void *buf, size_t len)
{
    return xbcast(x, buf, len);
}

int kn_mpi_xallreduce_and(const kn_mpi_xset_t *x, uint32_t *v, int n)
{
    return xallreduce_and(x, v, n);
}

int kn_mpi_xallgather(const kn_mpi_xset_t *x, const void *mine, size_t len, void *all)
{
    return xallgather(x, mine, len, all);
}

/* Agree on a context id free at every member of the set; member: whether
 * this process joins the new communicator (and so takes the id). */
static int agree_ctx(const xset_t *x, int member, uint32_t *id)
{
    uint32_t mask[KN_MPI_CTX_MAX / 32];
    for (int i = 0; i < KN_MPI_CTX_MAX / 32; i++)
        mask[i] = ~kn_mpi.ctx_used[i];
    int err = xallreduce_and(x, mask, KN_MPI_CTX_MAX / 32);
    if (err != MPI_SUCCESS)
        return err;
    for (int i = 0; i < KN_MPI_CTX_MAX / 32; i++)
        if (mask[i]) {
            uint32_t b = (uint32_t)__builtin_ctz(mask[i]);
            *id = (uint32_t)i * 32 + b;
            if (member)
                kn_mpi.ctx_used[i] |= 1u << b;
            return MPI_SUCCESS;
        }
    return MPI_ERR_INTERN; /* every id in use somewhere */
}

/* ------------------------------------------------------- comm objects */

void kn_mpi_comm_destroy(kn_mpi_comm_t *c)
{
    if (c->inter)
        kn_mpi_inter_destroy(c);
#if KN_MPI_HAVE_KNIT_COMM
    if (c->kc && c->ctx_id != 0)
        knit_comm_destroy(c->kc);
#endif
    if (c->ctx_id < KN_MPI_CTX_MAX)
        kn_mpi.ctx_used[c->ctx_id / 32] &= ~(1u << (c->ctx_id % 32));
    kn_mpi_errh_release(c->errh);
    if (c->info != MPI_INFO_NULL)
        MPI_Info_free(&c->info);
    kn_mpi_topo_free(c->topo);
    kn_mpi_tbl_del(&kn_mpi.comms, c->handle);
    free(c->ranks);
    free(c->job2comm);
    free(c);
}

/* A new communicator over job ranks[0..n) (taken over), with id ctx. */
static int comm_new(const int *ranks, int n, uint32_t ctx, int idx, MPI_Errhandler errh,
                    kn_mpi_comm_t **out)
{
    kn_mpi_comm_t *c = calloc(1, sizeof(*c));
    if (!c)
        return MPI_ERR_NO_MEM;
    c->ranks = malloc((size_t)n * sizeof(int));
    c->job2comm = malloc((size_t)kn_mpi.size * sizeof(int));
    if (!c->ranks || !c->job2comm)
        goto err;
    memcpy(c->ranks, ranks, (size_t)n * sizeof(int));
    for (int i = 0; i < kn_mpi.size; i++)
        c->job2comm[i] = -1;
    c->rank = -1;
    for (int i = 0; i < n; i++) {
        c->job2comm[ranks[i]] = i;
        if (ranks[i] == kn_mpi.rank)
            c->rank = i;
    }
    c->size = n;
    c->ctx_id = ctx;
    c->info = MPI_INFO_NULL;
    c->refs = 1;
#if KN_MPI_HAVE_KNIT_COMM
    if (ctx == 0) {
        c->kc = knit_comm_world(kn_mpi.ctx);
    } else if (knit_comm_create(kn_mpi.ctx, ranks, n, ctx, &c->kc) != KNIT_OK) {
        goto err;
    }
#endif
    int h = kn_mpi_tbl_add(&kn_mpi.comms, c, idx);
    if (h < 0) {
#if KN_MPI_HAVE_KNIT_COMM
        if (ctx != 0)
            knit_comm_destroy(c->kc);
#endif
        goto err;
    }
    c->handle = h;
    c->errh = errh;
    kn_mpi_errh_retain(errh);
    if (ctx < KN_MPI_CTX_MAX)
        kn_mpi.ctx_used[ctx / 32] |= 1u << (ctx % 32);
    *out = c;
    return MPI_SUCCESS;
err:
    free(c->ranks);
    free(c->job2comm);
    free(c);
    return MPI_ERR_NO_MEM;
}

int kn_mpi_comm_make(const int *ranks, int n, uint32_t ctx, MPI_Errhandler errh, kn_mpi_comm_t **out)
{
    return comm_new(ranks, n, ctx, -1, errh, out);
}

int kn_mpi_comms_init(void)
{
    int n = kn_mpi.size;
    int *ranks = malloc((size_t)n * sizeof(int));
    if (!ranks)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    kn_mpi_comm_t *w, *s;
    int err = comm_new(ranks, n, 0, 0, MPI_ERRORS_ARE_FATAL, &w);
    if (err == MPI_SUCCESS)
        err = comm_new(&kn_mpi.rank, 1, 1, 1, MPI_ERRORS_ARE_FATAL, &s);
    free(ranks);
    if (err != MPI_SUCCESS)
        return err;
    snprintf(w->name, sizeof(w->name), "%s", predef_name[0]);
    snprintf(s->name, sizeof(s->name), "%s", predef_name[1]);
    static kn_mpi_group_t empty = {0, NULL, 1};
    kn_mpi_tbl_add(&kn_mpi.groups, &empty, 0);
    return MPI_SUCCESS;
}

void kn_mpi_comms_fini(void)
{
    /* what the program did not free goes now, without callbacks; the
     * intercommunicators first, as they take their inner communicators */
    for (int i = 0; i < 2 * kn_mpi.comms.used; i++) {
        kn_mpi_comm_t *c = kn_mpi.comms.slot[i % kn_mpi.comms.used];
        if (!c || (i < kn_mpi.comms.used && !c->inter))
            continue;
        kn_mpi_attr_t *a = c->attrs;
        while (a) {
            kn_mpi_attr_t *n = a->next;
            free(a);
            a = n;
        }
        c->attrs = NULL;
        kn_mpi_comm_destroy(c);
    }
    for (int i = 1; i < kn_mpi.groups.used; i++) {
        kn_mpi_group_t *g = kn_mpi.groups.slot[i];
        if (g) {
            free(g->ranks);
            free(g);
        }
    }
    kn_mpi_tbl_destroy(&kn_mpi.comms);
    kn_mpi_tbl_destroy(&kn_mpi.groups);
    memset(kn_mpi.ctx_used, 0, sizeof(kn_mpi.ctx_used));
}

/* Common end of every constructor: a communicator for this process, from
 * the agreed id and member list, inheriting the parent's error handler. */
static int make_child(kn_mpi_comm_t *parent, const int *ranks, int n, uint32_t ctx,
                      MPI_Comm *newcomm)
{
    kn_mpi_comm_t *c;
    int err = comm_new(ranks, n, ctx, -1, parent->errh, &c);
    if (err != MPI_SUCCESS) {
        kn_mpi.ctx_used[ctx / 32] &= ~(1u << (ctx % 32));
        return err;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------- queries */

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!size)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "size is NULL");
    *size = c->inter ? kn_mpi_inter_local(c)->size : c->size;
    return MPI_SUCCESS;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!rank)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "rank is NULL");
    *rank = c->rank;
    return MPI_SUCCESS;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!comm_name)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "comm_name is NULL");
    snprintf(c->name, sizeof(c->name), "%s", comm_name);
    return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!comm_name || !resultlen)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "NULL argument");
    snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", c->name);
    *resultlen = (int)strlen(comm_name);
    return MPI_SUCCESS;
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    MPI_Info dup;
    if ((err = MPI_Info_dup(info, &dup)) != MPI_SUCCESS)
        return err;
    if (c->info != MPI_INFO_NULL)
        MPI_Info_free(&c->info);
    c->info = dup;
    return MPI_SUCCESS;
}

int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!info_used)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "info_used is NULL");
    if (c->info != MPI_INFO_NULL)
        return MPI_Info_dup(c->info, info_used);
    return MPI_Info_create(info_used);
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *a = kn_mpi_comm_arg(comm1, __func__, &err);
    if (!a)
        return err;
    kn_mpi_comm_t *b = kn_mpi_comm_arg(comm2, __func__, &err);
    if (!b)
        return err;
    if (!result)
        return kn_mpi_error(a, __func__, MPI_ERR_ARG, "result is NULL");
    if (a->inter || b->inter)
        return kn_mpi_inter_compare(a, b, result);
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (a->size != b->size) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int same_order = 1, same_set = 1;
    for (int i = 0; i < a->size; i++) {
        same_order &= a->ranks[i] == b->ranks[i];
        same_set &= b->job2comm[a->ranks[i]] >= 0;
    }
    *result = same_order ? MPI_CONGRUENT : same_set ? MPI_SIMILAR : MPI_UNEQUAL;
    return MPI_SUCCESS;
}

/* --------------------------------------------------------- constructors */

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    if (!newcomm)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "newcomm is NULL");
    MPI_Comm h;
    if (c->inter) {
        if ((err = kn_mpi_inter_dup(c, &h, __func__)) != MPI_SUCCESS)
            return err;
    } else {
        xset_t x = xset_of(c);
        uint32_t id;
        if ((err = agree_ctx(&x, 1, &id)) != MPI_SUCCESS)
            return kn_mpi_error(c, __func__, err, "cannot agree on a context id");
        if ((err = make_child(c, c->ranks, c->size, id, &h)) != MPI_SUCCESS)
            return kn_mpi_error(c, __func__, err, "cannot create the communicator");
    }
    kn_mpi_comm_t *n = kn_mpi_comm(h);
    if (c->topo && !(n->topo = kn_mpi_topo_dup(c->topo))) {
        MPI_Comm_free(&h);
        return kn_mpi_error(c, __func__, MPI_ERR_NO_MEM, "no memory for the topology");
    }
    if ((err = kn_mpi_attrs_copy(KN_K_COMM, comm, c->attrs, &n->attrs)) != MPI_SUCCESS) {
        MPI_Comm_free(&h);
        return kn_mpi_error(c, __func__, err, "an attribute copy callback failed");
    }
    if (c->info != MPI_INFO_NULL)
        MPI_Info_dup(c->info, &n->info);
    *newcomm = h;
    return MPI_SUCCESS;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int err = MPI_Comm_dup(comm, newcomm);
    if (err == MPI_SUCCESS && info != MPI_INFO_NULL)
        err = MPI_Comm_set_info(*newcomm, info);
    return err;
}

/* The duplicate is made before the call returns (MPI_Comm_dup: the other
 * members must call it too, as for any collective) and the request is
 * complete, reported by the first MPI_Wait/Test on it. */
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!newcomm || !request)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", newcomm ? "request" : "newcomm");
    kn_mpi_req_t *r = kn_mpi_req_new(c, NULL, KN_RQ_DONE);
    if (!r)
        return kn_mpi_error(c, __func__, MPI_ERR_NO_MEM, "out of memory");
    int err = MPI_Comm_dup(comm, newcomm);
    if (err != MPI_SUCCESS) {
        kn_mpi_req_release(r);
        return err;
    }
    r->active = 1;
    r->done_st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG, .MPI_ERROR = MPI_SUCCESS};
    *request = r->handle;
    return MPI_SUCCESS;
}

struct split_ent {
    int color, key, rank;
};

static int split_cmp(const void *a, const void *b)
{
    const struct split_ent *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int split(kn_mpi_comm_t *c, int color, int key, MPI_Comm *newcomm, const char *fn)
{
    if (color < 0 && color != MPI_UNDEFINED)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "color %d is negative", color);
    if (!newcomm)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "newcomm is NULL");
    xset_t x = xset_of(c);
    struct split_ent me = {color, key, c->rank};
    struct split_ent *all = malloc((size_t)c->size * sizeof(*all));
    int *ranks = malloc((size_t)c->size * sizeof(int));
    int err = all && ranks ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (err == MPI_SUCCESS)
        err = xallgather(&x, &me, sizeof(me), all);
    uint32_t id = 0;
    if (err == MPI_SUCCESS)
        err = agree_ctx(&x, color != MPI_UNDEFINED, &id);
    if (err != MPI_SUCCESS) {
        free(all);
        free(ranks);
        return kn_mpi_error(c, fn, err, "exchange among the members failed");
    }
    if (color == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        free(all);
        free(ranks);
        return MPI_SUCCESS;
    }
    int n = 0;
    for (int i = 0; i < c->size; i++)
        if (all[i].color == color)
            all[n++] = all[i];
    qsort(all, (size_t)n, sizeof(*all), split_cmp);
    for (int i = 0; i < n; i++)
        ranks[i] = c->ranks[all[i].rank];
    err = make_child(c, ranks, n, id, newcomm);
    free(all);
    free(ranks);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, fn, err, "cannot create the communicator");
}

int kn_mpi_comm_split(kn_mpi_comm_t *c, int color, int key, MPI_Comm *newcomm, const char *fn)
{
    return split(c, color, key, newcomm, fn);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (c->inter)
        return kn_mpi_inter_split(c, color, key, newcomm, __func__);
    return split(c, color, key, newcomm, __func__);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    (void)info;
    if (c->inter)
        return kn_mpi_error(c, __func__, MPI_ERR_COMM, "%s is an intercommunicator", kn_mpi_comm_label(c));
    int color;
    switch (split_type) {
    case MPI_UNDEFINED:
        color = MPI_UNDEFINED;
        break;
    case MPI_COMM_TYPE_SHARED:
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_HW_UNGUIDED:
        /* the one hardware level knit knows below the job is the node */
        color = knit_node_of(kn_mpi.ctx, kn_mpi.rank);
        break;
    default:
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "unknown split_type %d", split_type);
    }
    err = split(c, color, key, newcomm, __func__);
    if (err == MPI_SUCCESS && split_type == MPI_COMM_TYPE_HW_UNGUIDED && *newcomm != MPI_COMM_NULL) {
        /* HW_UNGUIDED asks for a strict subset: none when the node is all */
        kn_mpi_comm_t *n = kn_mpi_comm(*newcomm);
        if (n->size == c->size)
            MPI_Comm_free(newcomm);
    }
    return err;
}

static kn_mpi_group_t *group_arg(MPI_Group h, const char *fn, int *err)
{
    kn_mpi_group_t *g = kn_mpi_tbl_get(&kn_mpi.groups, h);
    if (!g)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_GROUP, "%s",
                            h == MPI_GROUP_NULL ? "group is MPI_GROUP_NULL" : "not a valid group handle");
    return g;
}

static int group_rank_of(const kn_mpi_group_t *g, int job_rank)
{
    for (int i = 0; i < g->n; i++)
        if (g->ranks[i] == job_rank)
            return i;
    return -1;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    kn_mpi_group_t *g = group_arg(group, __func__, &err);
    if (!g)
        return err;
    if (!newcomm)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "newcomm is NULL");
    if (c->inter)
        return kn_mpi_inter_create(c, g->ranks, g->n, newcomm, __func__);
    for (int i = 0; i < g->n; i++)
        if (c->job2comm[g->ranks[i]] < 0)
            return kn_mpi_error(c, __func__, MPI_ERR_GROUP, "the group has a process outside %s",
                                kn_mpi_comm_label(c));
    int member = group_rank_of(g, kn_mpi.rank) >= 0;
    xset_t x = xset_of(c);
    uint32_t id;
    if ((err = agree_ctx(&x, member, &id)) != MPI_SUCCESS)
        return kn_mpi_error(c, __func__, err, "cannot agree on a context id");
    if (!member) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    err = make_child(c, g->ranks, g->n, id, newcomm);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, __func__, err, "cannot create the communicator");
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    kn_mpi_group_t *g = group_arg(group, __func__, &err);
    if (!g)
        return err;
    if (!newcomm)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "newcomm is NULL");
    if (c->inter)
        return kn_mpi_error(c, __func__, MPI_ERR_COMM, "%s is an intercommunicator", kn_mpi_comm_label(c));
    if (tag < 0 || tag > KN_MPI_TAG_UB)
        return kn_mpi_error(c, __func__, MPI_ERR_TAG, "tag %d not in [0, %d]", tag, KN_MPI_TAG_UB);
    int me = group_rank_of(g, kn_mpi.rank);
    if (me < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_GROUP, "the calling process is not in the group");
    for (int i = 0; i < g->n; i++)
        if (c->job2comm[g->ranks[i]] < 0)
            return kn_mpi_error(c, __func__, MPI_ERR_GROUP, "the group has a process outside %s",
                                kn_mpi_comm_label(c));
    /* only the group's members take part: exchange among them alone */
    xset_t x = {c->ctx_id | KN_MPI_CTX_INTERNAL, tag, g->n, me, g->ranks};
    uint32_t id;
    if ((err = agree_ctx(&x, 1, &id)) != MPI_SUCCESS)
        return kn_mpi_error(c, __func__, err, "cannot agree on a context id");
    err = make_child(c, g->ranks, g->n, id, newcomm);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, __func__, err, "cannot create the communicator");
}

int MPI_Comm_free(MPI_Comm *comm)
{
    KN_MPI_READY();
    int err;
    if (!comm)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "comm is NULL");
    kn_mpi_comm_t *c = kn_mpi_comm_arg(*comm, __func__, &err);
    if (!c)
        return err;
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
        return kn_mpi_error(c, __func__, MPI_ERR_COMM, "%s cannot be freed", kn_mpi_comm_label(c));
    if ((err = kn_mpi_attrs_delete(KN_K_COMM, *comm, &c->attrs)) != MPI_SUCCESS)
        return kn_mpi_error(c, __func__, err, "an attribute delete callback failed");
    c->freed = 1;
    *comm = MPI_COMM_NULL;
    kn_mpi_comm_unref(c);
    return MPI_SUCCESS;
}

/* --------------------------------------------------------------- groups */

static int group_new(const int *ranks, int n, MPI_Group *out)
{
    if (n == 0) {
        *out = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    kn_mpi_group_t *g = calloc(1, sizeof(*g));
    if (!g)
        return MPI_ERR_NO_MEM;
    g->ranks = malloc((size_t)n * sizeof(int));
    int h = g->ranks ? kn_mpi_tbl_add(&kn_mpi.groups, g, -1) : -1;
    if (h < 0) {
        free(g->ranks);
        free(g);
        return MPI_ERR_NO_MEM;
    }
    memcpy(g->ranks, ranks, (size_t)n * sizeof(int));
    g->n = n;
    g->refs = 1;
    *out = h;
    return MPI_SUCCESS;
}

int kn_mpi_group_make(const int *ranks, int n, MPI_Group *out)
{
    return group_new(ranks, n, out);
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    if (!group)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "group is NULL");
    kn_mpi_comm_t *l = c->inter ? kn_mpi_inter_local(c) : c; /* the local group */
    err = group_new(l->ranks, l->size, group);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, __func__, err, "out of memory");
}

int MPI_Group_size(MPI_Group group, int *size)
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *g = group_arg(group, __func__, &err);
    if (!g)
        return err;
    if (!size)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "size is NULL");
    *size = g->n;
    return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *g = group_arg(group, __func__, &err);
    if (!g)
        return err;
    if (!rank)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "rank is NULL");
    int r = group_rank_of(g, kn_mpi.rank);
    *rank = r < 0 ? MPI_UNDEFINED : r;
    return MPI_SUCCESS;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *a = group_arg(group1, __func__, &err);
    if (!a)
        return err;
    kn_mpi_group_t *b = group_arg(group2, __func__, &err);
    if (!b)
        return err;
    if (n < 0 || (n > 0 && (!ranks1 || !ranks2)))
        return kn_mpi_error(NULL, __func__, n < 0 ? MPI_ERR_ARG : MPI_ERR_ARG, "n %d or NULL arrays", n);
    for (int i = 0; i < n; i++) {
        int r = ranks1[i];
        if (r == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
            continue;
        }
        if (r < 0 || r >= a->n)
            return kn_mpi_error(NULL, __func__, MPI_ERR_RANK, "ranks1[%d] = %d not in [0, %d)", i, r, a->n);
        int t = group_rank_of(b, a->ranks[r]);
        ranks2[i] = t < 0 ? MPI_UNDEFINED : t;
    }
    return MPI_SUCCESS;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *a = group_arg(group1, __func__, &err);
    if (!a)
        return err;
    kn_mpi_group_t *b = group_arg(group2, __func__, &err);
    if (!b)
        return err;
    if (!result)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "result is NULL");
    if (a->n != b->n) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int same_order = 1, same_set = 1;
    for (int i = 0; i < a->n; i++) {
        same_order &= a->ranks[i] == b->ranks[i];
        same_set &= group_rank_of(b, a->ranks[i]) >= 0;
    }
    *result = same_order ? MPI_IDENT : same_set ? MPI_SIMILAR : MPI_UNEQUAL;
    return MPI_SUCCESS;
}

/* union (op 0), intersection (1), difference (2): order of group1 first */
static int group_setop(MPI_Group g1, MPI_Group g2, MPI_Group *out, int op, const char *fn)
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *a = group_arg(g1, fn, &err);
    if (!a)
        return err;
    kn_mpi_group_t *b = group_arg(g2, fn, &err);
    if (!b)
        return err;
    if (!out)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "newgroup is NULL");
    int *r = malloc(((size_t)a->n + (size_t)b->n + 1) * sizeof(int));
    if (!r)
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    int n = 0;
    for (int i = 0; i < a->n; i++) {
        int in_b = group_rank_of(b, a->ranks[i]) >= 0;
        if (op == 0 || (op == 1 && in_b) || (op == 2 && !in_b))
            r[n++] = a->ranks[i];
    }
    if (op == 0)
        for (int i = 0; i < b->n; i++)
            if (group_rank_of(a, b->ranks[i]) < 0)
                r[n++] = b->ranks[i];
    err = group_new(r, n, out);
    free(r);
    return err == MPI_SUCCESS ? err : kn_mpi_error(NULL, fn, err, "out of memory");
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return group_setop(group1, group2, newgroup, 0, __func__);
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return group_setop(group1, group2, newgroup, 1, __func__);
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return group_setop(group1, group2, newgroup, 2, __func__);
}

/* incl: ranks listed in order; excl: the others in group order.  Ranks
 * must be valid and distinct. */
static int group_pick(MPI_Group group, int n, const int ranks[], MPI_Group *out, int excl, const char *fn)
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *g = group_arg(group, fn, &err);
    if (!g)
        return err;
    if (!out)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "newgroup is NULL");
    if (n < 0 || n > g->n || (n > 0 && !ranks))
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "n = %d (group size %d) or ranks NULL", n, g->n);
    char *seen = calloc((size_t)g->n + 1, 1);
    int *r = malloc(((size_t)g->n + 1) * sizeof(int));
    if (!seen || !r) {
        free(seen);
        free(r);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->n || seen[ranks[i]]) {
            int bad = ranks[i];
            free(seen);
            free(r);
            return kn_mpi_error(NULL, fn, MPI_ERR_RANK, "ranks[%d] = %d is %s", i, bad,
                                bad < 0 || bad >= g->n ? "not in the group" : "listed twice");
        }
        seen[ranks[i]] = 1;
    }
    int k = 0;
    if (excl) {
        for (int i = 0; i < g->n; i++)
            if (!seen[i])
                r[k++] = g->ranks[i];
    } else {
        for (int i = 0; i < n; i++)
            r[k++] = g->ranks[ranks[i]];
    }
    err = group_new(r, k, out);
    free(seen);
    free(r);
    return err == MPI_SUCCESS ? err : kn_mpi_error(NULL, fn, err, "out of memory");
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    return group_pick(group, n, ranks, newgroup, 0, __func__);
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    return group_pick(group, n, ranks, newgroup, 1, __func__);
}

static int group_range(MPI_Group group, int n, int ranges[][3], MPI_Group *out, int excl, const char *fn)
{
    KN_MPI_READY();
    int err;
    kn_mpi_group_t *g = group_arg(group, fn, &err);
    if (!g)
        return err;
    if (n < 0 || (n > 0 && !ranges))
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "n = %d or ranges NULL", n);
    int *list = malloc(((size_t)g->n + 1) * sizeof(int));
    if (!list)
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    int k = 0;
    for (int i = 0; i < n; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0 || first < 0 || first >= g->n || last < 0 || last >= g->n ||
            (stride > 0 && first > last) || (stride < 0 && first < last)) {
            free(list);
            return kn_mpi_error(NULL, fn, MPI_ERR_RANK, "range %d (%d, %d, %d) is invalid for a group of %d",
                                i, first, last, stride, g->n);
        }
        for (int r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            if (k >= g->n) {
                free(list);
                return kn_mpi_error(NULL, fn, MPI_ERR_RANK, "ranges name a rank twice");
            }
            list[k++] = r;
        }
    }
    err = group_pick(group, k, list, out, excl, fn);
    free(list);
    return err;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return group_range(group, n, ranges, newgroup, 0, __func__);
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return group_range(group, n, ranges, newgroup, 1, __func__);
}

int MPI_Group_free(MPI_Group *group)
{
    KN_MPI_READY();
    int err;
    if (!group)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "group is NULL");
    kn_mpi_group_t *g = group_arg(*group, __func__, &err);
    if (!g)
        return err;
    if (*group != MPI_GROUP_EMPTY && --g->refs == 0) {
        kn_mpi_tbl_del(&kn_mpi.groups, *group);
        free(g->ranks);
        free(g);
    }
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}
