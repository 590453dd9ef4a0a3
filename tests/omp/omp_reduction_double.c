/* reduction on double (and float) with +, -, *, max, min, &&, ||: values
 * chosen so that every result is exact whatever the order (sums of
 * multiples of 1/4, products of powers of two). */
#include "omp_test.h"

#define N 400

int main(void)
{
    double sum = 0.5, diff = 0, prod = 1.5, mx = -1e300, mn = 1e300, land = 1, lor = 0, land2 = 2, lor2 = 0;
    float fsum = 0;
#pragma omp parallel for schedule(guided) reduction(+ : sum, fsum) reduction(- : diff) reduction(* : prod) \
    reduction(max : mx) reduction(min : mn) reduction(&& : land, land2) reduction(|| : lor, lor2)
    for (int i = 0; i < N; i++) {
        sum += (i % 37) * 0.25;
        fsum += (float)(i % 5) * 0.5f;
        diff -= i * 0.125;
        prod *= (i % 16 == 1) ? 2.0 : (i % 16 == 9) ? 0.25 : (i % 100 == 50) ? -1.0 : 1.0;
        double v = ((i * 53) % 97 - 48) * 0.5;
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
        land = land && (i * 0.5 < 1e6);
        land2 = land2 && (i != 300);
        lor = lor || (i == 399);
        lor2 = lor2 || (i * 0.5 > 1e6);
    }
    double esum = 0.5, ediff = 0, eprod = 1.5, emx = -1e300, emn = 1e300;
    float efsum = 0;
    for (int i = 0; i < N; i++) {
        esum += (i % 37) * 0.25;
        efsum += (float)(i % 5) * 0.5f;
        ediff -= i * 0.125;
        eprod *= (i % 16 == 1) ? 2.0 : (i % 16 == 9) ? 0.25 : (i % 100 == 50) ? -1.0 : 1.0;
        double v = ((i * 53) % 97 - 48) * 0.5;
        emx = v > emx ? v : emx;
        emn = v < emn ? v : emn;
    }
    CHECK(sum == esum && fsum == efsum && diff == ediff, "+ %.17g %.9g - %.17g, expected %.17g %.9g %.17g", sum, fsum, diff, esum, efsum, ediff);
    CHECK(prod == eprod, "* %.17g, expected %.17g", prod, eprod);
    CHECK(mx == emx && mn == emn, "max %g min %g, expected %g %g", mx, mn, emx, emn);
    CHECK(land == 1 && land2 == 0 && lor == 1 && lor2 == 0, "&& %g %g || %g %g", land, land2, lor, lor2);
    printf("+ %.17g, + float %.9g, - %.17g\n", sum, fsum, diff);
    printf("* %.17g\n", prod);
    printf("max %.17g, min %.17g\n", mx, mn);
    printf("&& %g %g, || %g %g\n", land, land2, lor, lor2);

    double big = 1.0, tiny = 1.0;
#pragma omp parallel for schedule(dynamic, 3) reduction(* : big, tiny)
    for (int i = 0; i < 900; i++) {
        big *= 2.0;
        tiny *= 0.5;
    }
    CHECK(big == 0x1p900 && tiny == 0x1p-900, "2^900: %a, 2^-900: %a", big, tiny);
    printf("* 900 twos %a, 900 halves %a\n", big, tiny);
    return OK();
}
