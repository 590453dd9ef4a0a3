/*
 * An ARMCI program that never calls MPI_Init: ARMCI_Init starts knit
 * (through MPI_Init) and ARMCI_Finalize ends it.  With the argument
 * "early" it calls ARMCI_Put before ARMCI_Init, which must end the job
 * with a message naming the call.  Rank 0 prints "PASS name" or
 * "FAIL name: why".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <armci.h>

int main(int argc, char **argv)
{
    int x = 0;
    if (argc > 1 && !strcmp(argv[1], "early")) {
        ARMCI_Put(&x, &x, sizeof(x), 0);
        printf("not reached\n");
        return 0;
    }
    int inited = -1, finalized = -1, ok = 1;
    if (ARMCI_Initialized())
        ok = 0;
    if (ARMCI_Init_args(&argc, &argv) != 0)
        ok = 0;
    MPI_Initialized(&inited);
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    void **p = malloc(nproc * sizeof(void *));
    ARMCI_Malloc(p, sizeof(int));
    int t = (me + 1) % nproc, v = 100 + me;
    if (ARMCI_Put(&v, p[t], sizeof(int), t) != 0)
        ok = 0;
    ARMCI_Barrier();
    if (*(int *)p[me] != 100 + (me + nproc - 1) % nproc)
        ok = 0;
    if (!ARMCI_Initialized() || !inited)
        ok = 0;
    armci_msg_igop(&ok, 1, "min");
    ARMCI_Free(p[me]);
    free(p);
    ARMCI_Finalize();
    MPI_Finalized(&finalized);
    if (ARMCI_Initialized() || finalized != 1)
        ok = 0;
    if (me == 0)
        printf(ok ? "PASS init_without_mpi\n" : "FAIL init_without_mpi: MPI_Initialized %d, MPI_Finalized %d\n",
               inited, finalized);
    return ok ? 0 : 1;
}
