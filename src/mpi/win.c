/*
 * MPI windows: creation of every flavor, freeing, the window's group,
 * name, hints, attributes and error handler (win.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi/win.h"

static kn_mpi_tbl_t wins = {.kind = KN_K_WIN};

kn_mpi_win_t *kn_mpi_win(MPI_Win h)
{
    return kn_mpi_tbl_get(&wins, h);
}

int kn_mpi_win_error(kn_mpi_win_t *w, const char *fn, int cls, knit_status_t cause, const char *fmt, ...)
{
    char detail[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (!w) /* no window: the default handler */
        return kn_mpi_error_cause(NULL, fn, cls, cause, "%s", detail);
    if (w->name[0])
        return kn_mpi_error_h(w->errh, w->handle, fn, cls, cause, "window %s: %s", w->name, detail);
    return kn_mpi_error_h(w->errh, w->handle, fn, cls, cause, "%s", detail);
}

kn_mpi_win_t *kn_mpi_win_arg(MPI_Win h, const char *fn, int *err)
{
    kn_mpi_win_t *w = kn_mpi_win(h);
    if (!w)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_WIN, "%s", h == MPI_WIN_NULL ? "the window is MPI_WIN_NULL"
                                                                        : "not a valid window");
    return w;
}

/* ------------------------------------------------------------ creation */

static int info_flag(MPI_Info info, const char *key, const char *yes)
{
    char v[64];
    int flag = 0;
    if (info == MPI_INFO_NULL || MPI_Info_get(info, key, (int)sizeof(v) - 1, v, &flag) != MPI_SUCCESS || !flag)
        return -1;
    return strcmp(v, yes) == 0;
}

static void hints(kn_mpi_win_t *w, MPI_Info info)
{
    w->no_locks = info_flag(info, "no_locks", "true") == 1;
    w->ordered_acc = info_flag(info, "accumulate_ordering", "none") != 1;
}

static void win_release(kn_mpi_win_t *w)
{
    if (!w)
        return;
    if (w->handle)
        kn_mpi_tbl_del(&wins, w->handle);
    if (w->comm) {
        MPI_Comm ch = w->comm->handle;
        MPI_Comm_free(&ch);
    }
    if (w->shm)
        munmap(w->shm, w->shm_len);
    kn_mpi_errh_release(w->errh);
    free(w->disp);
    free(w->remote);
    free(w->shm_off);
    free(w->shm_size);
    free(w->att);
    free(w->locked);
    free(w->access);
    free(w->expose);
    free(w->expose_done);
    free(w->rop);
    kn_mpi_win_msg_release(w);
    free(w);
}

/* Every flavor's start: the window object, its communicator and its lock
 * words.  Collective; NULL: the error is raised (*err). */
static kn_mpi_win_t *win_new(MPI_Comm comm, MPI_Info info, int disp_unit, MPI_Aint size, MPI_Win *win,
                             const char *fn, int *err)
{
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, fn, err);
    if (!c)
        return NULL;
    if (!win) {
        *err = kn_mpi_error(c, fn, MPI_ERR_ARG, "win is NULL");
        return NULL;
    }
    if (c->inter) {
        *err = kn_mpi_error(c, fn, MPI_ERR_COMM, "windows are made over intracommunicators; %s is an "
                                                 "intercommunicator", kn_mpi_comm_label(c));
        return NULL;
    }
    if (size < 0 || disp_unit <= 0) {
        *err = kn_mpi_error(c, fn, size < 0 ? MPI_ERR_SIZE : MPI_ERR_DISP, "size %ld, disp_unit %d", (long)size,
                            disp_unit);
        return NULL;
    }
    if (info != MPI_INFO_NULL && !kn_mpi_tbl_get(&kn_mpi.infos, info)) {
        *err = kn_mpi_error(c, fn, MPI_ERR_INFO, "not a valid info object");
        return NULL;
    }
    kn_mpi_win_t *w = calloc(1, sizeof(*w));
    MPI_Comm dup = MPI_COMM_NULL;
    if (!w) {
        *err = kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "no memory for a window");
        return NULL;
    }
    int e = MPI_Comm_dup(comm, &dup);
    if (e != MPI_SUCCESS) {
        free(w);
        *err = e;
        return NULL;
    }
    w->comm = kn_mpi_comm(dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    w->n = w->comm->size;
    w->me = w->comm->rank;
    w->disp_unit = disp_unit;
    w->size = size;
    w->errh = MPI_ERRORS_ARE_FATAL;
    w->info = info;
    hints(w, info);
    w->disp = malloc((size_t)w->n * sizeof(int));
    w->locked = calloc((size_t)w->n, 1);
    w->remote = calloc((size_t)w->n, 1);
    knit_status_t st = w->disp && w->locked && w->remote ? KNIT_OK : KNIT_ERR_NOMEM;
    for (int i = 0; st == KNIT_OK && i < w->n; i++) {
        w->remote[i] = knit_node_of(kn_mpi.ctx, w->comm->ranks[i]) != knit_node(kn_mpi.ctx);
        w->msg |= w->remote[i]; /* spanning nodes, every member has one on another node */
    }
    if (st == KNIT_OK && w->msg &&
        (!(w->msg_sent = calloc((size_t)w->n, sizeof(*w->msg_sent))) || !(w->msg_acc = calloc((size_t)w->n, 1))))
        st = KNIT_ERR_NOMEM;
    /* every member's disp_unit, and whether every member got this far */
    int mine[2] = {disp_unit, st == KNIT_OK}, *all = malloc((size_t)w->n * sizeof(mine));
    knit_status_t gs = all ? knit_allgather(w->comm->kc, mine, all, 2, KNIT_INT) : KNIT_ERR_NOMEM;
    for (int i = 0; gs == KNIT_OK && i < w->n; i++) {
        w->disp[i] = all[2 * i];
        if (!all[2 * i + 1])
            gs = KNIT_ERR_NOMEM;
    }
    free(all);
    if (gs == KNIT_OK)
        gs = knit_mem_alloc(w->comm->kc, sizeof(int64_t), &w->ctl);
    if (gs != KNIT_OK) {
        win_release(w);
        *err = kn_mpi_error_st(c, fn, gs, "the window's members could not agree on it");
        return NULL;
    }
    return w;
}

/* The knit window is there: hand out the handle. */
static int win_done(kn_mpi_win_t *w, kn_mpi_comm_t *c, knit_status_t st, MPI_Win *win, const char *fn)
{
    int h = st == KNIT_OK ? kn_mpi_tbl_add(&wins, w, -1) : -1;
    if (h < 0) {
        if (w->kw)
            knit_win_free(w->kw);
        knit_win_free(w->ctl);
        w->handle = 0;
        win_release(w);
        return st != KNIT_OK ? kn_mpi_error_st(c, fn, st, "the window could not be created")
                             : kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "no room for a window handle");
    }
    w->handle = h;
    *win = h;
    return MPI_SUCCESS;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    KN_MPI_READY();
    int err;
    kn_mpi_win_t *w = win_new(comm, info, disp_unit, size, win, __func__, &err);
    if (!w)
        return err;
    w->flavor = MPI_WIN_FLAVOR_CREATE;
    w->base = size ? base : NULL;
    knit_status_t st = knit_win_create(w->comm->kc, w->base, (size_t)size, &w->kw);
    return win_done(w, kn_mpi_comm(comm), st, win, __func__);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    KN_MPI_READY();
    int err;
    if (!baseptr)
        return kn_mpi_error(kn_mpi_comm(comm), __func__, MPI_ERR_ARG, "baseptr is NULL");
    kn_mpi_win_t *w = win_new(comm, info, disp_unit, size, win, __func__, &err);
    if (!w)
        return err;
    w->flavor = MPI_WIN_FLAVOR_ALLOCATE;
    /* 64-byte aligned and zeroed; at 64 KiB and more from the shared heap,
     * which the node's peers copy to and from with memcpy */
    knit_status_t st = knit_mem_alloc(w->comm->kc, (size_t)size, &w->kw);
    if (st == KNIT_OK)
        w->base = knit_win_base(w->kw, w->me);
    int r = win_done(w, kn_mpi_comm(comm), st, win, __func__);
    if (r == MPI_SUCCESS)
        memcpy(baseptr, &w->base, sizeof(void *));
    return r;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                            MPI_Win *win)
{
    KN_MPI_READY();
    int err;
    if (!baseptr)
        return kn_mpi_error(kn_mpi_comm(comm), __func__, MPI_ERR_ARG, "baseptr is NULL");
    kn_mpi_comm_t *c = kn_mpi_comm(comm);
    if (c && !c->inter) { /* every member on this node (the same test on every member) */
        int node = knit_node_of(kn_mpi.ctx, c->ranks[0]);
        for (int i = 1; i < c->size; i++)
            if (knit_node_of(kn_mpi.ctx, c->ranks[i]) != node)
                return kn_mpi_error(c, __func__, MPI_ERR_RMA_SHARED,
                                    "rank %d of %s is on node %d, rank 0 on node %d: a shared window needs "
                                    "one node (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED makes such a "
                                    "communicator)", i, kn_mpi_comm_label(c), knit_node_of(kn_mpi.ctx, c->ranks[i]),
                                    node);
    }
    kn_mpi_win_t *w = win_new(comm, info, disp_unit, size, win, __func__, &err);
    if (!w)
        return err;
    w->flavor = MPI_WIN_FLAVOR_SHARED;
    int n = w->n;
    /* one segment for all, each member's part after the one before
     * (contiguous, as MPI's default asks), every part 64-byte aligned */
    w->shm_off = calloc((size_t)n, sizeof(MPI_Aint));
    w->shm_size = calloc((size_t)n, sizeof(MPI_Aint));
    int64_t mysz = (int64_t)size, *sz = calloc((size_t)n, sizeof(int64_t));
    knit_status_t st = w->shm_off && w->shm_size && sz ? KNIT_OK : KNIT_ERR_NOMEM;
    if (st == KNIT_OK)
        st = knit_allgather(w->comm->kc, &mysz, sz, 1, KNIT_INT64);
    size_t total = 0;
    for (int i = 0; st == KNIT_OK && i < n; i++) {
        w->shm_off[i] = (MPI_Aint)total;
        w->shm_size[i] = (MPI_Aint)sz[i];
        total += ((size_t)sz[i] + 63) & ~(size_t)63;
    }
    free(sz);
    w->shm_len = total ? total : 64;
    /* rank 0 makes it; the others open it by name; then it loses its name */
    char name[64] = "";
    int fd = -1;
    struct {
        char name[56];
        int64_t err;
    } made = {"", 0};
    if (st == KNIT_OK && w->me == 0) {
        static unsigned seq;
        snprintf(made.name, sizeof(made.name), "/knit-win-%d-%u", (int)getpid(), seq++);
        fd = shm_open(made.name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)w->shm_len) != 0)
            made.err = errno ? errno : EIO;
    }
    if (st != KNIT_OK)
        made.err = ENOMEM;
    knit_status_t bs = knit_bcast(w->comm->kc, &made, sizeof(made), KNIT_BYTE, 0);
    if (bs != KNIT_OK || made.err)
        st = bs != KNIT_OK ? bs : KNIT_ERR_NOMEM;
    snprintf(name, sizeof(name), "%s", made.name);
    if (st == KNIT_OK && w->me != 0 && (fd = shm_open(name, O_RDWR, 0)) < 0)
        st = KNIT_ERR_NOMEM;
    if (st == KNIT_OK) {
        w->shm = mmap(NULL, w->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (w->shm == MAP_FAILED) {
            w->shm = NULL;
            st = KNIT_ERR_NOMEM;
        }
    }
    if (fd >= 0)
        close(fd);
    int ok = st == KNIT_OK, all_ok = 0;
    knit_allreduce(w->comm->kc, &ok, &all_ok, 1, KNIT_INT, &(knit_op_t){KNIT_OP_MIN, NULL, NULL, 1});
    if (w->me == 0 && name[0])
        shm_unlink(name);
    if (!all_ok && st == KNIT_OK)
        st = KNIT_ERR_NOMEM;
    if (st == KNIT_OK) {
        w->base = size ? w->shm + w->shm_off[w->me] : NULL;
        st = knit_win_create(w->comm->kc, w->base, (size_t)size, &w->kw);
    } else {
        knit_barrier(w->comm->kc); /* the others' knit_win_create does not happen either */
    }
    int r = win_done(w, c, st, win, __func__);
    if (r == MPI_SUCCESS)
        memcpy(baseptr, &w->base, sizeof(void *));
    return r;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!size || !disp_unit || !baseptr)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "an output argument is NULL");
    if (w->flavor != MPI_WIN_FLAVOR_SHARED)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_FLAVOR, KNIT_OK,
                                "MPI_Win_shared_query needs a window made by MPI_Win_allocate_shared");
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= w->n))
        return kn_mpi_win_error(w, __func__, MPI_ERR_RANK, KNIT_OK, "rank %d not in [0, %d)", rank, w->n);
    if (rank == MPI_PROC_NULL) { /* the first member with memory */
        rank = 0;
        while (rank < w->n - 1 && w->shm_size[rank] == 0)
            rank++;
    }
    void *p = w->shm_size[rank] ? w->shm + w->shm_off[rank] : NULL;
    *size = w->shm_size[rank];
    *disp_unit = w->disp[rank];
    memcpy(baseptr, &p, sizeof(p));
    return MPI_SUCCESS;
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    KN_MPI_READY();
    int err;
    kn_mpi_win_t *w = win_new(comm, info, 1, 0, win, __func__, &err);
    if (!w)
        return err;
    w->flavor = MPI_WIN_FLAVOR_DYNAMIC;
    knit_status_t st = knit_win_create_dynamic(w->comm->kc, &w->kw);
    return win_done(w, kn_mpi_comm(comm), st, win, __func__);
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_FLAVOR, KNIT_OK,
                                "memory is attached to windows made by MPI_Win_create_dynamic only");
    if (size < 0 || (size > 0 && !base))
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_ATTACH, KNIT_OK, "base %p, size %ld", base, (long)size);
    for (int i = 0; i < w->natt; i++) {
        kn_mpi_region_t *r = &w->att[i];
        if ((char *)base < r->base + r->size && r->base < (char *)base + size)
            return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_ATTACH, KNIT_OK,
                                    "[%p, +%ld) overlaps memory attached before ([%p, +%ld))", base, (long)size,
                                    (void *)r->base, (long)r->size);
    }
    if (w->natt == w->catt) {
        int cap = w->catt ? 2 * w->catt : 8;
        kn_mpi_region_t *a = realloc(w->att, (size_t)cap * sizeof(*a));
        if (!a)
            return kn_mpi_win_error(w, __func__, MPI_ERR_NO_MEM, KNIT_OK, "no memory");
        w->att = a;
        w->catt = cap;
    }
    w->att[w->natt++] = (kn_mpi_region_t){base, size};
    return MPI_SUCCESS;
}

int MPI_Win_detach(MPI_Win win, const void *base)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_FLAVOR, KNIT_OK,
                                "memory is detached from windows made by MPI_Win_create_dynamic only");
    for (int i = 0; i < w->natt; i++)
        if (w->att[i].base == base) {
            w->att[i] = w->att[--w->natt];
            return MPI_SUCCESS;
        }
    return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_ATTACH, KNIT_OK, "%p was not attached", base);
}

int MPI_Win_free(MPI_Win *win)
{
    KN_MPI_READY();
    if (!win)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "win is NULL");
    KN_MPI_WIN_ARG(w, *win);
    if (kn_mpi_win_busy(w))
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK,
                                "an epoch is still open (a lock, a lock_all, or post/start without wait/complete)");
    int cls = kn_mpi_win_complete_ops(w, -1, 0, __func__);
    if (cls != MPI_SUCCESS)
        return cls;
    /* messages of an epoch no fence closed (collective, as this is) */
    knit_status_t ms = w->msg ? kn_mpi_win_msg_fence(w) : KNIT_OK;
    if (ms != KNIT_OK)
        return kn_mpi_win_error(w, __func__, kn_mpi_class_of(ms), ms, "the last epoch's messages failed");
    int e = kn_mpi_attrs_delete(KN_K_WIN, w->handle, &w->attrs);
    if (e != MPI_SUCCESS)
        return kn_mpi_win_error(w, __func__, e, KNIT_OK, "an attribute's delete callback failed");
    /* knit_win_free waits for every member: nobody reaches into it after */
    knit_status_t st = w->kw ? knit_win_free(w->kw) : KNIT_OK;
    knit_status_t st2 = knit_win_free(w->ctl);
    if (st == KNIT_OK)
        st = st2;
    w->kw = w->ctl = NULL;
    if (st != KNIT_OK) {
        int r = kn_mpi_win_error(w, __func__, kn_mpi_class_of(st), st, "the window's last operations failed");
        win_release(w);
        *win = MPI_WIN_NULL;
        return r;
    }
    win_release(w);
    *win = MPI_WIN_NULL;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ queries */

int MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!group)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "group is NULL");
    return MPI_Comm_group(w->comm->handle, group);
}

int MPI_Win_set_name(MPI_Win win, const char *win_name)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!win_name)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "win_name is NULL");
    snprintf(w->name, sizeof(w->name), "%s", win_name);
    return MPI_SUCCESS;
}

int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!win_name || !resultlen)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "an output argument is NULL");
    snprintf(win_name, MPI_MAX_OBJECT_NAME, "%s", w->name);
    *resultlen = (int)strlen(win_name);
    return MPI_SUCCESS;
}

int MPI_Win_set_info(MPI_Win win, MPI_Info info)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (info != MPI_INFO_NULL && !kn_mpi_tbl_get(&kn_mpi.infos, info))
        return kn_mpi_win_error(w, __func__, MPI_ERR_INFO, KNIT_OK, "not a valid info object");
    hints(w, info);
    return MPI_SUCCESS;
}

int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!info_used)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "info_used is NULL");
    int e = MPI_Info_create(info_used);
    if (e != MPI_SUCCESS)
        return e;
    MPI_Info_set(*info_used, "no_locks", w->no_locks ? "true" : "false");
    MPI_Info_set(*info_used, "accumulate_ordering", w->ordered_acc ? "rar,raw,war,waw" : "none");
    MPI_Info_set(*info_used, "accumulate_ops", "same_op_no_op");
    MPI_Info_set(*info_used, "same_size", "false");
    MPI_Info_set(*info_used, "same_disp_unit", "false");
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ attributes */

/* The predefined window attributes (their values are pointers, as MPI says). */
int kn_mpi_win_predef_attr(MPI_Win win, int keyval, void *val, int *flag)
{
    kn_mpi_win_t *w = kn_mpi_win(win);
    static int model = MPI_WIN_UNIFIED;
    if (!w)
        return 0;
    void *p;
    switch (keyval) {
    case MPI_WIN_BASE: p = w->base; break;
    case MPI_WIN_SIZE: p = &w->size; break;
    case MPI_WIN_DISP_UNIT: p = &w->disp_unit; break;
    case MPI_WIN_CREATE_FLAVOR: p = &w->flavor; break;
    case MPI_WIN_MODEL: p = &model; break;
    default: return 0;
    }
    memcpy(val, &p, sizeof(p));
    *flag = 1;
    return 1;
}

kn_mpi_attr_t **kn_mpi_win_attrs(MPI_Win win)
{
    kn_mpi_win_t *w = kn_mpi_win(win);
    return w ? &w->attrs : NULL;
}

/* ------------------------------------------------------------ error handlers */

int MPI_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void *)fn, errhandler);
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!kn_mpi_tbl_get(&kn_mpi.errhs, errhandler))
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "invalid error handler 0x%x",
                                (unsigned)errhandler);
    kn_mpi_errh_retain(errhandler);
    kn_mpi_errh_release(w->errh);
    w->errh = errhandler;
    return MPI_SUCCESS;
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!errhandler)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "errhandler is NULL");
    kn_mpi_errh_retain(w->errh);
    *errhandler = w->errh;
    return MPI_SUCCESS;
}

int MPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    kn_mpi_win_error(w, __func__, errorcode, KNIT_OK, "called by the program");
    return MPI_SUCCESS;
}

void kn_mpi_wins_fini(void)
{
    kn_mpi_tbl_destroy(&wins);
}
