/*
 * Process topologies (MPI chapter 8): Cartesian, graph and distributed
 * graph topologies, their queries, and the neighbourhood collectives.
 *
 * A topology is a kn_mpi_topo_t hanging off its communicator (c->topo):
 * MPI_Comm_dup copies it, the communicator's destruction frees it.  Each
 * keeps, besides what its queries return, the calling process's neighbour
 * lists (in, out), computed once when it is made; the collectives use
 * only those.
 *
 * Constructors make their communicator with the split machinery of
 * comm.c: colour 0 for the members (MPI_UNDEFINED for processes beyond a
 * grid or graph), key the old rank.  So `reorder` keeps the order: rank i
 * of the new communicator is rank i of the old one (MPI allows that; knit
 * has no placement to gain from).  MPI_Cart_sub splits by the coordinates
 * of the dropped dimensions.  MPI_Dist_graph_create then sends every edge
 * to both its ends with the native collectives of the new communicator,
 * before the program can use it; an end keeps its edges in the order of
 * the processes that named them, each's in its order.
 *
 * Neighbourhood collectives are point-to-point on the context
 * ctx_id | KN_MPI_CTX_NBR, which no other traffic uses (the program's
 * messages are on ctx_id, the layer's exchanges on ctx_id |
 * KN_MPI_CTX_INTERNAL with every tag taken, native collectives on ctx_id |
 * KNIT_COLL_CTX_BIT).  The tag is the count of neighbourhood collectives
 * started on the communicator, which the members start in the same order,
 * so two in flight never take each other's messages.  Within one, the
 * messages between two processes match in the order they were posted
 * (non-overtaking), and that order pairs repeated edges as MPI says:
 *   - graph, distributed graph: the k-th edge from p to q is the k-th
 *     edge into q from p (list order; MPI 8.6);
 *   - Cartesian: block s of a sender lands in block s^1 of the receiver
 *     (MPI-4.1 Example 8.10; the two neighbours of a periodic dimension of
 *     size 1 or 2 are one process): sends are posted in block order,
 *     receives with the two blocks of each dimension swapped.
 * Every edge carries one message, empty ones too, so both sides always
 * agree on the pairing.  A dense layout is sent or received in place;
 * any other is packed into scratch before the send, or received into
 * scratch and unpacked at completion.  Receives are posted first.
 *
 * The nonblocking forms are requests of kind KN_RQ_NBR (r->nbr): MPI_Test
 * & co progress them through kn_mpi_nbr_test, the completion calls finish
 * them through kn_mpi_nbr_finish (p2p.c), and like every nonblocking
 * collective they cannot be cancelled or freed.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_impl.h"

struct kn_mpi_topo {
    int kind;           /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
    uint32_t seq;       /* neighbourhood collectives started: their tag */
    int ndims;          /* MPI_CART */
    int *dims, *periods, *coords;
    int nnodes, nedges; /* MPI_GRAPH: the whole graph */
    int *index, *edges;
    int indeg, outdeg;  /* this process's neighbours (MPI_PROC_NULL off a Cartesian edge) */
    int *in, *out;
    int weighted;       /* MPI_DIST_GRAPH: weights were given */
    int *inw, *outw;
    size_t nint;        /* the arrays above, one block */
    int mem[];
};

/* A topology with room for its arrays (zeroed), or NULL. */
static kn_mpi_topo_t *topo_new(int kind, int ndims, int nnodes, int nedges, int indeg, int outdeg, int weighted)
{
    size_t n = 3 * (size_t)ndims + (size_t)nnodes + (size_t)nedges + (size_t)indeg + (size_t)outdeg +
               (weighted ? (size_t)indeg + (size_t)outdeg : 0);
    kn_mpi_topo_t *t = calloc(1, sizeof(*t) + n * sizeof(int));
    if (!t)
        return NULL;
    t->kind = kind;
    t->ndims = ndims;
    t->nnodes = nnodes;
    t->nedges = nedges;
    t->indeg = indeg;
    t->outdeg = outdeg;
    t->weighted = weighted;
    t->nint = n;
    int *p = t->mem;
    t->dims = p, p += ndims;
    t->periods = p, p += ndims;
    t->coords = p, p += ndims;
    t->index = p, p += nnodes;
    t->edges = p, p += nedges;
    t->in = p, p += indeg;
    t->out = p, p += outdeg;
    if (weighted) {
        t->inw = p, p += indeg;
        t->outw = p;
    }
    return t;
}

kn_mpi_topo_t *kn_mpi_topo_dup(const kn_mpi_topo_t *t)
{
    kn_mpi_topo_t *d = topo_new(t->kind, t->ndims, t->nnodes, t->nedges, t->indeg, t->outdeg, t->weighted);
    if (d)
        memcpy(d->mem, t->mem, t->nint * sizeof(int));
    return d;
}

void kn_mpi_topo_free(kn_mpi_topo_t *t)
{
    free(t);
}

/* The communicator of a constructor: c's members of this colour, in c's
 * order (MPI_UNDEFINED: none, MPI_COMM_NULL), with topology t (NULL for a
 * member: no memory, reported once the collective part is over).  t is
 * taken over. */
static int topo_comm(kn_mpi_comm_t *c, int color, kn_mpi_topo_t *t, MPI_Comm *newcomm, const char *fn)
{
    int err = kn_mpi_comm_split(c, color, c->rank, newcomm, fn);
    if (err != MPI_SUCCESS || color == MPI_UNDEFINED) {
        kn_mpi_topo_free(t);
        return err;
    }
    if (!t) {
        MPI_Comm_free(newcomm);
        return kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "no memory for the topology");
    }
    kn_mpi_comm(*newcomm)->topo = t;
    return MPI_SUCCESS;
}

static const char *kind_name(int kind)
{
    return kind == MPI_CART ? "a Cartesian" : kind == MPI_GRAPH ? "a graph" : "a distributed graph";
}

/* c's topology if it is of the kind asked (0: any); else raises
 * MPI_ERR_TOPOLOGY and returns NULL with *err set. */
static kn_mpi_topo_t *topo_arg(kn_mpi_comm_t *c, int kind, const char *fn, int *err)
{
    kn_mpi_topo_t *t = c->topo;
    if (t && (!kind || t->kind == kind))
        return t;
    if (!t)
        *err = kn_mpi_error(c, fn, MPI_ERR_TOPOLOGY, "%s has no process topology", kn_mpi_comm_label(c));
    else
        *err = kn_mpi_error(c, fn, MPI_ERR_TOPOLOGY, "%s has %s topology, not %s one", kn_mpi_comm_label(c),
                            kind_name(t->kind), kind_name(kind));
    return NULL;
}

#define TOPO_ARG(var, c, kind)                                 \
    kn_mpi_topo_t *var;                                        \
    do {                                                       \
        int e_;                                                \
        if (!(var = topo_arg((c), (kind), __func__, &e_)))     \
            return e_;                                         \
    } while (0)

int MPI_Topo_test(MPI_Comm comm, int *status)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!status)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "status is NULL");
    *status = c->topo ? c->topo->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ Dims_create */

/* MPI_Dims_create gives the most balanced split: the smallest difference
 * between the largest and the smallest free dimension, then the smallest
 * largest (72 in 2-D is 9 x 8, where spreading prime factors would give
 * 12 x 6).  A depth-first search over the divisors, largest factor first,
 * nonincreasing, cut where no split below can beat the best so far.  With
 * more free dimensions than prime factors the extra ones are 1 and the
 * search is over as many factors as there are primes (so its depth is at
 * most 30). */
typedef struct dsearch {
    const int *div;     /* the divisors of the number, ascending */
    int ndiv;
    int pad;            /* dimensions of 1 follow: the smallest is 1 */
    int k;              /* factors searched */
    int *cur, *best;    /* [k] */
    long long bestdiff;
} dsearch_t;

/* floor(x^(1/k)) for x >= 1, k >= 1 */
static long long iroot(long long x, int k)
{
    long long lo = 1, hi = x;
    while (lo < hi) {
        long long mid = lo + (hi - lo + 1) / 2, p = 1;
        for (int i = 0; i < k && p <= x; i++)
            p = p > x / mid ? x + 1 : p * mid;
        if (p <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Split n into k more factors, each at most cap, after cur[0..depth). */
static void dims_search(dsearch_t *s, int depth, long long n, int k, long long cap)
{
    if (k == 1) {
        if (n > cap)
            return;
        s->cur[depth] = (int)n;
        long long hi = depth ? s->cur[0] : n, diff = hi - (s->pad ? 1 : n);
        if (diff < s->bestdiff) {
            s->bestdiff = diff;
            memcpy(s->best, s->cur, (size_t)s->k * sizeof(int));
        }
        return;
    }
    /* the next factor d is the largest of the k left: n^(1/k) <= d <= cap */
    long long lo = iroot(n, k);
    for (int i = 0; i < s->ndiv && s->div[i] <= cap; i++) {
        long long d = s->div[i];
        if (d < lo || n % d)
            continue;
        /* the smallest factor will be at most (n/d)^(1/(k-1)) */
        long long hi = depth ? s->cur[0] : d;
        if (hi - (s->pad ? 1 : iroot(n / d, k - 1)) >= s->bestdiff)
            continue;
        s->cur[depth] = (int)d;
        dims_search(s, depth + 1, n / d, k - 1, d);
    }
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
    KN_MPI_READY();
    if (nnodes <= 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "nnodes %d is not positive", nnodes);
    if (ndims < 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_DIMS, "ndims %d is negative", ndims);
    if (ndims > 0 && !dims)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "dims is NULL");
    int rest = nnodes, nfree = 0;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0)
            return kn_mpi_error(NULL, __func__, MPI_ERR_DIMS, "dims[%d] = %d is negative", i, dims[i]);
        if (dims[i] == 0)
            nfree++;
        else if (rest % dims[i])
            return kn_mpi_error(NULL, __func__, MPI_ERR_DIMS,
                                "nnodes %d is not a multiple of the product of the nonzero dims", nnodes);
        else
            rest /= dims[i];
    }
    if (nfree == 0) {
        if (rest != 1)
            return kn_mpi_error(NULL, __func__, MPI_ERR_DIMS, "the dims multiply to %d, not nnodes %d",
                                nnodes / rest, nnodes);
        return MPI_SUCCESS;
    }
    /* prime factors, counted with multiplicity (at most 30 in an int) */
    int nprime = 0;
    for (int m = rest, p = 2; m > 1; p++) {
        if ((long long)p * p > m) {
            nprime++;
            break;
        }
        while (m % p == 0) {
            m /= p;
            nprime++;
        }
    }
    int k = nfree < nprime ? nfree : nprime;
    int best[32], cur[32], div[1600 + 1], ndiv = 0; /* an int has at most 1600 divisors */
    for (int i = 0; i < 32; i++)
        best[i] = 1;
    if (k > 0) {
        for (long long d = 1; d * d <= rest; d++)
            if (rest % d == 0) {
                div[ndiv++] = (int)d;
                if (d * d != rest)
                    div[ndiv++] = (int)(rest / d);
            }
        qsort(div, (size_t)ndiv, sizeof(int), int_cmp);
        dsearch_t s = {div, ndiv, nfree > k, k, cur, best, LLONG_MAX};
        dims_search(&s, 0, rest, k, rest);
    }
    for (int i = 0, j = 0; i < ndims; i++)
        if (dims[i] == 0)
            dims[i] = j < k ? best[j++] : 1;
    return MPI_SUCCESS;
}

/* -------------------------------------------------------------- Cartesian */

/* The grid's arguments; *n its number of processes (at most c's size). */
static int cart_args(kn_mpi_comm_t *c, int ndims, const int dims[], const int periods[], int *n, const char *fn)
{
    if (ndims < 0)
        return kn_mpi_error(c, fn, MPI_ERR_DIMS, "ndims %d is negative", ndims);
    if (ndims > 0 && (!dims || !periods))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "%s is NULL", dims ? "periods" : "dims");
    long long p = 1;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] <= 0)
            return kn_mpi_error(c, fn, MPI_ERR_DIMS, "dims[%d] = %d is not positive", i, dims[i]);
        p *= dims[i];
        if (p > c->size)
            return kn_mpi_error(c, fn, MPI_ERR_DIMS, "the grid has more processes than the %d of %s", c->size,
                                kn_mpi_comm_label(c));
    }
    *n = (int)p;
    return MPI_SUCCESS;
}

/* Coordinate x of dimension d wrapped if it is periodic; -1 if it is off
 * a non-periodic edge. */
static int cart_wrap(const kn_mpi_topo_t *t, int d, long long x)
{
    long long n = t->dims[d];
    if (x >= 0 && x < n)
        return (int)x;
    return t->periods[d] ? (int)((x % n + n) % n) : -1;
}

static void cart_coords_of(const kn_mpi_topo_t *t, int rank, int *co)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        co[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

/* The process disp steps from this one (rank me) along dimension d, whose
 * stride in ranks is stride; MPI_PROC_NULL off a non-periodic edge. */
static int cart_step(const kn_mpi_topo_t *t, int me, int d, int stride, long long disp)
{
    int x = cart_wrap(t, d, t->coords[d] + disp);
    return x < 0 ? MPI_PROC_NULL : me + (x - t->coords[d]) * stride;
}

static int cart_stride(const kn_mpi_topo_t *t, int d)
{
    int s = 1;
    for (int i = d + 1; i < t->ndims; i++)
        s *= t->dims[i];
    return s;
}

/* The topology of this process (rank) in a grid; NULL: no memory. */
static kn_mpi_topo_t *cart_new(int ndims, const int dims[], const int periods[], int rank)
{
    kn_mpi_topo_t *t = topo_new(MPI_CART, ndims, 0, 0, 2 * ndims, 2 * ndims, 0);
    if (!t)
        return NULL;
    for (int d = 0; d < ndims; d++) {
        t->dims[d] = dims[d];
        t->periods[d] = periods[d] != 0;
    }
    cart_coords_of(t, rank, t->coords);
    for (int d = ndims - 1, stride = 1; d >= 0; stride *= dims[d--]) {
        t->in[2 * d] = t->out[2 * d] = cart_step(t, rank, d, stride, -1);
        t->in[2 * d + 1] = t->out[2 * d + 1] = cart_step(t, rank, d, stride, 1);
    }
    return t;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *comm_cart)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm_old);
    int n, err = cart_args(c, ndims, dims, periods, &n, __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!comm_cart)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "comm_cart is NULL");
    (void)reorder; /* the order is kept */
    if (c->rank >= n)
        return topo_comm(c, MPI_UNDEFINED, NULL, comm_cart, __func__);
    return topo_comm(c, 0, cart_new(ndims, dims, periods, c->rank), comm_cart, __func__);
}

int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    int n, err = cart_args(c, ndims, dims, periods, &n, __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!newrank)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "newrank is NULL");
    *newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_CART);
    if (!ndims)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "ndims is NULL");
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_CART);
    if (maxdims < t->ndims)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "maxdims %d is less than the %d dimensions", maxdims,
                            t->ndims);
    if (t->ndims > 0 && (!dims || !periods || !coords))
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", !dims ? "dims" : !periods ? "periods" : "coords");
    for (int d = 0; d < t->ndims; d++) {
        dims[d] = t->dims[d];
        periods[d] = t->periods[d];
        coords[d] = t->coords[d];
    }
    return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_CART);
    if ((t->ndims > 0 && !coords) || !rank)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", rank ? "coords" : "rank");
    int r = 0;
    for (int d = 0; d < t->ndims; d++) {
        int x = cart_wrap(t, d, coords[d]);
        if (x < 0)
            return kn_mpi_error(c, __func__, MPI_ERR_ARG,
                                "coords[%d] = %d is outside [0, %d) of a non-periodic dimension", d, coords[d],
                                t->dims[d]);
        r = r * t->dims[d] + x;
    }
    *rank = r;
    return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_CART);
    if (rank < 0 || rank >= c->size)
        return kn_mpi_error(c, __func__, MPI_ERR_RANK, "rank %d not in [0, %d) of %s", rank, c->size,
                            kn_mpi_comm_label(c));
    if (maxdims < t->ndims)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "maxdims %d is less than the %d dimensions", maxdims,
                            t->ndims);
    if (t->ndims > 0 && !coords)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "coords is NULL");
    cart_coords_of(t, rank, coords);
    return MPI_SUCCESS;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_CART);
    if (direction < 0 || direction >= t->ndims)
        return kn_mpi_error(c, __func__, MPI_ERR_DIMS, "direction %d not in [0, %d)", direction, t->ndims);
    if (!rank_source || !rank_dest)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", rank_source ? "rank_dest" : "rank_source");
    int stride = cart_stride(t, direction);
    *rank_source = cart_step(t, c->rank, direction, stride, -(long long)disp);
    *rank_dest = cart_step(t, c->rank, direction, stride, disp);
    return MPI_SUCCESS;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_CART);
    if ((t->ndims > 0 && !remain_dims) || !newcomm)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", newcomm ? "remain_dims" : "newcomm");
    /* colour: the position in the grid of the dropped dimensions; the
     * kept ones, in the old order, make the new grid */
    int color = 0, nd = 0, rank = 0;
    int *dims = malloc(2 * (size_t)t->ndims * sizeof(int) + 1), *periods = dims + t->ndims;
    if (!dims)
        return kn_mpi_error(c, __func__, MPI_ERR_NO_MEM, "no memory");
    for (int d = 0; d < t->ndims; d++) {
        if (remain_dims[d]) {
            dims[nd] = t->dims[d];
            periods[nd++] = t->periods[d];
            rank = rank * t->dims[d] + t->coords[d];
        } else {
            color = color * t->dims[d] + t->coords[d];
        }
    }
    kn_mpi_topo_t *sub = cart_new(nd, dims, periods, rank);
    free(dims);
    return topo_comm(c, color, sub, newcomm, __func__);
}

/* ------------------------------------------------------------------ graph */

/* index and edges of a graph of nnodes processes (at most c's size) */
static int graph_args(kn_mpi_comm_t *c, int nnodes, const int index[], const int edges[], const char *fn)
{
    if (nnodes < 0 || nnodes > c->size)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "nnodes %d not in [0, %d] (the size of %s)", nnodes, c->size,
                            kn_mpi_comm_label(c));
    if (nnodes == 0)
        return MPI_SUCCESS;
    if (!index)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "index is NULL");
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i ? index[i - 1] : 0))
            return kn_mpi_error(c, fn, MPI_ERR_ARG, "index[%d] = %d is less than %s", i, index[i],
                                i ? "the entry before" : "0");
    if (index[nnodes - 1] > 0 && !edges)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "edges is NULL");
    for (int i = 0; i < index[nnodes - 1]; i++)
        if (edges[i] < 0 || edges[i] >= nnodes)
            return kn_mpi_error(c, fn, MPI_ERR_RANK, "edges[%d] = %d is not a node of the graph [0, %d)", i,
                                edges[i], nnodes);
    return MPI_SUCCESS;
}

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder,
                     MPI_Comm *comm_graph)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm_old);
    int err = graph_args(c, nnodes, index, edges, __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!comm_graph)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "comm_graph is NULL");
    (void)reorder; /* the order is kept */
    if (c->rank >= nnodes)
        return topo_comm(c, MPI_UNDEFINED, NULL, comm_graph, __func__);
    int r = c->rank, first = r ? index[r - 1] : 0, deg = index[r] - first;
    kn_mpi_topo_t *t = topo_new(MPI_GRAPH, 0, nnodes, index[nnodes - 1], deg, deg, 0);
    if (t) {
        memcpy(t->index, index, (size_t)nnodes * sizeof(int));
        memcpy(t->edges, edges, (size_t)t->nedges * sizeof(int));
        memcpy(t->in, edges + first, (size_t)deg * sizeof(int));
        memcpy(t->out, edges + first, (size_t)deg * sizeof(int));
    }
    return topo_comm(c, 0, t, comm_graph, __func__);
}

int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    int err = graph_args(c, nnodes, index, edges, __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!newrank)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "newrank is NULL");
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_GRAPH);
    if (!nnodes || !nedges)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", nnodes ? "nedges" : "nnodes");
    *nnodes = t->nnodes;
    *nedges = t->nedges;
    return MPI_SUCCESS;
}

/* The queries that fill arrays of the program's length copy what fits. */
static int max_arg(kn_mpi_comm_t *c, int max, int have, const void *arr, const char *what, const char *fn)
{
    if (max < 0)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "max%s %d is negative", what, max);
    if (max > 0 && have > 0 && !arr)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "the %s array is NULL", what);
    return MPI_SUCCESS;
}

static void copy_ints(int *to, const int *from, int max, int have)
{
    if (max > 0 && have > 0)
        memcpy(to, from, (size_t)(max < have ? max : have) * sizeof(int));
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_GRAPH);
    int err = max_arg(c, maxindex, t->nnodes, index, "index", __func__);
    if (err == MPI_SUCCESS)
        err = max_arg(c, maxedges, t->nedges, edges, "edges", __func__);
    if (err != MPI_SUCCESS)
        return err;
    copy_ints(index, t->index, maxindex, t->nnodes);
    copy_ints(edges, t->edges, maxedges, t->nedges);
    return MPI_SUCCESS;
}

/* rank's neighbours in a graph topology: *first in edges, *n of them */
static int graph_node(kn_mpi_comm_t *c, const kn_mpi_topo_t *t, int rank, int *first, int *n, const char *fn)
{
    if (rank < 0 || rank >= t->nnodes)
        return kn_mpi_error(c, fn, MPI_ERR_RANK, "rank %d is not a node of the graph [0, %d)", rank, t->nnodes);
    *first = rank ? t->index[rank - 1] : 0;
    *n = t->index[rank] - *first;
    return MPI_SUCCESS;
}

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_GRAPH);
    int first, n, err = graph_node(c, t, rank, &first, &n, __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!nneighbors)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "nneighbors is NULL");
    *nneighbors = n;
    return MPI_SUCCESS;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_GRAPH);
    int first, n, err = graph_node(c, t, rank, &first, &n, __func__);
    if (err == MPI_SUCCESS)
        err = max_arg(c, maxneighbors, n, neighbors, "neighbors", __func__);
    if (err != MPI_SUCCESS)
        return err;
    copy_ints(neighbors, t->edges + first, maxneighbors, n);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------ distributed graph */

/* One side of an adjacency: n ranks of c, their weights (MPI_UNWEIGHTED:
 * *weighted cleared; MPI_WEIGHTS_EMPTY or NULL only when n is 0). */
static int adj_args(kn_mpi_comm_t *c, int n, const int *ranks, const int *w, int *weighted, const char *what,
                    const char *fn)
{
    if (n < 0)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "the %s degree %d is negative", what, n);
    if (n > 0 && !ranks)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "the %s array is NULL", what);
    for (int i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= c->size)
            return kn_mpi_error(c, fn, MPI_ERR_RANK, "%s[%d] = %d not in [0, %d) of %s", what, i, ranks[i],
                                c->size, kn_mpi_comm_label(c));
    if (w == MPI_UNWEIGHTED) {
        *weighted = 0;
        return MPI_SUCCESS;
    }
    if (n > 0 && (!w || w == MPI_WEIGHTS_EMPTY))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "the %s weights are %s with %d edges", what,
                            w ? "MPI_WEIGHTS_EMPTY" : "NULL", n);
    for (int i = 0; i < n; i++)
        if (w[i] < 0)
            return kn_mpi_error(c, fn, MPI_ERR_ARG, "the %s weight %d is negative (%d)", what, i, w[i]);
    return MPI_SUCCESS;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int *sourceweights,
                                   int outdegree, const int destinations[], const int *destweights, MPI_Info info,
                                   int reorder, MPI_Comm *comm_dist_graph)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm_old);
    int win = 1, wout = 1;
    int err = adj_args(c, indegree, sources, sourceweights, &win, "sources", __func__);
    if (err == MPI_SUCCESS)
        err = adj_args(c, outdegree, destinations, destweights, &wout, "destinations", __func__);
    if (err != MPI_SUCCESS)
        return err;
    /* MPI_UNWEIGHTED goes for both sides or neither (an empty side may
     * say either) */
    if (win != wout && ((!win && outdegree > 0) || (!wout && indegree > 0)))
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "MPI_UNWEIGHTED for the %s but weights for the %s",
                            win ? "destinations" : "sources", win ? "sources" : "destinations");
    if (!comm_dist_graph)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "comm_dist_graph is NULL");
    (void)info;
    (void)reorder; /* the order is kept */
    int weighted = win && wout;
    kn_mpi_topo_t *t = topo_new(MPI_DIST_GRAPH, 0, 0, 0, indegree, outdegree, weighted);
    if (t) {
        copy_ints(t->in, sources, indegree, indegree);
        copy_ints(t->out, destinations, outdegree, outdegree);
        if (weighted) {
            copy_ints(t->inw, sourceweights, indegree, indegree);
            copy_ints(t->outw, destweights, outdegree, outdegree);
        }
    }
    return topo_comm(c, 0, t, comm_dist_graph, __func__);
}

/* An edge as the exchange of MPI_Dist_graph_create carries it to one of
 * its ends: which end that is, the other end, the weight. */
enum { EDGE_OUT = 0, EDGE_IN = 1 };
typedef struct edge_msg {
    int dir, peer, w;
} edge_msg_t;

/* The exchange of MPI_Dist_graph_create on the new communicator n (same
 * members and order as the old): every edge goes to both its ends, which
 * keep them in the order of the processes that named them, each's in its
 * order.  Weightedness is agreed (all or none).  *out: this process's
 * topology. */
static int dist_exchange(kn_mpi_comm_t *n, int nsrc, const int *sources, const int *degrees, const int *dests,
                         const int *weights, kn_mpi_topo_t **out)
{
    int p = n->size, err = MPI_SUCCESS;
    knit_status_t st = KNIT_OK;
    size_t m = 0;
    for (int i = 0; i < nsrc; i++)
        m += (size_t)degrees[i];
    int *cnt = calloc(3 * (size_t)p, sizeof(int));
    size_t *sc = malloc(4 * (size_t)p * sizeof(size_t)), *sd = sc + p, *rc = sc + 2 * p, *rd = sc + 3 * p;
    edge_msg_t *sbuf = malloc((2 * m + 1) * sizeof(*sbuf)), *rbuf = NULL;
    if (!n->kc)
        err = MPI_ERR_INTERN;
    else if (!cnt || !sc || !sbuf)
        err = MPI_ERR_NO_MEM;
    if (err != MPI_SUCCESS)
        goto out;
    int *scnt = cnt, *rcnt = cnt + p, *pos = cnt + 2 * p;
    for (int i = 0, k = 0; i < nsrc; i++)
        for (int j = 0; j < degrees[i]; j++, k++) {
            scnt[sources[i]]++;
            scnt[dests[k]]++;
        }
    for (int q = 0, s = 0; q < p; q++) {
        pos[q] = s;
        s += scnt[q];
    }
    for (int i = 0, k = 0; i < nsrc; i++)
        for (int j = 0; j < degrees[i]; j++, k++) {
            int wk = weights == MPI_UNWEIGHTED ? 1 : weights[k];
            sbuf[pos[sources[i]]++] = (edge_msg_t){EDGE_OUT, dests[k], wk};
            sbuf[pos[dests[k]]++] = (edge_msg_t){EDGE_IN, sources[i], wk};
        }
    /* all weighted or none: the min of (w, -w) tells both extremes; a
     * process without edges that gave no MPI_UNWEIGHTED (NULL,
     * MPI_WEIGHTS_EMPTY) goes with the others (1, 0 changes neither) */
    int w = weights != MPI_UNWEIGHTED, any = m > 0 || !w;
    int wf[2] = {any ? w : 1, any ? -w : 0}, wr[2];
    knit_op_t op_min = {.kind = KNIT_OP_MIN};
    if ((st = knit_allreduce(n->kc, wf, wr, 2, KNIT_INT, &op_min)) != KNIT_OK ||
        (st = knit_alltoall(n->kc, scnt, rcnt, 1, KNIT_INT)) != KNIT_OK)
        goto out;
    size_t rtot = 0;
    for (int q = 0; q < p; q++) {
        sc[q] = (size_t)scnt[q] * sizeof(edge_msg_t);
        sd[q] = q ? sd[q - 1] + sc[q - 1] : 0;
        rc[q] = (size_t)rcnt[q] * sizeof(edge_msg_t);
        rd[q] = q ? rd[q - 1] + rc[q - 1] : 0;
        rtot += (size_t)rcnt[q];
    }
    if (!(rbuf = malloc((rtot + 1) * sizeof(*rbuf)))) {
        err = MPI_ERR_NO_MEM;
        goto out;
    }
    if ((st = knit_alltoallw(n->kc, sbuf, sc, sd, rbuf, rc, rd)) != KNIT_OK)
        goto out;
    if (wr[0] == 0 && wr[1] == -1) {
        err = MPI_ERR_ARG; /* some gave MPI_UNWEIGHTED, some weights */
        goto out;
    }
    int indeg = 0, outdeg = 0;
    for (size_t i = 0; i < rtot; i++) {
        if (rbuf[i].dir == EDGE_IN)
            indeg++;
        else
            outdeg++;
    }
    kn_mpi_topo_t *t = topo_new(MPI_DIST_GRAPH, 0, 0, 0, indeg, outdeg, wr[0]);
    if (!t) {
        err = MPI_ERR_NO_MEM;
        goto out;
    }
    for (size_t i = 0, a = 0, b = 0; i < rtot; i++) {
        if (rbuf[i].dir == EDGE_IN) {
            t->in[a] = rbuf[i].peer;
            if (t->weighted)
                t->inw[a] = rbuf[i].w;
            a++;
        } else {
            t->out[b] = rbuf[i].peer;
            if (t->weighted)
                t->outw[b] = rbuf[i].w;
            b++;
        }
    }
    *out = t;
out:
    free(cnt);
    free(sc);
    free(sbuf);
    free(rbuf);
    return st != KNIT_OK ? kn_mpi_class_of(st) : err;
}

int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                          const int destinations[], const int *weights, MPI_Info info, int reorder,
                          MPI_Comm *comm_dist_graph)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm_old);
    if (n < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "n %d is negative", n);
    if (n > 0 && (!sources || !degrees))
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", sources ? "degrees" : "sources");
    long long m = 0;
    for (int i = 0; i < n; i++) {
        if (sources[i] < 0 || sources[i] >= c->size)
            return kn_mpi_error(c, __func__, MPI_ERR_RANK, "sources[%d] = %d not in [0, %d) of %s", i, sources[i],
                                c->size, kn_mpi_comm_label(c));
        if (degrees[i] < 0)
            return kn_mpi_error(c, __func__, MPI_ERR_ARG, "degrees[%d] = %d is negative", i, degrees[i]);
        m += degrees[i];
    }
    if (m > INT_MAX / 2)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%lld edges are too many", m);
    int weighted = 1;
    int err = adj_args(c, (int)m, destinations, weights, &weighted, "destinations", __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!comm_dist_graph)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "comm_dist_graph is NULL");
    (void)info;
    (void)reorder; /* the order is kept */
    MPI_Comm h;
    if ((err = kn_mpi_comm_split(c, 0, c->rank, &h, __func__)) != MPI_SUCCESS)
        return err;
    kn_mpi_comm_t *nc = kn_mpi_comm(h);
    kn_mpi_topo_t *t = NULL;
    if ((err = dist_exchange(nc, n, sources, degrees, destinations, weights, &t)) != MPI_SUCCESS) {
        MPI_Comm_free(&h);
        return kn_mpi_error(c, __func__, err, "%s",
                            err == MPI_ERR_ARG ? "some processes gave MPI_UNWEIGHTED, others weights"
                                               : "the exchange of the edges failed");
    }
    nc->topo = t;
    *comm_dist_graph = h;
    return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_DIST_GRAPH);
    if (!indegree || !outdegree || !weighted)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL",
                            !indegree ? "indegree" : !outdegree ? "outdegree" : "weighted");
    *indegree = t->indeg;
    *outdegree = t->outdeg;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int *sourceweights, int maxoutdegree,
                             int destinations[], int *destweights)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    TOPO_ARG(t, c, MPI_DIST_GRAPH);
    int err = max_arg(c, maxindegree, t->indeg, sources, "indegree", __func__);
    if (err == MPI_SUCCESS)
        err = max_arg(c, maxoutdegree, t->outdeg, destinations, "outdegree", __func__);
    if (err != MPI_SUCCESS)
        return err;
    /* weights are written where the topology has them and the program
     * asked for them */
    if (t->weighted && ((maxindegree > 0 && t->indeg > 0 && !sourceweights) ||
                        (maxoutdegree > 0 && t->outdeg > 0 && !destweights)))
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "%s is NULL", !sourceweights ? "sourceweights" : "destweights");
    copy_ints(sources, t->in, maxindegree, t->indeg);
    copy_ints(destinations, t->out, maxoutdegree, t->outdeg);
    if (t->weighted && sourceweights != MPI_UNWEIGHTED && sourceweights != MPI_WEIGHTS_EMPTY)
        copy_ints(sourceweights, t->inw, maxindegree, t->indeg);
    if (t->weighted && destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY)
        copy_ints(destweights, t->outw, maxoutdegree, t->outdeg);
    return MPI_SUCCESS;
}

/* ---------------------------------------------- neighbourhood collectives */

/* One block of a collective: count elements of t at addr. */
typedef struct blk {
    char *addr;
    int count;
    kn_mpi_type_t *t;
} blk_t;

/* A receive into scratch, unpacked at completion. */
typedef struct nb_unpack {
    kn_mpi_type_t *t; /* referenced */
    char *dst;
    size_t count;
    char *tmp;
    int k;            /* its engine request */
} nb_unpack_t;

struct kn_mpi_nbr {
    int n, first;           /* engine requests posted; the first not seen done */
    knit_request_t **kr;    /* [indegree + outdegree] */
    knit_msg_status_t *ks;
    nb_unpack_t *up;        /* [indegree] */
    int nup;
    char **packed;          /* [outdegree]: packed sends */
    int npacked;
};

static char nb_dummy[1]; /* the buffer of an empty message */

static inline char *at(const void *buf, MPI_Aint off)
{
    return (char *)((uintptr_t)buf + (uintptr_t)off);
}

static void nb_free(kn_mpi_nbr_t *s)
{
    for (int i = 0; i < s->nup; i++) {
        kn_mpi_type_unref(s->up[i].t);
        free(s->up[i].tmp);
    }
    for (int i = 0; i < s->npacked; i++)
        free(s->packed[i]);
    free(s->kr);
    free(s->ks);
    free(s->up);
    free(s->packed);
    free(s);
}

/* Post the receives and sends of one collective on c: block l of rcv from
 * in-neighbour l, block k of snd to out-neighbour k. */
static knit_status_t nb_start(kn_mpi_comm_t *c, const blk_t *snd, const blk_t *rcv, kn_mpi_nbr_t **out)
{
    kn_mpi_topo_t *tp = c->topo;
    int nr = tp->indeg, ns = tp->outdeg;
    kn_mpi_nbr_t *s = calloc(1, sizeof(*s));
    if (!s)
        return KNIT_ERR_NOMEM;
    s->kr = calloc((size_t)nr + (size_t)ns + 1, sizeof(*s->kr));
    s->ks = malloc(((size_t)nr + (size_t)ns + 1) * sizeof(*s->ks));
    s->up = malloc(((size_t)nr + 1) * sizeof(*s->up));
    s->packed = malloc(((size_t)ns + 1) * sizeof(*s->packed));
    if (!s->kr || !s->ks || !s->up || !s->packed) {
        nb_free(s);
        return KNIT_ERR_NOMEM;
    }
    uint32_t cid = c->ctx_id | KN_MPI_CTX_NBR;
    int tag = (int)(tp->seq++ & (uint32_t)KN_MPI_TAG_UB);
    int swap = tp->kind == MPI_CART; /* see the top of the file */
    knit_status_t st = KNIT_OK;
    for (int i = 0; i < nr && st == KNIT_OK; i++) {
        int l = swap ? i ^ 1 : i;
        if (tp->in[l] == MPI_PROC_NULL)
            continue;
        const blk_t *b = &rcv[l];
        size_t len = (size_t)b->count * b->t->size;
        char *p = nb_dummy;
        if (len && kn_mpi_type_dense(b->t, (size_t)b->count)) {
            p = b->addr + b->t->true_lb;
        } else if (len) {
            if (!(p = malloc(len))) {
                st = KNIT_ERR_NOMEM;
                break;
            }
            kn_mpi_type_ref(b->t);
            s->up[s->nup++] = (nb_unpack_t){b->t, b->addr, (size_t)b->count, p, s->n};
        }
        st = knit_irecv(kn_mpi.ctx, p, len, c->ranks[tp->in[l]], tag, cid, &s->kr[s->n]);
        if (st == KNIT_OK)
            s->n++;
    }
    const blk_t *last = NULL; /* the last block packed: allgather sends one block to all */
    for (int k = 0; k < ns && st == KNIT_OK; k++) {
        if (tp->out[k] == MPI_PROC_NULL)
            continue;
        const blk_t *b = &snd[k];
        size_t len = (size_t)b->count * b->t->size;
        char *p = nb_dummy;
        if (len && kn_mpi_type_dense(b->t, (size_t)b->count)) {
            p = b->addr + b->t->true_lb;
        } else if (len && last && last->addr == b->addr && last->count == b->count && last->t == b->t) {
            p = s->packed[s->npacked - 1];
        } else if (len) {
            if (!(p = malloc(len))) {
                st = KNIT_ERR_NOMEM;
                break;
            }
            s->packed[s->npacked++] = p;
            kn_mpi_pack(b->t, b->addr, (size_t)b->count, p);
            last = b;
        }
        st = knit_isend(kn_mpi.ctx, p, len, c->ranks[tp->out[k]], tag, cid, &s->kr[s->n]);
        if (st == KNIT_OK)
            s->n++;
    }
    if (st != KNIT_OK) {
        /* take back the receives that have not matched; the rest completes
         * (the neighbours are in the collective too) */
        for (int i = 0; i < s->n; i++)
            knit_cancel(s->kr[i]);
        knit_waitall((size_t)s->n, s->kr, NULL);
        nb_free(s);
        return st;
    }
    *out = s;
    return KNIT_OK;
}

/* Wait for the messages, unpack, free s: the first failure's status. */
static knit_status_t nb_complete(kn_mpi_nbr_t *s)
{
    knit_status_t st = knit_waitall((size_t)s->n, s->kr, s->ks);
    for (int i = 0; i < s->nup; i++) {
        nb_unpack_t *u = &s->up[i];
        knit_status_t e = s->ks[u->k].error;
        if (e == KNIT_OK || e == KNIT_ERR_TRUNCATE)
            kn_mpi_unpack(u->t, u->tmp, s->ks[u->k].length, u->dst, u->count);
    }
    nb_free(s);
    return st;
}

int kn_mpi_nbr_test(kn_mpi_req_t *r)
{
    kn_mpi_nbr_t *s = r->nbr;
    while (s->first < s->n) {
        int done = 0;
        knit_request_status(s->kr[s->first], &done, NULL); /* progresses when not done */
        if (!done)
            return 0;
        s->first++;
    }
    return 1;
}

int kn_mpi_nbr_finish(kn_mpi_req_t *r)
{
    int cls = kn_mpi_class_of(nb_complete(r->nbr));
    r->nbr = NULL;
    MPI_Status *st = &r->done_st;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = cls;
    st->kn_cancelled = 0;
    st->kn_bytes = 0;
    return cls;
}

/* The shape of the arguments. */
enum { NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW };

/* One side's arguments (send or receive). */
typedef struct nb_side {
    const void *buf;
    int count;              /* the forms with one count */
    const int *counts;      /* the others: per neighbour */
    const void *displs;     /* int (elements) or, alltoallw, MPI_Aint (bytes) */
    MPI_Datatype dt;
    const MPI_Datatype *dts; /* alltoallw */
} nb_side_t;

/* Check one side of deg neighbours and describe its blocks. */
static int nb_blocks(kn_mpi_comm_t *c, int form, int send, int deg, const nb_side_t *a, blk_t *b, const char *fn)
{
    const char *what = send ? "send" : "receive";
    int per = form == NB_ALLTOALLV || form == NB_ALLTOALLW || (form == NB_ALLGATHERV && !send);
    int err;
    kn_mpi_type_t *t = NULL;
    if ((const void *)a->buf == MPI_IN_PLACE)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "MPI_IN_PLACE is not allowed in neighbourhood collectives");
    if (form != NB_ALLTOALLW && !(t = kn_mpi_type_arg(c, a->dt, fn, &err)))
        return err;
    if (per && deg > 0 && (!a->counts || !a->displs))
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "%s counts or displacements are NULL", what);
    if (form == NB_ALLTOALLW && deg > 0 && !a->dts)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "%s types are NULL", what);
    if (!per && a->count < 0)
        return kn_mpi_error(c, fn, MPI_ERR_COUNT, "%s count %d is negative", what, a->count);
    for (int k = 0; k < deg; k++) {
        int n = per ? a->counts[k] : a->count;
        if (n < 0)
            return kn_mpi_error(c, fn, MPI_ERR_COUNT, "%s count %d for neighbour %d is negative", what, n, k);
        kn_mpi_type_t *tk = t;
        if (form == NB_ALLTOALLW && !(tk = kn_mpi_type_arg(c, a->dts[k], fn, &err)))
            return err;
        MPI_Aint off;
        switch (form) {
        case NB_ALLGATHER:
            off = send ? 0 : (MPI_Aint)k * a->count * t->extent;
            break;
        case NB_ALLGATHERV:
            off = send ? 0 : (MPI_Aint)((const int *)a->displs)[k] * t->extent;
            break;
        case NB_ALLTOALL:
            off = (MPI_Aint)k * a->count * t->extent;
            break;
        case NB_ALLTOALLV:
            off = (MPI_Aint)((const int *)a->displs)[k] * t->extent;
            break;
        default:
            off = ((const MPI_Aint *)a->displs)[k];
        }
        if (kn_mpi_bad_buffer(a->buf, n, tk))
            return kn_mpi_error(c, fn, MPI_ERR_BUFFER, "%s buffer is NULL with count %d for neighbour %d", what, n,
                                k);
        b[k] = (blk_t){at(a->buf, off), n, tk};
    }
    return MPI_SUCCESS;
}

/* Every neighbourhood collective: check, post, and for a blocking call
 * (req NULL) wait; a nonblocking one hands out its request. */
static int neighbor(int form, const nb_side_t *snd, const nb_side_t *rcv, MPI_Comm comm, int nb, MPI_Request *req,
                    const char *fn)
{
    KN_MPI_READY_AS(fn);
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, fn, &err);
    if (!c)
        return err;
    kn_mpi_topo_t *tp = topo_arg(c, 0, fn, &err);
    if (!tp)
        return err;
    if (nb && !req)
        return kn_mpi_error(c, fn, MPI_ERR_ARG, "request is NULL");
    blk_t *b = malloc(((size_t)tp->outdeg + (size_t)tp->indeg + 1) * sizeof(*b));
    if (!b)
        return kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "no memory");
    if ((err = nb_blocks(c, form, 1, tp->outdeg, snd, b, fn)) != MPI_SUCCESS ||
        (err = nb_blocks(c, form, 0, tp->indeg, rcv, b + tp->outdeg, fn)) != MPI_SUCCESS) {
        free(b);
        return err;
    }
    kn_mpi_req_t *r = NULL;
    if (nb && !(r = kn_mpi_req_new(c, NULL, KN_RQ_NBR))) {
        free(b);
        return kn_mpi_error(c, fn, MPI_ERR_NO_MEM, "no memory for a request");
    }
    kn_mpi_nbr_t *s = NULL;
    knit_status_t st = nb_start(c, b, b + tp->outdeg, &s);
    free(b);
    if (st == KNIT_OK && r) {
        r->nbr = s;
        r->active = 1;
        *req = r->handle;
        return MPI_SUCCESS;
    }
    if (r)
        kn_mpi_req_release(r);
    if (st == KNIT_OK)
        st = nb_complete(s);
    return st == KNIT_OK ? MPI_SUCCESS : kn_mpi_error_st(c, fn, st, "%s", knit_strerror(st));
}

/* the arguments of each form as two sides */
#define SIDE1(buf, count, dt) (&(nb_side_t){(buf), (count), NULL, NULL, (dt), NULL})
#define SIDEV(buf, counts, displs, dt) (&(nb_side_t){(buf), 0, (counts), (displs), (dt), NULL})
#define SIDEW(buf, counts, displs, dts) (&(nb_side_t){(buf), 0, (counts), (displs), MPI_DATATYPE_NULL, (dts)})

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(NB_ALLGATHER, SIDE1(sendbuf, sendcount, sendtype), SIDE1(recvbuf, recvcount, recvtype), comm, 0,
                    NULL, __func__);
}

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor(NB_ALLGATHER, SIDE1(sendbuf, sendcount, sendtype), SIDE1(recvbuf, recvcount, recvtype), comm, 1,
                    request, __func__);
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(NB_ALLGATHERV, SIDE1(sendbuf, sendcount, sendtype), SIDEV(recvbuf, recvcounts, displs, recvtype),
                    comm, 0, NULL, __func__);
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    return neighbor(NB_ALLGATHERV, SIDE1(sendbuf, sendcount, sendtype), SIDEV(recvbuf, recvcounts, displs, recvtype),
                    comm, 1, request, __func__);
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(NB_ALLTOALL, SIDE1(sendbuf, sendcount, sendtype), SIDE1(recvbuf, recvcount, recvtype), comm, 0,
                    NULL, __func__);
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor(NB_ALLTOALL, SIDE1(sendbuf, sendcount, sendtype), SIDE1(recvbuf, recvcount, recvtype), comm, 1,
                    request, __func__);
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                           MPI_Comm comm)
{
    return neighbor(NB_ALLTOALLV, SIDEV(sendbuf, sendcounts, sdispls, sendtype),
                    SIDEV(recvbuf, recvcounts, rdispls, recvtype), comm, 0, NULL, __func__);
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request)
{
    return neighbor(NB_ALLTOALLV, SIDEV(sendbuf, sendcounts, sdispls, sendtype),
                    SIDEV(recvbuf, recvcounts, rdispls, recvtype), comm, 1, request, __func__);
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    return neighbor(NB_ALLTOALLW, SIDEW(sendbuf, sendcounts, sdispls, sendtypes),
                    SIDEW(recvbuf, recvcounts, rdispls, recvtypes), comm, 0, NULL, __func__);
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request)
{
    return neighbor(NB_ALLTOALLW, SIDEW(sendbuf, sendcounts, sdispls, sendtypes),
                    SIDEW(recvbuf, recvcounts, rdispls, recvtypes), comm, 1, request, __func__);
}
