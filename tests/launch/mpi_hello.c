/* A 4-rank MPI check for the Slurm harness (tests/launch/test_slurm_harness.sh):
 * every rank prints "hello RANK/SIZE sum=S" where S is the allreduce of the
 * ranks; exits 1 when the sum is wrong. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("hello %d/%d sum=%d\n", rank, size, sum);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
