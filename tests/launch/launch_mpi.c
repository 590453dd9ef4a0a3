/*
 * An MPI program for the tests under other launchers (test_launchers.sh),
 * built there with knitcc:
 *   launch_mpi ok            point-to-point (eager and rendezvous sizes
 *                            around a ring), collectives, a split; prints
 *                            "ok <launcher's rank> of <size> on <nodes> nodes"
 *   launch_mpi late S        the launcher's rank 1 calls MPI_Init S seconds
 *                            after the others, then as ok
 *   launch_mpi long S        as ok, with S seconds between MPI_Init and the
 *                            work (a job longer than KNIT_BOOT_TIMEOUT)
 *   launch_mpi MODE TARGET   every rank records its pid in $LAUNCH_DIR and
 *                            meets the others; then rank TARGET fails by
 *                            MODE (kill: SIGKILL itself, abort: MPI_Abort
 *                            code 5, exit: exit(3) without MPI_Finalize) and
 *                            the others wait in a receive from it, forever
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "launch_mpi: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                 \
        }                                                                                 \
    } while (0)

static void ring(int rank, int size, int n)
{
    char *out = malloc((size_t)n), *in = malloc((size_t)n);
    CHECK(out && in);
    for (int i = 0; i < n; i++)
        out[i] = (char)(rank * 31 + i);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    CHECK(MPI_Sendrecv(out, n, MPI_CHAR, right, 7, in, n, MPI_CHAR, left, 7, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
    int count;
    MPI_Get_count(&st, MPI_CHAR, &count);
    CHECK(count == n && st.MPI_SOURCE == left);
    for (int i = 0; i < n; i++)
        CHECK(in[i] == (char)(left * 31 + i));
    free(out);
    free(in);
}

static int all_ok(int rank, int size)
{
    for (int n = 1; n <= 1 << 20; n *= 32)
        ring(rank, size, n);
    long v = rank + 1, sum = 0;
    CHECK(MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(sum == (long)size * (size + 1) / 2);
    int root = size - 1, b = rank == root ? 4242 : 0;
    CHECK(MPI_Bcast(&b, 1, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS && b == 4242);
    MPI_Comm half;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half) == MPI_SUCCESS);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    CHECK(hs == (size + 1 - rank % 2) / 2 && hr == hs - 1 - rank / 2);
    MPI_Comm_free(&half);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
    /* ranks that share a node, as knit sees them */
    MPI_Comm node;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS);
    int nr, leaders = 0;
    MPI_Comm_rank(node, &nr);
    int lead = nr == 0;
    CHECK(MPI_Allreduce(&lead, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    MPI_Comm_free(&node);
    return leaders;
}

/* The launcher's rank, before MPI_Init: PMI, PMIx or Slurm's variable. */
static int launcher_rank(void)
{
    const char *names[] = {"PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (getenv(names[i]))
            return atoi(getenv(names[i]));
    return -1;
}

int main(int argc, char **argv)
{
    int late = argc > 2 && !strcmp(argv[1], "late"), lng = argc > 2 && !strcmp(argv[1], "long");
    if (late && launcher_rank() == 1)
        usleep((useconds_t)(atof(argv[2]) * 1e6));
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (lng)
        usleep((useconds_t)(atof(argv[2]) * 1e6));
    if (argc > 1 && (!strcmp(argv[1], "ok") || late || lng)) {
        int nodes = all_ok(rank, size);
        printf("ok %d of %d on %d nodes\n", rank, size, nodes);
        MPI_Finalize();
        return 0;
    }
    const char *dir = getenv("LAUNCH_DIR");
    if (argc < 3 || !dir) {
        fprintf(stderr, "usage: launch_mpi ok | LAUNCH_DIR=dir launch_mpi kill|abort|exit TARGET\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int target = atoi(argv[2]);
    char path[4096];
    snprintf(path, sizeof(path), "%s/pid.%d", dir, rank);
    FILE *f = fopen(path, "w");
    CHECK(f && fprintf(f, "%d\n", (int)getpid()) > 0 && fclose(f) == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target) {
        if (!strcmp(argv[1], "kill"))
            raise(SIGKILL);
        else if (!strcmp(argv[1], "abort"))
            MPI_Abort(MPI_COMM_WORLD, 5);
        else
            exit(3);
    }
    int x;
    MPI_Recv(&x, 1, MPI_INT, target, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 1;
}
