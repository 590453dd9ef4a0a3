/*
 * Intercommunicators (MPI-3.1 6.6) and their collectives (5.2.2).
 *
 * An intercommunicator is a kn_mpi_comm_t whose size, ranks and job2comm
 * are the REMOTE group's, so point-to-point (p2p.c) addresses the remote
 * group unchanged: a message goes to ranks[dest] on the intercommunicator's
 * context id, and a received message's source maps back through job2comm
 * to a remote rank (the groups are disjoint, so nothing else sends on that
 * id).  rank is this process's rank in the local group.  Its inter part:
 *   local   an intracommunicator of the local group with its own context
 *           id: MPI_Comm_size/group, the local half of the collectives
 *   bridge  a hidden communicator shaped like the intercommunicator (the
 *           remote ranks) on ctx_id | KNIT_COLL_CTX_BIT, a context no
 *           native communicator uses (the intercommunicator has none): the
 *           collectives' traffic between the groups, which the program's
 *           messages never match
 * Both return errors (MPI_ERRORS_RETURN); a failure inside a call is
 * raised on the intercommunicator.
 *
 * Creation (Intercomm_create; dup, split, create and merge of an
 * intercommunicator) is one protocol: the local group ANDs its members'
 * free context-id masks and gathers its members' entries (comm.c's
 * exchanges on the local context), the two leaders swap what their group
 * gathered (peer_comm's internal context and the program's tag for
 * Intercomm_create, the intercommunicator's internal context after), and
 * each leader broadcasts the other side's answer in its group.  Both sides
 * then hold both masks: the new intercommunicator's id is the first free at
 * every member of both groups, its local intracommunicator's the first
 * other id free in the local group.  Split and create give every colour the
 * same ids, as comm.c's split does: the colours' members are disjoint.
 *
 * The collectives: point-to-point on the bridge between the groups and,
 * when blocking, collectives on the local intracommunicators.  Rooted ones
 * go straight between the root and each remote process (gather, scatter)
 * or through the remote group's rank 0 (bcast, reduce); the all-to-all
 * kinds send every remote process its block; allreduce and reduce-scatter
 * reduce in each group, swap the results between the leaders and spread
 * them in the group.  The nonblocking forms are point-to-point only, all
 * posted at the start (see "schedules" below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_impl.h"

struct kn_mpi_inter {
    kn_mpi_comm_t *local;
    kn_mpi_comm_t *bridge;
};

#define NW (KN_MPI_CTX_MAX / 32)
#define TAG_COLL 0 /* on the bridge, which carries nothing else */

kn_mpi_comm_t *kn_mpi_inter_local(kn_mpi_comm_t *c)
{
    return c->inter->local;
}

/* ------------------------------------------------------------ objects */

/* A communicator over the remote job ranks rranks[0..rn) with context id
 * ctx, this process being rank lrank of the local group. */
static int remote_new(const int *rranks, int rn, uint32_t ctx, int lrank, MPI_Errhandler errh,
                      kn_mpi_comm_t **out)
{
    kn_mpi_comm_t *c = calloc(1, sizeof(*c));
    if (!c)
        return MPI_ERR_NO_MEM;
    c->ranks = malloc(((size_t)rn + 1) * sizeof(int));
    c->job2comm = malloc((size_t)kn_mpi.size * sizeof(int));
    int h = c->ranks && c->job2comm ? kn_mpi_tbl_add(&kn_mpi.comms, c, -1) : -1;
    if (h < 0) {
        free(c->ranks);
        free(c->job2comm);
        free(c);
        return MPI_ERR_NO_MEM;
    }
    memcpy(c->ranks, rranks, (size_t)rn * sizeof(int));
    for (int i = 0; i < kn_mpi.size; i++)
        c->job2comm[i] = -1;
    for (int i = 0; i < rn; i++)
        c->job2comm[rranks[i]] = i;
    c->handle = h;
    c->size = rn;
    c->rank = lrank;
    c->ctx_id = ctx;
    c->info = MPI_INFO_NULL;
    c->refs = 1;
    c->errh = errh;
    kn_mpi_errh_retain(errh);
    if (ctx < KN_MPI_CTX_MAX)
        kn_mpi.ctx_used[ctx / 32] |= 1u << (ctx % 32);
    *out = c;
    return MPI_SUCCESS;
}

/* A new intercommunicator: local group lranks[0..ln) (with this process)
 * on id lid, remote group rranks[0..rn) on id id. */
static int inter_new(const int *lranks, int ln, uint32_t lid, const int *rranks, int rn, uint32_t id,
                     MPI_Errhandler errh, MPI_Comm *out)
{
    kn_mpi_inter_t *in = calloc(1, sizeof(*in));
    if (!in)
        return MPI_ERR_NO_MEM;
    kn_mpi_comm_t *c = NULL;
    int err = kn_mpi_comm_make(lranks, ln, lid, MPI_ERRORS_RETURN, &in->local);
    if (err == MPI_SUCCESS)
        err = remote_new(rranks, rn, id | KNIT_COLL_CTX_BIT, in->local->rank, MPI_ERRORS_RETURN, &in->bridge);
    if (err == MPI_SUCCESS)
        err = remote_new(rranks, rn, id, in->local->rank, errh, &c);
    if (err != MPI_SUCCESS) {
        if (in->bridge)
            kn_mpi_comm_destroy(in->bridge);
        if (in->local)
            kn_mpi_comm_destroy(in->local);
        free(in);
        return err;
    }
    snprintf(in->local->name, sizeof(in->local->name), "the local group of an intercommunicator");
    snprintf(in->bridge->name, sizeof(in->bridge->name), "the collectives' link of an intercommunicator");
    c->inter = in;
    *out = c->handle;
    return MPI_SUCCESS;
}

void kn_mpi_inter_destroy(kn_mpi_comm_t *c)
{
    kn_mpi_inter_t *in = c->inter;
    c->inter = NULL;
    in->local->freed = in->bridge->freed = 1;
    kn_mpi_comm_unref(in->local);
    kn_mpi_comm_unref(in->bridge);
    free(in);
}

/* ----------------------------------------------------- creation protocol */

/* One member's entry: its job rank, and for split its colour and key. */
typedef struct ent {
    int job, color, key, idx;
} ent_t;

/* What a leader sends the other: its group's mask, a value (merge: high)
 * and its members' entries. */
typedef struct side {
    uint32_t mask[NW];
    int32_t n, val;
    ent_t ent[];
} side_t;

/* Where the leaders meet. */
typedef struct link {
    uint32_t ctx;
    int tag, peer; /* peer: the other leader's job rank */
} link_t;

/* Whether a record from the other leader (len bytes) is whole and sane. */
static int side_ok(const side_t *s, size_t len)
{
    if (len < sizeof(side_t) || s->n <= 0 || s->n > kn_mpi.size ||
        len != sizeof(side_t) + (size_t)s->n * sizeof(ent_t))
        return 0;
    for (int i = 0; i < s->n; i++)
        if (s->ent[i].job < 0 || s->ent[i].job >= kn_mpi.size)
            return 0;
    return 1;
}

/* Swap blobs with the other leader (theirs: malloc'd). */
static int swap(const link_t *l, const void *mine, size_t len, void **theirs, size_t *tlen)
{
    knit_request_t *kr;
    knit_status_t st = knit_isend(kn_mpi.ctx, mine, len, l->peer, l->tag, l->ctx, &kr);
    if (st != KNIT_OK)
        return kn_mpi_class_of(st);
    knit_msg_status_t ks;
    void *buf = NULL;
    st = knit_probe(kn_mpi.ctx, l->peer, l->tag, l->ctx, &ks);
    if (st == KNIT_OK && !(buf = malloc(ks.length ? ks.length : 1)))
        st = KNIT_ERR_NOMEM;
    if (st == KNIT_OK)
        st = knit_recv(kn_mpi.ctx, buf, ks.length, l->peer, l->tag, l->ctx, NULL);
    knit_status_t ss = knit_wait(&kr, NULL);
    if (st == KNIT_OK)
        st = ss;
    if (st != KNIT_OK) {
        free(buf);
        return kn_mpi_class_of(st);
    }
    *theirs = buf;
    *tlen = ks.length;
    return MPI_SUCCESS;
}

/* The protocol over the local group lx (leader: its member that meets the
 * other; l: where, significant at the leader): mine is this member's
 * entry, val the group's value.  Out: the local mask (*lmask), the local
 * entries (*lents, malloc'd, lx->n of them) and the other side's record
 * (*rs, malloc'd).  The other side's record is checked at the leader; a
 * failure of the leaders' exchange fails the call at every member of the
 * group. */
static int agree(const kn_mpi_xset_t *lx, int leader, const link_t *l, const ent_t *mine, int val, uint32_t *lmask,
                 ent_t **lents, side_t **rs)
{
    size_t mylen = sizeof(side_t) + (size_t)lx->n * sizeof(ent_t);
    side_t *me = calloc(1, mylen);
    ent_t *all = malloc((size_t)lx->n * sizeof(ent_t));
    void *theirs = NULL;
    uint64_t tlen = 0;
    int err = me && all ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    for (int i = 0; me && i < NW; i++)
        me->mask[i] = ~kn_mpi.ctx_used[i];
    if (err == MPI_SUCCESS)
        err = kn_mpi_xallreduce_and(lx, me->mask, NW);
    if (err == MPI_SUCCESS)
        err = kn_mpi_xallgather(lx, mine, sizeof(*mine), all);
    if (err != MPI_SUCCESS) /* every member fails here alike */
        goto out;
    if (lx->me == leader) {
        me->n = lx->n;
        me->val = val;
        memcpy(me->ent, all, (size_t)lx->n * sizeof(ent_t));
        size_t got = 0;
        if (swap(l, me, mylen, &theirs, &got) != MPI_SUCCESS || !side_ok(theirs, got)) {
            free(theirs);
            theirs = NULL;
            got = 0; /* tells the group it failed */
        }
        tlen = got;
        if (leader != 0) { /* the leader hands it to member 0, which broadcasts */
            knit_status_t st = knit_send(kn_mpi.ctx, &tlen, sizeof(tlen), lx->ranks[0], lx->tag, lx->ctx);
            if (st == KNIT_OK && tlen)
                st = knit_send(kn_mpi.ctx, theirs, tlen, lx->ranks[0], lx->tag, lx->ctx);
            if (st != KNIT_OK)
                err = kn_mpi_class_of(st);
        }
    } else if (lx->me == 0) {
        knit_status_t st = knit_recv(kn_mpi.ctx, &tlen, sizeof(tlen), lx->ranks[leader], lx->tag, lx->ctx, NULL);
        if (st == KNIT_OK && tlen && !(theirs = malloc(tlen)))
            st = KNIT_ERR_NOMEM; /* the leader's message is not taken: the job is failing anyway */
        if (st == KNIT_OK && tlen)
            st = knit_recv(kn_mpi.ctx, theirs, tlen, lx->ranks[leader], lx->tag, lx->ctx, NULL);
        if (st != KNIT_OK) {
            err = kn_mpi_class_of(st);
            tlen = 0;
        }
    }
    if (err == MPI_SUCCESS || lx->me == 0) {
        int e = kn_mpi_xbcast(lx, &tlen, sizeof(tlen));
        if (e == MPI_SUCCESS && tlen && !theirs && !(theirs = malloc(tlen)))
            e = MPI_ERR_NO_MEM;
        if (e == MPI_SUCCESS && tlen)
            e = kn_mpi_xbcast(lx, theirs, tlen);
        if (err == MPI_SUCCESS)
            err = e;
    }
    if (err == MPI_SUCCESS && !tlen)
        err = MPI_ERR_OTHER; /* the leaders' exchange failed */
out:
    if (err == MPI_SUCCESS) {
        memcpy(lmask, me->mask, sizeof(me->mask));
        *lents = all;
        *rs = theirs;
        all = NULL;
        theirs = NULL;
    }
    free(me);
    free(all);
    free(theirs);
    return err;
}

/* The new intercommunicator's id (free at both groups) and its local
 * intracommunicator's (free in the local group, another). */
static int pick_ids(const uint32_t *lmask, const uint32_t *rmask, uint32_t *id, uint32_t *lid)
{
    int have = 0;
    for (int i = 0; i < NW && !have; i++)
        if (lmask[i] & rmask[i]) {
            *id = (uint32_t)i * 32 + (uint32_t)__builtin_ctz(lmask[i] & rmask[i]);
            have = 1;
        }
    for (int i = 0; i < NW && have == 1; i++) {
        uint32_t m = lmask[i];
        if (*id / 32 == (uint32_t)i)
            m &= ~(1u << (*id % 32));
        if (m) {
            *lid = (uint32_t)i * 32 + (uint32_t)__builtin_ctz(m);
            have = 2;
        }
    }
    return have == 2 ? MPI_SUCCESS : MPI_ERR_INTERN; /* every id in use somewhere */
}

/* The protocol on an existing intercommunicator (leaders: local rank 0). */
static int agree_on(kn_mpi_comm_t *c, const ent_t *mine, int val, uint32_t *lmask, ent_t **lents, side_t **rs)
{
    kn_mpi_xset_t lx = kn_mpi_xset_of(c->inter->local);
    link_t l = {c->ctx_id | KN_MPI_CTX_INTERNAL, KN_MPI_TAG_INTERNAL, c->ranks[0]};
    return agree(&lx, 0, &l, mine, val, lmask, lents, rs);
}

static ent_t my_ent(kn_mpi_comm_t *local, int color, int key)
{
    ent_t e = {kn_mpi.rank, color, key, local->rank};
    return e;
}

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag,
                         MPI_Comm *newintercomm)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(lc, local_comm);
    const char *fn = __func__;
    if (lc->inter)
        return kn_mpi_error(lc, fn, MPI_ERR_COMM, "local_comm %s is an intercommunicator", kn_mpi_comm_label(lc));
    if (!newintercomm)
        return kn_mpi_error(lc, fn, MPI_ERR_ARG, "newintercomm is NULL");
    if (local_leader < 0 || local_leader >= lc->size)
        return kn_mpi_error(lc, fn, MPI_ERR_RANK, "local_leader %d not in [0, %d) of %s", local_leader, lc->size,
                            kn_mpi_comm_label(lc));
    if (tag < 0 || tag > KN_MPI_TAG_UB)
        return kn_mpi_error(lc, fn, MPI_ERR_TAG, "tag %d not in [0, MPI_TAG_UB=%d]", tag, KN_MPI_TAG_UB);
    link_t l = {0, tag, -1};
    if (lc->rank == local_leader) { /* peer_comm and remote_leader matter at the leader only */
        kn_mpi_comm_t *pc = kn_mpi_comm(peer_comm);
        if (!pc)
            return kn_mpi_error(lc, fn, MPI_ERR_COMM, "peer_comm is %s",
                                peer_comm == MPI_COMM_NULL ? "MPI_COMM_NULL" : "not a valid communicator handle");
        if (pc->inter)
            return kn_mpi_error(lc, fn, MPI_ERR_COMM, "peer_comm %s is an intercommunicator",
                                kn_mpi_comm_label(pc));
        if (remote_leader < 0 || remote_leader >= pc->size)
            return kn_mpi_error(lc, fn, MPI_ERR_RANK, "remote_leader %d not in [0, %d) of %s", remote_leader,
                                pc->size, kn_mpi_comm_label(pc));
        if (lc->job2comm[pc->ranks[remote_leader]] >= 0)
            return kn_mpi_error(lc, fn, MPI_ERR_RANK,
                                "remote_leader %d of %s is in the local group (the groups must be disjoint)",
                                remote_leader, kn_mpi_comm_label(pc));
        l.ctx = pc->ctx_id | KN_MPI_CTX_INTERNAL;
        l.peer = pc->ranks[remote_leader];
    }
    kn_mpi_xset_t lx = kn_mpi_xset_of(lc);
    ent_t mine = my_ent(lc, 0, 0), *lents;
    uint32_t lmask[NW], id, lid;
    side_t *rs;
    int err = agree(&lx, local_leader, &l, &mine, 0, lmask, &lents, &rs);
    if (err != MPI_SUCCESS)
        return kn_mpi_error(lc, fn, err, "the exchange between the groups failed");
    int *rr = malloc((size_t)rs->n * sizeof(int));
    if (!rr)
        err = MPI_ERR_NO_MEM;
    for (int i = 0; rr && i < rs->n; i++) {
        rr[i] = rs->ent[i].job;
        if (rr[i] < 0 || rr[i] >= kn_mpi.size || lc->job2comm[rr[i]] >= 0)
            err = MPI_ERR_COMM; /* both sides see it */
    }
    if (err == MPI_SUCCESS)
        err = pick_ids(lmask, rs->mask, &id, &lid);
    if (err == MPI_SUCCESS)
        err = inter_new(lc->ranks, lc->size, lid, rr, rs->n, id, lc->errh, newintercomm);
    free(rr);
    free(lents);
    free(rs);
    if (err == MPI_ERR_COMM)
        return kn_mpi_error(lc, fn, err, "the two groups share a process (they must be disjoint)");
    return err == MPI_SUCCESS ? err : kn_mpi_error(lc, fn, err, "cannot create the intercommunicator");
}

int kn_mpi_inter_dup(kn_mpi_comm_t *c, MPI_Comm *newcomm, const char *fn)
{
    kn_mpi_comm_t *lc = c->inter->local;
    ent_t mine = my_ent(lc, 0, 0), *lents;
    uint32_t lmask[NW], id, lid;
    side_t *rs;
    int err = agree_on(c, &mine, 0, lmask, &lents, &rs);
    if (err != MPI_SUCCESS)
        return kn_mpi_error(c, fn, err, "the exchange between the groups failed");
    err = pick_ids(lmask, rs->mask, &id, &lid);
    if (err == MPI_SUCCESS)
        err = inter_new(lc->ranks, lc->size, lid, c->ranks, c->size, id, c->errh, newcomm);
    free(lents);
    free(rs);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, fn, err, "cannot create the intercommunicator");
}

static int ent_cmp(const void *a, const void *b)
{
    const ent_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The job ranks of the entries of colour color, ordered by key then rank. */
static int pick(ent_t *e, int n, int color, int *out)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (e[i].color == color)
            e[k++] = e[i];
    qsort(e, (size_t)k, sizeof(*e), ent_cmp);
    for (int i = 0; i < k; i++)
        out[i] = e[i].job;
    return k;
}

static int split_common(kn_mpi_comm_t *c, int color, int key, MPI_Comm *newcomm, const char *fn)
{
    kn_mpi_comm_t *lc = c->inter->local;
    ent_t mine = my_ent(lc, color, key), *lents;
    uint32_t lmask[NW], id, lid;
    side_t *rs;
    int err = agree_on(c, &mine, 0, lmask, &lents, &rs);
    if (err != MPI_SUCCESS)
        return kn_mpi_error(c, fn, err, "the exchange between the groups failed");
    int *lr = malloc((size_t)lc->size * sizeof(int)), *rr = malloc((size_t)rs->n * sizeof(int));
    err = lr && rr ? pick_ids(lmask, rs->mask, &id, &lid) : MPI_ERR_NO_MEM;
    *newcomm = MPI_COMM_NULL;
    if (err == MPI_SUCCESS && color != MPI_UNDEFINED) {
        int ln = pick(lents, lc->size, color, lr);
        int rn = pick(rs->ent, rs->n, color, rr);
        if (rn > 0) /* no remote process of this colour: MPI_COMM_NULL */
            err = inter_new(lr, ln, lid, rr, rn, id, c->errh, newcomm);
    }
    free(lr);
    free(rr);
    free(lents);
    free(rs);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, fn, err, "cannot create the intercommunicator");
}

int kn_mpi_inter_split(kn_mpi_comm_t *c, int color, int key, MPI_Comm *newcomm, const char *fn)
{
    if (color < 0 && color != MPI_UNDEFINED)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "color %d is negative", color);
    if (!newcomm)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "newcomm is NULL");
    return split_common(c, color, key, newcomm, fn);
}

/* MPI_Comm_create: the group is part of the local group; the new
 * intercommunicator joins it with the group the other side gave. */
int kn_mpi_inter_create(kn_mpi_comm_t *c, const int *granks, int gn, MPI_Comm *newcomm, const char *fn)
{
    kn_mpi_comm_t *lc = c->inter->local;
    int me = -1;
    for (int i = 0; i < gn; i++) {
        if (lc->job2comm[granks[i]] < 0)
            return kn_mpi_error(c, fn, MPI_ERR_GROUP, "the group has a process outside the local group of %s",
                                kn_mpi_comm_label(c));
        if (granks[i] == kn_mpi.rank)
            me = i;
    }
    return split_common(c, me < 0 ? MPI_UNDEFINED : 0, me, newcomm, fn);
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, intercomm);
    const char *fn = __func__;
    if (!c->inter)
        return kn_mpi_error(c, fn, MPI_ERR_COMM, "%s is not an intercommunicator", kn_mpi_comm_label(c));
    if (!newintracomm)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "newintracomm is NULL");
    kn_mpi_comm_t *lc = c->inter->local;
    ent_t mine = my_ent(lc, 0, 0), *lents;
    uint32_t lmask[NW], id, lid;
    side_t *rs;
    int err = agree_on(c, &mine, high != 0, lmask, &lents, &rs);
    if (err != MPI_SUCCESS)
        return kn_mpi_error(c, fn, err, "the exchange between the groups failed");
    err = pick_ids(lmask, rs->mask, &id, &lid);
    int n = lc->size + c->size, *ranks = malloc((size_t)n * sizeof(int));
    if (!ranks)
        err = MPI_ERR_NO_MEM;
    if (err == MPI_SUCCESS) {
        /* the low group first; with the same high, the group of the lower
         * leader (job rank), which both sides see alike */
        int lh = high != 0, rh = rs->val != 0;
        int local_first = lh != rh ? !lh : lc->ranks[0] < c->ranks[0];
        memcpy(ranks + (local_first ? 0 : c->size), lc->ranks, (size_t)lc->size * sizeof(int));
        memcpy(ranks + (local_first ? lc->size : 0), c->ranks, (size_t)c->size * sizeof(int));
        kn_mpi_comm_t *m;
        err = kn_mpi_comm_make(ranks, n, id, c->errh, &m);
        if (err == MPI_SUCCESS)
            *newintracomm = m->handle;
    }
    free(ranks);
    free(lents);
    free(rs);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, fn, err, "cannot create the merged communicator");
}

/* ------------------------------------------------------------- queries */

int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!flag)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "flag is NULL");
    *flag = c->inter != NULL;
    return MPI_SUCCESS;
}

int MPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!c->inter)
        return kn_mpi_error(c, __func__, MPI_ERR_COMM, "%s is not an intercommunicator", kn_mpi_comm_label(c));
    if (!size)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "size is NULL");
    *size = c->size;
    return MPI_SUCCESS;
}

int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!c->inter)
        return kn_mpi_error(c, __func__, MPI_ERR_COMM, "%s is not an intercommunicator", kn_mpi_comm_label(c));
    if (!group)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "group is NULL");
    int err = kn_mpi_group_make(c->ranks, c->size, group);
    return err == MPI_SUCCESS ? err : kn_mpi_error(c, __func__, err, "out of memory");
}

/* 0 same members in the same order, 1 same members, 2 otherwise */
static int ranks_cmp(const kn_mpi_comm_t *a, const kn_mpi_comm_t *b)
{
    if (a->size != b->size)
        return 2;
    int order = 1, set = 1;
    for (int i = 0; i < a->size; i++) {
        order &= a->ranks[i] == b->ranks[i];
        set &= b->job2comm[a->ranks[i]] >= 0;
    }
    return order ? 0 : set ? 1 : 2;
}

int kn_mpi_inter_compare(kn_mpi_comm_t *a, kn_mpi_comm_t *b, int *result)
{
    if (a == b) {
        *result = MPI_IDENT;
    } else if (!a->inter || !b->inter) {
        *result = MPI_UNEQUAL;
    } else {
        int l = ranks_cmp(a->inter->local, b->inter->local), r = ranks_cmp(a, b);
        int w = l > r ? l : r;
        *result = w == 0 ? MPI_CONGRUENT : w == 1 ? MPI_SIMILAR : MPI_UNEQUAL;
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- collectives */

#define IN_PLACE(p) ((const void *)(p) == MPI_IN_PLACE)

/* How this process takes part in a rooted collective. */
enum { AT_ROOT, AT_IDLE, AT_REMOTE }; /* the root; its group's others; the other group */

static int root_arg(kn_mpi_comm_t *c, int root, int *at, const char *fn)
{
    if (root == MPI_ROOT)
        *at = AT_ROOT;
    else if (root == MPI_PROC_NULL)
        *at = AT_IDLE;
    else if (root >= 0 && root < c->size)
        *at = AT_REMOTE;
    else
        return kn_mpi_error(c, fn, MPI_ERR_ROOT,
                            "root %d of %s: MPI_ROOT, MPI_PROC_NULL or a rank of the remote group [0, %d)", root,
                            kn_mpi_comm_label(c), c->size);
    return MPI_SUCCESS;
}

static int no_in_place(kn_mpi_comm_t *c, const void *sb, const void *rb, const char *fn)
{
    if (IN_PLACE(sb) || IN_PLACE(rb))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is not allowed on an intercommunicator (%s)",
                            kn_mpi_comm_label(c));
    return MPI_SUCCESS;
}

/* A datatype argument (valid, committed); *ext its extent. */
static int type_ext(kn_mpi_comm_t *c, MPI_Datatype dt, MPI_Aint *ext, const char *fn)
{
    int err;
    kn_mpi_type_t *t = kn_mpi_type_arg(c, dt, fn, &err);
    if (!t)
        return err;
    *ext = t->extent;
    return MPI_SUCCESS;
}

/* Scratch for count elements of dt in its own layout: the pointer to use
 * (element 0), *base what to free. */
static char *scratch(MPI_Datatype dt, int count, void **base)
{
    kn_mpi_type_t *t = kn_mpi_type(dt);
    MPI_Aint span = count > 0 ? (MPI_Aint)(count - 1) * t->extent : 0;
    MPI_Aint lo = (span < 0 ? span : 0) + t->true_lb, hi = (span > 0 ? span : 0) + t->true_ub;
    *base = malloc(hi > lo ? (size_t)(hi - lo) : 1);
    return *base ? (char *)*base - lo : NULL;
}

/* An error of a step inside (on a hidden communicator), raised on c. */
static int step_error(kn_mpi_comm_t *c, int err, const char *fn)
{
    if (err == MPI_SUCCESS)
        return err;
    return kn_mpi_error(c, fn, err, "a step of the collective on intercommunicator %s failed",
                        kn_mpi_comm_label(c));
}

#define STEP(x)                                 \
    do {                                        \
        if ((err = (x)) != MPI_SUCCESS)         \
            goto out;                           \
    } while (0)

/* ---------------------------------------------------------- schedules */

/* The point-to-point part of a collective between the groups: requests on
 * the bridge, all posted when the call starts, none waiting on another, so
 * the engine moves them all with no help and a nonblocking call needs no
 * progress of its own.  A reduction ends with a fold of the blocks
 * received, run when they are all in:
 *   rb = blk 0 op (blk 1 op (... op blk nblk-1))
 * (rank order, as MPI_Reduce_local applies in op inout).  A blocking call
 * waits for its schedule at once (kn_mpi_inter_finish); a nonblocking one
 * hangs it on its request (coll.c), tested and finished by the completion
 * calls. */
struct kn_mpi_isched {
    int n, cap, done;      /* requests posted; those known complete */
    MPI_Request *rq;
    int err;               /* the first failure a test saw */
    /* the fold */
    int nblk, cnt;
    void *base;
    char *blk;
    MPI_Aint bstride;      /* bytes from one block to the next */
    void *rb;
    MPI_Datatype dt;       /* a duplicate: the program may free its own meanwhile */
    MPI_Op op;             /* held (kn_mpi_op_hold) */
};

static int sched_new(int cap, kn_mpi_isched_t **out)
{
    kn_mpi_isched_t *is = calloc(1, sizeof(*is));
    if (!is)
        return MPI_ERR_NO_MEM;
    if (!(is->rq = malloc(((size_t)cap + 1) * sizeof(MPI_Request)))) {
        free(is);
        return MPI_ERR_NO_MEM;
    }
    is->cap = cap;
    is->dt = MPI_DATATYPE_NULL;
    is->op = MPI_OP_NULL;
    *out = is;
    return MPI_SUCCESS;
}

static void sched_free(kn_mpi_isched_t *is)
{
    if (is->dt != MPI_DATATYPE_NULL)
        MPI_Type_free(&is->dt);
    if (is->op != MPI_OP_NULL)
        kn_mpi_op_drop(is->op);
    free(is->base);
    free(is->rq);
    free(is);
}

static int post(kn_mpi_isched_t *is, kn_mpi_comm_t *c, int recv, const void *buf, int cnt, MPI_Datatype dt,
                int peer)
{
    MPI_Comm B = c->inter->bridge->handle;
    int err = recv ? MPI_Irecv((void *)buf, cnt, dt, peer, TAG_COLL, B, &is->rq[is->n])
                   : MPI_Isend(buf, cnt, dt, peer, TAG_COLL, B, &is->rq[is->n]);
    if (err == MPI_SUCCESS)
        is->n++;
    return err;
}

int kn_mpi_inter_test(kn_mpi_isched_t *is)
{
    for (; is->done < is->n; is->done++) {
        int flag = 0, e = MPI_Test(&is->rq[is->done], &flag, MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS) { /* the request is gone: go on with the others */
            if (!is->err)
                is->err = e;
            continue;
        }
        if (!flag)
            return 0;
    }
    return 1;
}

/* The fold of a reduction: the last block into rb, then the others. */
static int fold(kn_mpi_isched_t *is)
{
    int size, pos = 0, err;
    if ((err = MPI_Pack_size(is->cnt, is->dt, MPI_COMM_SELF, &size)) != MPI_SUCCESS)
        return err;
    char *tmp = malloc(size ? (size_t)size : 1);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    char *last = is->blk + (MPI_Aint)(is->nblk - 1) * is->bstride;
    err = MPI_Pack(last, is->cnt, is->dt, tmp, size, &pos, MPI_COMM_SELF);
    pos = 0;
    if (err == MPI_SUCCESS)
        err = MPI_Unpack(tmp, size, &pos, is->rb, is->cnt, is->dt, MPI_COMM_SELF);
    free(tmp);
    for (int j = is->nblk - 2; j >= 0 && err == MPI_SUCCESS; j--)
        err = MPI_Reduce_local(is->blk + (MPI_Aint)j * is->bstride, is->rb, is->cnt, is->dt, is->op);
    return err;
}

int kn_mpi_inter_finish(kn_mpi_isched_t *is)
{
    int err = is->err;
    for (; is->done < is->n; is->done++) {
        int e = MPI_Wait(&is->rq[is->done], MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS && err == MPI_SUCCESS)
            err = e;
    }
    if (err == MPI_SUCCESS && is->nblk > 0)
        err = fold(is);
    sched_free(is);
    return err;
}

/* A schedule that could not be posted whole: take its receives back, let
 * its sends finish on their own. */
static void sched_abort(kn_mpi_isched_t *is, const char *recv)
{
    for (int i = 0; i < is->n; i++) {
        if (recv[i]) {
            MPI_Cancel(&is->rq[i]);
            MPI_Wait(&is->rq[i], MPI_STATUS_IGNORE);
        } else {
            MPI_Request_free(&is->rq[i]);
        }
    }
    is->n = 0;
    sched_free(is);
}

/* End of a call built on a schedule: a nonblocking call (nb) hands it
 * out; a blocking one waits for it.  recv: which requests receive (for
 * sched_abort, when posting failed with err). */
static int sched_end(kn_mpi_comm_t *c, kn_mpi_isched_t *is, char *recv, int err, kn_mpi_isched_t **nb,
                     const char *fn)
{
    if (err != MPI_SUCCESS) {
        if (is)
            sched_abort(is, recv);
        free(recv);
        return step_error(c, err, fn);
    }
    free(recv);
    if (nb) {
        *nb = is;
        return MPI_SUCCESS;
    }
    return step_error(c, kn_mpi_inter_finish(is), fn);
}

/* A schedule for up to cap requests, with its receive marks. */
static int sched_open(int cap, kn_mpi_isched_t **is, char **recv)
{
    *recv = calloc((size_t)cap + 1, 1);
    int err = *recv ? sched_new(cap, is) : MPI_ERR_NO_MEM;
    if (err != MPI_SUCCESS) {
        free(*recv);
        *recv = NULL;
        *is = NULL;
    }
    return err;
}

#define POST(recv_, buf, cnt, dt, peer)                                     \
    do {                                                                    \
        recv[is->n] = (char)(recv_);                                        \
        if ((err = post(is, c, (recv_), (buf), (cnt), (dt), (peer))) != MPI_SUCCESS) \
            goto out;                                                       \
    } while (0)

/* ---------------------------------------------------------- the calls */

int kn_mpi_inter_barrier(kn_mpi_comm_t *c, kn_mpi_isched_t **nb, const char *fn)
{
    MPI_Comm L = c->inter->local->handle, B = c->inter->bridge->handle;
    kn_mpi_isched_t *is = NULL;
    char *recv = NULL;
    int err;
    if (nb) { /* a word with every remote process, both ways */
        STEP(sched_open(2 * c->size, &is, &recv));
        for (int j = 0; j < c->size; j++) {
            POST(1, NULL, 0, MPI_BYTE, j);
            POST(0, NULL, 0, MPI_BYTE, j);
        }
        goto out;
    }
    /* everyone here entered; the leaders hear that the other side did; tell everyone */
    STEP(MPI_Barrier(L));
    if (c->rank == 0)
        STEP(MPI_Sendrecv(NULL, 0, MPI_BYTE, 0, TAG_COLL, NULL, 0, MPI_BYTE, 0, TAG_COLL, B, MPI_STATUS_IGNORE));
    STEP(MPI_Barrier(L));
out:
    return nb ? sched_end(c, is, recv, err, nb, fn) : step_error(c, err, fn);
}

int kn_mpi_inter_bcast(kn_mpi_comm_t *c, void *buf, int count, MPI_Datatype dt, int root, kn_mpi_isched_t **nb,
                       const char *fn)
{
    MPI_Comm L = c->inter->local->handle, B = c->inter->bridge->handle;
    kn_mpi_isched_t *is = NULL;
    char *recv = NULL;
    int at, err;
    MPI_Aint ext;
    if ((err = root_arg(c, root, &at, fn)) != MPI_SUCCESS)
        return err;
    if (at != AT_IDLE) {
        if ((err = no_in_place(c, buf, NULL, fn)) != MPI_SUCCESS || (err = type_ext(c, dt, &ext, fn)) != MPI_SUCCESS)
            return err;
        if (count < 0)
            return kn_mpi_error(c, fn, MPI_ERR_COUNT, "count %d is negative", count);
    }
    if (nb) { /* the root sends every remote process the data */
        STEP(sched_open(c->size, &is, &recv));
        if (at == AT_ROOT)
            for (int j = 0; j < c->size; j++)
                POST(0, buf, count, dt, j);
        else if (at == AT_REMOTE)
            POST(1, buf, count, dt, root);
        goto out;
    }
    if (at == AT_ROOT) { /* to the other group's rank 0, which broadcasts it there */
        STEP(MPI_Send(buf, count, dt, 0, TAG_COLL, B));
    } else if (at == AT_REMOTE) {
        if (c->rank == 0)
            STEP(MPI_Recv(buf, count, dt, root, TAG_COLL, B, MPI_STATUS_IGNORE));
        STEP(MPI_Bcast(buf, count, dt, 0, L));
    }
    err = MPI_SUCCESS;
out:
    return nb ? sched_end(c, is, recv, err, nb, fn) : step_error(c, err, fn);
}

int kn_mpi_inter_blocks(kn_mpi_comm_t *c, int kind, const void *sb, const int *scs, const int *sdispls, int sc,
                        MPI_Datatype sdt, void *rb, const int *rcs, const int *rdispls, int rc, MPI_Datatype rdt,
                        int root, kn_mpi_isched_t **nb, const char *fn)
{
    int n = c->size, err, at = AT_REMOTE;
    int rooted = kind == KN_IC_GATHER || kind == KN_IC_SCATTER || kind == KN_IC_GATHERV || kind == KN_IC_SCATTERV;
    int scatter = kind == KN_IC_SCATTER || kind == KN_IC_SCATTERV, v = kind >= KN_IC_GATHERV;
    if (rooted && (err = root_arg(c, root, &at, fn)) != MPI_SUCCESS)
        return err;
    /* which sides this process has: the root of gather receives only, of
     * scatter sends only; the other group the other way; none at the
     * root's group's others */
    int sends = at != AT_IDLE && (!rooted || (scatter ? at == AT_ROOT : at == AT_REMOTE));
    int recvs = at != AT_IDLE && (!rooted || (scatter ? at == AT_REMOTE : at == AT_ROOT));
    MPI_Aint sext = 0, rext = 0;
    if (at != AT_IDLE && (err = no_in_place(c, sb, rb, fn)) != MPI_SUCCESS)
        return err;
    if (sends && (err = type_ext(c, sdt, &sext, fn)) != MPI_SUCCESS)
        return err;
    if (recvs && (err = type_ext(c, rdt, &rext, fn)) != MPI_SUCCESS)
        return err;
    /* the v side's arrays where they count: at the root of gatherv and
     * scatterv, everywhere for allgatherv */
    int vs = v && scatter && at == AT_ROOT, vr = v && !scatter && recvs && !(rooted && at == AT_REMOTE);
    if ((vs && (!scs || !sdispls)) || (vr && (!rcs || !rdispls)))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "counts or displacements are NULL");
    if ((sends && !vs && sc < 0) || (recvs && !vr && rc < 0))
        return kn_mpi_error(c, fn, MPI_ERR_COUNT, "%s count %d is negative", sends && !vs && sc < 0 ? "send" : "receive",
                            sends && !vs && sc < 0 ? sc : rc);
    for (int i = 0; i < n; i++)
        if ((vs && scs[i] < 0) || (vr && rcs[i] < 0))
            return kn_mpi_error(c, fn, MPI_ERR_COUNT, "the count for remote rank %d is negative", i);
    kn_mpi_isched_t *is = NULL;
    char *recv = NULL;
    STEP(sched_open(2 * n, &is, &recv));
    if (rooted && at == AT_REMOTE) { /* one message with the root */
        if (scatter)
            POST(1, rb, rc, rdt, root);
        else
            POST(0, sb, sc, sdt, root);
        goto out;
    }
    /* receives first, then sends: block i of alltoall and of the root's
     * side, the one buffer of allgather's send */
    for (int i = 0; recvs && i < n; i++) {
        MPI_Aint off = vr ? (MPI_Aint)rdispls[i] * rext : (MPI_Aint)i * rc * rext;
        POST(1, (char *)rb + off, vr ? rcs[i] : rc, rdt, i);
    }
    for (int i = 0; sends && i < n; i++) {
        MPI_Aint off = vs ? (MPI_Aint)sdispls[i] * sext : kind == KN_IC_ALLTOALL || scatter ? (MPI_Aint)i * sc * sext : 0;
        POST(0, (const char *)sb + off, vs ? scs[i] : sc, sdt, i);
    }
out:
    return sched_end(c, is, recv, err, nb, fn);
}

int kn_mpi_inter_alltoallvw(kn_mpi_comm_t *c, const void *sb, const int *scs, const int *sds,
                            const MPI_Datatype *sdts, void *rb, const int *rcs, const int *rds,
                            const MPI_Datatype *rdts, int w, kn_mpi_isched_t **nb, const char *fn)
{
    int n = c->size, err;
    if ((err = no_in_place(c, sb, rb, fn)) != MPI_SUCCESS)
        return err;
    if (!scs || !sds || !rcs || !rds || !sdts || !rdts)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "a count, displacement or datatype array is NULL");
    MPI_Aint sext = 0, rext = 0;
    for (int i = 0; i < (w ? n : 1); i++)
        if ((err = type_ext(c, sdts[i], &sext, fn)) != MPI_SUCCESS ||
            (err = type_ext(c, rdts[i], &rext, fn)) != MPI_SUCCESS)
            return err;
    for (int i = 0; i < n; i++)
        if (scs[i] < 0 || rcs[i] < 0)
            return kn_mpi_error(c, fn, MPI_ERR_COUNT, "a count for remote rank %d is negative", i);
    kn_mpi_isched_t *is = NULL;
    char *recv = NULL;
    STEP(sched_open(2 * n, &is, &recv));
    /* w: a type per block, displacements in bytes; v: one type, in extents */
    for (int i = 0; i < n; i++)
        POST(1, (char *)rb + (w ? (MPI_Aint)rds[i] : (MPI_Aint)rds[i] * rext), rcs[i], rdts[w ? i : 0], i);
    for (int i = 0; i < n; i++)
        POST(0, (const char *)sb + (w ? (MPI_Aint)sds[i] : (MPI_Aint)sds[i] * sext), scs[i], sdts[w ? i : 0], i);
out:
    return sched_end(c, is, recv, err, nb, fn);
}

/* Nonblocking reductions: every block comes straight from the process
 * that gives it, into scratch, and is folded at the end.  total: the
 * elements of a process's input. */
static int reduction_nb(kn_mpi_comm_t *c, int kind, int at, const void *sb, void *rb, int count, const int *rcs,
                        const int *displs, int total, MPI_Datatype dt, MPI_Op op, int root, MPI_Aint ext,
                        kn_mpi_isched_t **nb, const char *fn)
{
    int n = c->size, me = c->rank, err;
    kn_mpi_isched_t *is = NULL;
    char *recv = NULL;
    STEP(sched_open(2 * n, &is, &recv));
    if (at == AT_IDLE)
        goto out;
    if (kind == KN_IC_REDUCE && at == AT_REMOTE) { /* ours goes to the root */
        POST(0, sb, count, dt, root);
        goto out;
    }
    /* what each remote process sends us (blk) and we send each */
    int blk = count, part = 0;
    MPI_Aint from = 0; /* our share's offset in a remote process's input */
    if (kind == KN_IC_RS_BLOCK) {
        part = n ? total / n : 0; /* the remote processes' share: total is theirs too */
        if ((MPI_Aint)part * n != total)
            STEP(MPI_ERR_COUNT);
    } else if (kind == KN_IC_RS) { /* their counts are not known here: whole inputs go */
        blk = total;
        from = (MPI_Aint)displs[me] * ext;
    }
    char *base = scratch(dt, blk * n, &is->base);
    if (!base)
        STEP(MPI_ERR_NO_MEM);
    if ((err = MPI_Type_dup(dt, &is->dt)) != MPI_SUCCESS || (err = kn_mpi_op_hold(op, &is->op)) != MPI_SUCCESS)
        goto out;
    is->nblk = n;
    is->cnt = kind == KN_IC_RS ? rcs[me] : count;
    is->blk = base + from;
    is->bstride = (MPI_Aint)blk * ext;
    is->rb = rb;
    for (int j = 0; j < n; j++)
        POST(1, base + (MPI_Aint)j * blk * ext, blk, dt, j);
    for (int j = 0; kind != KN_IC_REDUCE && j < n; j++) {
        if (kind == KN_IC_RS_BLOCK)
            POST(0, (const char *)sb + (MPI_Aint)j * part * ext, part, dt, j);
        else
            POST(0, sb, kind == KN_IC_RS ? total : count, dt, j);
    }
out:
    free((void *)displs);
    return sched_end(c, is, recv, err, nb, fn);
}

int kn_mpi_inter_reduction(kn_mpi_comm_t *c, int kind, const void *sb, void *rb, int count, const int *rcs,
                           MPI_Datatype dt, MPI_Op op, int root, kn_mpi_isched_t **nb, const char *fn)
{
    MPI_Comm L = c->inter->local->handle, B = c->inter->bridge->handle;
    int me = c->rank, ln = c->inter->local->size, at = AT_REMOTE, err;
    if (kind == KN_IC_REDUCE && (err = root_arg(c, root, &at, fn)) != MPI_SUCCESS)
        return err;
    if (at == AT_IDLE)
        return nb ? reduction_nb(c, kind, at, sb, rb, count, rcs, NULL, 0, dt, op, root, 0, nb, fn) : MPI_SUCCESS;
    if ((err = no_in_place(c, sb, rb, fn)) != MPI_SUCCESS)
        return err;
    MPI_Aint ext;
    if ((err = type_ext(c, dt, &ext, fn)) != MPI_SUCCESS)
        return err;
    if (kind == KN_IC_RS && !rcs)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "recvcounts is NULL");
    /* elements in each process's input: this group's results' total */
    int total = count, *displs = NULL;
    if (kind == KN_IC_RS_BLOCK)
        total = count * ln;
    if (kind == KN_IC_RS) {
        if (!(displs = malloc((size_t)ln * sizeof(int))))
            return kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "out of memory");
        total = 0;
        for (int i = 0; i < ln; i++) {
            if (rcs[i] < 0) {
                free(displs);
                return kn_mpi_error(c, fn, MPI_ERR_COUNT, "recvcounts[%d] = %d is negative", i, rcs[i]);
            }
            displs[i] = total;
            total += rcs[i];
        }
    }
    if (total < 0 || count < 0) {
        free(displs);
        return kn_mpi_error(c, fn, MPI_ERR_COUNT, "count %d is negative", count);
    }
    if (nb) /* takes displs */
        return reduction_nb(c, kind, at, sb, rb, count, rcs, displs, total, dt, op, root, ext, nb, fn);
    void *b1 = NULL, *b2 = NULL;
    char *t1 = NULL, *t2 = NULL;
    if (at == AT_ROOT) {
        STEP(MPI_Recv(rb, count, dt, 0, TAG_COLL, B, MPI_STATUS_IGNORE));
        goto out;
    }
    /* this group's reduction at its rank 0 */
    if (me == 0 && !(t1 = scratch(dt, total, &b1)))
        STEP(MPI_ERR_NO_MEM);
    STEP(MPI_Reduce(sb, t1, total, dt, op, 0, L));
    switch (kind) {
    case KN_IC_REDUCE:
        if (me == 0)
            STEP(MPI_Send(t1, total, dt, root, TAG_COLL, B));
        break;
    case KN_IC_ALLREDUCE: /* ours goes there, theirs comes here */
        if (me == 0)
            STEP(MPI_Sendrecv(t1, total, dt, 0, TAG_COLL, rb, count, dt, 0, TAG_COLL, B, MPI_STATUS_IGNORE));
        STEP(MPI_Bcast(rb, count, dt, 0, L));
        break;
    default: /* reduce_scatter(_block): theirs is spread here */
        if (me == 0) {
            if (!(t2 = scratch(dt, total, &b2)))
                STEP(MPI_ERR_NO_MEM);
            STEP(MPI_Sendrecv(t1, total, dt, 0, TAG_COLL, t2, total, dt, 0, TAG_COLL, B, MPI_STATUS_IGNORE));
        }
        if (kind == KN_IC_RS_BLOCK)
            STEP(MPI_Scatter(t2, count, dt, rb, count, dt, 0, L));
        else
            STEP(MPI_Scatterv(t2, rcs, displs, dt, rb, rcs[me], dt, 0, L));
    }
out:
    free(b1);
    free(b2);
    free(displs);
    return step_error(c, err, fn);
}
