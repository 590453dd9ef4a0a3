/*
 * gcc's out-of-line atomics (docs/openmp.md).  `knitcc -fopenmp` compiles
 * with -fno-inline-atomics, so the program's atomic operations (omp
 * atomic, and the combining step of reductions) call these rather than
 * libatomic's.  On memory of the region with more than one node, an
 * operation holds a lock of the job for its address's stripe: the grant
 * brings the other nodes' last values, the unlock sends this one (one
 * round trip to node 0's agent and a release).  Anywhere else, and with
 * one node, they are the CPU's atomics.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dsm/dsm_int.h"
#include "omp/komp.h"

#define ID_STRIPE 0x4b4f4d5100000000ull  /* "KOMQ" + the stripe */
#define STRIPES 256

static inline int shared(const void *p)
{
    return komp.multi && komp_in_region(p);
}

static uint64_t stripe(const void *p)
{
    return ID_STRIPE | (((uintptr_t)p >> 4) % STRIPES);
}

/* body on the n bytes at p, under the lock of p's stripe; what the
 * unlock releases follows the order mo (komp_unlock_global_atomic) */
#define LOCKED(p, n, mo, body)                                                                               \
    do {                                                                                                     \
        uint64_t id_ = stripe(p);                                                                            \
        komp_lock_global(id_);                                                                               \
        body;                                                                                                \
        komp_unlock_global_atomic(id_, (p), (n), (mo));                                                      \
    } while (0)

/* the operations of size N on type T */
#define ATOMICS(N, T)                                                                                        \
    T komp_load_##N(const volatile void *p, int mo) __asm__("__atomic_load_" #N);                            \
    T komp_load_##N(const volatile void *p, int mo)                                                          \
    {                                                                                                        \
        if (!shared((const void *)p))                                                                        \
            return __atomic_load_n((const volatile T *)p, __ATOMIC_SEQ_CST);                                 \
        T v;                                                                                                 \
        LOCKED((const void *)p, N, mo, v = *(const volatile T *)p);                                          \
        return v;                                                                                            \
    }                                                                                                        \
    void komp_store_##N(volatile void *p, T v, int mo) __asm__("__atomic_store_" #N);                        \
    void komp_store_##N(volatile void *p, T v, int mo)                                                       \
    {                                                                                                        \
        if (!shared((const void *)p)) {                                                                      \
            __atomic_store_n((volatile T *)p, v, __ATOMIC_SEQ_CST);                                          \
            return;                                                                                          \
        }                                                                                                    \
        LOCKED((const void *)p, N, mo, *(volatile T *)p = v);                                                \
    }                                                                                                        \
    T komp_exchange_##N(volatile void *p, T v, int mo) __asm__("__atomic_exchange_" #N);                     \
    T komp_exchange_##N(volatile void *p, T v, int mo)                                                       \
    {                                                                                                        \
        if (!shared((const void *)p))                                                                        \
            return __atomic_exchange_n((volatile T *)p, v, __ATOMIC_SEQ_CST);                                \
        T old;                                                                                               \
        LOCKED((const void *)p, N, mo, old = *(volatile T *)p; *(volatile T *)p = v);                        \
        return old;                                                                                          \
    }                                                                                                        \
    bool komp_cas_##N(volatile void *p, void *expected, T desired, bool weak, int smo, int fmo)              \
        __asm__("__atomic_compare_exchange_" #N);                                                            \
    bool komp_cas_##N(volatile void *p, void *expected, T desired, bool weak, int smo, int fmo)              \
    {                                                                                                        \
        (void)weak;                                                                                          \
        (void)fmo;                                                                                           \
        if (!shared((const void *)p))                                                                        \
            return __atomic_compare_exchange_n((volatile T *)p, (T *)expected, desired, 0, __ATOMIC_SEQ_CST, \
                                               __ATOMIC_SEQ_CST);                                            \
        bool ok;                                                                                             \
        LOCKED((const void *)p, N, smo, {                                                                    \
            T cur = *(volatile T *)p;                                                                        \
            ok = memcmp(&cur, expected, sizeof(T)) == 0;                                                     \
            if (ok)                                                                                          \
                *(volatile T *)p = desired;                                                                  \
            else                                                                                             \
                memcpy(expected, &cur, sizeof(T));                                                           \
        });                                                                                                  \
        return ok;                                                                                           \
    }                                                                                                        \
    RMW(N, T, add, old + v)                                                                                  \
    RMW(N, T, sub, old - v)                                                                                  \
    RMW(N, T, and, old & v)                                                                                  \
    RMW(N, T, or, old | v)                                                                                   \
    RMW(N, T, xor, old ^ v)                                                                                  \
    RMW(N, T, nand, ~(old & v))

/* fetch_OP returns the old value, OP_fetch the new one */
#define RMW(N, T, op, expr)                                                                                  \
    static T rmw_##op##_##N(volatile void *p, T v, T *newv, int mo)                                          \
    {                                                                                                        \
        T old, nv;                                                                                           \
        LOCKED((const void *)p, N, mo, old = *(volatile T *)p; nv = (T)(expr); *(volatile T *)p = nv);       \
        *newv = nv;                                                                                          \
        return old;                                                                                          \
    }                                                                                                        \
    T komp_fetch_##op##_##N(volatile void *p, T v, int mo) __asm__("__atomic_fetch_" #op "_" #N);            \
    T komp_fetch_##op##_##N(volatile void *p, T v, int mo)                                                   \
    {                                                                                                        \
        if (!shared((const void *)p))                                                                        \
            return __atomic_fetch_##op((volatile T *)p, v, __ATOMIC_SEQ_CST);                                \
        T nv;                                                                                                \
        return rmw_##op##_##N(p, v, &nv, mo);                                                                \
    }                                                                                                        \
    T komp_##op##_fetch_##N(volatile void *p, T v, int mo) __asm__("__atomic_" #op "_fetch_" #N);            \
    T komp_##op##_fetch_##N(volatile void *p, T v, int mo)                                                   \
    {                                                                                                        \
        if (!shared((const void *)p))                                                                        \
            return __atomic_##op##_fetch((volatile T *)p, v, __ATOMIC_SEQ_CST);                              \
        T nv;                                                                                                \
        rmw_##op##_##N(p, v, &nv, mo);                                                                       \
        return nv;                                                                                           \
    }

ATOMICS(1, uint8_t)
ATOMICS(2, uint16_t)
ATOMICS(4, uint32_t)
ATOMICS(8, uint64_t)

/* 16 bytes and the generic forms (any size): always under a lock, as
 * libatomic does where the CPU has no instruction for them. */
static pthread_mutex_t wide = PTHREAD_MUTEX_INITIALIZER;

#define WIDE(p, n, mo, body)                                                                                 \
    do {                                                                                                     \
        if (shared(p)) {                                                                                     \
            LOCKED(p, n, mo, body);                                                                          \
        } else {                                                                                             \
            pthread_mutex_lock(&wide);                                                                       \
            body;                                                                                            \
            pthread_mutex_unlock(&wide);                                                                     \
        }                                                                                                    \
    } while (0)

void komp_load(size_t n, const volatile void *p, void *ret, int mo) __asm__("__atomic_load");
void komp_load(size_t n, const volatile void *p, void *ret, int mo)
{
    WIDE((const void *)p, n, mo, memcpy(ret, (const void *)p, n));
}

void komp_store(size_t n, volatile void *p, void *val, int mo) __asm__("__atomic_store");
void komp_store(size_t n, volatile void *p, void *val, int mo)
{
    WIDE((const void *)p, n, mo, memcpy((void *)p, val, n));
}

void komp_exchange(size_t n, volatile void *p, void *val, void *ret, int mo) __asm__("__atomic_exchange");
void komp_exchange(size_t n, volatile void *p, void *val, void *ret, int mo)
{
    WIDE((const void *)p, n, mo, {
        memcpy(ret, (const void *)p, n);
        memcpy((void *)p, val, n);
    });
}

bool komp_cas(size_t n, volatile void *p, void *expected, void *desired, int smo, int fmo)
    __asm__("__atomic_compare_exchange");
bool komp_cas(size_t n, volatile void *p, void *expected, void *desired, int smo, int fmo)
{
    (void)fmo;
    bool ok;
    WIDE((const void *)p, n, smo, {
        ok = memcmp((const void *)p, expected, n) == 0;
        if (ok)
            memcpy((void *)p, desired, n);
        else
            memcpy(expected, (const void *)p, n);
    });
    return ok;
}

typedef unsigned __int128 u128_t;

u128_t komp_load_16(const volatile void *p, int mo) __asm__("__atomic_load_16");
u128_t komp_load_16(const volatile void *p, int mo)
{
    u128_t v;
    komp_load(16, p, &v, mo);
    return v;
}

void komp_store_16(volatile void *p, u128_t v, int mo) __asm__("__atomic_store_16");
void komp_store_16(volatile void *p, u128_t v, int mo)
{
    komp_store(16, p, &v, mo);
}

bool komp_cas_16(volatile void *p, void *expected, u128_t desired, bool weak, int smo, int fmo)
    __asm__("__atomic_compare_exchange_16");
bool komp_cas_16(volatile void *p, void *expected, u128_t desired, bool weak, int smo, int fmo)
{
    (void)weak;
    return komp_cas(16, p, expected, &desired, smo, fmo);
}

bool komp_is_lock_free(size_t n, const volatile void *p) __asm__("__atomic_is_lock_free");
bool komp_is_lock_free(size_t n, const volatile void *p)
{
    (void)p;
    return !komp.multi && (n == 1 || n == 2 || n == 4 || n == 8);
}
