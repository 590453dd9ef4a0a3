/* tasks created in a single: 300 tasks with firstprivate data and
 * uneven work, all done at the single's barrier; a taskwait in the single
 * sees them done; tasks creating tasks; tasks created by every thread (10
 * each, counted); a task writing a variable of the creating frame before
 * a taskwait; an undeferred if(0) task runs before the creator goes on. */
#include "omp_test.h"

#define N 300
static long res[N];
static int count[N];

static void child(int i)
{
#pragma omp task firstprivate(i)
    {
        res[i] += 1000000;
#pragma omp atomic
        count[i]++;
    }
}

int main(void)
{
    int done = 0, per_thread = 0, n = 0, undeferred_ok = 0;
    long framed = 0;
#pragma omp parallel
    {
#pragma omp single
        {
            for (int i = 0; i < N; i++) {
#pragma omp task firstprivate(i)
                {
                    res[i] = work(i) + i;
#pragma omp atomic
                    done++;
                }
            }
#pragma omp taskwait
            int d;
#pragma omp atomic read
            d = done;
            FLAG(d == N);
            for (int i = 0; i < N; i++) {
#pragma omp task firstprivate(i)
                child(i);
            }
            long local = 0;
#pragma omp task shared(local)
            local = 4242;
#pragma omp taskwait
            framed = local;
            int flag = 0;
#pragma omp task if(0) shared(flag)
            flag = 1;
            undeferred_ok = flag == 1;
        }
#pragma omp master
        n = omp_get_num_threads();
        for (int k = 0; k < 10; k++) {
#pragma omp task
            {
#pragma omp atomic
                per_thread++;
            }
        }
    }
    REPORT("tasks");
    for (int i = 0; i < N; i++)
        CHECK(res[i] == work_value(i) + i + 1000000 && count[i] == 1, "task %d: %ld, its child ran %d times", i, res[i], count[i]);
    long s = 0;
    for (int i = 0; i < N; i++)
        s += res[i];
    printf("%d tasks from a single, then a child task each: sum %ld\n", N, s);
    CHECK(framed == 4242, "a task's write to its creator's frame: %ld", framed);
    printf("a task writing its creator's local before a taskwait: %ld\n", framed);
    CHECK(undeferred_ok, "an if(0) task had not run when its creator went on");
    printf("an if(0) task runs before its creator goes on: yes\n");
    CHECK(per_thread == 10 * n, "tasks by every thread: %d, team of %d", per_thread, n);
    printf("10 tasks by every thread, all run by the region's end: yes\n");
    return OK();
}
