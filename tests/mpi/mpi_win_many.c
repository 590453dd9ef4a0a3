/*
 * Fence epochs of a window over many members on two nodes: past 64
 * members the fence adds up the epoch's message counts with
 * MPI_Reduce_scatter_block instead of one MPI_Allreduce (win_msg.c).
 * Every member puts a vector into every member's window, three epochs;
 * then, after a fourth, reads its neighbour's whole window with one get
 * (too big for a message), which finds every origin's pieces: the
 * reduce-scatter says that someone sent messages, and the get waits for
 * the neighbour to have applied its own.
 */
#include <stdlib.h>

#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int n = mt_size, me = mt_rank;
    int *mem = calloc((size_t)n * 64, sizeof(int)), src[32];
    MPI_Win w;
    OK(MPI_Win_create(mem, (MPI_Aint)((size_t)n * 64 * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                      &w));
    MPI_Datatype vec;
    OK(MPI_Type_vector(16, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    for (int ep = 1; ep <= 3; ep++) {
        OK(MPI_Win_fence(0, w));
        for (int i = 0; i < 16; i++)
            src[i] = ep * 100000 + me * 100 + i;
        for (int t = 0; t < n; t++)
            OK(MPI_Put(src, 16, MPI_INT, t, me * 64, 1, vec, w));
        OK(MPI_Win_fence(0, w));
        for (int o = 0; o < n; o++)
            for (int i = 0; i < 16; i++)
                CHECK_EQ(mem[o * 64 + 2 * i], ep * 100000 + o * 100 + i);
    }
    int *back = malloc((size_t)n * 64 * sizeof(int)), nb = (me + 1) % n;
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < 16; i++)
        src[i] = 4 * 100000 + me * 100 + i;
    for (int t = 0; t < n; t++)
        OK(MPI_Put(src, 16, MPI_INT, t, me * 64, 1, vec, w));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Get(back, n * 64, MPI_INT, nb, 0, n * 64, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    for (int o = 0; o < n; o++)
        for (int i = 0; i < 16; i++)
            CHECK_EQ(back[o * 64 + 2 * i], 4 * 100000 + o * 100 + i);
    free(back);
    OK(MPI_Win_free(&w));
    OK(MPI_Type_free(&vec));
    free(mem);
    return mt_finish("win_many");
}
