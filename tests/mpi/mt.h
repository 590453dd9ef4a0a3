/* Helpers of the MPI test programs (tests/mpi): each program checks its
 * results, rank 0 prints "ok <name>" at the end, and any failed check
 * prints where and ends the job with MPI_Abort (exit status nonzero). */
#ifndef KNIT_TESTS_MPI_MT_H
#define KNIT_TESTS_MPI_MT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int mt_rank, mt_size;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "FAIL rank %d: %s:%d: %s\n", mt_rank, __FILE__, __LINE__, #cond); \
            fflush(stderr);                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)
#define CHECK_EQ(a, b)                                                                  \
    do {                                                                                \
        long long va_ = (long long)(a), vb_ = (long long)(b);                           \
        if (va_ != vb_) {                                                               \
            fprintf(stderr, "FAIL rank %d: %s:%d: %s = %lld, expected %s = %lld\n", mt_rank, \
                    __FILE__, __LINE__, #a, va_, #b, vb_);                              \
            fflush(stderr);                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)
#define OK(call) CHECK_EQ((call), MPI_SUCCESS)

static inline void mt_init(int *argc, char ***argv)
{
    OK(MPI_Init(argc, argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
}

/* A barrier over point-to-point (MPI_Barrier belongs to the collectives). */
static inline void mt_sync(MPI_Comm comm)
{
    int r, n, x = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    if (r == 0) {
        for (int i = 1; i < n; i++)
            OK(MPI_Recv(&x, 1, MPI_INT, i, 32000, comm, MPI_STATUS_IGNORE));
        for (int i = 1; i < n; i++)
            OK(MPI_Send(&x, 1, MPI_INT, i, 32001, comm));
    } else {
        OK(MPI_Send(&x, 1, MPI_INT, 0, 32000, comm));
        OK(MPI_Recv(&x, 1, MPI_INT, 0, 32001, comm, MPI_STATUS_IGNORE));
    }
}

static inline int mt_finish(const char *name)
{
    mt_sync(MPI_COMM_WORLD);
    if (mt_rank == 0)
        printf("ok %s (%d ranks)\n", name, mt_size);
    fflush(stdout);
    OK(MPI_Finalize());
    return 0;
}
#endif
