/*
 * Ways an MPI job ends badly, for tests/mpi/test_mpi_exits.sh:
 *   mpi_exits init          MPI_Init, then finalize (the test makes init fail)
 *   mpi_exits nofinalize    rank 1 (or 0 alone) returns from main without MPI_Finalize
 * A line "not reached" on stdout says the program went on where the job
 * should have ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(what, "init")) {
        printf("not reached: MPI_Init returned on rank %d\n", rank);
    } else if (!strcmp(what, "nofinalize")) {
        if (rank == (size > 1))
            return 0;
    } else {
        fprintf(stderr, "mpi_exits: unknown case '%s'\n", what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
