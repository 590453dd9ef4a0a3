/*
 * Network transport over libfabric (RDM endpoints, one CQ, an AV table).
 *
 * Wire format.  Every message is a net_hdr_t (8 bytes), then for packets
 * the engine's kn_pkt_hdr_t (24 bytes) and the payload:
 *
 *   ver_kind  version (high nibble) and kind (PKT or CREDIT)
 *   credits   receive buffers the sender freed for us since its last message
 *   seq       message number from this sender to us (mod 2^16)
 *   src       the sender's job rank
 *
 * Credits.  A rank posts credits+3 bounce buffers per network peer into its
 * endpoint's (shared) receive queue; each peer may have at most `credits`
 * packets in flight to it.  A freed buffer is owed back to its sender and
 * returned piggybacked on the next packet to it, or, once half the credits
 * are owed, in an explicit CREDIT message.  CREDIT messages take no credit:
 * a peer can have at most two of them unread by us (it sends one per
 * credits/2 packets it read, and we need the credits of one to send more),
 * which is what two extra buffers per peer are for; the third takes the
 * one tracked CREDIT of kn_net_quiesce.  So no message ever finds no
 * buffer.
 *
 * Order.  The engine needs packets in order per sender.  Messages carry a
 * sequence number; one that arrives early (a provider without
 * FI_ORDER_SAS, or completions reported out of order) is held in its
 * bounce buffer until the missing ones are delivered.  At most credits+3
 * messages from a peer are in flight, so a window of that size suffices
 * (rounded up to a power of two: kn_net_window says why).
 *
 * Bulk.  get = fi_read from the peer's registered buffer (pull), put =
 * fi_write into it (push); local buffers get a descriptor from the
 * registration cache when the provider wants FI_MR_LOCAL.  The engine sends
 * PUSHED after our write completions: when the provider does not order
 * sends after writes (FI_ORDER_SAW), writes ask for FI_DELIVERY_COMPLETE so
 * that a completion means the data is in place (a plain completion may
 * only say that the data left, or reached the peer's provider).  An RDMA operation the
 * provider cannot take now (-FI_EAGAIN) waits in a retry list.
 *
 * Registration cache: see rcache_*() below and docs/net.md.
 */
#include "net/net.h"
#include "net/frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "util/compiler.h"
#include "util/list.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/pool.h"
#include "util/time.h"

#define FI_VER FI_VERSION(1, 9)
#define PAGE 4096ul

enum op_kind { OP_RX = 1, OP_TX, OP_RMA };

/* Every operation context starts with the provider's scratch space
 * (FI_CONTEXT / FI_CONTEXT2 modes). */
typedef struct net_op {
    struct fi_context2 fctx;
    uint8_t kind;
    int peer;
} net_op_t;

typedef struct rx_buf {
    net_op_t op;
    char *buf;
    size_t len;       /* of the message held in it */
    int held;
} rx_buf_t;

typedef struct tx_buf {
    net_op_t op;
    char *buf;
    struct tx_buf *next;
} tx_buf_t;

typedef struct rc_entry {
    kn_list_t link;   /* in the cache (MRU first), or alone once dead */
    uintptr_t start, end;
    struct fid_mr *mr;
    void *desc;
    uint64_t key;
    unsigned refs;
    int dead;         /* out of the cache: closed when the last user lets go */
    uint64_t *pfns;   /* page frames at registration (verify mode) */
} rc_entry_t;

typedef struct rma_op {
    net_op_t op;
    kn_list_t link;   /* retry list */
    kn_tl_comp_t *comp;
    rc_entry_t *lreg;
    int write;
    int dc;           /* the completion must say the data is in the peer's memory */
    void *local;
    size_t len;
    uint64_t raddr, rkey;
} rma_op_t;

typedef struct net_peer {
    fi_addr_t addr;
    int on;               /* reached by this transport */
    unsigned credits;     /* packets we may still send to it */
    unsigned owed;        /* its buffers we freed and not yet told it */
    uint16_t tx_seq, rx_seq;
    rx_buf_t **held;      /* [window]: early messages */
    unsigned nheld;
    int heard;            /* a message from it arrived (kn_net_wireup waits for it) */
    int hello_sent;       /* kn_net_wireup's message to it is posted */
    unsigned outstanding; /* our operations to it not completed */
    int credit_pending;   /* an explicit CREDIT could not be sent yet */
    int injected;         /* fi_inject since the last tracked send */
} net_peer_t;

/* One descriptor of the completion queue's wait object.  A descriptor
 * that is readable every time the provider has just said (fi_trywait) that
 * nothing is pending tells nothing: libfabric 1.17's net provider has its
 * progress signal in the set, set by the application's calls and cleared
 * only by a progress thread that a single-threaded user never has, so
 * after the first connection a poll on the whole set returned at once and
 * "sleeping" ranks spun in poll (3 ranks on 3 nodes, every wait asleep:
 * 8 ms per message hop, cpus full).  Such a descriptor is left out of the
 * epoll until it stops being readable. */
enum { WAIT_MEMBERS = 8, WAIT_STUCK_ARMS = 8 };

/* How long the members read out of an epoll wait descriptor are trusted
 * before they are read again.  Reading them takes a readlink and an open,
 * read and close of /proc/self/fdinfo: about 12 us on virtual cpus where
 * a system call costs 1 us, at every arm of every wait (each hop of a
 * message between daemons armed twice).  The net provider's set is its
 * progress epoll and its signal, for the endpoint's life (connections go
 * into the inner epoll), so the members change only where a provider
 * adds to its outer set; a wait that missed such a change still ends at
 * its timeout, and the next arm after this long reads them afresh. */
#define WAIT_RECHECK_NS (100 * KN_NSEC_PER_MSEC)
typedef struct wait_member {
    int fd;
    short events;
    uint8_t ready_run;         /* consecutive arms that found it readable */
    uint8_t out;               /* left out of the epoll */
} wait_member_t;

typedef struct net_tl {
    kn_tl_t base;
    kn_net_params_t p;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    int wait_fd;               /* epoll of the CQ's wait descriptors (net_arm), -1 without */
    int wait_pollfd;           /* the CQ gives its descriptors (FI_WAIT_POLLFD) */
    int nwait;
    wait_member_t wait[WAIT_MEMBERS];
    struct pollfd given[WAIT_MEMBERS]; /* what FI_GETWAIT gave when the members were read */
    int ngiven;
    uint64_t wait_read_ns;     /* when the members were last read (WAIT_RECHECK_NS) */
    size_t addrlen;            /* length of this endpoint's address */
    int mr_local, mr_endpoint, mr_prov_key, mr_virt;
    int write_dc;              /* writes need FI_DELIVERY_COMPLETE */
    size_t inject_max;         /* whole message through fi_inject up to this */
    size_t rx_size;            /* bytes of one bounce buffer (headers included) */
    net_peer_t *peers;
    unsigned window;
    unsigned npeers;
    /* buffers */
    char *rx_slab, *tx_slab;
    rx_buf_t *rx;
    unsigned nrx;
    struct fid_mr *rx_mr, *tx_mr;
    tx_buf_t *tx, *tx_free;
    kn_list_t repost;           /* rx_buf_t waiting to be posted again (as net_op via held=2) */
    rx_buf_t **repost_q;
    unsigned nrepost;
    kn_pool_t rma_pool;
    kn_list_t rma_retry;
    int credit_work;            /* some peer has credit_pending */
    uint64_t next_key;
    /* registration cache */
    kn_list_t rc_lru;
    size_t rc_bytes, rc_entries;
    int rc_verify, rc_enabled;
    int pagemap_fd;
    uint64_t rc_hits, rc_misses, rc_evictions, rc_invalidations;
    kn_net_traffic_t traffic;
    char desc[256];
} net_tl_t;

static inline net_tl_t *net_of(kn_tl_t *tl)
{
    return (net_tl_t *)tl;
}

#define net_fatal(n, ...) kn_fatal((n)->p.fatal, (n)->p.fatal_arg, __VA_ARGS__)

/* ---------------------------------------------------- registration cache */

/*
 * Pin-down cache.  Registrations are kept (keyed by page-aligned address
 * range; a hit is any cached range that contains the request) until the
 * cache holds more than rcache_max bytes, then the least recently used
 * ones nobody uses are closed.
 *
 * Invalidation.  A cached registration goes stale when its pages change
 * under the same addresses (free, then a new mmap at the same place).  For
 * providers that reach memory by virtual address at transfer time (tcp,
 * udp, shm, sockets: no FI_MR_ALLOCATED) a stale entry is harmless: it
 * only authorizes the address range, and the transfer reads whatever pages
 * are mapped there now.  For providers that pin pages (FI_MR_ALLOCATED:
 * verbs, efa, ...) every hit compares the page frames of the range
 * (/proc/self/pagemap) with those recorded at registration and registers
 * again when they differ.  Where page frames are hidden (no
 * CAP_SYS_ADMIN) such providers get no knit cache: every use registers
 * afresh, and the provider's own cache (with its memory monitor) makes
 * that cheap.  KNIT_RCACHE_VERIFY=pagemap forces the check, off trusts the
 * cache.
 */
#define PM_PFN_MASK ((1ull << 55) - 1)
#define PM_PRESENT (1ull << 63)

static int pagemap_read(net_tl_t *n, uintptr_t start, size_t npages, uint64_t *out)
{
    size_t want = npages * sizeof(uint64_t);
    off_t off = (off_t)(start / PAGE * sizeof(uint64_t));
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(n->pagemap_fd, (char *)out + got, want - got, off + (off_t)got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    for (size_t i = 0; i < npages; i++)
        out[i] = (out[i] & PM_PRESENT) ? (out[i] & PM_PFN_MASK) | PM_PRESENT : 0;
    return 0;
}

/* Are page frame numbers visible to this process? */
static int pagemap_usable(net_tl_t *n)
{
    if (n->pagemap_fd < 0)
        return 0;
    static volatile uint64_t probe = 1;
    probe++;
    uint64_t v;
    if (pagemap_read(n, (uintptr_t)&probe & ~(PAGE - 1), 1, &v) < 0)
        return 0;
    return (v & PM_PFN_MASK) != 0;
}

static void rc_close(net_tl_t *n, rc_entry_t *e)
{
    int rc = fi_close(&e->mr->fid);
    if (rc)
        kn_warn("fi_close of a memory registration: %s", fi_strerror(-rc));
    free(e->pfns);
    free(e);
    (void)n;
}

static void rc_unlink(net_tl_t *n, rc_entry_t *e)
{
    kn_list_del(&e->link);
    kn_list_init(&e->link);
    e->dead = 1;
    n->rc_bytes -= e->end - e->start;
    n->rc_entries--;
}

static void rc_evict(net_tl_t *n)
{
    kn_list_t *pos = n->rc_lru.prev;
    while (n->rc_bytes > n->p.rcache_max && pos != &n->rc_lru) {
        rc_entry_t *e = kn_list_entry(pos, rc_entry_t, link);
        pos = pos->prev;
        if (e->refs)
            continue;
        rc_unlink(n, e);
        n->rc_evictions++;
        rc_close(n, e);
    }
}

static knit_status_t mr_register(net_tl_t *n, void *buf, size_t len, struct fid_mr **mr)
{
    uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    int rc;
    for (int tries = 0;; tries++) {
        /* our own keys: the (page-aligned) start of the region in the high
         * bits, so a peer can turn addresses into offsets (no
         * FI_MR_VIRT_ADDR); a counter below keeps them unique */
        uint64_t key = n->mr_prov_key ? 0 : ((uintptr_t)buf & ~(PAGE - 1)) | (n->next_key++ & (PAGE - 1));
        rc = fi_mr_reg(n->domain, buf, len, access, 0, key, 0, mr, NULL);
        if (rc != -FI_ENOKEY || n->mr_prov_key || tries > 64)
            break;
    }
    if (rc) {
        kn_error("fi_mr_reg of %zu bytes at %p: %s", len, buf, fi_strerror(-rc));
        return KNIT_ERR_FABRIC;
    }
    if (n->mr_endpoint) {
        rc = fi_mr_bind(*mr, &n->ep->fid, 0);
        if (!rc)
            rc = fi_mr_enable(*mr);
        if (rc) {
            kn_error("binding a memory registration to the endpoint: %s", fi_strerror(-rc));
            fi_close(&(*mr)->fid);
            return KNIT_ERR_FABRIC;
        }
    }
    return KNIT_OK;
}

static knit_status_t rcache_get(net_tl_t *n, const void *buf, size_t len, rc_entry_t **out)
{
    uintptr_t start = (uintptr_t)buf & ~(PAGE - 1);
    uintptr_t end = KN_ALIGN_UP((uintptr_t)buf + (len ? len : 1), PAGE);
    size_t npages = (end - start) / PAGE;
    uint64_t *pfns = NULL;
    if (n->rc_verify) {
        pfns = malloc(npages * sizeof(*pfns));
        if (!pfns)
            return KNIT_ERR_NOMEM;
        if (pagemap_read(n, start, npages, pfns) < 0) {
            kn_error("reading /proc/self/pagemap: %m");
            free(pfns);
            return KNIT_ERR_IO;
        }
    }
    if (n->rc_enabled) {
        kn_list_t *pos;
        kn_list_for_each(pos, &n->rc_lru) {
            rc_entry_t *e = kn_list_entry(pos, rc_entry_t, link);
            if (e->start > start || e->end < end)
                continue;
            if (pfns && memcmp(pfns, e->pfns + (start - e->start) / PAGE, npages * sizeof(*pfns))) {
                /* other pages behind the same addresses now: stale */
                kn_debug("rcache: pages behind [%#lx, %#lx) changed, registering again",
                         (unsigned long)e->start, (unsigned long)e->end);
                n->rc_invalidations++;
                rc_unlink(n, e);
                if (!e->refs)
                    rc_close(n, e);
                break;
            }
            kn_list_del(&e->link);
            kn_list_push_front(&n->rc_lru, &e->link);
            e->refs++;
            n->rc_hits++;
            free(pfns);
            *out = e;
            return KNIT_OK;
        }
    }
    n->rc_misses++;
    /* a buffer that cannot be read fails here, in the process it belongs
     * to: a peer's RDMA read of it might otherwise never complete (the
     * net provider serves reads from its own process and, faulting there,
     * answers nothing) */
    if (kn_mem_check(buf, len, 0) == 0) {
        free(pfns);
        return KNIT_ERR_FAULT;
    }
    rc_entry_t *e = calloc(1, sizeof(*e));
    if (!e) {
        free(pfns);
        return KNIT_ERR_NOMEM;
    }
    knit_status_t st = mr_register(n, (void *)start, end - start, &e->mr);
    if (st != KNIT_OK) {
        free(pfns);
        free(e);
        return st;
    }
    if (pfns) {
        /* registration may have faulted pages in: record them as pinned */
        if (pagemap_read(n, start, npages, pfns) < 0) {
            kn_error("reading /proc/self/pagemap: %m");
            fi_close(&e->mr->fid);
            free(pfns);
            free(e);
            return KNIT_ERR_IO;
        }
    }
    e->start = start;
    e->end = end;
    e->desc = fi_mr_desc(e->mr);
    e->key = fi_mr_key(e->mr);
    e->pfns = pfns;
    e->refs = 1;
    if (e->key == FI_KEY_NOTAVAIL) {
        kn_error("provider %s uses memory keys wider than 64 bits (not supported)", n->info->fabric_attr->prov_name);
        rc_close(n, e);
        return KNIT_ERR_NOT_SUPPORTED;
    }
    if (n->rc_enabled) {
        kn_list_push_front(&n->rc_lru, &e->link);
        n->rc_bytes += end - start;
        n->rc_entries++;
        rc_evict(n);
    } else {
        kn_list_init(&e->link);
        e->dead = 1;
    }
    *out = e;
    return KNIT_OK;
}

static void rcache_put(net_tl_t *n, rc_entry_t *e)
{
    if (--e->refs)
        return;
    if (e->dead)
        rc_close(n, e);
    else if (n->rc_bytes > n->p.rcache_max)
        rc_evict(n);
}

void kn_net_rcache_stats(kn_tl_t *tl, kn_net_rcache_stats_t *st)
{
    net_tl_t *n = net_of(tl);
    st->hits = n->rc_hits;
    st->misses = n->rc_misses;
    st->evictions = n->rc_evictions;
    st->invalidations = n->rc_invalidations;
    st->bytes = n->rc_bytes;
    st->entries = n->rc_entries;
    st->verify = n->rc_verify;
}

void kn_net_traffic(kn_tl_t *tl, kn_net_traffic_t *out)
{
    *out = net_of(tl)->traffic;
}

/* ------------------------------------------------------------- helpers */

static int peer_index(net_tl_t *n, net_peer_t *pe)
{
    return (int)(pe - n->peers);
}

static void post_rx(net_tl_t *n, rx_buf_t *b)
{
    b->held = 0;
    ssize_t rc = fi_recv(n->ep, b->buf, n->rx_size, n->rx_mr ? fi_mr_desc(n->rx_mr) : NULL, FI_ADDR_UNSPEC,
                         &b->op.fctx);
    if (rc == 0)
        return;
    if (rc != -FI_EAGAIN)
        net_fatal(n, "rank %d: posting a receive buffer: %s", n->p.rank, fi_strerror((int)-rc));
    n->repost_q[n->nrepost++] = b; /* posted again from progress */
}

/* Send an explicit CREDIT message (no credit needed). */
static void send_credit(net_tl_t *n, net_peer_t *pe)
{
    net_hdr_t h = {.ver_kind = NET_VERSION << 4 | NK_CREDIT,
                   .credits = (uint8_t)pe->owed,
                   .seq = pe->tx_seq,
                   .src = (uint32_t)n->p.rank};
    ssize_t rc = fi_inject(n->ep, &h, sizeof(h), pe->addr);
    if (rc == 0) {
        n->traffic.sent_msgs++;
        n->traffic.sent_bytes += sizeof(h);
        pe->tx_seq++;
        pe->owed = 0;
        pe->credit_pending = 0;
        pe->injected = 1;
        return;
    }
    if (rc != -FI_EAGAIN)
        net_fatal(n, "rank %d: returning credits to rank %d: %s", n->p.rank, peer_index(n, pe),
                  fi_strerror((int)-rc));
    pe->credit_pending = 1;
    n->credit_work = 1;
}

/* ------------------------------------------------------------ send */

static knit_status_t net_send2(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr, const void *p1, size_t l1,
                               const void *p2, size_t l2)
{
    net_tl_t *n = net_of(tl);
    net_peer_t *pe = &n->peers[peer];
    size_t len = l1 + l2;
    if (kn_unlikely(pe->credits == 0))
        return KNIT_ERR_AGAIN;
    if (kn_unlikely(len > tl->max_payload))
        return KNIT_ERR_INVAL;
    size_t total = NET_HDRS + len;
    unsigned give = KN_MIN(pe->owed, 255u);
    net_hdr_t h = {.ver_kind = NET_VERSION << 4 | NK_PKT,
                   .credits = (uint8_t)give,
                   .seq = pe->tx_seq,
                   .src = (uint32_t)n->p.rank};
    ssize_t rc;
    if (total <= n->inject_max) {
        char msg[256];
        memcpy(msg, &h, sizeof(h));
        memcpy(msg + sizeof(h), hdr, sizeof(*hdr));
        if (l1)
            memcpy(msg + NET_HDRS, p1, l1);
        if (l2)
            memcpy(msg + NET_HDRS + l1, p2, l2);
        rc = fi_inject(n->ep, msg, total, pe->addr);
        if (rc == 0)
            pe->injected = 1;
    } else {
        tx_buf_t *t = n->tx_free;
        if (!t)
            return KNIT_ERR_AGAIN; /* progress frees some */
        memcpy(t->buf, &h, sizeof(h));
        memcpy(t->buf + sizeof(h), hdr, sizeof(*hdr));
        if (l1)
            memcpy(t->buf + NET_HDRS, p1, l1);
        if (l2)
            memcpy(t->buf + NET_HDRS + l1, p2, l2);
        t->op.peer = peer;
        rc = fi_send(n->ep, t->buf, total, n->tx_mr ? fi_mr_desc(n->tx_mr) : NULL, pe->addr, &t->op.fctx);
        if (rc == 0) {
            n->tx_free = t->next;
            pe->outstanding++;
            pe->injected = 0;
        }
    }
    if (kn_likely(rc == 0)) {
        n->traffic.sent_msgs++;
        n->traffic.sent_bytes += total;
        pe->tx_seq++;
        pe->credits--;
        pe->owed -= give;
        return KNIT_OK;
    }
    if (rc == -FI_EAGAIN)
        return KNIT_ERR_AGAIN;
    kn_error("sending %zu bytes to rank %d: %s", total, peer, fi_strerror((int)-rc));
    return rc == -FI_ECONNREFUSED || rc == -FI_ECONNRESET || rc == -FI_ENOTCONN || rc == -FI_EHOSTUNREACH
               ? KNIT_ERR_PEER
               : KNIT_ERR_FABRIC;
}

static knit_status_t net_send(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr, const void *payload, size_t len)
{
    return net_send2(tl, peer, hdr, payload, len, NULL, 0);
}

/* ------------------------------------------------------------- RDMA */

static ssize_t rma_post(net_tl_t *n, rma_op_t *o)
{
    net_peer_t *pe = &n->peers[o->op.peer];
    void *desc = o->lreg ? o->lreg->desc : NULL;
    if (!o->write)
        return fi_read(n->ep, o->local, o->len, desc, pe->addr, o->raddr, o->rkey, &o->op.fctx);
    if (!n->write_dc && !o->dc)
        return fi_write(n->ep, o->local, o->len, desc, pe->addr, o->raddr, o->rkey, &o->op.fctx);
    struct iovec iov = {o->local, o->len};
    struct fi_rma_iov riov = {o->raddr, o->len, o->rkey};
    struct fi_msg_rma msg = {
        .msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = pe->addr,
        .rma_iov = &riov, .rma_iov_count = 1, .context = &o->op.fctx,
    };
    return fi_writemsg(n->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

static knit_status_t net_rma(net_tl_t *n, int peer, int write, void *local, size_t len, uint64_t raddr,
                             uint64_t rkey, kn_tl_comp_t *comp, int dc)
{
    rma_op_t *o = kn_pool_get(&n->rma_pool);
    if (!o)
        return KNIT_ERR_NOMEM;
    memset(o, 0, sizeof(*o));
    o->op.kind = OP_RMA;
    o->op.peer = peer;
    o->comp = comp;
    o->write = write;
    o->dc = dc;
    o->local = local;
    o->len = len;
    o->raddr = n->mr_virt ? raddr : raddr - (rkey & ~(PAGE - 1)); /* offset (see mr_register) */
    o->rkey = rkey;
    kn_list_init(&o->link);
    if (n->mr_local) {
        knit_status_t st = rcache_get(n, local, len, &o->lreg);
        if (st != KNIT_OK) {
            kn_pool_put(&n->rma_pool, o);
            return st;
        }
    }
    net_peer_t *pe = &n->peers[peer];
    pe->outstanding++;
    if (write)
        n->traffic.write_bytes += len;
    else
        n->traffic.read_bytes += len;
    ssize_t rc = rma_post(n, o);
    if (rc == -FI_EAGAIN) {
        kn_list_push_back(&n->rma_retry, &o->link);
        return KNIT_INPROGRESS;
    }
    if (rc) {
        if (rc != -FI_EFAULT) /* a buffer: the engine finds whose and says so */
            kn_error("RDMA %s of %zu bytes %s rank %d: %s", write ? "write" : "read", len, write ? "to" : "from",
                     peer, fi_strerror((int)-rc));
        pe->outstanding--;
        if (o->lreg)
            rcache_put(n, o->lreg);
        kn_pool_put(&n->rma_pool, o);
        return rc == -FI_EFAULT ? KNIT_ERR_FAULT : KNIT_ERR_FABRIC;
    }
    return KNIT_INPROGRESS;
}

static knit_status_t net_get(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr, uint64_t rkey,
                             kn_tl_comp_t *comp)
{
    return net_rma(net_of(tl), peer, 0, local, len, raddr, rkey, comp, 0);
}

static knit_status_t net_put(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                             uint64_t rkey, kn_tl_comp_t *comp)
{
    return net_rma(net_of(tl), peer, 1, (void *)local, len, raddr, rkey, comp, 0);
}

/* One-sided puts: complete once the data is in the peer's memory (a plain
 * completion may only say that it left; the engine's own puts rely on
 * sends being ordered after writes instead). */
static knit_status_t net_put_remote(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                                    uint64_t rkey, kn_tl_comp_t *comp)
{
    return net_rma(net_of(tl), peer, 1, (void *)local, len, raddr, rkey, comp, 1);
}

static knit_status_t net_mem_reg(kn_tl_t *tl, const void *buf, size_t len, uint64_t *rkey, void **memh)
{
    net_tl_t *n = net_of(tl);
    rc_entry_t *e;
    knit_status_t st = rcache_get(n, buf, len, &e);
    if (st != KNIT_OK)
        return st;
    *rkey = e->key;
    *memh = e;
    return KNIT_OK;
}

static void net_mem_dereg(kn_tl_t *tl, void *memh)
{
    rcache_put(net_of(tl), memh);
}

static unsigned net_caps(kn_tl_t *tl, int peer)
{
    (void)tl, (void)peer;
    return KN_TL_CAP_RMA;
}

/* ------------------------------------------------------------ progress */

/* A message in order from its sender: credits, then the packet. */
static void deliver(net_tl_t *n, net_peer_t *pe, rx_buf_t *b)
{
    net_hdr_t h;
    memcpy(&h, b->buf, sizeof(h));
    int src = peer_index(n, pe);
    pe->rx_seq++;
    pe->credits += h.credits;
    if (kn_unlikely(pe->credits > n->p.credits))
        net_fatal(n, "rank %d: protocol error: rank %d returned more credits than it had (%u > %u)", n->p.rank,
                  src, pe->credits, n->p.credits);
    if ((h.ver_kind & 0xf) == NK_PKT) { /* at least NET_HDRS long (kn_net_frame_check) */
        kn_pkt_hdr_t ph;
        memcpy(&ph, b->buf + sizeof(h), sizeof(ph));
        n->base.recv_cb(n->base.cb_arg, src, &ph, b->buf + NET_HDRS, b->len - NET_HDRS);
        pe->owed++;
    }
    post_rx(n, b);
    if (pe->owed >= (n->p.credits + 1) / 2 && !pe->credit_pending)
        send_credit(n, pe);
}

static void rx_complete(net_tl_t *n, rx_buf_t *b, size_t len)
{
    net_hdr_t h = {0};
    const char *why = "message from a rank this transport does not reach";
    if (kn_unlikely(kn_net_frame_check(b->buf, len, n->rx_size, n->p.size, &h, &why) != KNIT_OK ||
                    !n->peers[h.src].on))
        net_fatal(n, "rank %d: protocol error: %s (%zu bytes, header %02x %u %u %u)", n->p.rank, why, len,
                  len >= 1 ? (unsigned)(uint8_t)b->buf[0] : 0, h.credits, h.seq, h.src);
    net_peer_t *pe = &n->peers[h.src];
    pe->heard = 1;
    b->len = len;
    n->traffic.recv_msgs++;
    n->traffic.recv_bytes += len;
    int d = kn_net_seq_ahead(h.seq, pe->rx_seq, n->window);
    if (kn_likely(d == 0)) {
        deliver(n, pe, b);
        while (pe->nheld) {
            rx_buf_t *nb = pe->held[pe->rx_seq % n->window];
            if (!nb)
                break;
            pe->held[pe->rx_seq % n->window] = NULL;
            pe->nheld--;
            deliver(n, pe, nb);
        }
        return;
    }
    if (d < 0 || pe->held[h.seq % n->window])
        net_fatal(n, "rank %d: protocol error: message %u from rank %u when %u was expected", n->p.rank,
                  h.seq, h.src, pe->rx_seq);
    b->held = 1;
    pe->held[h.seq % n->window] = b;
    pe->nheld++;
}

static const char *op_what(net_op_t *op)
{
    switch (op->kind) {
    case OP_RX: return "a receive";
    case OP_TX: return "a send";
    default: return ((rma_op_t *)op)->write ? "an RDMA write" : "an RDMA read";
    }
}

/* An RDMA operation ended (status for its completion). */
static void rma_done(net_tl_t *n, rma_op_t *o, knit_status_t status)
{
    n->peers[o->op.peer].outstanding--;
    if (o->lreg)
        rcache_put(n, o->lreg);
    kn_tl_comp_t *comp = o->comp;
    kn_pool_put(&n->rma_pool, o);
    comp->cb(comp, status);
}

static void cq_error(net_tl_t *n)
{
    struct fi_cq_err_entry err = {0};
    ssize_t rc = fi_cq_readerr(n->cq, &err, 0);
    if (rc == -FI_EAGAIN)
        return;
    if (rc < 0)
        net_fatal(n, "rank %d: fi_cq_readerr: %s", n->p.rank, fi_strerror((int)-rc));
    net_op_t *op = err.op_context;
    if (op && op->kind == OP_RMA && (err.err == FI_EFAULT || err.err == FI_EACCES)) {
        /* a buffer of the transfer, ours or the peer's: the engine finds
         * whose and tells the peer (docs/protocols.md, NAK) */
        rma_done(n, (rma_op_t *)op, KNIT_ERR_FAULT);
        return;
    }
    char peer[64] = "a peer";
    if (op && op->kind != OP_RX)
        snprintf(peer, sizeof(peer), "rank %d", op->peer);
    char pe[256];
    const char *perr = fi_cq_strerror(n->cq, err.prov_errno, err.err_data, pe, sizeof(pe));
    net_fatal(n, "rank %d: network error in %s with %s: %s (provider %s: %s)", n->p.rank,
              op ? op_what(op) : "an operation", peer, fi_strerror(err.err), n->info->fabric_attr->prov_name,
              perr ? perr : "no detail");
}

static int net_progress(kn_tl_t *tl)
{
    net_tl_t *n = net_of(tl);
    struct fi_cq_msg_entry ent[16];
    int events = 0;
    for (;;) {
        ssize_t got = fi_cq_read(n->cq, ent, KN_ARRAY_SIZE(ent));
        if (got == -FI_EAGAIN)
            break;
        if (got == -FI_EAVAIL) {
            cq_error(n);
            continue;
        }
        if (got < 0)
            net_fatal(n, "rank %d: fi_cq_read: %s", n->p.rank, fi_strerror((int)-got));
        for (ssize_t i = 0; i < got; i++) {
            net_op_t *op = ent[i].op_context;
            switch (op->kind) {
            case OP_RX:
                rx_complete(n, (rx_buf_t *)op, ent[i].len);
                break;
            case OP_TX: {
                tx_buf_t *t = (tx_buf_t *)op;
                n->peers[op->peer].outstanding--;
                t->next = n->tx_free;
                n->tx_free = t;
                break;
            }
            case OP_RMA:
                rma_done(n, (rma_op_t *)op, KNIT_OK);
                break;
            default:
                net_fatal(n, "rank %d: completion with an unknown context", n->p.rank);
            }
        }
        events += (int)got;
        if (got < (ssize_t)KN_ARRAY_SIZE(ent))
            break;
    }
    while (n->nrepost) {
        rx_buf_t *b = n->repost_q[--n->nrepost];
        post_rx(n, b); /* may queue it again */
        if (n->nrepost && n->repost_q[n->nrepost - 1] == b)
            break;
    }
    if (!kn_list_empty(&n->rma_retry)) {
        while (!kn_list_empty(&n->rma_retry)) {
            rma_op_t *o = kn_list_first(&n->rma_retry, rma_op_t, link);
            ssize_t rc = rma_post(n, o);
            if (rc == -FI_EAGAIN)
                break;
            kn_list_del(&o->link);
            if (rc)
                net_fatal(n, "rank %d: RDMA %s of %zu bytes with rank %d: %s", n->p.rank, o->write ? "write" : "read",
                          o->len, o->op.peer, fi_strerror((int)-rc));
            events++;
        }
    }
    if (n->credit_work) {
        n->credit_work = 0;
        for (int i = 0; i < n->p.size; i++)
            if (n->peers[i].credit_pending)
                send_credit(n, &n->peers[i]);
    }
    return events;
}

/* The descriptors that one wait descriptor stands for: itself, or, when
 * it is an epoll (libfabric's fd wait sets are), the descriptors in it, as
 * Linux lists them in /proc/self/fdinfo, so that a stuck one among them
 * (wait_member_t) can be left out and the rest still slept on. */
static int expand_wait_fd(int fd, short events, struct pollfd *out, int max)
{
    char path[64], link[64] = "";
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t l = readlink(path, link, sizeof(link) - 1);
    int n = 0;
    if (l > 0 && (link[l] = 0, !strcmp(link, "anon_inode:[eventpoll]"))) {
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        FILE *f = fopen(path, "re");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
            int tfd;
            unsigned ev;
            if (sscanf(line, "tfd: %d events: %x", &tfd, &ev) == 2 && n < max)
                out[n++] = (struct pollfd){.fd = tfd, .events = (short)(ev & (POLLIN | POLLPRI | POLLOUT))};
        }
        if (f)
            fclose(f);
    }
    if (!n)
        out[n++] = (struct pollfd){.fd = fd, .events = events};
    return n;
}

/* The epoll of net_arm holds fds now (nfds of them): 0, or -1 (said). */
static int wait_rebuild(net_tl_t *n, const struct pollfd *fds, int nfds)
{
    for (int i = 0; i < n->nwait; i++)
        if (!n->wait[i].out)
            (void)epoll_ctl(n->wait_fd, EPOLL_CTL_DEL, n->wait[i].fd, NULL);
    n->nwait = 0;
    for (int i = 0; i < nfds; i++) {
        struct epoll_event ev = {.events = (uint32_t)fds[i].events};
        if (epoll_ctl(n->wait_fd, EPOLL_CTL_ADD, fds[i].fd, &ev) < 0) {
            kn_info("network completion queue: epoll of wait descriptor %d: %m", fds[i].fd);
            return -1;
        }
        n->wait[n->nwait++] = (wait_member_t){.fd = fds[i].fd, .events = fds[i].events};
    }
    return 0;
}

/* Read the CQ's wait descriptors into the epoll that net_arm returns (again
 * when they changed, or WAIT_RECHECK_NS after they were last read).  0, or
 * -1 when they cannot be had. */
static int wait_members(net_tl_t *n)
{
    struct pollfd given[WAIT_MEMBERS], fds[WAIT_MEMBERS];
    int ngiven = 0, nfds = 0;
    if (n->wait_pollfd) {
        struct fi_wait_pollfd w = {.change_index = 0, .nfds = WAIT_MEMBERS, .fd = given};
        int rc = fi_control(&n->cq->fid, FI_GETWAIT, &w);
        if (rc) {
            kn_info("network completion queue: its wait descriptors: %s", fi_strerror(-rc));
            return -1;
        }
        ngiven = (int)w.nfds;
    } else {
        int rc = fi_control(&n->cq->fid, FI_GETWAIT, &given[0].fd);
        if (rc) {
            kn_info("network completion queue: its wait fd: %s", fi_strerror(-rc));
            return -1;
        }
        given[0].events = POLLIN;
        ngiven = 1;
    }
    uint64_t now = kn_time_ns();
    int known = ngiven == n->ngiven && now - n->wait_read_ns < WAIT_RECHECK_NS;
    for (int i = 0; known && i < ngiven; i++)
        known = given[i].fd == n->given[i].fd && given[i].events == n->given[i].events;
    if (known)
        return 0;
    n->ngiven = 0; /* until the members are in the epoll */
    for (int i = 0; i < ngiven; i++)
        nfds += expand_wait_fd(given[i].fd, given[i].events, fds + nfds, WAIT_MEMBERS - nfds);
    int same = nfds == n->nwait;
    for (int i = 0; same && i < nfds; i++)
        same = fds[i].fd == n->wait[i].fd && fds[i].events == n->wait[i].events;
    if (!same && wait_rebuild(n, fds, nfds) != 0)
        return -1;
    memcpy(n->given, given, (size_t)ngiven * sizeof(given[0]));
    n->ngiven = ngiven;
    n->wait_read_ns = now;
    return 0;
}

/* Sleeping: the epoll of the CQ's wait descriptors, once fi_trywait says
 * that nothing is left that only our own progress can do. */
static int net_arm(kn_tl_t *tl)
{
    net_tl_t *n = net_of(tl);
    /* without a wait fd (or with work only we can do) the rank yields instead */
    if (n->wait_fd < 0 || n->nrepost || !kn_list_empty(&n->rma_retry) || n->credit_work)
        return -1;
    if (wait_members(n) != 0)
        return -1;
    struct fid *f = &n->cq->fid;
    int rc = fi_trywait(n->fabric, &f, 1);
    if (rc == -FI_EAGAIN)
        return -1;
    if (rc) {
        kn_warn("fi_trywait: %s", fi_strerror(-rc));
        return -1;
    }
    /* Nothing is pending, says the provider: a descriptor readable now has
     * just had an event (progress first), or stays readable for nothing
     * (wait_member_t) and is left out while it does. */
    struct pollfd pf[WAIT_MEMBERS];
    for (int i = 0; i < n->nwait; i++)
        pf[i] = (struct pollfd){.fd = n->wait[i].fd, .events = n->wait[i].events};
    if (poll(pf, (nfds_t)n->nwait, 0) < 0)
        return -1;
    int fresh = 0, asleep_on = 0;
    for (int i = 0; i < n->nwait; i++) {
        wait_member_t *m = &n->wait[i];
        if (pf[i].revents) {
            if (m->ready_run < WAIT_STUCK_ARMS) {
                m->ready_run++;
                fresh = 1;
            } else if (!m->out) {
                m->out = 1;
                (void)epoll_ctl(n->wait_fd, EPOLL_CTL_DEL, m->fd, NULL);
                kn_debug("network wait descriptor %d stays readable with nothing pending: left out", m->fd);
            }
        } else {
            m->ready_run = 0;
            if (m->out) {
                struct epoll_event ev = {.events = (uint32_t)m->events};
                m->out = epoll_ctl(n->wait_fd, EPOLL_CTL_ADD, m->fd, &ev) < 0;
            }
        }
        asleep_on += !m->out;
    }
    return fresh || !asleep_on ? -1 : n->wait_fd;
}

static void net_disarm(kn_tl_t *tl)
{
    (void)tl; /* arm changed nothing that needs undoing */
}

/* A CREDIT through a tracked send: its completion says that everything
 * injected to the peer before it has left too.  1: sent; 0: no room now;
 * -1: failed (said). */
static int send_tracked_credit(net_tl_t *n, net_peer_t *pe)
{
    tx_buf_t *t = n->tx_free;
    if (!t)
        return 0;
    net_hdr_t h = {.ver_kind = NET_VERSION << 4 | NK_CREDIT,
                   .credits = (uint8_t)pe->owed,
                   .seq = pe->tx_seq,
                   .src = (uint32_t)n->p.rank};
    memcpy(t->buf, &h, sizeof(h));
    t->op.peer = peer_index(n, pe);
    ssize_t rc = fi_send(n->ep, t->buf, sizeof(h), n->tx_mr ? fi_mr_desc(n->tx_mr) : NULL, pe->addr, &t->op.fctx);
    if (rc == -FI_EAGAIN)
        return 0;
    if (rc) {
        kn_warn("rank %d: sending to rank %d: %s", n->p.rank, t->op.peer, fi_strerror((int)-rc));
        pe->injected = 0;
        return -1;
    }
    n->tx_free = t->next;
    pe->outstanding++;
    pe->tx_seq++;
    pe->owed = 0;
    pe->credit_pending = 0;
    pe->injected = 0;
    return 1;
}

void kn_net_quiesce(kn_tl_t *tl)
{
    net_tl_t *n = net_of(tl);
    uint64_t limit = n->p.timeout_ns ? n->p.timeout_ns : 60 * KN_NSEC_PER_SEC;
    uint64_t t0 = kn_time_ns();
    for (;;) {
        int busy = n->credit_work || !kn_list_empty(&n->rma_retry);
        for (int i = 0; i < n->p.size; i++) {
            net_peer_t *pe = &n->peers[i];
            if (pe->injected && send_tracked_credit(n, pe) == 0)
                busy = 1;
            busy |= pe->outstanding != 0;
        }
        if (!busy)
            return;
        if (kn_time_ns() - t0 > limit) {
            kn_warn("finalize: network sends still in flight after %.0f s; closing anyway", (double)limit / 1e9);
            return;
        }
        net_progress(tl);
    }
}

knit_status_t kn_net_wireup(kn_tl_t *tl, const int *peers, int npeers)
{
    net_tl_t *n = net_of(tl);
    uint64_t t0 = kn_time_ns();
    for (;;) {
        int waiting = -1;
        for (int i = 0; i < npeers; i++) {
            net_peer_t *pe = &n->peers[peers[i]];
            int sent = pe->hello_sent;
            if (!sent && (sent = send_tracked_credit(n, pe)) < 0)
                return KNIT_ERR_FABRIC;
            pe->hello_sent = sent;
            if (!sent || pe->outstanding || !pe->heard)
                waiting = peers[i];
        }
        if (waiting < 0)
            return KNIT_OK;
        if (n->p.timeout_ns && kn_time_ns() - t0 > n->p.timeout_ns) {
            kn_error("no answer from rank %d over %s within %.0f s of start-up (KNIT_NET_TIMEOUT): do "
                     "the nodes reach each other on this network (KNIT_NET_IFACE, KNIT_NET_PROVIDER)?",
                     waiting, n->info->fabric_attr->prov_name, (double)n->p.timeout_ns / 1e9);
            return KNIT_ERR_TIMEOUT;
        }
        if (!net_progress(tl))
            sched_yield();
    }
}

/* ------------------------------------------------------- create / destroy */

static void net_close_all(net_tl_t *n)
{
    if (n->ep)
        fi_close(&n->ep->fid);
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &n->rc_lru) {
        rc_entry_t *e = kn_list_entry(pos, rc_entry_t, link);
        rc_close(n, e);
    }
    kn_list_init(&n->rc_lru);
    if (n->rx_mr)
        fi_close(&n->rx_mr->fid);
    if (n->tx_mr)
        fi_close(&n->tx_mr->fid);
    if (n->cq)
        fi_close(&n->cq->fid);
    if (n->wait_fd >= 0)
        close(n->wait_fd);
    if (n->av)
        fi_close(&n->av->fid);
    if (n->domain)
        fi_close(&n->domain->fid);
    if (n->fabric)
        fi_close(&n->fabric->fid);
    if (n->info)
        fi_freeinfo(n->info);
    if (n->pagemap_fd >= 0)
        close(n->pagemap_fd);
    if (n->peers) {
        for (int i = 0; i < n->p.size; i++)
            free(n->peers[i].held);
        free(n->peers);
    }
    kn_pool_destroy(&n->rma_pool);
    free(n->rx_slab);
    free(n->tx_slab);
    free(n->rx);
    free(n->tx);
    free(n->repost_q);
    free(n);
}

static void net_destroy(kn_tl_t *tl)
{
    net_close_all(net_of(tl));
}

static const kn_tl_ops_t net_ops = {
    .name = "net",
    .send = net_send,
    .send2 = net_send2,
    .progress = net_progress,
    .caps = net_caps,
    .get = net_get,
    .put = net_put,
    .put_remote = net_put_remote,
    .mem_reg = net_mem_reg,
    .mem_dereg = net_mem_dereg,
    .arm = net_arm,
    .disarm = net_disarm,
    .destroy = net_destroy,
};


static int is_loopback(const struct fi_info *fi)
{
    if (!fi->src_addr)
        return 0;
    if (fi->addr_format == FI_SOCKADDR_IN) {
        const struct sockaddr_in *a = fi->src_addr;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (fi->addr_format == FI_SOCKADDR_IN6) {
        const struct sockaddr_in6 *a = fi->src_addr;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    }
    return 0;
}

/* What the provider must give (capabilities named when missing). */
static int check_caps(const struct fi_info *fi, char *why, size_t len)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } need[] = {
        {FI_MSG, "FI_MSG"}, {FI_RMA, "FI_RMA"}, {FI_READ, "FI_READ"}, {FI_WRITE, "FI_WRITE"},
        {FI_REMOTE_READ, "FI_REMOTE_READ"}, {FI_REMOTE_WRITE, "FI_REMOTE_WRITE"},
    };
    why[0] = '\0';
    for (size_t i = 0; i < KN_ARRAY_SIZE(need); i++)
        if (!(fi->caps & need[i].bit))
            snprintf(why + strlen(why), len - strlen(why), "%s%s", why[0] ? ", " : "", need[i].name);
    if (fi->ep_attr->type != FI_EP_RDM)
        snprintf(why + strlen(why), len - strlen(why), "%sFI_EP_RDM", why[0] ? ", " : "");
    return why[0] == '\0';
}

static struct fi_info *make_hints(const char *provider, const char *iface, uint64_t caps)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return NULL;
    h->ep_attr->type = FI_EP_RDM;
    h->caps = caps;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->addr_format = FI_FORMAT_UNSPEC;
    if (provider && *provider)
        h->fabric_attr->prov_name = strdup(provider);
    (void)iface;
    return h;
}

/* fi_getinfo for the provider and interface; picks one entry. */
static int get_info(const char *provider, const char *iface, struct fi_info **out, char *why, size_t len)
{
    uint64_t caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    struct fi_info *hints = make_hints(provider, iface, caps), *list = NULL;
    if (!hints) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    int is_addr = 0;
    if (iface && *iface) {
        struct in_addr a4;
        struct in6_addr a6;
        is_addr = inet_pton(AF_INET, iface, &a4) == 1 || inet_pton(AF_INET6, iface, &a6) == 1;
    }
    int rc = fi_getinfo(FI_VER, is_addr ? iface : NULL, NULL, is_addr ? FI_SOURCE : 0, hints, &list);
    if (rc || !list) {
        /* say what is missing: ask again without the RMA capabilities */
        struct fi_info *h2 = make_hints(provider, iface, 0), *l2 = NULL;
        if (h2 && fi_getinfo(FI_VER, NULL, NULL, 0, h2, &l2) == 0 && l2) {
            char miss[200];
            struct fi_info *best = NULL;
            for (struct fi_info *f = l2; f; f = f->next)
                if (f->ep_attr->type == FI_EP_RDM) {
                    best = f;
                    break;
                }
            if (!best)
                snprintf(why, len, "provider \"%s\" has no reliable datagram (FI_EP_RDM) endpoint", provider);
            else if (!check_caps(best, miss, sizeof(miss)))
                snprintf(why, len, "provider \"%s\" lacks %s", provider, miss);
            else
                snprintf(why, len, "provider \"%s\" cannot give what knit needs with these memory "
                         "registration modes: %s", provider, fi_strerror(-rc));
        } else {
            snprintf(why, len, "no libfabric provider \"%s\" here (fi_getinfo: %s; fi_info -l lists them)",
                     provider, fi_strerror(rc ? -rc : FI_ENODATA));
        }
        if (l2)
            fi_freeinfo(l2);
        if (h2)
            fi_freeinfo(h2);
        fi_freeinfo(hints);
        return -1;
    }
    fi_freeinfo(hints);
    struct fi_info *pick = NULL, *fallback = NULL;
    for (struct fi_info *f = list; f; f = f->next) {
        char miss[200];
        if (!check_caps(f, miss, sizeof(miss)))
            continue;
        if (iface && *iface && !is_addr) {
            if (f->domain_attr->name && !strcmp(f->domain_attr->name, iface)) {
                pick = f;
                break;
            }
            continue;
        }
        if (!fallback)
            fallback = f;
        if (!pick && !is_loopback(f))
            pick = f;
    }
    if (!pick && !(iface && *iface && !is_addr))
        pick = fallback;
    if (!pick) {
        if (iface && *iface && !is_addr)
            snprintf(why, len, "provider \"%s\" has no domain named \"%s\" (KNIT_NET_IFACE; fi_info -p '%s' "
                     "lists the domains)", provider, iface, provider);
        else
            snprintf(why, len, "provider \"%s\" offers no endpoint with FI_MSG and FI_RMA", provider);
        fi_freeinfo(list);
        return -1;
    }
    *out = fi_dupinfo(pick);
    fi_freeinfo(list);
    if (!*out) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    return 0;
}

/* KNIT_NET_PROVIDER is a list in order of preference ("a,b,c"): the first
 * one that opens here with what knit needs is used. */
static int get_info_any(const char *providers, const char *iface, struct fi_info **out, char *why, size_t len)
{
    char list[512], reasons[1024] = "";
    snprintf(list, sizeof(list), "%s", providers && *providers ? providers : "");
    char *save = NULL;
    int tried = 0;
    for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char one[512];
        tried++;
        if (get_info(p, iface, out, one, sizeof(one)) == 0)
            return 0;
        size_t used = strlen(reasons);
        snprintf(reasons + used, sizeof(reasons) - used, "%s%s", used ? "; " : "", one);
    }
    if (!tried)
        return get_info(NULL, iface, out, why, len);
    snprintf(why, len, "%s", reasons);
    return -1;
}

int kn_net_probe(const char *provider, const char *iface, char *what, size_t len)
{
    struct fi_info *fi = NULL;
    if (get_info_any(provider, iface, &fi, what, len) < 0)
        return 0;
    struct fid_fabric *fab = NULL;
    struct fid_domain *dom = NULL;
    struct fid_ep *ep = NULL;
    struct fid_av *av = NULL;
    struct fid_cq *cq = NULL;
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = 4};
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_MSG, .size = 64};
    int ok = 0, rc = fi_fabric(fi->fabric_attr, &fab, NULL);
    if (rc)
        snprintf(what, len, "fi_fabric: %s", fi_strerror(-rc));
    else if ((rc = fi_domain(fab, fi, &dom, NULL)))
        snprintf(what, len, "fi_domain: %s", fi_strerror(-rc));
    else if ((rc = fi_av_open(dom, &ava, &av, NULL)))
        snprintf(what, len, "fi_av_open: %s", fi_strerror(-rc));
    else if ((rc = fi_cq_open(dom, &cqa, &cq, NULL)))
        snprintf(what, len, "fi_cq_open: %s", fi_strerror(-rc));
    else if ((rc = fi_endpoint(dom, fi, &ep, NULL)))
        snprintf(what, len, "fi_endpoint: %s", fi_strerror(-rc));
    else if ((rc = fi_ep_bind(ep, &av->fid, 0)) || (rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
             (rc = fi_enable(ep)))
        snprintf(what, len, "setting up an endpoint: %s", fi_strerror(-rc));
    else {
        snprintf(what, len, "%s, domain %s, fabric %s: works", fi->fabric_attr->prov_name, fi->domain_attr->name,
                 fi->fabric_attr->name);
        ok = 1;
    }
    if (ep)
        fi_close(&ep->fid);
    if (cq)
        fi_close(&cq->fid);
    if (av)
        fi_close(&av->fid);
    if (dom)
        fi_close(&dom->fid);
    if (fab)
        fi_close(&fab->fid);
    fi_freeinfo(fi);
    return ok;
}

#define FI_CHECK(call, what)                                                  \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_) {                                                            \
            kn_error("%s (provider %s): %s", what, p->provider, fi_strerror(-rc_)); \
            st = KNIT_ERR_FABRIC;                                             \
            goto err;                                                         \
        }                                                                     \
    } while (0)

knit_status_t kn_net_open(const kn_net_params_t *p, kn_tl_recv_cb_t cb, void *cb_arg, kn_tl_t **out)
{
    knit_status_t st = KNIT_ERR_NOMEM;
    if (p->credits < 2 || p->credits > 250) {
        kn_error("KNIT_NET_CREDITS: %u is not between 2 and 250", p->credits);
        return KNIT_ERR_INVAL;
    }
    if (p->bounce_size < 256 || p->bounce_size > (64u << 20)) {
        kn_error("KNIT_NET_BOUNCE_SIZE: %zu is not between 256 and 64m", p->bounce_size);
        return KNIT_ERR_INVAL;
    }
    if (p->eager_max > (64u << 20)) {
        kn_error("KNIT_NET_EAGER_MAX: %zu is over 64m", p->eager_max);
        return KNIT_ERR_INVAL;
    }
    if (p->tx_bufs < 1 || p->tx_bufs > 65536 || p->inflight < 1 || p->inflight > 1024) {
        kn_error("KNIT_NET_TX_BUFS (1..65536) or KNIT_NET_INFLIGHT (1..1024) out of range: %u, %u", p->tx_bufs,
                 p->inflight);
        return KNIT_ERR_INVAL;
    }
    net_tl_t *n = calloc(1, sizeof(*n));
    if (!n)
        return KNIT_ERR_NOMEM;
    n->p = *p;
    n->pagemap_fd = -1;
    n->wait_fd = -1;
    n->next_key = 1;
    kn_list_init(&n->rc_lru);
    kn_list_init(&n->rma_retry);
    kn_pool_init(&n->rma_pool, "rdma operations", sizeof(rma_op_t), 64, 0);
    n->peers = calloc((size_t)p->size, sizeof(*n->peers));
    if (!n->peers)
        goto err;
    n->window = kn_net_window(p->credits + 3);
    for (int i = 0; i < p->size; i++) {
        if (!p->peers[i] || i == p->rank)
            continue;
        n->peers[i].on = 1;
        n->peers[i].credits = p->credits;
        n->peers[i].held = calloc(n->window, sizeof(rx_buf_t *));
        if (!n->peers[i].held)
            goto err;
        n->npeers++;
    }

    char why[512];
    if (get_info_any(p->provider, p->iface, &n->info, why, sizeof(why)) < 0) {
        kn_error("network transport: %s", why);
        st = KNIT_ERR_NOT_SUPPORTED;
        goto err;
    }
    struct fi_info *fi = n->info;
    int mm = fi->domain_attr->mr_mode;
    n->mr_local = !!(mm & FI_MR_LOCAL);
    n->mr_endpoint = !!(mm & FI_MR_ENDPOINT);
    n->mr_prov_key = !!(mm & FI_MR_PROV_KEY);
    n->mr_virt = !!(mm & FI_MR_VIRT_ADDR);
    if (!n->mr_virt && n->mr_prov_key) {
        /* RMA addresses are offsets into a registration whose start the
         * peer cannot know (our own keys carry it, see mr_register) */
        kn_error("network transport: provider %s lacks FI_MR_VIRT_ADDR and chooses its own keys "
                 "(FI_MR_PROV_KEY): not supported", fi->fabric_attr->prov_name);
        st = KNIT_ERR_NOT_SUPPORTED;
        goto err;
    }
    uint64_t order = fi->tx_attr->msg_order;
    if (!(order & FI_ORDER_SAS))
        kn_info("provider %s does not order sends (no FI_ORDER_SAS): knit reorders by sequence number",
                fi->fabric_attr->prov_name);
    n->write_dc = !(order & FI_ORDER_SAW);

    FI_CHECK(fi_fabric(fi->fabric_attr, &n->fabric, NULL), "fi_fabric");
    FI_CHECK(fi_domain(n->fabric, fi, &n->domain, NULL), "fi_domain");
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = (size_t)p->size};
    FI_CHECK(fi_av_open(n->domain, &ava, &n->av, NULL), "fi_av_open");
    size_t nrx = (size_t)n->npeers * n->window;
    /* a completion queue whose descriptors we can sleep on: the provider's
     * list of them, else its one fd, else none (waiting ranks then yield) */
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_MSG, .size = nrx + p->tx_bufs + 1024};
    static const enum fi_wait_obj waits[] = {FI_WAIT_FD, FI_WAIT_POLLFD};
    for (size_t w = 0; w < sizeof(waits) / sizeof(waits[0]) && !n->cq; w++) {
        cqa.wait_obj = waits[w];
        int rc = fi_cq_open(n->domain, &cqa, &n->cq, NULL);
        if (rc) {
            kn_debug("network completion queue with wait object %d: %s", (int)waits[w], fi_strerror(-rc));
            continue;
        }
        n->wait_pollfd = waits[w] == FI_WAIT_POLLFD;
        n->nwait = n->ngiven = 0;
        n->wait_fd = epoll_create1(EPOLL_CLOEXEC);
        if (n->wait_fd >= 0 && wait_members(n) == 0)
            break;
        if (n->wait_fd >= 0)
            close(n->wait_fd);
        n->wait_fd = -1;
        fi_close(&n->cq->fid);
        n->cq = NULL;
    }
    if (!n->cq) {
        kn_info("network completion queue without a wait descriptor: waiting ranks poll it");
        cqa.wait_obj = FI_WAIT_NONE;
        FI_CHECK(fi_cq_open(n->domain, &cqa, &n->cq, NULL), "fi_cq_open");
    }
    FI_CHECK(fi_endpoint(n->domain, fi, &n->ep, NULL), "fi_endpoint");
    FI_CHECK(fi_ep_bind(n->ep, &n->av->fid, 0), "fi_ep_bind (address vector)");
    FI_CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind (completion queue)");
    FI_CHECK(fi_enable(n->ep), "fi_enable");

    /* bounce buffers */
    n->rx_size = KN_ALIGN_UP(NET_HDRS + p->bounce_size, 64);
    n->nrx = (unsigned)nrx;
    n->inject_max = KN_MIN(fi->tx_attr->inject_size, 256);
    if (nrx) {
        n->rx_slab = aligned_alloc(PAGE, KN_ALIGN_UP(nrx * n->rx_size, PAGE));
        n->rx = calloc(nrx, sizeof(*n->rx));
        n->repost_q = calloc(nrx, sizeof(*n->repost_q));
        if (!n->rx_slab || !n->rx || !n->repost_q)
            goto err;
    }
    n->tx_slab = aligned_alloc(PAGE, KN_ALIGN_UP((size_t)p->tx_bufs * n->rx_size, PAGE));
    n->tx = calloc(p->tx_bufs, sizeof(*n->tx));
    if (!n->tx_slab || !n->tx)
        goto err;
    if (n->mr_local) {
        if (nrx && (st = mr_register(n, n->rx_slab, nrx * n->rx_size, &n->rx_mr)) != KNIT_OK)
            goto err;
        if ((st = mr_register(n, n->tx_slab, (size_t)p->tx_bufs * n->rx_size, &n->tx_mr)) != KNIT_OK)
            goto err;
        st = KNIT_ERR_NOMEM;
    }
    for (unsigned i = 0; i < p->tx_bufs; i++) {
        n->tx[i].op.kind = OP_TX;
        n->tx[i].buf = n->tx_slab + (size_t)i * n->rx_size;
        n->tx[i].next = n->tx_free;
        n->tx_free = &n->tx[i];
    }
    for (unsigned i = 0; i < nrx; i++) {
        n->rx[i].op.kind = OP_RX;
        n->rx[i].op.peer = -1;
        n->rx[i].buf = n->rx_slab + (size_t)i * n->rx_size;
        ssize_t r = fi_recv(n->ep, n->rx[i].buf, n->rx_size, n->rx_mr ? fi_mr_desc(n->rx_mr) : NULL,
                            FI_ADDR_UNSPEC, &n->rx[i].op.fctx);
        if (r) {
            kn_error("posting %u receive buffers (provider %s): %s", n->nrx, p->provider, fi_strerror((int)-r));
            st = KNIT_ERR_FABRIC;
            goto err;
        }
    }

    /* registration cache */
    int pins = !!(mm & FI_MR_ALLOCATED);
    n->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    int pm = pagemap_usable(n);
    n->rc_enabled = 1;
    switch (p->rcache_verify) {
    case 1:
        if (!pm) {
            kn_error("KNIT_RCACHE_VERIFY=pagemap, but page frames in /proc/self/pagemap are not readable here "
                     "(needs CAP_SYS_ADMIN)");
            st = KNIT_ERR_NOT_SUPPORTED;
            goto err;
        }
        n->rc_verify = 1;
        break;
    case 2:
        break;
    default:
        if (pins && pm)
            n->rc_verify = 1;
        else if (pins)
            n->rc_enabled = 0;
        break;
    }
    if (!n->rc_verify && n->pagemap_fd >= 0) {
        close(n->pagemap_fd);
        n->pagemap_fd = -1;
    }

    snprintf(n->desc, sizeof(n->desc), "%s, domain %s, fabric %s", fi->fabric_attr->prov_name,
             fi->domain_attr->name, fi->fabric_attr->name);
    kn_info("network transport: %s; mr_mode %#x, inject %zu, msg_order%s%s; rcache %s", n->desc, (unsigned)mm,
            fi->tx_attr->inject_size, order & FI_ORDER_SAS ? " SAS" : "", order & FI_ORDER_SAW ? " SAW" : "",
            !n->rc_enabled ? "off (provider pins, page frames hidden)" : n->rc_verify ? "verified by pagemap" : "on");

    n->base.ops = &net_ops;
    n->base.max_inline = n->inject_max > NET_HDRS ? n->inject_max - NET_HDRS : 0;
    n->base.max_payload = p->bounce_size;
    n->base.eager_max = p->eager_max;
    n->base.bulk_inflight = p->inflight;
    n->base.recv_cb = cb;
    n->base.cb_arg = cb_arg;
    *out = &n->base;
    return KNIT_OK;
err:
    net_close_all(n);
    return st;
}

/* A published name: provider-name length (1 byte), the provider's name,
 * then the endpoint address; peers check that they speak the same. */
knit_status_t kn_net_name(kn_tl_t *tl, void *buf, size_t *len)
{
    net_tl_t *n = net_of(tl);
    const char *prov = n->info->fabric_attr->prov_name;
    size_t plen = strlen(prov);
    if (plen > 255 || *len < 1 + plen)
        return KNIT_ERR_TRUNCATE;
    size_t l = *len - 1 - plen;
    int rc = fi_getname(&n->ep->fid, (char *)buf + 1 + plen, &l);
    if (rc) {
        kn_error("fi_getname: %s", fi_strerror(-rc));
        return rc == -FI_ETOOSMALL ? KNIT_ERR_TRUNCATE : KNIT_ERR_FABRIC;
    }
    ((unsigned char *)buf)[0] = (unsigned char)plen;
    memcpy((char *)buf + 1, prov, plen);
    n->addrlen = l;
    *len = 1 + plen + l;
    return KNIT_OK;
}

knit_status_t kn_net_connect(kn_tl_t *tl, int rank, const void *name, size_t len)
{
    net_tl_t *n = net_of(tl);
    if (rank < 0 || rank >= n->p.size || !n->peers[rank].on || !name || len < 1)
        return KNIT_ERR_INVAL;
    const unsigned char *b = name;
    const char *prov = n->info->fabric_attr->prov_name;
    size_t plen = b[0];
    if (len < 1 + plen || plen != strlen(prov) || memcmp(b + 1, prov, plen)) {
        kn_error("rank %d uses network provider \"%.*s\" but this rank uses \"%s\" "
                 "(set KNIT_NET_PROVIDER to one that every node has)",
                 rank, (int)(len < 1 + plen ? 0 : plen), (const char *)b + 1, prov);
        return KNIT_ERR_FABRIC;
    }
    if (len - 1 - plen != n->addrlen) {
        kn_error("rank %d published a network address of %zu bytes, expected %zu", rank, len - 1 - plen,
                 n->addrlen);
        return KNIT_ERR_PROTO;
    }
    int rc = fi_av_insert(n->av, b + 1 + plen, 1, &n->peers[rank].addr, 0, NULL);
    if (rc != 1) {
        kn_error("inserting the address of rank %d into the address vector: %s", rank,
                 rc < 0 ? fi_strerror(-rc) : "not inserted");
        return KNIT_ERR_FABRIC;
    }
    return KNIT_OK;
}

const char *kn_net_describe(kn_tl_t *tl)
{
    return net_of(tl)->desc;
}
