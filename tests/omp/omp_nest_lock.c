/* nested locks: omp_set_nest_lock taken recursively (depth 4) by the
 * thread that holds it, omp_test_nest_lock returns the new nesting count
 * to the owner and 0 to others, a counter and an occupancy check under
 * the lock, omp_unset_nest_lock releases one level at a time. */
#include "omp_test.h"

static omp_nest_lock_t nl;
static long counter;
static int inside;

static void rec(int depth)
{
    omp_set_nest_lock(&nl);
    if (depth == 4)
        FLAG(++inside == 1);
    counter++;
    if (depth > 0)
        rec(depth - 1);
    if (depth == 4)
        inside--;
    omp_unset_nest_lock(&nl);
}

int main(void)
{
    omp_init_nest_lock(&nl);
#pragma omp parallel for schedule(dynamic, 3)
    for (int i = 0; i < 500; i++)
        rec(4);
    REPORT("nest lock");
    CHECK(counter == 2500, "counter %ld", counter);
    printf("recursive omp_set_nest_lock, depth 5, 500 times: counter %ld\n", counter);

    int c1 = omp_test_nest_lock(&nl);
    int c2 = omp_test_nest_lock(&nl);
    omp_set_nest_lock(&nl);
    int c4 = omp_test_nest_lock(&nl);
    int other = -1, after = -1;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            other = omp_test_nest_lock(&nl);
    }
    for (int k = 0; k < 4; k++)
        omp_unset_nest_lock(&nl);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1) {
            after = omp_test_nest_lock(&nl);
            if (after)
                omp_unset_nest_lock(&nl);
        }
    }
    CHECK(c1 == 1 && c2 == 2 && c4 == 4, "omp_test_nest_lock by the owner: %d %d %d", c1, c2, c4);
    CHECK(other == 0 || other == -1, "omp_test_nest_lock by another thread while held: %d", other);
    CHECK(after == 1 || after == -1, "omp_test_nest_lock by another thread once free: %d", after);
    printf("omp_test_nest_lock by the owner: %d, %d, then %d after a set\n", c1, c2, c4);
    printf("by another thread: 0 while held, 1 once released 4 times\n");
    omp_destroy_nest_lock(&nl);
    return OK();
}
