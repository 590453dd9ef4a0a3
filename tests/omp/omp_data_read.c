/* data: system calls that write into shared memory (a global array, a
 * malloc'd block) after a parallel region wrote it: read(2), fread and
 * pread fill it, and every thread sees what they read. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "omp_test.h"

#define N 20000
static int garr[N];

static long sum_par(const int *a, int n)
{
    long s = 0;
#pragma omp parallel for reduction(+:s)
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

int main(void)
{
    char path[] = "/tmp/knit-omp-read.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    unlink(path);
    int *src = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        src[i] = i % 97;
    CHECK(write(fd, src, N * sizeof(int)) == (ssize_t)(N * sizeof(int)), "write");
    int *heap = malloc(N * sizeof(int));
#pragma omp parallel for
    for (int i = 0; i < N; i++)
        garr[i] = heap[i] = -1; /* (written in parallel: released, protected again) */
    CHECK(pread(fd, garr, N * sizeof(int), 0) == (ssize_t)(N * sizeof(int)), "pread into a global array");
    long s1 = sum_par(garr, N);
    lseek(fd, 0, SEEK_SET);
    CHECK(read(fd, heap, N * sizeof(int)) == (ssize_t)(N * sizeof(int)), "read into malloc'd memory");
    long s2 = sum_par(heap, N);
    FILE *f = fdopen(fd, "r");
    CHECK(f != NULL, "fdopen");
    rewind(f);
#pragma omp parallel for
    for (int i = 0; i < N; i++)
        garr[i] = 0;
    CHECK(fread(garr, sizeof(int), N, f) == N, "fread into a global array");
    long s3 = sum_par(garr, N);
    fclose(f);
    printf("pread, read and fread into shared memory: sums %ld %ld %ld\n", s1, s2, s3);
    free(src);
    free(heap);
    return OK();
}
