/* Attribute keys (keyvals) and attributes on communicators and datatypes. */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_impl.h"

/* predefined attributes of MPI_COMM_WORLD (values are read through int *) */
static int attr_tag_ub = KN_MPI_TAG_UB;
static int attr_host = MPI_PROC_NULL;
static int attr_io = MPI_ANY_SOURCE;
static int attr_wtime_global = 0;
static int attr_universe;
static int attr_appnum = 0;
static int attr_lastused = MPI_ERR_LASTCODE;

static int *predef_attr(int keyval)
{
    switch (keyval) {
    case MPI_TAG_UB: return &attr_tag_ub;
    case MPI_HOST: return &attr_host;
    case MPI_IO: return &attr_io;
    case MPI_WTIME_IS_GLOBAL: return &attr_wtime_global;
    case MPI_UNIVERSE_SIZE: attr_universe = kn_mpi.size; return &attr_universe;
    case MPI_APPNUM: return &attr_appnum;
    case MPI_LASTUSEDCODE: return &attr_lastused;
    default: return NULL;
    }
}

/* ---------------------------------------------------------- predefined fns */

int MPI_COMM_NULL_COPY_FN(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)x, (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

int MPI_COMM_DUP_FN(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)x;
    memcpy(out, &in, sizeof(in));
    *flag = 1;
    return MPI_SUCCESS;
}

int MPI_COMM_NULL_DELETE_FN(MPI_Comm c, int k, void *v, void *x)
{
    (void)c, (void)k, (void)v, (void)x;
    return MPI_SUCCESS;
}

int MPI_TYPE_NULL_COPY_FN(MPI_Datatype t, int k, void *x, void *in, void *out, int *flag)
{
    return MPI_COMM_NULL_COPY_FN(t, k, x, in, out, flag);
}

int MPI_TYPE_DUP_FN(MPI_Datatype t, int k, void *x, void *in, void *out, int *flag)
{
    return MPI_COMM_DUP_FN(t, k, x, in, out, flag);
}

int MPI_TYPE_NULL_DELETE_FN(MPI_Datatype t, int k, void *v, void *x)
{
    return MPI_COMM_NULL_DELETE_FN(t, k, v, x);
}

int MPI_WIN_NULL_COPY_FN(MPI_Win w, int k, void *x, void *in, void *out, int *flag)
{
    return MPI_COMM_NULL_COPY_FN(w, k, x, in, out, flag);
}

int MPI_WIN_DUP_FN(MPI_Win w, int k, void *x, void *in, void *out, int *flag)
{
    return MPI_COMM_DUP_FN(w, k, x, in, out, flag);
}

int MPI_WIN_NULL_DELETE_FN(MPI_Win w, int k, void *v, void *x)
{
    return MPI_COMM_NULL_DELETE_FN(w, k, v, x);
}

/* ------------------------------------------------------------- keyvals */

typedef int copy_fn_t(int, int, void *, void *, void *, int *);
typedef int delete_fn_t(int, int, void *, void *);

static void keyval_unref(int h)
{
    kn_mpi_keyval_t *k = kn_mpi_tbl_get(&kn_mpi.keyvals, h);
    if (k && --k->refs == 0) {
        kn_mpi_tbl_del(&kn_mpi.keyvals, h);
        free(k);
    }
}

static int keyval_create(int kind, void *copy, void *del, int *keyval, void *extra, const char *fn)
{
    KN_MPI_READY();
    if (!keyval)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "keyval is NULL");
    kn_mpi_keyval_t *k = calloc(1, sizeof(*k));
    int h = k ? kn_mpi_tbl_add(&kn_mpi.keyvals, k, -1) : -1;
    if (h < 0) {
        free(k);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    k->kind = kind;
    k->copy_fn = copy;
    k->delete_fn = del;
    k->extra = extra;
    k->refs = 1;
    *keyval = h;
    return MPI_SUCCESS;
}

/* A user keyval of this kind (the handle is still the user's). */
static kn_mpi_keyval_t *keyval_arg(int kind, int h, kn_mpi_comm_t *c, const char *fn, int *err)
{
    kn_mpi_keyval_t *k = kn_mpi_tbl_get(&kn_mpi.keyvals, h);
    if (!k || k->kind != kind) {
        *err = kn_mpi_error(c, fn, MPI_ERR_KEYVAL, "%d is not a valid %s keyval", h,
                            kind == KN_K_COMM ? "communicator" : kind == KN_K_TYPE ? "datatype" : "window");
        return NULL;
    }
    return k;
}

static int keyval_free(int kind, int *keyval, const char *fn)
{
    KN_MPI_READY();
    int err;
    if (!keyval)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "keyval is NULL");
    if (predef_attr(*keyval))
        return kn_mpi_error(NULL, fn, MPI_ERR_KEYVAL, "predefined keyvals cannot be freed");
    if (!keyval_arg(kind, *keyval, NULL, fn, &err))
        return err;
    keyval_unref(*keyval);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn, MPI_Comm_delete_attr_function *delete_fn,
                           int *keyval, void *extra_state)
{
    return keyval_create(KN_K_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra_state, __func__);
}

int MPI_Comm_free_keyval(int *keyval)
{
    return keyval_free(KN_K_COMM, keyval, __func__);
}

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *copy_fn, MPI_Type_delete_attr_function *delete_fn,
                           int *keyval, void *extra_state)
{
    return keyval_create(KN_K_TYPE, (void *)copy_fn, (void *)delete_fn, keyval, extra_state, __func__);
}

int MPI_Type_free_keyval(int *keyval)
{
    return keyval_free(KN_K_TYPE, keyval, __func__);
}

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy_fn, MPI_Win_delete_attr_function *delete_fn,
                          int *keyval, void *extra_state)
{
    return keyval_create(KN_K_WIN, (void *)copy_fn, (void *)delete_fn, keyval, extra_state, __func__);
}

int MPI_Win_free_keyval(int *keyval)
{
    return keyval_free(KN_K_WIN, keyval, __func__);
}

int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                      void *extra_state)
{
    return keyval_create(KN_K_COMM, (void *)copy_fn, (void *)delete_fn, keyval, extra_state, __func__);
}

int MPI_Keyval_free(int *keyval)
{
    return keyval_free(KN_K_COMM, keyval, __func__);
}

/* ------------------------------------------------------------ attributes */

static kn_mpi_attr_t **attr_find(kn_mpi_attr_t **list, int keyval)
{
    for (; *list; list = &(*list)->next)
        if ((*list)->keyval == keyval)
            return list;
    return NULL;
}

static int call_delete(int kind, int h, kn_mpi_attr_t *a)
{
    kn_mpi_keyval_t *k = kn_mpi_tbl_get(&kn_mpi.keyvals, a->keyval);
    (void)kind;
    if (k && k->delete_fn)
        return ((delete_fn_t *)k->delete_fn)(h, a->keyval, a->val, k->extra);
    return MPI_SUCCESS;
}

int kn_mpi_attrs_delete(int kind, int h, kn_mpi_attr_t **list)
{
    /* newest first (they are kept newest first) */
    while (*list) {
        kn_mpi_attr_t *a = *list;
        int err = call_delete(kind, h, a);
        if (err != MPI_SUCCESS)
            return err;
        *list = a->next;
        keyval_unref(a->keyval);
        free(a);
    }
    return MPI_SUCCESS;
}

int kn_mpi_attrs_copy(int kind, int h, kn_mpi_attr_t *from, kn_mpi_attr_t **to)
{
    /* keep the order: build the copy at the tail */
    kn_mpi_attr_t **tail = to;
    while (*tail)
        tail = &(*tail)->next;
    for (kn_mpi_attr_t *a = from; a; a = a->next) {
        kn_mpi_keyval_t *k = kn_mpi_tbl_get(&kn_mpi.keyvals, a->keyval);
        if (!k || !k->copy_fn)
            continue;
        void *out = NULL;
        int flag = 0;
        int err = ((copy_fn_t *)k->copy_fn)(h, a->keyval, k->extra, a->val, &out, &flag);
        (void)kind;
        if (err != MPI_SUCCESS)
            return err;
        if (!flag)
            continue;
        kn_mpi_attr_t *n = calloc(1, sizeof(*n));
        if (!n)
            return MPI_ERR_NO_MEM;
        n->keyval = a->keyval;
        n->val = out;
        k->refs++;
        *tail = n;
        tail = &n->next;
    }
    return MPI_SUCCESS;
}

static int attr_set(int kind, int h, kn_mpi_attr_t **list, kn_mpi_comm_t *c, int keyval, void *val,
                    const char *fn)
{
    int err;
    if (predef_attr(keyval))
        return kn_mpi_error(c, fn, MPI_ERR_KEYVAL, "predefined attributes cannot be set");
    kn_mpi_keyval_t *k = keyval_arg(kind, keyval, c, fn, &err);
    if (!k)
        return err;
    kn_mpi_attr_t **p = attr_find(list, keyval);
    if (p) {
        if ((err = call_delete(kind, h, *p)) != MPI_SUCCESS)
            return kn_mpi_error(c, fn, err, "the delete callback of keyval %d failed", keyval);
        (*p)->val = val;
        return MPI_SUCCESS;
    }
    kn_mpi_attr_t *a = calloc(1, sizeof(*a));
    if (!a)
        return kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "out of memory");
    a->keyval = keyval;
    a->val = val;
    a->next = *list;
    *list = a;
    k->refs++;
    return MPI_SUCCESS;
}

static int attr_get(int kind, kn_mpi_attr_t **list, kn_mpi_comm_t *c, int keyval, void *val, int *flag,
                    const char *fn)
{
    int err;
    if (!val || !flag)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "%s is NULL", val ? "flag" : "attribute_val");
    int *pre = kind == KN_K_COMM ? predef_attr(keyval) : NULL;
    if (pre) {
        memcpy(val, &pre, sizeof(pre));
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!keyval_arg(kind, keyval, c, fn, &err))
        return err;
    kn_mpi_attr_t **p = attr_find(list, keyval);
    *flag = p != NULL;
    if (p)
        memcpy(val, &(*p)->val, sizeof(void *));
    return MPI_SUCCESS;
}

static int attr_delete(int kind, int h, kn_mpi_attr_t **list, kn_mpi_comm_t *c, int keyval, const char *fn)
{
    int err;
    if (!keyval_arg(kind, keyval, c, fn, &err))
        return err;
    kn_mpi_attr_t **p = attr_find(list, keyval);
    if (!p)
        return kn_mpi_error(c, fn, MPI_ERR_KEYVAL, "no attribute with keyval %d is set", keyval);
    if ((err = call_delete(kind, h, *p)) != MPI_SUCCESS)
        return kn_mpi_error(c, fn, err, "the delete callback of keyval %d failed", keyval);
    kn_mpi_attr_t *a = *p;
    *p = a->next;
    keyval_unref(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void *attribute_val)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    return attr_set(KN_K_COMM, comm, &c->attrs, c, keyval, attribute_val, __func__);
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    return attr_get(KN_K_COMM, &c->attrs, c, keyval, attribute_val, flag, __func__);
}

int MPI_Comm_delete_attr(MPI_Comm comm, int keyval)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    return attr_delete(KN_K_COMM, comm, &c->attrs, c, keyval, __func__);
}

int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return MPI_Comm_set_attr(comm, keyval, attribute_val);
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return MPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}

int MPI_Attr_delete(MPI_Comm comm, int keyval)
{
    return MPI_Comm_delete_attr(comm, keyval);
}

static kn_mpi_type_t *type_arg(MPI_Datatype h, const char *fn, int *err)
{
    kn_mpi_type_t *t = kn_mpi_type(h);
    if (!t)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_TYPE, "not a valid datatype");
    return t;
}

int MPI_Type_set_attr(MPI_Datatype type, int keyval, void *attribute_val)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *t = type_arg(type, __func__, &err);
    if (!t)
        return err;
    return attr_set(KN_K_TYPE, type, &t->attrs, NULL, keyval, attribute_val, __func__);
}

int MPI_Type_get_attr(MPI_Datatype type, int keyval, void *attribute_val, int *flag)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *t = type_arg(type, __func__, &err);
    if (!t)
        return err;
    return attr_get(KN_K_TYPE, &t->attrs, NULL, keyval, attribute_val, flag, __func__);
}

int MPI_Type_delete_attr(MPI_Datatype type, int keyval)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *t = type_arg(type, __func__, &err);
    if (!t)
        return err;
    return attr_delete(KN_K_TYPE, type, &t->attrs, NULL, keyval, __func__);
}

/* Windows: the predefined attributes (win.c) before the user's. */
static kn_mpi_attr_t **win_attrs(MPI_Win win, const char *fn, int *err)
{
    kn_mpi_attr_t **l = kn_mpi_win_attrs(win);
    if (!l)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_WIN, "not a valid window");
    return l;
}

int MPI_Win_set_attr(MPI_Win win, int keyval, void *attribute_val)
{
    KN_MPI_READY();
    int err, flag;
    void *v;
    kn_mpi_attr_t **l = win_attrs(win, __func__, &err);
    if (!l)
        return err;
    if (kn_mpi_win_predef_attr(win, keyval, &v, &flag))
        return kn_mpi_error(NULL, __func__, MPI_ERR_KEYVAL, "predefined attributes cannot be set");
    return attr_set(KN_K_WIN, win, l, NULL, keyval, attribute_val, __func__);
}

int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag)
{
    KN_MPI_READY();
    int err;
    kn_mpi_attr_t **l = win_attrs(win, __func__, &err);
    if (!l)
        return err;
    if (!attribute_val || !flag)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "%s is NULL", attribute_val ? "flag" : "attribute_val");
    if (kn_mpi_win_predef_attr(win, keyval, attribute_val, flag))
        return MPI_SUCCESS;
    return attr_get(KN_K_WIN, l, NULL, keyval, attribute_val, flag, __func__);
}

int MPI_Win_delete_attr(MPI_Win win, int keyval)
{
    KN_MPI_READY();
    int err;
    kn_mpi_attr_t **l = win_attrs(win, __func__, &err);
    if (!l)
        return err;
    return attr_delete(KN_K_WIN, win, l, NULL, keyval, __func__);
}
