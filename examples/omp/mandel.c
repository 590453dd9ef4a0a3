/*
 * A Mandelbrot picture computed by an ordinary OpenMP program: rows handed
 * out one at a time by a dynamic schedule, each row's pixels (iteration
 * counts) and the node that computed it written to arrays that main
 * allocated.  Under komp (knit's OpenMP runtime) the same binary runs across
 * several nodes: the arrays live in the replicated memory, the other nodes
 * write rows, and the master sees them at the releases komp does (each
 * chunk handed out, barriers).  With plain libgomp it is one node.
 *
 *   gcc -O2 -fopenmp examples/omp/mandel.c -o mandel \
 *       $(pkg-config --cflags --libs libmicrohttpd libpng) -lm
 *   ./mandel [-s 2048x2048] [-i 1000] [-o mandel.png]
 *   ./mandel --serve 8080          then open http://HOST:8080/
 *
 * Without --serve: a progress bar on stderr (when it is a terminal), the
 * picture written as a PNG, a summary on stdout (rows per node, a checksum
 * of the iteration counts that does not depend on how many threads or nodes
 * computed them, the time).  With --serve: an HTTP server (libmicrohttpd,
 * its own thread in the master process) shows the picture as it grows, each
 * row in the hue of the node that computed it; it keeps serving --linger
 * seconds after the end (see usage()).
 *
 * Nothing is synchronized per row beyond a plain (volatile) store of the
 * row's node after its pixels: no OpenMP or C11 atomic, each of which is a
 * lock of the job across nodes under knit.  Whoever shows progress counts
 * the rows whose node is set; knit sends a node's rows out each time it
 * hands that node its next chunk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <png.h>

#if MHD_VERSION < 0x00097002
typedef int MHD_Result_t; /* before 0.9.71 handlers returned int */
#else
typedef enum MHD_Result MHD_Result_t;
#endif

/* komp's: the node of the calling thread, how many nodes.  Weak, so that
 * the program also links and runs with libgomp (one node). */
extern int knit_omp_node(void) __attribute__((weak));
extern int knit_omp_num_nodes(void) __attribute__((weak));

static int this_node(void) { return knit_omp_node ? knit_omp_node() : 0; }
static int num_nodes(void)
{
    int n = knit_omp_num_nodes ? knit_omp_num_nodes() : 1;
    return n > 0 ? n : 1;
}

/* ---- the computation's parameters and its shared arrays ---- */

static int W = 2048, H = 2048, maxit = 1000, chunk = 1, nodes = 1;
static double cx0 = -0.75, cy0 = 0.0, span = 3.5; /* center, width of the view */
static uint32_t *counts;         /* W*H iteration counts, row-major */
static volatile int *row_node;    /* per row: the node that computed it, -1 before */
static volatile int finished;     /* the parallel loop is over */
static volatile int64_t start_us, elapsed_us;
static volatile sig_atomic_t quit_asked;   /* POST /quit, SIGINT or SIGTERM while lingering */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Iterations of z = z^2 + c from 0 until |z| > 2, at most maxit (maxit:
 * taken as inside the set). */
static uint32_t escape(double cr, double ci, int limit)
{
    double zr = 0, zi = 0, r2 = 0, i2 = 0;
    int n = 0;
    while (n < limit && r2 + i2 <= 4.0) {
        zi = 2 * zr * zi + ci;
        zr = r2 - i2 + cr;
        r2 = zr * zr;
        i2 = zi * zi;
        n++;
    }
    return (uint32_t)n;
}

static void compute_row(int r)
{
    double px = span / W; /* square pixels: the view's height follows from H */
    double ci = cy0 + (H / 2.0 - r - 0.5) * px;
    uint32_t *out = counts + (size_t)r * W;
    for (int c = 0; c < W; c++)
        out[c] = escape(cx0 + (c + 0.5 - W / 2.0) * px, ci, maxit);
}

static int rows_done(int *per_node)
{
    int done = 0;
    if (per_node)
        memset(per_node, 0, sizeof(int) * nodes);
    for (int r = 0; r < H; r++) {
        int n = row_node[r];
        if (n >= 0) {
            done++;
            if (per_node && n < nodes)
                per_node[n]++;
        }
    }
    return done;
}

/* ---- colors ---- */

/* The file's colors: a gradient of 16 stops, cycled along sqrt(count). */
static void file_color(uint32_t n, unsigned char *rgb)
{
    static const unsigned char stops[16][3] = {
        {66, 30, 15}, {25, 7, 26}, {9, 1, 47}, {4, 4, 73}, {0, 7, 100}, {12, 44, 138},
        {24, 82, 177}, {57, 125, 209}, {134, 181, 229}, {211, 236, 248}, {241, 233, 191},
        {248, 201, 95}, {255, 170, 0}, {204, 128, 0}, {153, 87, 0}, {106, 52, 3},
    };
    if (n >= (uint32_t)maxit) {
        rgb[0] = rgb[1] = rgb[2] = 0;
        return;
    }
    double p = fmod(sqrt((double)n) * 2.5, 16.0);
    int i = (int)p, j = (i + 1) % 16;
    double f = p - i;
    for (int k = 0; k < 3; k++)
        rgb[k] = (unsigned char)lrint(stops[i][k] + f * (stops[j][k] - stops[i][k]));
}

/* The web picture's colors: the hue of the node (golden-angle steps from
 * azure, so that neighbours differ), the brightness of the count. */
static void node_hue(int node, double rgb[3])
{
    double h = fmod(200.0 + 137.508 * node, 360.0) / 60.0, s = 0.85;
    double x = 1 - fabs(fmod(h, 2.0) - 1), m = 1 - s;
    double r = 0, g = 0, b = 0;
    switch ((int)h) {
    case 0: r = 1, g = x; break;
    case 1: r = x, g = 1; break;
    case 2: g = 1, b = x; break;
    case 3: g = x, b = 1; break;
    case 4: r = x, b = 1; break;
    default: r = 1, b = x; break;
    }
    rgb[0] = (m + s * r) * 255, rgb[1] = (m + s * g) * 255, rgb[2] = (m + s * b) * 255;
}

static double brightness(uint32_t n)
{
    if (n >= (uint32_t)maxit)
        return 0; /* inside: black */
    return 0.3 + 0.7 * sqrt(log((double)n) / log((double)maxit));
}

/* ---- memory of the master alone ----
 * What the web server builds (pictures, JSON, libpng's and zlib's state) is
 * anonymous mappings, not malloc: under komp the heap is shared, and every
 * byte the server wrote there would travel to the other nodes at the next
 * release. */

#define OB_HDR 64
struct obuf {
    unsigned char *data; /* OB_HDR bytes after the mapping's start */
    size_t len, cap;
};

static int ob_reserve(struct obuf *o, size_t more)
{
    if (o->cap - o->len >= more)
        return 0;
    size_t cap = o->cap ? o->cap : 4096 - OB_HDR;
    while (cap - o->len < more)
        cap = 2 * cap + OB_HDR;
    void *m = o->data ? mremap(o->data - OB_HDR, o->cap + OB_HDR, cap + OB_HDR, MREMAP_MAYMOVE)
                      : mmap(NULL, cap + OB_HDR, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    *(size_t *)m = cap + OB_HDR;
    o->data = (unsigned char *)m + OB_HDR;
    o->cap = cap;
    return 0;
}

static void ob_unmap(void *data) /* also MHD's free callback */
{
    if (data) {
        unsigned char *m = (unsigned char *)data - OB_HDR;
        munmap(m, *(size_t *)m);
    }
}

static int ob_printf(struct obuf *o, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = o->cap - o->len;
        int n = vsnprintf(room ? (char *)o->data + o->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return 0;
        }
        if (ob_reserve(o, (size_t)n + 1))
            return -1;
    }
}

/* libpng's allocations (and zlib's, through it): a bump arena, one per
 * picture, unmapped as a whole afterwards. */
struct arena {
    unsigned char *base;
    size_t size, used;
};

static void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (a->size - a->used < n)
        return NULL;
    void *p = a->base + a->used;
    a->used += n;
    return p;
}

static png_voidp png_arena_malloc(png_structp png, png_alloc_size_t n)
{
    return arena_alloc(png_get_mem_ptr(png), n);
}

static void png_arena_free(png_structp png, png_voidp p) { (void)png, (void)p; }

static void png_fail(png_structp png, png_const_charp msg)
{
    fprintf(stderr, "mandel: png: %s\n", msg);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

/* fill(ctx, y, row): row y's pixels, RGB or RGBA */
typedef void row_fn(const void *ctx, int y, unsigned char *row);

static int png_encode(int w, int h, int alpha, int level, row_fn *fill, const void *ctx,
                      png_rw_ptr write, void *wctx)
{
    size_t rowbytes = (size_t)w * (alpha ? 4 : 3);
    struct arena a = {.size = (4u << 20) + 8 * (rowbytes + 64)};
    a.base = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a.base == MAP_FAILED)
        return -1;
    volatile int ok = 0;
    png_infop info = NULL;
    png_structp png = png_create_write_struct_2(PNG_LIBPNG_VER_STRING, NULL, png_fail, png_warn, &a,
                                                png_arena_malloc, png_arena_free);
    unsigned char *row = arena_alloc(&a, rowbytes);
    if (png && row && (info = png_create_info_struct(png)) && !setjmp(png_jmpbuf(png))) {
        png_set_write_fn(png, wctx, write, NULL);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                     alpha ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_set_compression_level(png, level);
        png_write_info(png, info);
        for (int y = 0; y < h; y++) {
            fill(ctx, y, row);
            png_write_row(png, row);
        }
        png_write_end(png, NULL);
        ok = 1;
    }
    if (png)
        png_destroy_write_struct(&png, info ? &info : NULL);
    munmap(a.base, a.size);
    return ok ? 0 : -1;
}

static void png_to_file(png_structp png, png_bytep p, size_t n)
{
    if (fwrite(p, 1, n, png_get_io_ptr(png)) != n)
        png_error(png, strerror(errno));
}

static void png_to_obuf(png_structp png, png_bytep p, size_t n)
{
    struct obuf *o = png_get_io_ptr(png);
    if (ob_reserve(o, n))
        png_error(png, "out of memory");
    memcpy(o->data + o->len, p, n);
    o->len += n;
}

static void file_row(const void *ctx, int y, unsigned char *row)
{
    (void)ctx;
    const uint32_t *n = counts + (size_t)y * W;
    for (int x = 0; x < W; x++)
        file_color(n[x], row + 3 * x);
}

/* ---- the web view ---- */

struct view {
    int w, h;           /* the picture served: the image scaled down to fit */
    const int *col;     /* its columns' columns in the image */
    double (*hue)[3];   /* each node's color at full brightness */
};

static void view_row(const void *ctx, int y, unsigned char *row)
{
    const struct view *v = ctx;
    int r = (int)((int64_t)y * H / v->h);
    int node = row_node[r];
    if (node < 0) { /* not computed yet: transparent */
        memset(row, 0, 4 * (size_t)v->w);
        return;
    }
    const double *hue = v->hue[node < nodes ? node : 0];
    const uint32_t *n = counts + (size_t)r * W;
    for (int x = 0; x < v->w; x++) {
        double b = brightness(n[v->col[x]]);
        unsigned char *p = row + 4 * x;
        p[0] = (unsigned char)lrint(hue[0] * b);
        p[1] = (unsigned char)lrint(hue[1] * b);
        p[2] = (unsigned char)lrint(hue[2] * b);
        p[3] = 255;
    }
}

#define VIEW_MAX 512 /* the page's canvas: the longest side, in pixels */
static char page[8192];

static const char page_fmt[] =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mandel %dx%d</title>\n"
    "<style>\n"
    "body{margin:0;background:#181818;color:#ddd;font:14px/1.5 sans-serif}\n"
    "#picture{display:block;background:#000}\n"
    "#info{padding:6px 8px}\n"
    "#progress{width:%dpx}\n"
    "</style></head><body>\n"
    "<canvas id=\"picture\" width=\"%d\" height=\"%d\"></canvas>\n"
    "<div id=\"info\"><progress id=\"progress\" max=\"100\" value=\"0\"></progress><br>\n"
    "<span id=\"status\">waiting for the server</span></div>\n"
    "<script>\n"
    "\"use strict\";\n"
    "const cv = document.getElementById(\"picture\"), cx = cv.getContext(\"2d\");\n"
    "const bar = document.getElementById(\"progress\"), st = document.getElementById(\"status\");\n"
    "let shown = -1, loading = false, final = false;\n"
    "function show(rows, last) {\n"
    "  loading = true;\n"
    "  const img = new Image();\n"
    "  img.onload = () => {\n"
    "    cx.clearRect(0, 0, cv.width, cv.height);\n"
    "    cx.drawImage(img, 0, 0, cv.width, cv.height);\n"
    "    shown = rows;\n"
    "    loading = false;\n"
    "    if (last) {\n"
    "      final = true;\n"
    "      document.body.dataset.final = \"1\";\n"
    "      document.title += \" (done)\";\n"
    "    }\n"
    "  };\n"
    "  img.onerror = () => { loading = false; };\n"
    "  img.src = \"/image.png?max=%d&rows=\" + rows + (last ? \"&final\" : \"\");\n"
    "}\n"
    "async function poll() {\n"
    "  let p;\n"
    "  try {\n"
    "    p = await (await fetch(\"/progress\", {cache: \"no-store\"})).json();\n"
    "  } catch (e) {\n"
    "    st.textContent = \"the server has stopped\";\n"
    "    return;\n"
    "  }\n"
    "  bar.value = p.done ? 100 : Math.floor(100 * p.rows_done / p.rows);\n"
    "  st.textContent = `${p.rows_done} of ${p.rows} rows in ${p.time.toFixed(1)} s, ` +\n"
    "    `rows per node: ${p.rows_per_node.join(\" \")}` + (p.done ? \", done\" : \"\");\n"
    "  if (!loading && !final && (p.rows_done !== shown || p.done))\n"
    "    show(p.rows_done, p.done);\n"
    "  if (!final)\n"
    "    setTimeout(poll, 200);\n"
    "}\n"
    "poll();\n"
    "</script></body></html>\n";

static void view_size(int max, int *w, int *h)
{
    int big = W > H ? W : H;
    if (max <= 0 || max >= big) {
        *w = W, *h = H;
        return;
    }
    *w = (int)((int64_t)W * max / big), *h = (int)((int64_t)H * max / big);
    if (*w < 1)
        *w = 1;
    if (*h < 1)
        *h = 1;
}

/* the body: o (given to MHD, unmapped when sent) or a constant text */
static MHD_Result_t reply(struct MHD_Connection *c, unsigned status, const char *type, struct obuf *o,
                          const char *text, const char *allow)
{
    struct MHD_Response *r;
    if (o)
        r = MHD_create_response_from_buffer_with_free_callback(o->len, o->data, ob_unmap);
    else
        r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (o)
            ob_unmap(o->data);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    MHD_Result_t ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static MHD_Result_t serve_progress(struct MHD_Connection *c)
{
    int per[nodes];
    int done = finished;
    int rows = rows_done(per);
    int64_t t0 = start_us;
    double t = done ? elapsed_us / 1e6 : t0 ? (now_us() - t0) / 1e6 : 0;
    struct obuf o = {0};
    int bad = ob_printf(&o, "{\"rows_done\":%d,\"rows\":%d,\"done\":%s,\"time\":%.3f,\"width\":%d,\"height\":%d,"
                        "\"nodes\":%d,\"rows_per_node\":[", rows, H, done ? "true" : "false", t, W, H, nodes);
    for (int i = 0; i < nodes; i++)
        bad |= ob_printf(&o, "%s%d", i ? "," : "", per[i]);
    bad |= ob_printf(&o, "]}\n");
    if (bad) {
        ob_unmap(o.data);
        return MHD_NO;
    }
    return reply(c, MHD_HTTP_OK, "application/json", &o, NULL, NULL);
}

static MHD_Result_t serve_image(struct MHD_Connection *c)
{
    const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "max");
    int max = arg ? atoi(arg) : VIEW_MAX;
    struct view v;
    view_size(max, &v.w, &v.h);
    /* the tables: private too */
    struct obuf tab = {0};
    if (ob_reserve(&tab, sizeof(int) * v.w + sizeof(double[3]) * nodes))
        return MHD_NO;
    double(*hue)[3] = (void *)tab.data; /* first: the alignment of the mapping */
    int *col = (int *)(tab.data + sizeof(double[3]) * nodes);
    for (int i = 0; i < nodes; i++)
        node_hue(i, hue[i]);
    for (int x = 0; x < v.w; x++)
        col[x] = (int)((int64_t)x * W / v.w);
    v.col = col, v.hue = hue;
    struct obuf o = {0};
    int bad = png_encode(v.w, v.h, 1, 1, view_row, &v, png_to_obuf, &o);
    ob_unmap(tab.data);
    if (bad) {
        ob_unmap(o.data);
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", NULL, "cannot make the picture\n", NULL);
    }
    return reply(c, MHD_HTTP_OK, "image/png", &o, NULL, NULL);
}

static MHD_Result_t handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **req)
{
    static int seen;
    (void)cls, (void)version, (void)upload;
    if (!*req) { /* the headers: answer on the next call */
        *req = &seen;
        return MHD_YES;
    }
    if (*upload_size) { /* a body: ignored */
        *upload_size = 0;
        return MHD_YES;
    }
    if (!strcmp(url, "/quit")) {
        if (strcmp(method, MHD_HTTP_METHOD_POST))
            return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", NULL, "POST /quit\n", "POST");
        quit_asked = 1;
        return reply(c, MHD_HTTP_OK, "text/plain", NULL,
                     finished ? "bye\n" : "stopping once the picture is done\n", NULL);
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", NULL, "GET, HEAD or POST /quit\n", "GET, HEAD");
    if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", NULL, page, NULL);
    if (!strcmp(url, "/progress"))
        return serve_progress(c);
    if (!strcmp(url, "/image.png"))
        return serve_image(c);
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", NULL, "not found\n", NULL);
}

/* ---- the terminal's progress bar: a thread of the master, 10 times a second ---- */

static void draw_bar(int done)
{
    char bar[41];
    int fill = (int)((int64_t)done * 40 / H);
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(40 - fill));
    bar[40] = 0;
    fprintf(stderr, "\r[%s] %3d%% %d/%d rows %.1f s", bar, (int)((int64_t)done * 100 / H), done, H,
            (now_us() - start_us) / 1e6);
}

static void *progress_thread(void *arg)
{
    (void)arg;
    struct timespec tick = {0, 100 * 1000 * 1000};
    while (!finished) {
        draw_bar(rows_done(NULL));
        nanosleep(&tick, NULL);
    }
    draw_bar(rows_done(NULL));
    fputc('\n', stderr);
    return NULL;
}

static void on_signal(int sig) { (void)sig, quit_asked = 1; }

/* ---- arguments ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mandel [options]\n"
            "  -s WxH          picture size in pixels (default 2048x2048)\n"
            "  -i N            maximum iterations per pixel (default 1000)\n"
            "  -c N            rows per chunk of the dynamic schedule (default 1)\n"
            "  --center X,Y    center of the view (default -0.75,0)\n"
            "  --span S        width of the view in the complex plane (default 3.5);\n"
            "                  pixels are square, the height follows from H\n"
            "  -o FILE         the PNG to write (default mandel.png; with --serve only if given)\n"
            "  -q              no progress bar (it is drawn only when stderr is a terminal)\n"
            "  --serve PORT    show the picture as it grows at http://HOST:PORT/ (0: any\n"
            "                  free port, printed); also /progress (JSON), /image.png[?max=N]\n"
            "                  (rows in the hue of their node; max: longest side, 0: full size)\n"
            "                  and POST /quit\n"
            "  --linger SEC    with --serve: keep serving SEC seconds after the picture is\n"
            "                  done (default 60; 0: exit at once; -1: until stopped), ended\n"
            "                  sooner by POST /quit, SIGINT or SIGTERM\n"
            "  -h, --help      this text\n"
            "Prints size, iterations, rows per node, a checksum of the iteration counts\n"
            "(the same for any number of threads and nodes) and the time on stdout.\n");
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, char stop, double *out, const char **rest)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != stop || !isfinite(v))
        return -1;
    *out = v;
    if (rest)
        *rest = end + 1;
    return 0;
}

int main(int argc, char **argv)
{
    enum { OPT_CENTER = 256, OPT_SPAN, OPT_SERVE, OPT_LINGER };
    static const struct option longs[] = {
        {"center", required_argument, NULL, OPT_CENTER}, {"span", required_argument, NULL, OPT_SPAN},
        {"serve", required_argument, NULL, OPT_SERVE},   {"linger", required_argument, NULL, OPT_LINGER},
        {"help", no_argument, NULL, 'h'},                {NULL, 0, NULL, 0},
    };
    const char *outfile = NULL;
    int port = -1, linger = 60, quiet = 0, opt;
    while ((opt = getopt_long(argc, argv, "s:i:c:o:qh", longs, NULL)) != -1) {
        const char *rest;
        char *x;
        int bad = 0;
        switch (opt) {
        case 's':
            x = strchr(optarg, 'x');
            if (!x) {
                bad = 1;
                break;
            }
            *x = 0;
            bad = parse_int(optarg, 1, 32768, &W) || parse_int(x + 1, 1, 32768, &H) ||
                  (int64_t)W * H > (1 << 28);
            *x = 'x';
            break;
        case 'i': bad = parse_int(optarg, 1, INT32_MAX, &maxit); break;
        case 'c': bad = parse_int(optarg, 1, INT32_MAX, &chunk); break;
        case 'o': outfile = optarg; break;
        case 'q': quiet = 1; break;
        case OPT_CENTER: bad = parse_double(optarg, ',', &cx0, &rest) || parse_double(rest, 0, &cy0, NULL); break;
        case OPT_SPAN: bad = parse_double(optarg, 0, &span, NULL) || span <= 0; break;
        case OPT_SERVE: bad = parse_int(optarg, 0, 65535, &port); break;
        case OPT_LINGER: bad = parse_int(optarg, -1, INT32_MAX, &linger); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            const char *name = "";
            for (const struct option *o = longs; o->name; o++)
                if (o->val == opt)
                    name = o->name;
            if (*name)
                fprintf(stderr, "mandel: bad value '%s' for --%s\n", optarg, name);
            else
                fprintf(stderr, "mandel: bad value '%s' for -%c\n", optarg, opt);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mandel: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    int serve = port >= 0;
    if (!serve && !outfile)
        outfile = "mandel.png";

    /* shared: malloc'd by main, written by every node's threads */
    nodes = num_nodes();
    counts = malloc(sizeof(uint32_t) * W * H);
    row_node = malloc(sizeof(*row_node) * H);
    if (!counts || !row_node) {
        fprintf(stderr, "mandel: out of memory for %dx%d\n", W, H);
        return 1;
    }
    for (int r = 0; r < H; r++)
        row_node[r] = -1;

    struct MHD_Daemon *httpd = NULL;
    if (serve) {
        int vw, vh;
        view_size(VIEW_MAX, &vw, &vh);
        snprintf(page, sizeof(page), page_fmt, W, H, vw > 136 ? vw - 16 : 120, vw, vh, VIEW_MAX);
        httpd = MHD_start_daemon(MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                                 (uint16_t)port, NULL, NULL, handle, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
                                 (unsigned)30, MHD_OPTION_END);
        if (!httpd) {
            fprintf(stderr, "mandel: cannot serve on port %d\n", port);
            return 1;
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(httpd, MHD_DAEMON_INFO_BIND_PORT);
        char host[256] = "localhost";
        gethostname(host, sizeof(host) - 1);
        fprintf(stderr, "mandel: serving http://%s:%u/\n", host, info ? info->port : (unsigned)port);
    }

    pthread_t bar;
    int bar_on = !quiet && isatty(2) && !pthread_create(&bar, NULL, progress_thread, NULL);

    int threads = 0;
    int64_t t0 = now_us();
    start_us = t0;
#pragma omp parallel
    {
#pragma omp master
        threads = omp_get_num_threads();
#pragma omp for schedule(dynamic, chunk)
        for (int r = 0; r < H; r++) {
            compute_row(r);
            row_node[r] = this_node();
        }
    }
    int64_t t = now_us() - t0;
    elapsed_us = t;
    finished = 1;
    if (bar_on)
        pthread_join(bar, NULL);

    int per[nodes];
    int done = rows_done(per);
    uint64_t total = 0;
    uint32_t hash = 2166136261u; /* FNV-1a over the counts, row-major */
    for (size_t i = 0; i < (size_t)W * H; i++) {
        total += counts[i];
        hash = (hash ^ counts[i]) * 16777619u;
    }
    printf("size %dx%d\n", W, H);
    printf("max iterations %d\n", maxit);
    printf("view center %g,%g span %g\n", cx0, cy0, span);
    printf("nodes %d threads %d chunk %d\n", nodes, threads, chunk);
    printf("rows per node:");
    for (int i = 0; i < nodes; i++)
        printf(" %d", per[i]);
    printf("\n");
    printf("total iterations %llu\n", (unsigned long long)total);
    printf("checksum %08x\n", hash);
    printf("time %.3f s\n", t / 1e6);
    fflush(stdout);
    int status = 0;
    if (done != H) {
        fprintf(stderr, "mandel: only %d of %d rows were computed\n", done, H);
        status = 1;
    }

    if (outfile) {
        FILE *f = fopen(outfile, "wb");
        int bad = !f;
        if (!f)
            fprintf(stderr, "mandel: %s: %s\n", outfile, strerror(errno));
        else /* png_encode says why it failed */
            bad = png_encode(W, H, 0, 6, file_row, NULL, png_to_file, f) | fclose(f);
        if (bad) {
            fprintf(stderr, "mandel: cannot write %s\n", outfile);
            status = 1;
        } else {
            printf("wrote %s\n", outfile);
            fflush(stdout);
        }
    }

    if (httpd) {
        struct sigaction sa = {.sa_handler = on_signal};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        struct timespec tick = {0, 50 * 1000 * 1000};
        int64_t end = now_us() + (int64_t)linger * 1000000;
        while (!quit_asked && (linger < 0 || now_us() < end))
            nanosleep(&tick, NULL);
        MHD_stop_daemon(httpd);
    }
    free(counts);
    free((void *)row_node);
    return status;
}
