/*
 * Modules that try to take their daemon down (tests/modules/hostile.c and
 * the constructor and descriptor ones), run by tests/job/test_hostile.sh:
 *
 *   hostile_test MODDIR TESTMODDIR WHERE OPS
 *
 * WHERE: agent or switch.  OPS: the hostile module's request bytes to
 * try, each in a load of its own; then every constructor/descriptor
 * module is loaded and must be refused; then the fault module must still
 * be contained.  Throughout, the echo module (loaded first) must keep
 * answering: the daemon serves everyone else.  KNIT_MODULE_ISOLATION
 * (process or inprocess) says what each op is expected to end in.
 * Prints "ok hostile" on rank 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knit.h"

static int rank;
#define CHECK_WHAT what
static const char *what = "start";
#include "check.h"

static knit_ctx_t *ctx;
static knit_module_t *echo;
static const char *moddir, *testdir;
static int inproc;

static knit_status_t call(knit_module_t *m, const void *args, size_t len, char *res, size_t cap)
{
    knit_mreq_t *r;
    size_t rl = 0;
    knit_status_t st = knit_module_request(m, args, len, &r);
    if (st != KNIT_OK)
        return st;
    memset(res, 0, cap);
    st = knit_request_wait(&r, res, cap - 1, &rl);
    return st;
}

static void echo_works(void)
{
    char res[64], args[32];
    snprintf(args, sizeof(args), "alive %d", rank);
    knit_status_t st = call(echo, args, strlen(args) + 1, res, sizeof(res));
    CHECK(st == KNIT_OK && !strcmp(res, args), "echo answered %s '%s'", knit_strerror(st), res);
}

/* What one op ends in: a fault whose reason says want, or a result that
 * does (fault 0).  Ops whose end depends on what the scribbling hit
 * accept either (fault -1). */
typedef struct expect {
    char op;
    int fault;
    const char *want;
} expect_t;

static const expect_t in_process[] = {
    {'x', 1, "exited with status 3"}, {'_', 1, "exited with status 0"}, {'a', 1, "SIGABRT"},
    {'b', 1, "time budget exceeded"}, {'z', 1, "time budget exceeded (out for"}, {'t', 0, "no thread"}, {'s', -1, ""},
    {'r', -1, ""}, {'k', 0, "kill parent -1 (Operation not permitted), kill all -1 (Operation not permitted)"},
    {'e', 0, "exec: Operation not permitted"}, {'w', 0, "open: Operation not permitted"},
};
static const expect_t on_thread[] = {
    {'x', 1, "called exit(3)"}, {'_', 1, "called _exit(0)"}, {'a', 1, "called abort()"},
    {'b', 1, "time budget exceeded"}, {'z', 1, "time budget exceeded"}, {'t', 0, "no thread"},
};

static const expect_t *expect_of(char op)
{
    const expect_t *t = inproc ? on_thread : in_process;
    size_t n = inproc ? sizeof(on_thread) / sizeof(*t) : sizeof(in_process) / sizeof(*t);
    for (size_t i = 0; i < n; i++)
        if (t[i].op == op)
            return &t[i];
    return NULL;
}

static void try_op(char op, int where)
{
    static char label[32];
    snprintf(label, sizeof(label), "op %c", op);
    what = label;
    const expect_t *x = expect_of(op);
    CHECK(x, "no expectation for op %c in this isolation", op);
    char path[1024], res[256], args[160];
    snprintf(path, sizeof(path), "%s/hostile.so", testdir);
    knit_module_t *m;
    OK(knit_module_load(ctx, path, where, &m));
    OK(call(m, "o", 1, res, sizeof(res)));
    CHECK(!strcmp(res, "ok"), "first answer '%s'", res);
    OK(knit_barrier(knit_comm_world(ctx))); /* every rank got its answer before one kills it */
    char file[128];
    snprintf(file, sizeof(file), "/tmp/knit-hostile.%d.%d", (int)getpid(), rank);
    size_t len = 1;
    args[0] = op;
    if (op == 'w') {
        snprintf(args + 1, sizeof(args) - 1, "%s", file);
        len = strlen(args) + 1;
    }
    knit_status_t st = call(m, args, len, res, sizeof(res));
    if (x->fault == 1)
        CHECK(st == KNIT_ERR_MODULE_FAULT && strstr(res, x->want), "ended in %s '%s', not a fault saying '%s'",
              knit_strerror(st), res, x->want);
    else if (x->fault == 0)
        CHECK(st == KNIT_OK && strstr(res, x->want), "ended in %s '%s', not '%s'", knit_strerror(st), res, x->want);
    else
        CHECK(st == KNIT_OK || st == KNIT_ERR_MODULE_FAULT, "ended in %s '%s'", knit_strerror(st), res);
    if (op == 'w')
        CHECK(access(file, F_OK) != 0, "the module created %s", file);
    echo_works(); /* the daemon serves the others */
    if (x->fault == 1) { /* disabled everywhere */
        st = call(m, "o", 1, res, sizeof(res));
        CHECK(st == KNIT_ERR_MODULE_FAULT, "after the fault: %s '%s'", knit_strerror(st), res);
    }
    OK(knit_module_unload(m));
    OK(knit_barrier(knit_comm_world(ctx)));
    echo_works();
}

/* A module its daemon must refuse, saying want (and where). */
static void refused(const char *name, const char *want)
{
    what = name;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.so", testdir, name);
    knit_module_t *m = NULL;
    knit_status_t st = knit_module_load(ctx, path, KNIT_MODULE_AGENT, &m);
    const char *err = knit_module_last_error(ctx);
    CHECK(st != KNIT_OK && strstr(err, want), "load: %s '%s' does not say '%s'", knit_strerror(st), err, want);
    echo_works();
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: hostile_test MODDIR TESTMODDIR agent|switch OPS\n");
        return 2;
    }
    moddir = argv[1];
    testdir = argv[2];
    int where = strcmp(argv[3], "switch") ? KNIT_MODULE_AGENT : KNIT_MODULE_SWITCH;
    const char *ops = argv[4];
    const char *iso = getenv("KNIT_MODULE_ISOLATION");
    inproc = iso && !strcmp(iso, "inprocess");
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    if (rank == 0)
        printf("jobid %s\n", getenv("KNIT_JOBID") ? getenv("KNIT_JOBID") : "");
    char path[1024];
    snprintf(path, sizeof(path), "%s/echo.so", moddir);
    OK(knit_module_load(ctx, path, KNIT_MODULE_AGENT, &echo));
    echo_works();
    for (const char *o = ops; *o; o++)
        try_op(*o, where);
    if (where == KNIT_MODULE_AGENT) {
        refused("ctor_crash", "SIGSEGV");
        refused("ctor_crash", "constructors");
        refused("ctor_exit", "exited with status 0");
        refused("ctor_signal", "SIGSEGV");
        refused("wild_desc", "SIGSEGV (invalid memory access at 0x10)");
        /* after all that, a fault is still contained */
        what = "fault after";
        snprintf(path, sizeof(path), "%s/fault.so", moddir);
        knit_module_t *f;
        OK(knit_module_load(ctx, path, KNIT_MODULE_AGENT, &f));
        char res[256];
        knit_status_t st = call(f, "n", 1, res, sizeof(res));
        CHECK(st == KNIT_ERR_MODULE_FAULT && strstr(res, "SIGSEGV"), "null write: %s '%s'", knit_strerror(st), res);
        echo_works();
        OK(knit_module_unload(f));
    }
    what = "end";
    OK(knit_module_unload(echo));
    OK(knit_finalize(ctx));
    if (rank == 0)
        printf("ok hostile\n");
    return 0;
}
