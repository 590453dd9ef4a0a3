/* The classic first MPI program: pi by the midpoint rule, each rank
 * integrating every size-th strip, combined with MPI_Reduce.  Builds with
 * any mpicc (make run builds it with knitcc). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);

    const long n = 10000000;
    double t0 = MPI_Wtime(), h = 1.0 / (double)n, sum = 0.0;
    for (long i = rank; i < n; i += size) {
        double x = h * ((double)i + 0.5);
        sum += 4.0 / (1.0 + x * x);
    }
    double mine = h * sum, pi = 0.0;
    MPI_Reduce(&mine, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("pi is %.15f (error %.1e) from %d ranks in %.3f s\n", pi, fabs(pi - M_PI), size, t);
    MPI_Finalize();
    return 0;
}
