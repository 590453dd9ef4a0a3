/* reduction on int (and long, unsigned) with +, -, *, max, min, &&, ||,
 * &, |, ^, starting from values that are not the identities; on a loop,
 * on a parallel region (each thread adds 1: the team size) and on a for
 * inside a region. */
#include "omp_test.h"
#include <limits.h>

#define N 200

int main(void)
{
    int sum = 1000, diff = 0, prod = 3, mx = INT_MIN + 5, mn = INT_MAX - 5;
    int land = 1, lor = 0, land2 = 1, lor2 = 0, band = ~0, bor = 0x100000, bxor = 0x5a5a;
    long lsum = 1L << 40;
    unsigned usum = 0;
#pragma omp parallel for reduction(+ : sum, lsum, usum) reduction(- : diff) reduction(* : prod) \
    reduction(max : mx) reduction(min : mn) reduction(&& : land, land2) reduction(|| : lor, lor2) \
    reduction(& : band) reduction(| : bor) reduction(^ : bxor)
    for (int i = 0; i < N; i++) {
        sum += i * i - 150;
        diff -= i;
        lsum += (long)i << 20;
        usum += 4000000000u / (unsigned)(i + 1);
        prod *= (i % 20 == 3) ? 2 : (i % 50 == 7) ? -1 : 1;
        int v = (i * 37) % 101 - 50;
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
        land = land && (i < 1000);
        land2 = land2 && (i != 133);
        lor = lor || (i == 177);
        lor2 = lor2 || (i > 1000);
        band &= ~(1 << (i % 29)) | (i < 100 ? ~0 : 0x1000);
        bor |= 1 << (i % 17);
        bxor ^= i * 2654435761u >> 7;
    }
    int esum = 1000, ediff = 0, eprod = 3, emx = INT_MIN + 5, emn = INT_MAX - 5, eband = ~0, ebor = 0x100000, ebxor = 0x5a5a;
    long elsum = 1L << 40;
    unsigned eusum = 0;
    for (int i = 0; i < N; i++) {
        esum += i * i - 150;
        ediff -= i;
        elsum += (long)i << 20;
        eusum += 4000000000u / (unsigned)(i + 1);
        eprod *= (i % 20 == 3) ? 2 : (i % 50 == 7) ? -1 : 1;
        int v = (i * 37) % 101 - 50;
        emx = v > emx ? v : emx;
        emn = v < emn ? v : emn;
        eband &= ~(1 << (i % 29)) | (i < 100 ? ~0 : 0x1000);
        ebor |= 1 << (i % 17);
        ebxor ^= i * 2654435761u >> 7;
    }
    CHECK(sum == esum && diff == ediff && lsum == elsum && usum == eusum, "+: %d %d %ld %u, expected %d %d %ld %u", sum, diff, lsum, usum, esum, ediff, elsum, eusum);
    CHECK(prod == eprod, "*: %d, expected %d", prod, eprod);
    CHECK(mx == emx && mn == emn, "max %d min %d, expected %d %d", mx, mn, emx, emn);
    CHECK(land == 1 && land2 == 0 && lor == 1 && lor2 == 0, "&& %d %d, || %d %d", land, land2, lor, lor2);
    CHECK(band == eband && bor == ebor && bxor == ebxor, "& %#x | %#x ^ %#x, expected %#x %#x %#x", band, bor, bxor, eband, ebor, ebxor);
    printf("+ %d, - %d, + long %ld, + unsigned %u\n", sum, diff, lsum, usum);
    printf("* %d, max %d, min %d\n", prod, mx, mn);
    printf("&& %d %d, || %d %d\n", land, land2, lor, lor2);
    printf("& %#x, | %#x, ^ %#x\n", (unsigned)band, (unsigned)bor, (unsigned)bxor);

    int team = 0, ones = 5, n = 0;
#pragma omp parallel reduction(+ : team) reduction(* : ones)
    {
        team += 1;
        ones *= 1;
        if (omp_get_thread_num() == 0)
            n = omp_get_num_threads();
    }
    CHECK(team == n && ones == 5, "parallel reduction: + %d (team of %d), * %d", team, n, ones);
    printf("reduction(+) of 1 per thread on a region: the team size; (*) of 1s: %d\n", ones);

    int a = 0, m = 0;
#pragma omp parallel
    {
        for (int r = 0; r < 3; r++) {
#pragma omp for schedule(dynamic, 7) reduction(+ : a) reduction(max : m)
            for (int i = 0; i < N; i++) {
                a += i + r;
                m = i * r > m ? i * r : m;
            }
        }
    }
    CHECK(a == 3 * (N * (N - 1) / 2) + N * 3 && m == 2 * (N - 1), "for in a region, 3 times: + %d, max %d", a, m);
    printf("for reduction in a region, 3 times: + %d, max %d\n", a, m);
    return OK();
}
