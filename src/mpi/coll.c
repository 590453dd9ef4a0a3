/*
 * MPI collectives over knit's native collectives (src/coll, knit.h):
 * argument checks, the translation of MPI datatypes and ops to what the
 * native layer takes, reduction operations (MPI_Op), and the requests of
 * the nonblocking forms.
 *
 * Every collective, blocking or not, is one function that checks its
 * arguments, turns each buffer into a view the native layer can use, and
 * starts the native nonblocking collective; the blocking form then waits
 * for it (the native blocking collectives are the same schedule waited
 * on, so this costs nothing).  State that must outlive the call (scratch
 * buffers, count arrays, the user op's closure, what to unpack at the end)
 * lives in one kn_mpi_coll_t: on the stack for a blocking call, on the heap
 * behind the MPI request for a nonblocking one.
 *
 * How data travels (a "view" of count elements of an MPI datatype):
 *   - data movement (bcast, gather, alltoall, ...): bytes of the packed
 *     layout.  A dense layout is used in place; any other is packed into
 *     a scratch buffer before, and unpacked after.
 *   - predefined ops: elements of the knit_dtype_t the datatype is made
 *     of (one basic type, element-wise).  Pair types (MAXLOC/MINLOC) are
 *     C structs natively: their packed (value, int) tuples are spread to
 *     the struct layout, and compacted back after.
 *   - user ops: elements of the datatype's extent, laid out as in the
 *     user's buffer, so the MPI_User_function sees the layout it was
 *     written for and the datatype handle the program passed.  The native
 *     element is a knit type of the same size, or bytes; with bytes the
 *     op is declared non-commutative so that no algorithm splits an
 *     element (the order-keeping algorithms never split a vector).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_impl.h"
#include "util/compiler.h"

/* ------------------------------------------------------------------ ops */

typedef struct kn_mpi_op {
    MPI_Op handle;
    int predefined;
    knit_op_kind_t kind;       /* predefined: the native op */
    MPI_User_function *fn;     /* user ops */
    int commute;
} kn_mpi_op_t;

#define N_PREDEF_OPS 14 /* MPI_SUM .. MPI_NO_OP, in knit_op_kind_t's order */

static const char *const op_name[N_PREDEF_OPS] = {
    "MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN", "MPI_LAND", "MPI_LOR", "MPI_LXOR",
    "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP",
};

static kn_mpi_tbl_t ops = {.kind = KN_K_OP};
static kn_mpi_op_t predef_ops[N_PREDEF_OPS];

static void ops_init(void)
{
    if (ops.used)
        return;
    for (int i = 0; i < N_PREDEF_OPS; i++) {
        predef_ops[i] = (kn_mpi_op_t){KN_MPI_H(KN_K_OP, i), 1, (knit_op_kind_t)i, NULL, 1};
        kn_mpi_tbl_add(&ops, &predef_ops[i], i);
    }
}

void kn_mpi_ops_fini(void)
{
    for (int i = N_PREDEF_OPS; i < ops.used; i++)
        free(ops.slot[i]);
    kn_mpi_tbl_destroy(&ops);
}

static kn_mpi_op_t *op_arg(kn_mpi_comm_t *c, MPI_Op h, const char *fn, int *err)
{
    ops_init();
    kn_mpi_op_t *o = kn_mpi_tbl_get(&ops, h);
    if (!o)
        *err = kn_mpi_error(c, fn, MPI_ERR_OP, "%s",
                            h == MPI_OP_NULL ? "op is MPI_OP_NULL" : "not a valid op handle");
    return o;
}

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    KN_MPI_READY();
    if (!user_fn || !op)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "%s is NULL", user_fn ? "op" : "user_fn");
    ops_init();
    kn_mpi_op_t *o = calloc(1, sizeof(*o));
    int h = o ? kn_mpi_tbl_add(&ops, o, -1) : -1;
    if (h < 0) {
        free(o);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "no memory for an op");
    }
    *o = (kn_mpi_op_t){h, 0, KNIT_OP_USER, user_fn, commute != 0};
    *op = h;
    return MPI_SUCCESS;
}

int MPI_Op_free(MPI_Op *op)
{
    KN_MPI_READY();
    int err;
    if (!op)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "op is NULL");
    kn_mpi_op_t *o = op_arg(NULL, *op, __func__, &err);
    if (!o)
        return err;
    if (o->predefined)
        return kn_mpi_error(NULL, __func__, MPI_ERR_OP, "%s is predefined: it cannot be freed",
                            op_name[o->kind]);
    /* collectives in flight copied what they need: the op can go now */
    kn_mpi_tbl_del(&ops, o->handle);
    free(o);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

int kn_mpi_op_hold(MPI_Op op, MPI_Op *out)
{
    ops_init();
    kn_mpi_op_t *o = kn_mpi_tbl_get(&ops, op);
    if (!o)
        return MPI_ERR_OP;
    if (o->predefined) {
        *out = op;
        return MPI_SUCCESS;
    }
    return MPI_Op_create(o->fn, o->commute, out);
}

void kn_mpi_op_drop(MPI_Op op)
{
    kn_mpi_op_t *o = kn_mpi_tbl_get(&ops, op);
    if (o && !o->predefined)
        MPI_Op_free(&op);
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
    KN_MPI_READY();
    int err;
    if (!commute)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "commute is NULL");
    kn_mpi_op_t *o = op_arg(NULL, op, __func__, &err);
    if (!o)
        return err;
    *commute = o->commute;
    return MPI_SUCCESS;
}

/* -------------------------------------------------------- collective state */

enum { FORM_BYTES = 0, FORM_PAIRS, FORM_EXTENT };

/* The (value, int) structs of the pair types: natively C structs, packed
 * as value bytes then int bytes. */
typedef struct pair_geo {
    size_t vsz, ioff, ksz;
} pair_geo_t;

#define GEO(T) {sizeof(((T *)0)->v), offsetof(T, i), sizeof(T)}
struct p_fi { float v; int i; };
struct p_di { double v; int i; };
struct p_li { long v; int i; };
struct p_ii { int v; int i; };
struct p_si { short v; int i; };
struct p_ldi { long double v; int i; };
static const pair_geo_t pair_geos[] = {
    GEO(struct p_fi), GEO(struct p_di), GEO(struct p_li), GEO(struct p_ii), GEO(struct p_si), GEO(struct p_ldi),
};

static const pair_geo_t *pair_geo(knit_dtype_t k)
{
    return k >= KNIT_FLOAT_INT && k <= KNIT_LONG_DOUBLE_INT ? &pair_geos[k - KNIT_FLOAT_INT] : NULL;
}

/* How count elements of a datatype are handed to the native layer. */
typedef struct view {
    int form;
    knit_dtype_t kdt;
    size_t ksz;               /* bytes of one native element */
    int direct;               /* the user's buffer is used in place, data at buf + off */
    MPI_Aint off;
    const pair_geo_t *pg;     /* FORM_PAIRS */
} view_t;

/* After completion: move a result from scratch into the user's layout. */
typedef struct act {
    kn_mpi_type_t *t;         /* referenced */
    char *src;
    void *dst;
    size_t count;             /* elements of t */
    char *packed;             /* FORM_EXTENT: scratch for the packed copy */
    view_t v;
} act_t;

/* The closure of a user op: what MPI_User_function is called with. */
typedef struct uop {
    MPI_User_function *fn;
    MPI_Datatype dt;
    size_t ext;               /* the datatype's extent */
    MPI_Aint off;             /* native data of element 0 is at user pointer + off */
} uop_t;

struct kn_mpi_coll {
    knit_coll_request_t *cr;
    kn_mpi_comm_t *c;
    const char *fn;
    kn_mpi_req_t *req;        /* nonblocking: the MPI request */
    MPI_Request *handle;
    void **mem;               /* scratch, freed at the end */
    int nmem, capmem;
    act_t *act;
    int nact, capact;
    knit_op_t kop;
    uop_t uop;
    kn_mpi_isched_t *is;      /* on an intercommunicator: inter.c's schedule instead of cr */
};
typedef struct kn_mpi_coll cst_t;

static char dummy_buf[1]; /* a non-NULL pointer for empty buffers */

static inline char *at(const void *buf, MPI_Aint off)
{
    return (char *)((uintptr_t)buf + (uintptr_t)off);
}

static void *st_alloc(cst_t *s, size_t bytes, int zero)
{
    if (s->nmem == s->capmem) {
        int cap = s->capmem ? 2 * s->capmem : 4;
        void **m = realloc(s->mem, (size_t)cap * sizeof(*m));
        if (!m)
            return NULL;
        s->mem = m;
        s->capmem = cap;
    }
    void *p = zero ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
    if (p)
        s->mem[s->nmem++] = p;
    return p;
}

static knit_status_t st_act(cst_t *s, kn_mpi_type_t *t, char *src, void *dst, size_t count, char *packed,
                            const view_t *v)
{
    if (!count)
        return KNIT_OK;
    if (s->nact == s->capact) {
        int cap = s->capact ? 2 * s->capact : 4;
        act_t *a = realloc(s->act, (size_t)cap * sizeof(*a));
        if (!a)
            return KNIT_ERR_NOMEM;
        s->act = a;
        s->capact = cap;
    }
    kn_mpi_type_ref(t);
    s->act[s->nact++] = (act_t){t, src, dst, count, packed, *v};
    return KNIT_OK;
}

/* Begin a collective: the state, and for a nonblocking call its request. */
static int st_open(kn_mpi_comm_t *c, MPI_Request *req, cst_t *local, cst_t **out, const char *fn)
{
    cst_t *s = local;
    if (req) {
        kn_mpi_req_t *r = NULL;
        s = calloc(1, sizeof(*s));
        if (s && !(r = kn_mpi_req_new(c, NULL, KN_RQ_COLL))) {
            free(s);
            s = NULL;
        }
        if (!s)
            return kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "no memory for a request");
        s->req = r;
        s->handle = req;
    } else {
        memset(s, 0, sizeof(*s));
    }
    s->c = c;
    s->fn = fn;
    *out = s;
    return MPI_SUCCESS;
}

static void st_free(cst_t *s)
{
    for (int i = 0; i < s->nmem; i++)
        free(s->mem[i]);
    for (int i = 0; i < s->nact; i++)
        kn_mpi_type_unref(s->act[i].t);
    free(s->mem);
    free(s->act);
    if (s->req) {
        s->req->coll = NULL;
        free(s);
    }
}

/* ------------------------------------------------------------- layouts */

static view_t bytes_view(const kn_mpi_type_t *t, size_t count)
{
    view_t v = {FORM_BYTES, KNIT_BYTE, 1, kn_mpi_type_dense(t, count), t->true_lb, NULL};
    return v;
}

/* native elements for count elements of t */
static size_t view_n(const view_t *v, const kn_mpi_type_t *t, size_t count)
{
    switch (v->form) {
    case FORM_PAIRS:
        return count * t->size / (v->pg->vsz + sizeof(int));
    case FORM_EXTENT:
        return count * (size_t)t->extent / v->ksz;
    default:
        return count * t->size / v->ksz;
    }
}

/* packed (value, int) tuples -> structs, in place (backwards: a struct is
 * at least as long as its tuple) */
static void pairs_spread(char *b, size_t n, const pair_geo_t *g)
{
    size_t psz = g->vsz + sizeof(int);
    for (size_t i = n; i-- > 0;) {
        char v[32];
        int x;
        memcpy(v, b + i * psz, g->vsz);
        memcpy(&x, b + i * psz + g->vsz, sizeof(x));
        memcpy(b + i * g->ksz, v, g->vsz);
        memcpy(b + i * g->ksz + g->ioff, &x, sizeof(x));
    }
}

static void pairs_compact(char *b, size_t n, const pair_geo_t *g)
{
    size_t psz = g->vsz + sizeof(int);
    for (size_t i = 0; i < n; i++) {
        char v[32];
        int x;
        memcpy(v, b + i * g->ksz, g->vsz);
        memcpy(&x, b + i * g->ksz + g->ioff, sizeof(x));
        memcpy(b + i * psz, v, g->vsz);
        memcpy(b + i * psz + g->vsz, &x, sizeof(x));
    }
}

/* Fill scratch tmp (native layout of view v) from count elements at buf;
 * FORM_EXTENT goes through packed (count * size bytes). */
static void fill(const view_t *v, const kn_mpi_type_t *t, const void *buf, size_t count, char *tmp, char *packed)
{
    switch (v->form) {
    case FORM_PAIRS:
        kn_mpi_pack(t, buf, count, tmp);
        pairs_spread(tmp, view_n(v, t, count), v->pg);
        break;
    case FORM_EXTENT:
        kn_mpi_pack(t, buf, count, packed);
        kn_mpi_unpack(t, packed, count * t->size, at(tmp, -v->off), count);
        break;
    default:
        kn_mpi_pack(t, buf, count, tmp);
    }
}

static void act_run(act_t *a)
{
    const kn_mpi_type_t *t = a->t;
    size_t bytes = a->count * t->size;
    switch (a->v.form) {
    case FORM_PAIRS:
        pairs_compact(a->src, view_n(&a->v, t, a->count), a->v.pg);
        kn_mpi_unpack(t, a->src, bytes, a->dst, a->count);
        break;
    case FORM_EXTENT: /* extent layout -> packed -> the user's layout */
        kn_mpi_pack(t, at(a->src, -a->v.off), a->count, a->packed);
        kn_mpi_unpack(t, a->packed, bytes, a->dst, a->count);
        break;
    default:
        kn_mpi_unpack(t, a->src, bytes, a->dst, a->count);
    }
}

/* The native pointer for count input elements at buf. */
static knit_status_t view_in(cst_t *s, const view_t *v, const kn_mpi_type_t *t, const void *buf, size_t count,
                             const void **out)
{
    if (v->direct || !count || !t->size) {
        *out = count && t->size ? at(buf, v->off) : (buf ? buf : dummy_buf);
        return KNIT_OK;
    }
    char *tmp = st_alloc(s, view_n(v, t, count) * v->ksz, v->form == FORM_EXTENT);
    char *packed = v->form == FORM_EXTENT ? st_alloc(s, count * t->size, 0) : NULL;
    if (!tmp || (v->form == FORM_EXTENT && !packed))
        return KNIT_ERR_NOMEM;
    *out = tmp;
    fill(v, t, buf, count, tmp, packed);
    return KNIT_OK;
}

/* The native pointer for an output of count elements at buf (load: with
 * the buffer's contents, for MPI_IN_PLACE); the first nout elements are
 * written back at the end. */
static knit_status_t view_out(cst_t *s, const view_t *v, kn_mpi_type_t *t, void *buf, size_t count, int load,
                              size_t nout, void **out)
{
    if (v->direct || !count || !t->size) {
        *out = count && t->size ? at(buf, v->off) : (buf ? buf : dummy_buf);
        return KNIT_OK;
    }
    char *tmp = st_alloc(s, view_n(v, t, count) * v->ksz, v->form == FORM_EXTENT);
    char *packed = v->form == FORM_EXTENT ? st_alloc(s, count * t->size, 0) : NULL;
    if (!tmp || (v->form == FORM_EXTENT && !packed))
        return KNIT_ERR_NOMEM;
    *out = tmp;
    if (load)
        fill(v, t, buf, count, tmp, packed);
    return st_act(s, t, tmp, buf, nout, packed, v);
}

/* One side of a v/w collective as bytes: block i is cnt[i] elements of
 * ts[i] at buf + disp[i] bytes.  Dense blocks are used in place (the base
 * is the lowest block, so negative displacements work); otherwise every
 * block is packed into one scratch buffer.  out: the receiving side (load:
 * -1 none, -2 every block, else that block's contents are loaded). */
static knit_status_t blocks(cst_t *s, int p, kn_mpi_type_t *const *ts, const int *cnt, const MPI_Aint *disp,
                            const void *buf, int out, int load, char **base, size_t *len, size_t *off)
{
    int all_dense = 1, any = 0;
    MPI_Aint lo = 0;
    size_t total = 0;
    for (int i = 0; i < p; i++) {
        len[i] = (size_t)cnt[i] * ts[i]->size;
        total += len[i];
        if (!len[i])
            continue;
        MPI_Aint a = disp[i] + ts[i]->true_lb;
        if (!any || a < lo)
            lo = a;
        any = 1;
        all_dense &= kn_mpi_type_dense(ts[i], (size_t)cnt[i]);
    }
    if (all_dense) {
        *base = any ? at(buf, lo) : (buf ? (char *)buf : dummy_buf);
        for (int i = 0; i < p; i++)
            off[i] = len[i] ? (size_t)(disp[i] + ts[i]->true_lb - lo) : 0;
        return KNIT_OK;
    }
    char *tmp = st_alloc(s, total, 0);
    if (!tmp)
        return KNIT_ERR_NOMEM;
    *base = tmp;
    size_t o = 0;
    for (int i = 0; i < p; i++) {
        off[i] = o;
        o += len[i];
        if (!len[i])
            continue;
        void *b = at(buf, disp[i]);
        if (!out || load == -2 || load == i)
            kn_mpi_pack(ts[i], b, (size_t)cnt[i], tmp + off[i]);
        if (out) {
            view_t v = bytes_view(ts[i], (size_t)cnt[i]);
            if (st_act(s, ts[i], tmp + off[i], b, (size_t)cnt[i], NULL, &v) != KNIT_OK)
                return KNIT_ERR_NOMEM;
        }
    }
    return KNIT_OK;
}

/* ------------------------------------------------------------ reductions */

static void uop_call(const void *in, void *inout, size_t count, knit_dtype_t kdt, void *arg)
{
    const uop_t *u = arg;
    size_t n = count * knit_dtype_size(kdt) / u->ext;
    const char *i = at(in, -u->off);
    char *io = at(inout, -u->off);
    MPI_Datatype dt = u->dt;
    while (n > 0) {
        int len = n > INT_MAX ? INT_MAX : (int)n;
        u->fn((void *)i, io, &len, &dt);
        n -= (size_t)len;
        i += (size_t)len * u->ext;
        io += (size_t)len * u->ext;
    }
}

/* MAXLOC / MINLOC on the Fortran pairs of two reals (MPI_2REAL,
 * MPI_2DOUBLE_PRECISION), which have no native type */
#define LOC2(NAME, T, CMP)                                                          \
    static void NAME(const void *in, void *inout, size_t count, knit_dtype_t k, void *arg) \
    {                                                                               \
        (void)arg;                                                                  \
        size_t n = count * knit_dtype_size(k) / (2 * sizeof(T));                    \
        const T *a = in;                                                            \
        T *b = inout;                                                               \
        for (size_t j = 0; j < n; j++, a += 2, b += 2) {                            \
            if (a[0] CMP b[0] || (a[0] == b[0] && a[1] < b[1])) {                   \
                b[0] = a[0];                                                        \
                b[1] = a[1];                                                        \
            }                                                                       \
        }                                                                           \
    }
LOC2(maxloc_ff, float, >)
LOC2(minloc_ff, float, <)
LOC2(maxloc_dd, double, >)
LOC2(minloc_dd, double, <)

static const char *type_label(const kn_mpi_type_t *t)
{
    return t->name[0] ? t->name : "a derived datatype";
}

/* The view of a reduction of datatype t with op o, and the native op in
 * s->kop.  local: MPI_Reduce_local (REPLACE and NO_OP allowed). */
static int red_view(cst_t *s, kn_mpi_type_t *t, const kn_mpi_op_t *o, int local, view_t *v)
{
    memset(v, 0, sizeof(*v));
    if (!o->predefined) {
        MPI_Aint e = t->extent;
        if (t->size && (e <= 0 || t->true_lb < t->lb || t->true_ub > t->lb + e))
            return kn_mpi_error(s->c, s->fn, MPI_ERR_TYPE,
                                "user ops need a datatype whose data lies within its extent (%s)", type_label(t));
        v->form = FORM_EXTENT;
        v->kdt = KNIT_BYTE;
        v->ksz = 1;
        int commute = o->commute;
        for (int k = 0; k < KNIT_DTYPE_COUNT && e > 1; k++)
            if (knit_dtype_size((knit_dtype_t)k) == (size_t)e) {
                v->kdt = (knit_dtype_t)k;
                v->ksz = (size_t)e;
                break;
            }
        if (v->ksz != (size_t)e && e > 1)
            commute = 0; /* elements travel as bytes: keep them whole */
        v->direct = t->predefined || t->contig;
        v->off = t->predefined ? 0 : t->contig ? t->true_lb : t->lb;
        s->uop = (uop_t){o->fn, t->handle, e > 0 ? (size_t)e : 1, v->off};
        s->kop = (knit_op_t){KNIT_OP_USER, uop_call, &s->uop, commute};
        return MPI_SUCCESS;
    }
    const char *on = op_name[o->kind];
    if (!local && (o->kind == KNIT_OP_REPLACE || o->kind == KNIT_OP_NO_OP))
        return kn_mpi_error(s->c, s->fn, MPI_ERR_OP, "%s is for one-sided accumulates, not collectives", on);
    if (!t->prim)
        return kn_mpi_error(s->c, s->fn, MPI_ERR_OP,
                            "%s needs elements of one predefined type; %s mixes several", on, type_label(t));
    int kdt = t->kdt;
    MPI_Datatype prim = KN_MPI_H(KN_K_TYPE, t->prim);
    s->kop = (knit_op_t){o->kind, NULL, NULL, 1};
    if (prim == MPI_LOGICAL && (o->kind == KNIT_OP_LAND || o->kind == KNIT_OP_LOR || o->kind == KNIT_OP_LXOR))
        kdt = KNIT_INT32;
    if ((prim == MPI_2REAL || prim == MPI_2DOUBLE_PRECISION) &&
        (o->kind == KNIT_OP_MAXLOC || o->kind == KNIT_OP_MINLOC)) {
        int dbl = prim == MPI_2DOUBLE_PRECISION;
        kdt = dbl ? KNIT_DOUBLE_COMPLEX : KNIT_INT64; /* any native type of the pair's size */
        s->kop = (knit_op_t){KNIT_OP_USER,
                             o->kind == KNIT_OP_MAXLOC ? (dbl ? maxloc_dd : maxloc_ff) : (dbl ? minloc_dd : minloc_ff),
                             NULL, 1};
    }
    if (kdt < 0 || knit_reduce_local(NULL, NULL, 0, (knit_dtype_t)kdt, &s->kop) != KNIT_OK) {
        kn_mpi_type_t *pt = kn_mpi_type(prim);
        return kn_mpi_error(s->c, s->fn, MPI_ERR_OP, "%s is not defined for %s%s", on,
                            pt ? type_label(pt) : "its type", t->predefined ? "" : " (the elements of the datatype)");
    }
    v->kdt = (knit_dtype_t)kdt;
    v->ksz = knit_dtype_size(v->kdt);
    v->pg = pair_geo(v->kdt);
    v->form = v->pg ? FORM_PAIRS : FORM_BYTES;
    v->direct = t->predefined || (!v->pg && t->contig);
    v->off = t->predefined ? 0 : t->true_lb;
    return MPI_SUCCESS;
}

/* -------------------------------------------------------------- running */

/* Give up before starting: free the state and the request; returns err. */
static int st_abort(cst_t *s, int err)
{
    kn_mpi_req_t *r = s->req;
    st_free(s);
    if (r)
        kn_mpi_req_release(r);
    return err;
}

/* The state's results: unpack, free.  Returns st's MPI class. */
static int st_finish(cst_t *s, knit_status_t st)
{
    if (st == KNIT_OK)
        for (int i = 0; i < s->nact; i++)
            act_run(&s->act[i]);
    int cls = kn_mpi_class_of(st);
    st_free(s);
    return cls;
}

/* The native blocking form serves a blocking call where it may take a
 * faster path than its nonblocking schedule (small collectives on one node
 * through shared memory: docs/collectives.md). */
#define BLOCKING(s) (!(s)->req)

/* The native collective was started with status k (or preparing it
 * failed): complete a blocking call, hand out the request of a
 * nonblocking one.  A blocking call may have run the native blocking form
 * instead (no s->cr: done; those can skip messages, see BLOCKING). */
static int st_run(cst_t *s, knit_status_t k)
{
    kn_mpi_comm_t *c = s->c;
    const char *fn = s->fn;
    if (k != KNIT_OK)
        return st_abort(s, kn_mpi_error(c, fn, kn_mpi_class_of(k), "%s", knit_strerror(k)));
    if (s->req) {
        kn_mpi_req_t *r = s->req;
        r->coll = s;
        r->active = 1;
        *s->handle = r->handle;
        return MPI_SUCCESS;
    }
    if (s->cr)
        k = knit_coll_wait(&s->cr);
    int cls = st_finish(s, k);
    return cls == MPI_SUCCESS ? cls : kn_mpi_error(c, fn, cls, "%s", knit_strerror(k));
}

int kn_mpi_coll_test(kn_mpi_req_t *r)
{
    if (r->coll->is)
        return kn_mpi_inter_test(r->coll->is);
    if (!knit_coll_done(r->coll->cr))
        knit_progress(kn_mpi.ctx);
    return knit_coll_done(r->coll->cr);
}

int kn_mpi_coll_finish(kn_mpi_req_t *r)
{
    cst_t *s = r->coll;
    int cls;
    if (s->is) {
        cls = kn_mpi_inter_finish(s->is);
        s->is = NULL;
        st_free(s);
    } else {
        cls = st_finish(s, knit_coll_wait(&s->cr));
    }
    MPI_Status *st = &r->done_st;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = cls;
    st->kn_cancelled = 0;
    st->kn_bytes = 0;
    return cls;
}

/* ------------------------------------------------------------- checks */

#define IS_IN_PLACE(p) ((const void *)(p) == MPI_IN_PLACE)

/* comm, and for nonblocking calls the request pointer */
static kn_mpi_comm_t *comm_arg(MPI_Comm comm, MPI_Request *req, int nb, const char *fn, int *err)
{
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, fn, err);
    if (!c)
        return NULL;
    if (!c->kc && !c->inter) { /* an intercommunicator's go to inter.c: the caller looks */
        *err = kn_mpi_error(c, fn, MPI_ERR_INTERN, "%s has no native communicator", kn_mpi_comm_label(c));
        return NULL;
    }
    if (nb && !req) {
        *err = kn_mpi_error(c, fn, MPI_ERR_ARG, "request is NULL");
        return NULL;
    }
    return c;
}

static int root_arg(kn_mpi_comm_t *c, int root, const char *fn)
{
    if (root >= 0 && root < c->size)
        return MPI_SUCCESS;
    if (root == MPI_ROOT || root == MPI_PROC_NULL)
        return kn_mpi_error(c, fn, MPI_ERR_ROOT, "root %s belongs to intercommunicators; %s is an intracommunicator",
                            root == MPI_ROOT ? "MPI_ROOT" : "MPI_PROC_NULL", kn_mpi_comm_label(c));
    return kn_mpi_error(c, fn, MPI_ERR_ROOT, "root %d not in [0, %d) of %s", root, c->size, kn_mpi_comm_label(c));
}

/* a (buffer, count, datatype) argument */
static int buf_arg(kn_mpi_comm_t *c, const void *buf, int count, MPI_Datatype dt, kn_mpi_type_t **t,
                   const char *what, const char *fn)
{
    int err;
    if (count < 0)
        return kn_mpi_error(c, fn, MPI_ERR_COUNT, "%s count %d is negative", what, count);
    if (!(*t = kn_mpi_type_arg(c, dt, fn, &err)))
        return err;
    if (IS_IN_PLACE(buf))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is not allowed as the %s buffer here", what);
    if (kn_mpi_bad_buffer(buf, count, *t))
        return kn_mpi_error(c, fn, MPI_ERR_BUFFER, "%s buffer is NULL with count %d", what, count);
    return MPI_SUCCESS;
}

/* per-rank counts (and displacements) of v-forms */
static int counts_arg(kn_mpi_comm_t *c, const int *cnt, const void *disp, const void *buf, kn_mpi_type_t *const *ts,
                      int per_block, int n, const char *what, const char *fn)
{
    if (!cnt || !disp)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "%s counts or displacements are NULL", what);
    for (int i = 0; i < n; i++) {
        if (cnt[i] < 0)
            return kn_mpi_error(c, fn, MPI_ERR_COUNT, "%s count %d of rank %d is negative", what, cnt[i], i);
        if (kn_mpi_bad_buffer(buf, cnt[i], ts[per_block ? i : 0]))
            return kn_mpi_error(c, fn, MPI_ERR_BUFFER, "%s buffer is NULL with count %d for rank %d", what, cnt[i],
                                i);
    }
    return MPI_SUCCESS;
}

/* the data a rank sends must be what the matching receive expects */
static int sizes_match(kn_mpi_comm_t *c, size_t sent, size_t expected, const char *fn)
{
    if (sent == expected)
        return MPI_SUCCESS;
    return kn_mpi_error(c, fn, sent > expected ? MPI_ERR_TRUNCATE : MPI_ERR_COUNT,
                        "this rank sends %zu bytes to itself but receives %zu", sent, expected);
}

#define TRY(x)                                  \
    do {                                        \
        int err_ = (x);                         \
        if (err_ != MPI_SUCCESS)                \
            return err_;                        \
    } while (0)

/* An intercommunicator's collective: inter.c's call (its argument IS
 * the schedule's out-parameter) blocking, or a schedule handed out as the
 * request of a nonblocking call. */
#define INTER(call)                                                          \
    do {                                                                     \
        if (!nb) {                                                           \
            kn_mpi_isched_t **IS = NULL;                                     \
            return call;                                                     \
        }                                                                    \
        cst_t local_, *s_;                                                   \
        TRY(st_open(c, req, &local_, &s_, fn));                              \
        kn_mpi_isched_t **IS = &s_->is;                                      \
        int e_ = (call);                                                     \
        return e_ == MPI_SUCCESS ? st_run(s_, KNIT_OK) : st_abort(s_, e_);   \
    } while (0)

/* ------------------------------------------------------------- barrier */

static int barrier(MPI_Comm comm, MPI_Request *req, int nb, const char *fn)
{
    int err;
    kn_mpi_comm_t *c = comm_arg(comm, req, nb, fn, &err);
    if (!c)
        return err;
    if (c->inter)
        INTER(kn_mpi_inter_barrier(c, IS, fn));
    cst_t local, *s;
    TRY(st_open(c, req, &local, &s, fn));
    return st_run(s, BLOCKING(s) ? knit_barrier(c->kc) : knit_ibarrier(c->kc, &s->cr));
}

int MPI_Barrier(MPI_Comm comm)
{
    KN_MPI_READY();
    return barrier(comm, NULL, 0, __func__);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return barrier(comm, request, 1, __func__);
}

/* --------------------------------------------------------------- bcast */

static int bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req, int nb,
                 const char *fn)
{
    int err;
    kn_mpi_type_t *t;
    kn_mpi_comm_t *c = comm_arg(comm, req, nb, fn, &err);
    if (!c)
        return err;
    if (c->inter)
        INTER(kn_mpi_inter_bcast(c, buf, count, dt, root, IS, fn));
    TRY(root_arg(c, root, fn));
    TRY(buf_arg(c, buf, count, dt, &t, "", fn));
    cst_t local, *s;
    TRY(st_open(c, req, &local, &s, fn));
    size_t n = (size_t)count;
    view_t v = bytes_view(t, n);
    void *p;
    knit_status_t k;
    if (c->rank == root)
        k = view_in(s, &v, t, buf, n, (const void **)&p);
    else
        k = view_out(s, &v, t, buf, n, 0, n, &p);
    if (k == KNIT_OK)
        k = BLOCKING(s) ? knit_bcast(c->kc, p, n * t->size, KNIT_BYTE, root)
                        : knit_ibcast(c->kc, p, n * t->size, KNIT_BYTE, root, &s->cr);
    return st_run(s, k);
}

/*
 * The hot paths of the blocking collectives programs call most (bcast,
 * reduce, allreduce, allgather, alltoall): a live intracommunicator,
 * committed contiguous datatypes, a predefined op the elements take (for
 * the reductions), buffers in order.  The
 * call goes to the native collective without the general path's state
 * (cst_t), views and checks one by one; anything else takes the general
 * path, which checks again and explains.  They cut about 70-100 ns of
 * 0.3 us at 8 bytes on 2 ranks (bench/coll --osu, knit-mpi against the
 * native API).
 */
static inline int hot_coll_ready(const kn_mpi_comm_t *c)
{
    return kn_likely(kn_mpi.initialized && !kn_mpi.finalized && c && c->kc && !c->inter);
}

static inline int hot_buf(const kn_mpi_type_t *t, const void *buf, int count)
{
    return t && t->committed && t->contig && count >= 0 && !IS_IN_PLACE(buf) && !kn_mpi_bad_buffer(buf, count, t);
}

/* Whether op k is defined on native type kdt (asked of the native layer once per pair). */
static int op_takes(knit_op_kind_t k, int kdt)
{
    static signed char known[N_PREDEF_OPS][KNIT_DTYPE_COUNT]; /* 0 not asked, 1 yes, -1 no */
    if (kdt < 0 || kdt >= KNIT_DTYPE_COUNT || (int)k < 0 || (int)k >= N_PREDEF_OPS)
        return 0;
    signed char v = __atomic_load_n(&known[k][kdt], __ATOMIC_RELAXED); /* threads may ask at once */
    if (!v) {
        knit_op_t kop = {k, NULL, NULL, 1};
        v = knit_reduce_local(NULL, NULL, 0, (knit_dtype_t)kdt, &kop) == KNIT_OK ? 1 : -1;
        __atomic_store_n(&known[k][kdt], v, __ATOMIC_RELAXED);
    }
    return v > 0;
}

/* A predefined type of plain elements (no pairs, not MPI_LOGICAL) with a
 * predefined op of the collectives: its native op, else NULL. */
static inline const kn_mpi_op_t *hot_op(const kn_mpi_type_t *t, MPI_Op op)
{
    const kn_mpi_op_t *o = kn_mpi_tbl_get(&ops, op);
    if (!o || !o->predefined || o->kind == KNIT_OP_REPLACE || o->kind == KNIT_OP_NO_OP ||
        o->kind == KNIT_OP_MAXLOC || o->kind == KNIT_OP_MINLOC || !t->predefined || t->handle == MPI_LOGICAL ||
        pair_geo((knit_dtype_t)t->kdt) || !op_takes(o->kind, t->kdt))
        return NULL;
    return o;
}

/* native elements in count elements of t (MPI_2REAL and the like hold two) */
static inline size_t hot_n(const kn_mpi_type_t *t, int count)
{
    return (size_t)count * t->size / knit_dtype_size((knit_dtype_t)t->kdt);
}

static int hot_result(kn_mpi_comm_t *c, knit_status_t k, const char *fn)
{
    return kn_likely(k == KNIT_OK) ? MPI_SUCCESS : kn_mpi_error(c, fn, kn_mpi_class_of(k), "%s", knit_strerror(k));
}

/* the reductions' buffers: a send buffer or MPI_IN_PLACE where a result
 * is, and a receive buffer there */
static inline int hot_red_bufs(const kn_mpi_type_t *t, const void *sb, const void *rb, int count, int has_result)
{
    int inplace = IS_IN_PLACE(sb);
    if (inplace)
        return has_result && hot_buf(t, rb, count);
    return hot_buf(t, sb, count) && (!has_result || (hot_buf(t, rb, count) && (sb != rb || !count || !t->size)));
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    kn_mpi_comm_t *c = kn_mpi_comm(comm);
    kn_mpi_type_t *t = kn_mpi_type(datatype);
    if (hot_coll_ready(c) && hot_buf(t, buffer, count) && (unsigned)root < (unsigned)c->size) {
        size_t len = (size_t)count * t->size;
        return hot_result(c, knit_bcast(c->kc, (char *)buffer + (len ? t->true_lb : 0), len, KNIT_BYTE, root),
                          __func__);
    }
    KN_MPI_READY();
    return bcast(buffer, count, datatype, root, comm, NULL, 0, __func__);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return bcast(buffer, count, datatype, root, comm, request, 1, __func__);
}

/* ------------------------------------------------- gather, scatter, all* */

enum { K_GATHER = KN_IC_GATHER, K_SCATTER = KN_IC_SCATTER, K_ALLGATHER = KN_IC_ALLGATHER,
       K_ALLTOALL = KN_IC_ALLTOALL };

/* Gather, scatter, allgather, alltoall: equal blocks.  The "many" side
 * (size blocks) is the receive side but for scatter, where it is the
 * send side; in place is MPI's for each. */
static int blocks_eq(int kind, const void *sb, int sc, MPI_Datatype sdt, void *rb, int rc, MPI_Datatype rdt,
                     int root, MPI_Comm comm, MPI_Request *req, int nb, const char *fn)
{
    int err;
    kn_mpi_comm_t *c = comm_arg(comm, req, nb, fn, &err);
    if (!c)
        return err;
    if (c->inter) /* K_GATHER .. K_ALLTOALL are KN_IC_GATHER .. KN_IC_ALLTOALL */
        INTER(kn_mpi_inter_blocks(c, kind, sb, NULL, NULL, sc, sdt, rb, NULL, NULL, rc, rdt, root, IS, fn));
    int scatter = kind == K_SCATTER, rooted = kind == K_GATHER || scatter;
    if (rooted)
        TRY(root_arg(c, root, fn));
    int p = c->size, is_root = rooted ? c->rank == root : 1;
    /* MPI_IN_PLACE: the send buffer (the receive buffer of scatter), at
     * the root of rooted collectives; the in-place side is not significant */
    const void *ip = scatter ? rb : sb;
    if (IS_IN_PLACE(ip) && !is_root)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is allowed at the root only");
    int inplace = IS_IN_PLACE(ip);
    int send_sig = (!scatter || is_root) && !(inplace && !scatter);
    int recv_sig = (kind != K_GATHER || is_root) && !(inplace && scatter);
    kn_mpi_type_t *st = NULL, *rt = NULL;
    if (send_sig)
        TRY(buf_arg(c, sb, sc, sdt, &st, "send", fn));
    if (recv_sig)
        TRY(buf_arg(c, rb, rc, rdt, &rt, "receive", fn));
    /* bytes per block, from this rank's side(s) */
    size_t sblk = st ? (size_t)sc * st->size : 0, rblk = rt ? (size_t)rc * rt->size : 0;
    if (st && rt)
        TRY(sizes_match(c, sblk, rblk, fn));
    size_t blk = scatter ? (st ? sblk : rblk) : (rt ? rblk : sblk);
    cst_t local, *s;
    TRY(st_open(c, req, &local, &s, fn));
    const void *sp = inplace && !scatter ? KNIT_IN_PLACE : NULL;
    void *rp = inplace && scatter ? KNIT_IN_PLACE : NULL;
    knit_status_t k = KNIT_OK;
    if (st) {
        size_t n = (size_t)sc * (scatter || kind == K_ALLTOALL ? (size_t)p : 1);
        view_t v = bytes_view(st, n);
        k = view_in(s, &v, st, sb, n, &sp);
    }
    if (k == KNIT_OK && rt) {
        size_t n = (size_t)rc * (scatter ? 1 : (size_t)p);
        view_t v = bytes_view(rt, n);
        k = view_out(s, &v, rt, rb, n, inplace, n, &rp);
    }
    if (k == KNIT_OK) {
        switch (kind) {
        case K_GATHER:
            k = knit_igather(c->kc, sp, rp, blk, KNIT_BYTE, root, &s->cr);
            break;
        case K_SCATTER:
            k = knit_iscatter(c->kc, sp, rp, blk, KNIT_BYTE, root, &s->cr);
            break;
        case K_ALLGATHER:
            k = BLOCKING(s) ? knit_allgather(c->kc, sp, rp, blk, KNIT_BYTE)
                            : knit_iallgather(c->kc, sp, rp, blk, KNIT_BYTE, &s->cr);
            break;
        default:
            k = BLOCKING(s) ? knit_alltoall(c->kc, sp, rp, blk, KNIT_BYTE)
                            : knit_ialltoall(c->kc, sp, rp, blk, KNIT_BYTE, &s->cr);
        }
    }
    return st_run(s, k);
}

/* MPI_Allgather's and MPI_Alltoall's hot path (as MPI_Bcast's): the
 * call's result, or -1 where it does not apply. */
static inline int hot_blocks(int kind, const void *sb, int sc, MPI_Datatype sdt, void *rb, int rc, MPI_Datatype rdt,
                             MPI_Comm comm, const char *fn)
{
    kn_mpi_comm_t *c = kn_mpi_comm(comm);
    kn_mpi_type_t *st = kn_mpi_type(sdt), *rt = kn_mpi_type(rdt);
    if (!(hot_coll_ready(c) && hot_buf(st, sb, sc) && hot_buf(rt, rb, rc) &&
          (size_t)sc * st->size == (size_t)rc * rt->size))
        return -1;
    size_t blk = (size_t)sc * st->size;
    const char *sp = (const char *)sb + (blk ? st->true_lb : 0);
    char *rp = (char *)rb + (blk ? rt->true_lb : 0);
    knit_status_t k = kind == K_ALLGATHER ? knit_allgather(c->kc, sp, rp, blk, KNIT_BYTE)
                                          : knit_alltoall(c->kc, sp, rp, blk, KNIT_BYTE);
    return hot_result(c, k, fn);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    KN_MPI_READY();
    return blocks_eq(K_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL, 0,
                     __func__);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_eq(K_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request, 1,
                     __func__);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    KN_MPI_READY();
    return blocks_eq(K_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL, 0,
                     __func__);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_eq(K_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request, 1,
                     __func__);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    int hot = hot_blocks(K_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, __func__);
    if (hot >= 0)
        return hot;
    KN_MPI_READY();
    return blocks_eq(K_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm, NULL, 0,
                     __func__);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_eq(K_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm, request, 1,
                     __func__);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm)
{
    int hot = hot_blocks(K_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, __func__);
    if (hot >= 0)
        return hot;
    KN_MPI_READY();
    return blocks_eq(K_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm, NULL, 0,
                     __func__);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_eq(K_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm, request, 1,
                     __func__);
}

/* ------------------------------------------------------------ v and w forms */

/* The per-rank arrays of one side of a v/w form, made uniform: a type per
 * block and byte displacements (scratch in s). */
static knit_status_t side_arrays(cst_t *s, int p, kn_mpi_type_t *t, kn_mpi_type_t *const *ts, const int *displs,
                                 int bytes, kn_mpi_type_t ***tsout, MPI_Aint **dout, size_t **len, size_t **off)
{
    kn_mpi_type_t **tv = st_alloc(s, (size_t)p * sizeof(*tv), 0);
    MPI_Aint *dv = st_alloc(s, (size_t)p * sizeof(*dv), 0);
    size_t *lv = st_alloc(s, 2 * (size_t)p * sizeof(*lv), 0);
    if (!tv || !dv || !lv)
        return KNIT_ERR_NOMEM;
    for (int i = 0; i < p; i++) {
        tv[i] = ts ? ts[i] : t;
        dv[i] = bytes ? (MPI_Aint)displs[i] : (MPI_Aint)displs[i] * tv[i]->extent;
    }
    *tsout = tv;
    *dout = dv;
    *len = lv;
    *off = lv + p;
    return KNIT_OK;
}

enum { K_GATHERV, K_SCATTERV, K_ALLGATHERV };

static int blocks_v(int kind, const void *sb, const int *scs, const int *sdispls, int sc, MPI_Datatype sdt,
                    void *rb, const int *rcs, const int *rdispls, int rc, MPI_Datatype rdt, int root, MPI_Comm comm,
                    MPI_Request *req, int nb, const char *fn)
{
    int err;
    kn_mpi_comm_t *c = comm_arg(comm, req, nb, fn, &err);
    if (!c)
        return err;
    if (c->inter)
        INTER(kn_mpi_inter_blocks(c, KN_IC_GATHERV + kind, sb, scs, sdispls, sc, sdt, rb, rcs, rdispls, rc, rdt,
                                  root, IS, fn));
    int vsend = kind == K_SCATTERV, rooted = kind != K_ALLGATHERV;
    if (rooted)
        TRY(root_arg(c, root, fn));
    int me = c->rank, p = c->size, is_root = rooted ? me == root : 1;
    const void *ip = vsend ? rb : sb;
    if (IS_IN_PLACE(ip) && !is_root)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is allowed at the root only");
    int inplace = IS_IN_PLACE(ip);
    /* the vector side (receive of gatherv/allgatherv, send of scatterv) at
     * the root; the single side everywhere unless in place */
    kn_mpi_type_t *vt = NULL, *one = NULL;
    const int *vc = vsend ? scs : rcs, *vd = vsend ? sdispls : rdispls;
    const void *vbuf = vsend ? sb : rb;
    if (is_root) {
        if (!(vt = kn_mpi_type_arg(c, vsend ? sdt : rdt, fn, &err)))
            return err;
        if (IS_IN_PLACE(vbuf))
            return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is not allowed as the %s buffer",
                                vsend ? "send" : "receive");
        TRY(counts_arg(c, vc, vd, vbuf, &vt, 0, p, vsend ? "send" : "receive", fn));
    }
    if (!inplace) {
        if (vsend)
            TRY(buf_arg(c, rb, rc, rdt, &one, "receive", fn));
        else
            TRY(buf_arg(c, sb, sc, sdt, &one, "send", fn));
    }
    size_t mine = one ? (size_t)(vsend ? rc : sc) * one->size : 0;
    if (is_root && !inplace)
        TRY(sizes_match(c, vsend ? (size_t)vc[me] * vt->size : mine, vsend ? mine : (size_t)vc[me] * vt->size, fn));
    cst_t local, *s;
    TRY(st_open(c, req, &local, &s, fn));
    kn_mpi_type_t **tv;
    MPI_Aint *dv;
    size_t *len = NULL, *off = NULL;
    char *base = NULL;
    knit_status_t k = KNIT_OK;
    if (is_root) {
        k = side_arrays(s, p, vt, NULL, vd, 0, &tv, &dv, &len, &off);
        if (k == KNIT_OK)
            k = blocks(s, p, tv, vc, dv, vbuf, !vsend, inplace ? me : -1, &base, len, off);
    }
    if (k != KNIT_OK)
        return st_run(s, k);
    view_t v;
    if (vsend) {
        void *rp = KNIT_IN_PLACE;
        if (one) {
            v = bytes_view(one, (size_t)rc);
            k = view_out(s, &v, one, rb, (size_t)rc, 0, (size_t)rc, &rp);
        }
        if (k == KNIT_OK)
            k = knit_iscatterv(c->kc, base, len, off, rp, mine, KNIT_BYTE, root, &s->cr);
    } else {
        const void *sp = KNIT_IN_PLACE;
        if (one) {
            v = bytes_view(one, (size_t)sc);
            k = view_in(s, &v, one, sb, (size_t)sc, &sp);
        }
        if (k == KNIT_OK && kind == K_GATHERV)
            k = knit_igatherv(c->kc, sp, mine, base, len, off, KNIT_BYTE, root, &s->cr);
        else if (k == KNIT_OK)
            k = knit_iallgatherv(c->kc, sp, base, len, off, KNIT_BYTE, &s->cr);
    }
    return st_run(s, k);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    KN_MPI_READY();
    return blocks_v(K_GATHERV, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype,
                    root, comm, NULL, 0, __func__);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_v(K_GATHERV, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype,
                    root, comm, request, 1, __func__);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    KN_MPI_READY();
    return blocks_v(K_SCATTERV, sendbuf, sendcounts, displs, 0, sendtype, recvbuf, NULL, NULL, recvcount, recvtype,
                    root, comm, NULL, 0, __func__);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_v(K_SCATTERV, sendbuf, sendcounts, displs, 0, sendtype, recvbuf, NULL, NULL, recvcount, recvtype,
                    root, comm, request, 1, __func__);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    KN_MPI_READY();
    return blocks_v(K_ALLGATHERV, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
                    recvtype, 0, comm, NULL, 0, __func__);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request)
{
    KN_MPI_READY();
    return blocks_v(K_ALLGATHERV, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
                    recvtype, 0, comm, request, 1, __func__);
}

/* Alltoallv (one type a side, displacements in extents) and alltoallw (a
 * type per block, displacements in bytes). */
static int alltoallvw(const void *sb, const int *scs, const int *sds, const MPI_Datatype *sdts, void *rb,
                      const int *rcs, const int *rds, const MPI_Datatype *rdts, int w, MPI_Comm comm,
                      MPI_Request *req, int nb, const char *fn)
{
    int err;
    kn_mpi_comm_t *c = comm_arg(comm, req, nb, fn, &err);
    if (!c)
        return err;
    if (c->inter)
        INTER(kn_mpi_inter_alltoallvw(c, sb, scs, sds, sdts, rb, rcs, rds, rdts, w, IS, fn));
    int p = c->size, inplace = IS_IN_PLACE(sb);
    if (IS_IN_PLACE(rb))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is not allowed as the receive buffer");
    if ((!inplace && !sdts) || !rdts)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "datatype array is NULL");
    cst_t local, *s;
    TRY(st_open(c, req, &local, &s, fn));
    kn_mpi_type_t **sts = NULL, **rts = NULL;
    MPI_Aint *sdv = NULL, *rdv = NULL;
    size_t *slen = NULL, *soff = NULL, *rlen, *roff;
    char *sbase = NULL, *rbase;
    knit_status_t k = KNIT_OK;
    int e = MPI_SUCCESS;
    /* look the types up: one, or one per block */
    kn_mpi_type_t **tv = st_alloc(s, 2 * (size_t)p * sizeof(*tv), 0);
    if (!tv)
        k = KNIT_ERR_NOMEM;
    for (int side = inplace; k == KNIT_OK && e == MPI_SUCCESS && side < 2; side++) {
        const MPI_Datatype *dts = side ? rdts : sdts;
        for (int i = 0; i < (w ? p : 1) && e == MPI_SUCCESS; i++)
            if (!(tv[side * p + i] = kn_mpi_type_arg(c, dts[i], fn, &e)))
                break;
        for (int i = 1; !w && i < p; i++)
            tv[side * p + i] = tv[side * p];
        if (e == MPI_SUCCESS)
            e = counts_arg(c, side ? rcs : scs, side ? rds : sds, side ? rb : sb, tv + side * p, 1, p,
                           side ? "receive" : "send", fn);
    }
    if (e == MPI_SUCCESS && k == KNIT_OK && !inplace)
        k = side_arrays(s, p, NULL, tv, sds, w, &sts, &sdv, &slen, &soff);
    if (e == MPI_SUCCESS && k == KNIT_OK)
        k = side_arrays(s, p, NULL, tv + p, rds, w, &rts, &rdv, &rlen, &roff);
    if (e == MPI_SUCCESS && k == KNIT_OK && !inplace)
        k = blocks(s, p, sts, scs, sdv, sb, 0, -1, &sbase, slen, soff);
    if (e == MPI_SUCCESS && k == KNIT_OK)
        k = blocks(s, p, rts, rcs, rdv, rb, 1, inplace ? -2 : -1, &rbase, rlen, roff);
    if (e == MPI_SUCCESS && k == KNIT_OK && !inplace && slen[c->rank] != rlen[c->rank])
        e = sizes_match(c, slen[c->rank], rlen[c->rank], fn);
    if (e != MPI_SUCCESS) {
        return st_abort(s, e);
    }
    if (k == KNIT_OK)
        k = knit_ialltoallw(c->kc, inplace ? KNIT_IN_PLACE : sbase, slen, soff, rbase, rlen, roff, &s->cr);
    return st_run(s, k);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    KN_MPI_READY();
    return alltoallvw(sendbuf, sendcounts, sdispls, &sendtype, recvbuf, recvcounts, rdispls, &recvtype, 0, comm,
                      NULL, 0, __func__);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return alltoallvw(sendbuf, sendcounts, sdispls, &sendtype, recvbuf, recvcounts, rdispls, &recvtype, 0, comm,
                      request, 1, __func__);
}

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                  void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                  MPI_Comm comm)
{
    KN_MPI_READY();
    return alltoallvw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, 1, comm,
                      NULL, 0, __func__);
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                   const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return alltoallvw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, 1, comm,
                      request, 1, __func__);
}

/* ------------------------------------------------------------- reductions */

enum { K_REDUCE, K_ALLREDUCE, K_SCAN, K_EXSCAN, K_RS_BLOCK, K_RS };

/* Reduce, allreduce, scan, exscan, reduce_scatter(_block).  count: the
 * elements of a rank's input (rs: its result, rcs the results' counts). */
static int reduction(int kind, const void *sb, void *rb, int count, const int *rcs, MPI_Datatype dt, MPI_Op op,
                     int root, MPI_Comm comm, MPI_Request *req, int nb, const char *fn)
{
    int err;
    kn_mpi_comm_t *ic = kn_mpi_comm(comm);
    if (ic && ic->inter && (kind == K_SCAN || kind == K_EXSCAN))
        return kn_mpi_error(ic, fn, MPI_ERR_COMM, "%s is an intercommunicator: scans are for intracommunicators",
                            kn_mpi_comm_label(ic));
    kn_mpi_comm_t *c = comm_arg(comm, req, nb, fn, &err);
    if (!c)
        return err;
    if (c->inter) {
        int ik = kind == K_REDUCE      ? KN_IC_REDUCE
                 : kind == K_ALLREDUCE ? KN_IC_ALLREDUCE
                 : kind == K_RS_BLOCK  ? KN_IC_RS_BLOCK
                                       : KN_IC_RS;
        if (nb && !(kind == K_REDUCE && root == MPI_PROC_NULL)) {
            /* the fold at the end must not fail: op and datatype now */
            kn_mpi_type_t *t = kn_mpi_type_arg(c, dt, fn, &err);
            if (!t)
                return err;
            kn_mpi_op_t *o = op_arg(c, op, fn, &err);
            if (!o)
                return err;
            cst_t chk;
            view_t v;
            TRY(st_open(c, NULL, &chk, &(cst_t *){NULL}, fn));
            TRY(red_view(&chk, t, o, 0, &v));
        }
        INTER(kn_mpi_inter_reduction(c, ik, sb, rb, count, rcs, dt, op, root, IS, fn));
    }
    if (kind == K_REDUCE)
        TRY(root_arg(c, root, fn));
    int me = c->rank, p = c->size;
    int has_result = kind != K_REDUCE || me == root;
    int inplace = IS_IN_PLACE(sb);
    if (inplace && !has_result)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is allowed at the root only");
    kn_mpi_type_t *t = kn_mpi_type_arg(c, dt, fn, &err);
    if (!t)
        return err;
    kn_mpi_op_t *o = op_arg(c, op, fn, &err);
    if (!o)
        return err;
    /* elements in (input) and out (result) */
    size_t nin = 0, nout = 0;
    if (kind == K_RS) {
        if (!rcs)
            return kn_mpi_error(c, fn, MPI_ERR_ARG, "recvcounts is NULL");
        for (int i = 0; i < p; i++) {
            if (rcs[i] < 0)
                return kn_mpi_error(c, fn, MPI_ERR_COUNT, "recvcounts[%d] = %d is negative", i, rcs[i]);
            nin += (size_t)rcs[i];
        }
        nout = (size_t)rcs[me];
    } else {
        if (count < 0)
            return kn_mpi_error(c, fn, MPI_ERR_COUNT, "count %d is negative", count);
        nin = nout = (size_t)count;
        if (kind == K_RS_BLOCK)
            nin *= (size_t)p;
    }
    if (!inplace && kn_mpi_bad_buffer(sb, nin ? 1 : 0, t))
        return kn_mpi_error(c, fn, MPI_ERR_BUFFER, "send buffer is NULL with data");
    if (has_result && IS_IN_PLACE(rb))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is not allowed as the receive buffer");
    size_t nrb = inplace ? nin : nout; /* what recvbuf holds */
    if (has_result && kn_mpi_bad_buffer(rb, nrb ? 1 : 0, t))
        return kn_mpi_error(c, fn, MPI_ERR_BUFFER, "receive buffer is NULL with data");
    if (has_result && !inplace && sb && sb == rb && nout && t->size)
        return kn_mpi_error(c, fn, MPI_ERR_BUFFER, "send and receive buffers are the same (use MPI_IN_PLACE)");
    cst_t local, *s;
    TRY(st_open(c, req, &local, &s, fn));
    view_t v;
    int e = red_view(s, t, o, 0, &v);
    if (e != MPI_SUCCESS) {
        return st_abort(s, e);
    }
    const void *sp = KNIT_IN_PLACE;
    void *rp = NULL;
    knit_status_t k = KNIT_OK;
    if (!inplace)
        k = view_in(s, &v, t, sb, nin, &sp);
    if (k == KNIT_OK && has_result)
        k = view_out(s, &v, t, rb, nrb, inplace, kind == K_EXSCAN && me == 0 ? 0 : nout, &rp);
    size_t n = view_n(&v, t, kind == K_RS_BLOCK ? nout : nin);
    if (k != KNIT_OK)
        return st_run(s, k);
    switch (kind) {
    case K_REDUCE:
        k = BLOCKING(s) ? knit_reduce(c->kc, sp, rp, n, v.kdt, &s->kop, root)
                        : knit_ireduce(c->kc, sp, rp, n, v.kdt, &s->kop, root, &s->cr);
        break;
    case K_ALLREDUCE:
        k = BLOCKING(s) ? knit_allreduce(c->kc, sp, rp, n, v.kdt, &s->kop)
                        : knit_iallreduce(c->kc, sp, rp, n, v.kdt, &s->kop, &s->cr);
        break;
    case K_SCAN:
        k = knit_iscan(c->kc, sp, rp, n, v.kdt, &s->kop, &s->cr);
        break;
    case K_EXSCAN:
        k = knit_iexscan(c->kc, sp, rp, n, v.kdt, &s->kop, &s->cr);
        break;
    case K_RS_BLOCK:
        k = knit_ireduce_scatter_block(c->kc, sp, rp, n, v.kdt, &s->kop, &s->cr);
        break;
    default: {
        size_t *nc = st_alloc(s, (size_t)p * sizeof(*nc), 0);
        if (!nc)
            return st_run(s, KNIT_ERR_NOMEM);
        for (int i = 0; i < p; i++)
            nc[i] = view_n(&v, t, (size_t)rcs[i]);
        k = knit_ireduce_scatter(c->kc, sp, rp, nc, v.kdt, &s->kop, &s->cr);
    }
    }
    return st_run(s, k);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm)
{
    kn_mpi_comm_t *c = kn_mpi_comm(comm);
    kn_mpi_type_t *t = kn_mpi_type(datatype);
    const kn_mpi_op_t *o;
    if (hot_coll_ready(c) && (unsigned)root < (unsigned)c->size &&
        hot_red_bufs(t, sendbuf, recvbuf, count, c->rank == root) && (o = hot_op(t, op))) {
        knit_op_t kop = {o->kind, NULL, NULL, 1};
        const void *sp = IS_IN_PLACE(sendbuf) ? KNIT_IN_PLACE : sendbuf;
        void *rp = c->rank == root ? recvbuf : NULL;
        return hot_result(c, knit_reduce(c->kc, sp, rp, hot_n(t, count), (knit_dtype_t)t->kdt, &kop, root), __func__);
    }
    KN_MPI_READY();
    return reduction(K_REDUCE, sendbuf, recvbuf, count, NULL, datatype, op, root, comm, NULL, 0, __func__);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return reduction(K_REDUCE, sendbuf, recvbuf, count, NULL, datatype, op, root, comm, request, 1, __func__);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    kn_mpi_comm_t *c = kn_mpi_comm(comm);
    kn_mpi_type_t *t = kn_mpi_type(datatype);
    const kn_mpi_op_t *o;
    if (hot_coll_ready(c) && hot_red_bufs(t, sendbuf, recvbuf, count, 1) && (o = hot_op(t, op))) {
        knit_op_t kop = {o->kind, NULL, NULL, 1};
        const void *sp = IS_IN_PLACE(sendbuf) ? KNIT_IN_PLACE : sendbuf;
        return hot_result(c, knit_allreduce(c->kc, sp, recvbuf, hot_n(t, count), (knit_dtype_t)t->kdt, &kop),
                          __func__);
    }
    KN_MPI_READY();
    return reduction(K_ALLREDUCE, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, NULL, 0, __func__);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request)
{
    KN_MPI_READY();
    return reduction(K_ALLREDUCE, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, request, 1, __func__);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    KN_MPI_READY();
    return reduction(K_SCAN, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, NULL, 0, __func__);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request *request)
{
    KN_MPI_READY();
    return reduction(K_SCAN, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, request, 1, __func__);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    KN_MPI_READY();
    return reduction(K_EXSCAN, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, NULL, 0, __func__);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request *request)
{
    KN_MPI_READY();
    return reduction(K_EXSCAN, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, request, 1, __func__);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm)
{
    KN_MPI_READY();
    return reduction(K_RS_BLOCK, sendbuf, recvbuf, recvcount, NULL, datatype, op, 0, comm, NULL, 0, __func__);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return reduction(K_RS_BLOCK, sendbuf, recvbuf, recvcount, NULL, datatype, op, 0, comm, request, 1, __func__);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
    KN_MPI_READY();
    return reduction(K_RS, sendbuf, recvbuf, 0, recvcounts, datatype, op, 0, comm, NULL, 0, __func__);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    KN_MPI_READY();
    return reduction(K_RS, sendbuf, recvbuf, 0, recvcounts, datatype, op, 0, comm, request, 1, __func__);
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *t;
    TRY(buf_arg(NULL, inbuf, count, datatype, &t, "input", __func__));
    TRY(buf_arg(NULL, inoutbuf, count, datatype, &t, "inout", __func__));
    kn_mpi_op_t *o = op_arg(NULL, op, __func__, &err);
    if (!o)
        return err;
    cst_t s, *sp;
    TRY(st_open(NULL, NULL, &s, &sp, __func__));
    view_t v;
    TRY(red_view(&s, t, o, 1, &v));
    const void *in = NULL;
    void *io = NULL;
    size_t n = (size_t)count;
    knit_status_t k = view_in(&s, &v, t, inbuf, n, &in);
    if (k == KNIT_OK)
        k = view_out(&s, &v, t, inoutbuf, n, 1, n, &io);
    if (k == KNIT_OK)
        k = knit_reduce_local(in, io, view_n(&v, t, n), v.kdt, &s.kop);
    int cls = st_finish(&s, k);
    return cls == MPI_SUCCESS ? cls : kn_mpi_error(NULL, __func__, cls, "%s", knit_strerror(k));
}
