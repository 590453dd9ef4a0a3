/* omp locks: omp_init_lock/set/unset/destroy protecting a shared linked
 * list whose nodes each thread mallocs (the master walks and frees it
 * after), a counter taken with omp_test_lock in a retry loop, one thread
 * inside at a time; a lock in main's frame and one in a global; a lock
 * initialized inside a region by one thread. */
#include "omp_test.h"

#define N 1000
struct node {
    int value;
    struct node *next;
};

static omp_lock_t glock;
static struct node *head;
static int inside;

int main(void)
{
    omp_lock_t clock_;
    long counter = 0, tries = 0;
    omp_init_lock(&glock);
    omp_init_lock(&clock_);
    static omp_lock_t late;
#pragma omp parallel reduction(+ : tries)
    {
#pragma omp for schedule(dynamic, 8)
        for (int i = 0; i < N; i++) {
            struct node *nd = malloc(sizeof *nd);
            FLAG(nd != NULL);
            if (!nd)
                continue;
            nd->value = i;
            omp_set_lock(&glock);
            FLAG(++inside == 1);
            nd->next = head;
            head = nd;
            inside--;
            omp_unset_lock(&glock);
            while (!omp_test_lock(&clock_))
                tries++;
            counter += 3;
            omp_unset_lock(&clock_);
        }
#pragma omp single
        omp_init_lock(&late);
        for (int k = 0; k < 100; k++) {
            omp_set_lock(&late);
            counter++;
            omp_unset_lock(&late);
        }
    }
    REPORT("locks");
    omp_destroy_lock(&glock);
    omp_destroy_lock(&clock_);
    omp_destroy_lock(&late);
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    long len = 0, sum = 0;
    static int seen[N];
    for (struct node *nd = head, *next; nd; nd = next) {
        next = nd->next;
        CHECK(nd->value >= 0 && nd->value < N && !seen[nd->value], "list: value %d twice or out of range", nd->value);
        seen[nd->value] = 1;
        len++;
        sum += nd->value;
        free(nd);
    }
    CHECK(len == N && sum == (long)N * (N - 1) / 2, "list: %ld nodes, sum %ld", len, sum);
    printf("list built under omp_set_lock: %ld nodes, values sum %ld, none lost\n", len, sum);
    CHECK(counter == 3L * N + 100L * n, "counter %ld (team of %d)", counter, n);
    printf("omp_test_lock retry loop: counter %ld; a lock initialized in a single: 100 per thread\n", 3L * N);
    /* a lock that is free: omp_test_lock takes it; held: does not */
    omp_lock_t t;
    omp_init_lock(&t);
    int first = omp_test_lock(&t);
    int again = -1;
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 1)
        again = omp_test_lock(&t);
    omp_unset_lock(&t);
    omp_destroy_lock(&t);
    CHECK(first == 1 && (again == 0 || again == -1), "omp_test_lock: %d on a free lock, %d on a held one", first, again);
    printf("omp_test_lock: 1 on a free lock, 0 on one another thread holds\n");
    return OK();
}
