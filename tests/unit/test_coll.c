/* coll layer: knit_reduce_local for every (type, op) pair against a
 * reference written here, invalid pairs refused, dtype sizes. */
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "harness.h"
#include "knit.h"

enum { G_INT, G_FLT, G_CPLX, G_BOOL, G_BYTE, G_PAIR };

static int group_of(knit_dtype_t t)
{
    switch (t) {
    case KNIT_FLOAT: case KNIT_DOUBLE: case KNIT_LONG_DOUBLE: return G_FLT;
    case KNIT_FLOAT_COMPLEX: case KNIT_DOUBLE_COMPLEX: case KNIT_LONG_DOUBLE_COMPLEX: return G_CPLX;
    case KNIT_C_BOOL: return G_BOOL;
    case KNIT_BYTE: return G_BYTE;
    case KNIT_FLOAT_INT: case KNIT_DOUBLE_INT: case KNIT_LONG_INT: case KNIT_2INT: case KNIT_SHORT_INT:
    case KNIT_LONG_DOUBLE_INT: return G_PAIR;
    default: return G_INT;
    }
}

/* MPI 5.9.2, written out independently of the implementation's table */
static int valid(knit_op_kind_t op, knit_dtype_t t)
{
    int g = group_of(t);
    switch (op) {
    case KNIT_OP_SUM: case KNIT_OP_PROD: return g == G_INT || g == G_FLT || g == G_CPLX;
    case KNIT_OP_MAX: case KNIT_OP_MIN: return g == G_INT || g == G_FLT;
    case KNIT_OP_LAND: case KNIT_OP_LOR: case KNIT_OP_LXOR: return g == G_INT || g == G_BOOL;
    case KNIT_OP_BAND: case KNIT_OP_BOR: case KNIT_OP_BXOR: return g == G_INT || g == G_BYTE;
    case KNIT_OP_MAXLOC: case KNIT_OP_MINLOC: return g == G_PAIR;
    case KNIT_OP_REPLACE: case KNIT_OP_NO_OP: return 1;
    default: return 0;
    }
}

#define N 37 /* odd: vector loops plus a tail */

/* scalar reference for one element, per group */
#define REF_INT(T, op, x, y)                                                       \
    ((op) == KNIT_OP_SUM ? (T)((x) + (y)) : (op) == KNIT_OP_PROD ? (T)((x) * (y))  \
     : (op) == KNIT_OP_MAX ? ((x) > (y) ? (x) : (y))                               \
     : (op) == KNIT_OP_MIN ? ((x) < (y) ? (x) : (y))                               \
     : (op) == KNIT_OP_LAND ? (T)((x) && (y)) : (op) == KNIT_OP_LOR ? (T)((x) || (y)) \
     : (op) == KNIT_OP_LXOR ? (T)(!(x) != !(y)) : (op) == KNIT_OP_BAND ? (T)((x) & (y)) \
     : (op) == KNIT_OP_BOR ? (T)((x) | (y)) : (op) == KNIT_OP_BXOR ? (T)((x) ^ (y))  \
     : (op) == KNIT_OP_REPLACE ? (x) : (y))
#define REF_FLT(T, op, x, y)                                                       \
    ((op) == KNIT_OP_SUM ? (T)((x) + (y)) : (op) == KNIT_OP_PROD ? (T)((x) * (y))  \
     : (op) == KNIT_OP_MAX ? ((x) > (y) ? (x) : (y))                               \
     : (op) == KNIT_OP_MIN ? ((x) < (y) ? (x) : (y)) : (op) == KNIT_OP_REPLACE ? (x) : (y))
#define REF_BOOL(T, op, x, y)                                                      \
    ((op) == KNIT_OP_LAND ? (T)((x) && (y)) : (op) == KNIT_OP_LOR ? (T)((x) || (y))  \
     : (op) == KNIT_OP_LXOR ? (T)((x) != (y)) : (op) == KNIT_OP_REPLACE ? (x) : (y))
#define REF_CPLX(T, op, x, y)                                                      \
    ((op) == KNIT_OP_SUM ? (T)((x) + (y)) : (op) == KNIT_OP_PROD ? (T)((x) * (y))  \
     : (op) == KNIT_OP_REPLACE ? (x) : (y))

/* inputs: small values with signs, ties and zeros, so every op has work */
#define GEN(T, i, k) ((T)((((int)(i) * 7 + (k) * 13) % 11) - ((k) ? 3 : 5)))

#define CASE_SCALAR(DT, T, REF)                                                    \
    case DT: {                                                                     \
        T a[N], b[N], e[N];                                                        \
        for (int i = 0; i < N; i++) {                                              \
            a[i] = GEN(T, i, 1);                                                   \
            b[i] = GEN(T, i, 2);                                                   \
            e[i] = REF(T, op, a[i], b[i]);                                         \
        }                                                                          \
        KN_CHECK_EQ(knit_reduce_local(a, b, N, DT, &o), KNIT_OK);                  \
        if (memcmp(b, e, sizeof(b)))                                               \
            kn_test_fail(__FILE__, __LINE__, "%s on type %d: wrong result", opname, (int)DT); \
        break;                                                                     \
    }

#define CASE_PAIR(DT, VT)                                                          \
    case DT: {                                                                     \
        struct { VT v; int i; } a[N], b[N], e[N];                                  \
        memset(a, 0, sizeof(a));                                                   \
        memset(b, 0, sizeof(b));                                                   \
        memset(e, 0, sizeof(e));                                                   \
        for (int i = 0; i < N; i++) {                                              \
            a[i].v = (VT)(i % 5); a[i].i = i % 3;                                  \
            b[i].v = (VT)(i % 4); b[i].i = (i + 1) % 3;                            \
            int take = op == KNIT_OP_MAXLOC ? a[i].v > b[i].v : a[i].v < b[i].v;   \
            if (a[i].v == b[i].v)                                                  \
                take = a[i].i < b[i].i;                                            \
            if (op == KNIT_OP_REPLACE)                                             \
                take = 1;                                                          \
            if (op == KNIT_OP_NO_OP)                                               \
                take = 0;                                                          \
            e[i] = take ? a[i] : b[i];                                             \
        }                                                                          \
        KN_CHECK_EQ(knit_reduce_local(a, b, N, DT, &o), KNIT_OK);                  \
        for (int i = 0; i < N; i++)                                                \
            if (b[i].v != e[i].v || b[i].i != e[i].i)                              \
                kn_test_fail(__FILE__, __LINE__, "%s on pair type %d: element %d", opname, (int)DT, i); \
        break;                                                                     \
    }

static const char *opnames[] = {"sum", "prod", "max", "min", "land", "lor", "lxor", "band", "bor", "bxor",
                                "maxloc", "minloc", "replace", "no_op"};

static void check_pair(knit_op_kind_t op, knit_dtype_t t)
{
    knit_op_t o = {.kind = op};
    const char *opname = opnames[op];
    switch (t) {
        CASE_SCALAR(KNIT_BYTE, uint8_t, REF_INT)
        CASE_SCALAR(KNIT_CHAR, char, REF_INT)
        CASE_SCALAR(KNIT_SCHAR, signed char, REF_INT)
        CASE_SCALAR(KNIT_UCHAR, unsigned char, REF_INT)
        CASE_SCALAR(KNIT_INT8, int8_t, REF_INT)
        CASE_SCALAR(KNIT_UINT8, uint8_t, REF_INT)
        CASE_SCALAR(KNIT_INT16, int16_t, REF_INT)
        CASE_SCALAR(KNIT_UINT16, uint16_t, REF_INT)
        CASE_SCALAR(KNIT_INT32, int32_t, REF_INT)
        CASE_SCALAR(KNIT_UINT32, uint32_t, REF_INT)
        CASE_SCALAR(KNIT_INT64, int64_t, REF_INT)
        CASE_SCALAR(KNIT_UINT64, uint64_t, REF_INT)
        CASE_SCALAR(KNIT_SHORT, short, REF_INT)
        CASE_SCALAR(KNIT_USHORT, unsigned short, REF_INT)
        CASE_SCALAR(KNIT_INT, int, REF_INT)
        CASE_SCALAR(KNIT_UINT, unsigned, REF_INT)
        CASE_SCALAR(KNIT_LONG, long, REF_INT)
        CASE_SCALAR(KNIT_ULONG, unsigned long, REF_INT)
        CASE_SCALAR(KNIT_LONG_LONG, long long, REF_INT)
        CASE_SCALAR(KNIT_ULONG_LONG, unsigned long long, REF_INT)
        CASE_SCALAR(KNIT_WCHAR, wchar_t, REF_INT)
        CASE_SCALAR(KNIT_C_BOOL, bool, REF_BOOL)
        CASE_SCALAR(KNIT_FLOAT, float, REF_FLT)
        CASE_SCALAR(KNIT_DOUBLE, double, REF_FLT)
        CASE_SCALAR(KNIT_FLOAT_COMPLEX, float _Complex, REF_CPLX)
        CASE_SCALAR(KNIT_DOUBLE_COMPLEX, double _Complex, REF_CPLX)
        CASE_PAIR(KNIT_FLOAT_INT, float)
        CASE_PAIR(KNIT_DOUBLE_INT, double)
        CASE_PAIR(KNIT_LONG_INT, long)
        CASE_PAIR(KNIT_2INT, int)
        CASE_PAIR(KNIT_SHORT_INT, short)
    case KNIT_LONG_DOUBLE: { /* compare values, not the padding bytes */
        long double a[N], b[N], e[N];
        for (int i = 0; i < N; i++) {
            a[i] = GEN(long double, i, 1);
            b[i] = GEN(long double, i, 2);
            e[i] = REF_FLT(long double, op, a[i], b[i]);
        }
        KN_CHECK_EQ(knit_reduce_local(a, b, N, t, &o), KNIT_OK);
        for (int i = 0; i < N; i++)
            KN_CHECK(b[i] == e[i]);
        break;
    }
    case KNIT_LONG_DOUBLE_COMPLEX: {
        long double _Complex a[N], b[N], e[N];
        for (int i = 0; i < N; i++) {
            a[i] = GEN(long double, i, 1) + 2.0L * I;
            b[i] = GEN(long double, i, 2) - 1.0L * I;
            e[i] = REF_CPLX(long double _Complex, op, a[i], b[i]);
        }
        KN_CHECK_EQ(knit_reduce_local(a, b, N, t, &o), KNIT_OK);
        for (int i = 0; i < N; i++)
            KN_CHECK(b[i] == e[i]);
        break;
    }
    case KNIT_LONG_DOUBLE_INT: {
        struct { long double v; int i; } a[N], b[N];
        for (int i = 0; i < N; i++) {
            a[i].v = i % 5; a[i].i = i % 3;
            b[i].v = i % 4; b[i].i = (i + 1) % 3;
        }
        KN_CHECK_EQ(knit_reduce_local(a, b, N, t, &o), KNIT_OK);
        for (int i = 0; i < N; i++) {
            long double av = i % 5, bv = i % 4;
            int ai = i % 3, bi = (i + 1) % 3;
            int take = op == KNIT_OP_MAXLOC ? av > bv : av < bv;
            if (av == bv)
                take = ai < bi;
            if (op == KNIT_OP_REPLACE)
                take = 1;
            if (op == KNIT_OP_NO_OP)
                take = 0;
            KN_CHECK(b[i].v == (take ? av : bv) && b[i].i == (take ? ai : bi));
        }
        break;
    }
    default:
        kn_test_fail(__FILE__, __LINE__, "type %d not covered by the test", (int)t);
    }
}

KN_TEST(reduce_local_every_pair)
{
    int tested = 0, refused = 0;
    for (int op = KNIT_OP_SUM; op <= KNIT_OP_NO_OP; op++) {
        for (int t = 0; t < KNIT_DTYPE_COUNT; t++) {
            if (valid((knit_op_kind_t)op, (knit_dtype_t)t)) {
                check_pair((knit_op_kind_t)op, (knit_dtype_t)t);
                tested++;
            } else {
                char a[64] = {0}, b[64] = {0};
                knit_op_t o = {.kind = (knit_op_kind_t)op};
                if (knit_reduce_local(a, b, 1, (knit_dtype_t)t, &o) != KNIT_ERR_INVAL)
                    kn_test_fail(__FILE__, __LINE__, "%s on type %d accepted", opnames[op], t);
                refused++;
            }
        }
    }
    KN_CHECK(tested > 150);
    KN_CHECK(refused > 100);
}

static void rev_sub(const void *in, void *inout, size_t n, knit_dtype_t t, void *arg)
{
    KN_CHECK_EQ(t, KNIT_INT);
    KN_CHECK(arg == (void *)0x1234);
    const int *a = in;
    int *b = inout;
    for (size_t i = 0; i < n; i++)
        b[i] = a[i] - b[i]; /* non-commutative: in op inout */
}

KN_TEST(reduce_local_user_op)
{
    int a[5] = {10, 20, 30, 40, 50}, b[5] = {1, 2, 3, 4, 5};
    knit_op_t o = {.kind = KNIT_OP_USER, .fn = rev_sub, .arg = (void *)0x1234};
    KN_CHECK_EQ(knit_reduce_local(a, b, 5, KNIT_INT, &o), KNIT_OK);
    for (int i = 0; i < 5; i++)
        KN_CHECK_EQ(b[i], a[i] - (i + 1));
    knit_op_t nofn = {.kind = KNIT_OP_USER};
    KN_CHECK_EQ(knit_reduce_local(a, b, 5, KNIT_INT, &nofn), KNIT_ERR_INVAL);
}

KN_TEST(reduce_local_args)
{
    int a = 1, b = 2;
    knit_op_t sum = {.kind = KNIT_OP_SUM};
    KN_CHECK_EQ(knit_reduce_local(&a, &b, 1, KNIT_INT, NULL), KNIT_ERR_INVAL);
    KN_CHECK_EQ(knit_reduce_local(NULL, &b, 1, KNIT_INT, &sum), KNIT_ERR_INVAL);
    KN_CHECK_EQ(knit_reduce_local(&a, &b, 1, KNIT_DTYPE_COUNT, &sum), KNIT_ERR_INVAL);
    KN_CHECK_EQ(knit_reduce_local(NULL, NULL, 0, KNIT_INT, &sum), KNIT_OK);
    knit_op_t bad = {.kind = (knit_op_kind_t)99};
    KN_CHECK_EQ(knit_reduce_local(&a, &b, 1, KNIT_INT, &bad), KNIT_ERR_INVAL);
    KN_CHECK_EQ(b, 2);
}

KN_TEST(reduce_local_long_vectors)
{
    /* lengths around vector widths: every tail handled */
    for (size_t n = 0; n < 70; n++) {
        float a[70] = {0}, b[70] = {0};
        for (size_t i = 0; i < n; i++) {
            a[i] = (float)i;
            b[i] = 0.5f;
        }
        b[n < 70 ? n : 69] = -7; /* just past the end: must stay */
        knit_op_t sum = {.kind = KNIT_OP_SUM};
        KN_CHECK_EQ(knit_reduce_local(a, b, n, KNIT_FLOAT, &sum), KNIT_OK);
        for (size_t i = 0; i < n; i++)
            KN_CHECK(b[i] == (float)i + 0.5f);
        if (n < 70)
            KN_CHECK(b[n] == -7);
    }
}

KN_TEST(dtype_sizes)
{
    KN_CHECK_EQ(knit_dtype_size(KNIT_BYTE), 1);
    KN_CHECK_EQ(knit_dtype_size(KNIT_INT64), 8);
    KN_CHECK_EQ(knit_dtype_size(KNIT_DOUBLE_COMPLEX), 16);
    KN_CHECK_EQ(knit_dtype_size(KNIT_2INT), 8);
    KN_CHECK_EQ(knit_dtype_size(KNIT_DOUBLE_INT), 16);
    KN_CHECK_EQ(knit_dtype_size(KNIT_SHORT_INT), 8);
    KN_CHECK_EQ(knit_dtype_size(KNIT_LONG_DOUBLE), sizeof(long double));
    KN_CHECK_EQ(knit_dtype_size(KNIT_DTYPE_COUNT), 0);
    for (int t = 0; t < KNIT_DTYPE_COUNT; t++)
        KN_CHECK(knit_dtype_size((knit_dtype_t)t) > 0);
}
