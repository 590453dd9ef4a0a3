/* Written in the style of common MPI benchmarks and test suites (not taken
 * from any): the types, constants and calls they use, so that a missing
 * symbol or constant shows up here first.  A latency loop like the usual
 * ping-pong benchmarks, then assorted checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define MAX_MSG (1 << 16)
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); MPI_Abort(MPI_COMM_WORLD, 2); } while (0)

int main(int argc, char *argv[])
{
    int rank, size, provided, errs = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *s_buf, *r_buf;
    MPI_Alloc_mem(MAX_MSG, MPI_INFO_NULL, &s_buf);
    MPI_Alloc_mem(MAX_MSG, MPI_INFO_NULL, &r_buf);
    if (size >= 2 && rank < 2) {
        for (int sz = 1; sz <= MAX_MSG; sz *= 4) {
            memset(s_buf, 'a', sz);
            int iters = 100;
            double t0 = 0;
            for (int i = 0; i < iters + 10; i++) {
                if (i == 10)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(s_buf, sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(r_buf, sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(r_buf, sz, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(s_buf, sz, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
                }
            }
            double lat = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
            if (rank == 0 && getenv("SHOW_LATENCY"))
                printf("%-10d%12.2f\n", sz, lat);
            if (r_buf[sz - 1] != 'a')
                errs++;
        }
        /* window of nonblocking messages, as bandwidth tests do */
        MPI_Request reqs[64];
        MPI_Status stats[64];
        for (int i = 0; i < 64; i++) {
            if (rank == 0)
                MPI_Isend(s_buf, 4096, MPI_BYTE, 1, 100, MPI_COMM_WORLD, &reqs[i]);
            else
                MPI_Irecv(r_buf, 4096, MPI_BYTE, 0, 100, MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall(64, reqs, stats);
    }
    /* assorted: types, handles, conversions the suites use */
    MPI_Aint a1, a2;
    MPI_Get_address(&s_buf[0], &a1);
    MPI_Get_address(&s_buf[10], &a2);
    if (MPI_Aint_diff(a2, a1) != 10 || MPI_Aint_add(a1, 10) != a2)
        errs++;
    MPI_Offset off = 1;
    MPI_Count cnt;
    MPI_Type_size_x(MPI_OFFSET, &cnt);
    if (cnt != (MPI_Count)sizeof(off))
        errs++;
    MPI_Fint f = MPI_Comm_c2f(MPI_COMM_WORLD);
    MPI_Comm back = MPI_Comm_f2c(f);
    int res;
    MPI_Comm_compare(back, MPI_COMM_WORLD, &res);
    if (res != MPI_IDENT)
        errs++;
    int flag;
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    MPI_Is_thread_main(&flag);
    if (!flag)
        errs++;
    MPI_Query_thread(&provided);
    MPI_Pcontrol(0);
    MPI_Status st;
    MPI_Status_set_elements(&st, MPI_INT, 3);
    MPI_Count elems;
    MPI_Get_elements_x(&st, MPI_INT, &elems);
    if (elems != 3)
        errs++;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "key", "value");
    char val[MPI_MAX_INFO_VAL];
    MPI_Info_get(info, "key", MPI_MAX_INFO_VAL - 1, val, &flag);
    if (!flag || strcmp(val, "value"))
        errs++;
    int nkeys;
    MPI_Info_get_nkeys(info, &nkeys);
    if (nkeys != 1)
        errs++;
    MPI_Info_free(&info);
    MPI_Datatype t;
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t);
    if (t != MPI_DOUBLE)
        errs++;
    static const MPI_Datatype all[] = {MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR,
        MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT,
        MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_INT8_T,
        MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T,
        MPI_C_COMPLEX, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_AINT,
        MPI_OFFSET, MPI_COUNT, MPI_PACKED, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT,
        MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        int s;
        MPI_Aint lb, ext;
        MPI_Type_size(all[i], &s);
        MPI_Type_get_extent(all[i], &lb, &ext);
        if (s <= 0 || ext < s)
            FAIL("type %zu: size %d extent %ld\n", i, s, (long)ext);
        /* every predefined type goes through a self send */
        char in[64], out[64];
        memset(in, 0x5a, sizeof(in));
        MPI_Sendrecv(in, 2, all[i], rank, 5, out, 2, all[i], rank, 5, MPI_COMM_WORLD, &st);
        int c;
        MPI_Get_count(&st, all[i], &c);
        if (c != 2)
            FAIL("type %zu: count %d\n", i, c);
    }
    /* operators and IN_PLACE exist as constants for the collectives */
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR,
                    MPI_BXOR, MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    (void)ops;
    void *inplace = MPI_IN_PLACE;
    (void)inplace;
    MPI_Free_mem(s_buf);
    MPI_Free_mem(r_buf);
    if (errs)
        FAIL("%d errors\n", errs);
    if (rank == 0)
        printf("ok suite_style (%d ranks)\n", size);
    MPI_Finalize();
    return 0;
}
