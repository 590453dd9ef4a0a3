/* data-sharing clauses: private (each thread its own, the original
 * untouched), firstprivate of a scalar, an array and a struct (copies of
 * the master's values), lastprivate of a for (the last iteration's value,
 * static and dynamic; the loop variable itself), default(none) with
 * shared. */
#include "omp_test.h"

struct pt {
    int x, y;
    double w[3];
};

int main(void)
{
    int p = 11, fp = 21, arr[5] = {1, 2, 3, 4, 5}, lp = -1, lp2 = -1;
    struct pt st = {3, 4, {0.5, 1.5, 2.5}};
    long ok_p = 0, ok_fp = 0, total = 0;
    int n = 0;
#pragma omp parallel private(p) firstprivate(fp, arr, st) reduction(+ : ok_p, ok_fp)
    {
        int id = omp_get_thread_num();
        p = id * 7;
        int good = fp == 21 && st.x == 3 && st.y == 4 && st.w[2] == 2.5;
        for (int k = 0; k < 5; k++)
            good = good && arr[k] == k + 1;
        fp += id;
        arr[0] = id;
        st.x = -id;
#pragma omp barrier
        ok_p += p == id * 7;
        ok_fp += good && fp == 21 + id && arr[0] == id && st.x == -id;
#pragma omp master
        n = omp_get_num_threads();
    }
    CHECK(ok_p == n && ok_fp == n, "private ok in %ld, firstprivate ok in %ld of %d threads", ok_p, ok_fp, n);
    CHECK(p == 11 && fp == 21 && arr[0] == 1 && st.x == 3, "originals changed: %d %d %d %d", p, fp, arr[0], st.x);
    printf("private and firstprivate (scalar, array, struct): each thread its own copy, originals %d %d %d %d\n", p, fp, arr[0], st.x);
    int i;
#pragma omp parallel for lastprivate(lp, i) schedule(static)
    for (i = 0; i < 1000; i++)
        lp = i * 3;
    CHECK(lp == 2997 && i == 1000, "lastprivate static: %d, i %d", lp, i);
#pragma omp parallel for lastprivate(lp2) schedule(dynamic, 7)
    for (int j = 0; j < 999; j++)
        lp2 = j + 1;
    CHECK(lp2 == 999, "lastprivate dynamic: %d", lp2);
    printf("lastprivate: %d (static), %d (dynamic,7); the loop variable after: %d\n", lp, lp2, i);
    const int lim = 500;
#pragma omp parallel for default(none) shared(lim) reduction(+ : total)
    for (int k = 0; k < lim; k++)
        total += k;
    CHECK(total == 124750, "default(none): %ld", total);
    printf("default(none) shared(lim): sum %ld\n", total);
    return OK();
}
