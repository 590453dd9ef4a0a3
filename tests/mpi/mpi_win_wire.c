/*
 * Malformed one-sided messages (win_msg.c): a fence epoch's messages to a
 * rank on another node are wire data its fence must check.  Rank 0 sends
 * rank 1, on the window's own communicator, what no MPI call makes: too
 * short, a wrong kind, a put outside the window, a list whose pieces do
 * not add up, a get outside the window, an atomic whose size is not its
 * type's, a put whose data (sent behind it, as large ones are) is longer
 * than it says, then one good put.  Rank 1's fence reports an error; the good
 * put is applied, nothing else is touched; the get is answered (empty)
 * so that its origin does not wait; the next epoch works.  On one node
 * the window has no messages: nothing to send.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/win.h"
#include "mt.h"

static void send_raw(kn_mpi_win_t *w, const void *buf, size_t len)
{
    OK(MPI_Send(buf, (int)len, MPI_BYTE, 1, KN_WT_MSG0 + (int)(w->msg_epoch & 1), w->comm->handle));
    w->msg_sent[1]++;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int me = mt_rank;
    int *mem = calloc(64, sizeof(int));
    MPI_Win win;
    OK(MPI_Win_create(mem, 64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    kn_mpi_win_t *w = kn_mpi_win(win);
    CHECK(w != NULL);
    int wire = mt_size == 2 && w->msg;
    OK(MPI_Win_fence(0, win));
    MPI_Aint mine = (MPI_Aint)(uintptr_t)mem, all[2] = {0, 0};
    OK(MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD));
    if (wire && me == 0) {
        uint64_t b1 = (uint64_t)all[1];
        char buf[sizeof(kn_mpi_wm_hdr_t) + 64];
        kn_mpi_wm_hdr_t h;
        send_raw(w, "short", 5);
        memset(&h, 0, sizeof(h));
        h.kind = 0x12345678u;
        send_raw(w, &h, sizeof(h));
        /* a put 1 MiB past the window's start */
        memset(&h, 0, sizeof(h));
        h.kind = KN_WM_MAGIC | KN_WM_PUT;
        h.first = b1 + (1u << 20);
        h.cnt[0] = 4;
        h.bytes = 4;
        h.data = 1;
        memcpy(buf, &h, sizeof(h));
        memset(buf + sizeof(h), 0x55, 4);
        send_raw(w, buf, sizeof(h) + 4);
        /* a list of two pieces of 4 bytes that claims 12 */
        kn_mpi_wm_piece_t pc[2] = {{b1 + 8, 4}, {b1 + 16, 4}};
        h.levels = KN_WM_LIST;
        h.nseg = 2;
        h.bytes = 12;
        memcpy(buf, &h, sizeof(h));
        memcpy(buf + sizeof(h), pc, sizeof(pc));
        memset(buf + sizeof(h) + sizeof(pc), 0x55, 12);
        send_raw(w, buf, sizeof(h) + sizeof(pc) + 12);
        /* a get outside the window */
        memset(&h, 0, sizeof(h));
        h.kind = KN_WM_MAGIC | KN_WM_GET;
        h.first = b1 - 4096;
        h.cnt[0] = 8;
        h.bytes = 8;
        send_raw(w, &h, sizeof(h));
        /* an 8-byte fetch-and-add on a 4-byte type */
        memset(&h, 0, sizeof(h));
        h.kind = KN_WM_MAGIC | KN_WM_RMW;
        h.first = b1;
        h.cnt[0] = 8;
        h.bytes = 8;
        h.dtype = KNIT_INT32;
        h.aop = KNIT_RMA_FETCH_ADD;
        h.operand = 1;
        send_raw(w, &h, sizeof(h));
        /* a put of 4 bytes whose data, its next message, has 8 */
        memset(&h, 0, sizeof(h));
        h.kind = KN_WM_MAGIC | KN_WM_PUT;
        h.first = b1 + 40;
        h.cnt[0] = 4;
        h.bytes = 4;
        h.data = KN_WM_DATA_NEXT;
        send_raw(w, &h, sizeof(h));
        send_raw(w, "8 bytes", 8);
        /* and a good put of one int at slot 3 */
        int v = 777;
        OK(MPI_Put(&v, 1, MPI_INT, 1, 3, 1, MPI_INT, win));
    }
    int e = MPI_Win_fence(0, win);
    if (wire) {
        if (me == 1) {
            CHECK(e != MPI_SUCCESS); /* the fence says so */
            for (int i = 0; i < 64; i++)
                CHECK_EQ(mem[i], i == 3 ? 777 : 0);
        } else {
            OK(e);
            char r[16];
            MPI_Status s;
            int got = -1;
            for (int k = 0; k < 2; k++) { /* the get's and the atomic's answers: empty */
                OK(MPI_Recv(r, sizeof(r), MPI_BYTE, 1, KN_WT_REPLY, w->comm->handle, &s));
                OK(MPI_Get_count(&s, MPI_BYTE, &got));
                CHECK_EQ(got, 0);
            }
        }
    } else {
        OK(e);
    }
    /* the window goes on working */
    int v = 1000 + me;
    OK(MPI_Put(&v, 1, MPI_INT, (me + 1) % mt_size, 5, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK_EQ(mem[5], 1000 + (me + mt_size - 1) % mt_size);
    OK(MPI_Win_free(&win));
    free(mem);
    return mt_finish("win_wire");
}
