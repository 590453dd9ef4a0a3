/* atomic read/write as a flag between threads, without a barrier: thread
 * 0 fills a buffer then sets a flag with an atomic write seq_cst (a
 * flush), the last thread spins on an atomic read seq_cst until it sees
 * it, then must see the buffer; 20 rounds of ping-pong between them.
 * A wait gives up after 10 s (a failure, not a hang). */
#include "omp_test.h"

#define M 512
static long buf[M], pp[20];
static int flag, turn;

static int wait_for(int *where, int value)
{
    double t0 = omp_get_wtime();
    for (;;) {
        int v;
#pragma omp atomic read seq_cst
        v = *where;
        if (v == value)
            return 1;
        if (omp_get_wtime() - t0 > 10)
            return 0;
    }
}

int main(void)
{
    int n = 0;
#pragma omp parallel
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp master
        n = nt;
        if (nt > 1 && id == 0) {
            for (int i = 0; i < M; i++)
                buf[i] = i * 11;
#pragma omp atomic write seq_cst
            flag = 1;
        } else if (nt > 1 && id == nt - 1) {
            int seen = wait_for(&flag, 1);
            FLAG(seen);
            for (int i = 0; i < M && seen; i++)
                FLAG(buf[i] == i * 11);
        }
        if (nt > 1 && (id == 0 || id == nt - 1)) {
            int me = id == 0 ? 0 : 1;
            for (int r = 0; r < 20; r++) {
                if (!wait_for(&turn, 2 * r + me)) {
                    FLAG(0);
                    break;
                }
                pp[r] += 1;
#pragma omp atomic write seq_cst
                turn = 2 * r + me + 1;
            }
        }
    }
    REPORT("flag");
    if (n == 1) { /* nothing to hand over: the values the handoff would give */
        for (int i = 0; i < M; i++)
            buf[i] = i * 11;
        for (int r = 0; r < 20; r++)
            pp[r] = 2;
        turn = 40;
    }
    long s = 0;
    for (int i = 0; i < M; i++)
        s += buf[i];
    for (int r = 0; r < 20; r++)
        s += pp[r];
    CHECK(turn == 40 && s == 11L * M * (M - 1) / 2 + 40, "turn %d, sum %ld", turn, s);
    printf("a buffer handed over by an atomic write seq_cst / atomic read seq_cst flag, then 20 rounds of ping-pong: sum %ld\n", s);
    return OK();
}
