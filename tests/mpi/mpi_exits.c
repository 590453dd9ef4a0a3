/*
 * Ways an MPI job ends badly, for tests/mpi/test_mpi_exits.sh:
 *   mpi_exits init          MPI_Init, then finalize (the test makes init fail)
 *   mpi_exits nofinalize    rank 1 (or 0 alone) returns from main without MPI_Finalize
 *   mpi_exits buf SIDE BAD ORDER LEN
 *                           rank 0 sends LEN bytes to rank 1 (the last rank
 *                           of the job, on the last node) where one buffer
 *                           is bad: SIDE send (rank 0's) or recv (rank 1's);
 *                           BAD low (address 0x1000) or prot (a mapping with
 *                           no access, at an ordinary address); ORDER
 *                           sendfirst (the message is there before its
 *                           receive: the receiver pulls it) or recvfirst
 *                           (the receive is posted and announced first: the
 *                           sender pushes it, where pushes are used)
 *   mpi_exits buf ... return
 *                           the same, where the rank whose buffer is bad
 *                           returns the error (MPI_ERRORS_RETURN), prints
 *                           "rank R got <class>" and waits
 * A line "not reached" on stdout says the program went on where the job
 * should have ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mpi.h>

static void *bad_buffer(const char *how, size_t len)
{
    if (!strcmp(how, "low"))
        return (void *)0x1000;
    void *p = mmap(NULL, len ? len : 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mpi_exits: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* The rank whose buffer is bad returns its error instead (MPI_ERRORS_RETURN)
 * when "return" is given: it says which class it got, then waits for the
 * job to end, so that the other rank's own report of the failure ends it. */
static void report(int rank, int err, int ret)
{
    if (!ret || err == MPI_SUCCESS)
        return;
    char s[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(err, s, &len);
    printf("rank %d got %s\n", rank, s);
    fflush(stdout);
    for (;;)
        pause(); /* the other rank ends the job */
}

static void bad_buffers(int rank, int size, char **argv, int ret)
{
    const char *side = argv[2], *how = argv[3], *order = argv[4];
    size_t len = strtoul(argv[5], NULL, 0);
    int sender = 0, receiver = size - 1, go = 0, e = MPI_SUCCESS;
    char *good = malloc(len ? len : 1);
    memset(good, 7, len);
    void *sbuf = !strcmp(side, "send") ? bad_buffer(how, len) : good;
    void *rbuf = !strcmp(side, "recv") ? bad_buffer(how, len) : good;
    int mine = rank == (!strcmp(side, "send") ? sender : receiver);
    if (ret && mine)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request q;
    if (!strcmp(order, "sendfirst")) {
        /* the data's message, then "go" behind it: by the time "go" is
         * received the data's is there too, unexpected */
        if (rank == sender) {
            e = MPI_Isend(sbuf, (int)len, MPI_BYTE, receiver, 0, MPI_COMM_WORLD, &q);
            report(rank, e, ret);
            MPI_Send(&go, 1, MPI_INT, receiver, 1, MPI_COMM_WORLD);
            e = MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (rank == receiver) {
            MPI_Recv(&go, 1, MPI_INT, sender, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            e = MPI_Recv(rbuf, (int)len, MPI_BYTE, sender, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        /* the receive (announced), then "go" behind its announcement */
        if (rank == receiver) {
            e = MPI_Irecv(rbuf, (int)len, MPI_BYTE, sender, 0, MPI_COMM_WORLD, &q);
            report(rank, e, ret);
            MPI_Send(&go, 1, MPI_INT, sender, 1, MPI_COMM_WORLD);
            e = MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (rank == sender) {
            MPI_Recv(&go, 1, MPI_INT, receiver, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            e = MPI_Send(sbuf, (int)len, MPI_BYTE, receiver, 0, MPI_COMM_WORLD);
        }
    }
    report(rank, e, ret);
    /* the other rank's call may end well: an eager send is complete once
     * it left (its receiver fails on its own buffer afterwards) */
    if (mine)
        printf("not reached: rank %d's transfer with a bad buffer completed\n", rank);
}

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
    } else if (!strcmp(what, "buf") && (argc == 6 || argc == 7) && size > 1) {
        bad_buffers(rank, size, argv, argc == 7 && !strcmp(argv[6], "return"));
    } else {
        fprintf(stderr, "mpi_exits: unknown case '%s'\n", what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
