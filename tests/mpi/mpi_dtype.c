/* Derived datatypes round-tripped through send/recv between neighbours
 * (and to self): odd strides, negative lower bounds, indexed, struct with
 * padding, subarrays in both orders, resized, dup; sent with one type and
 * received with another; Get_elements on partial receives; Pack/Unpack;
 * envelopes and contents. */
#include "mt.h"

/* Send count elements of stype from sbuf to the right neighbour and
 * receive rcount of rtype from the left into rbuf. */
static void ring(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                 MPI_Status *st)
{
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    OK(MPI_Sendrecv(sbuf, scount, stype, right, 11, rbuf, rcount, rtype, left, 11, MPI_COMM_WORLD, st));
}

static double val(int who, int i) { return who * 100000.0 + i; }

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int left = (mt_rank + mt_size - 1) % mt_size;
    MPI_Status st;
    enum { M = 4096 };
    double *a = malloc(M * sizeof(double)), *b = malloc(M * sizeof(double));
    for (int i = 0; i < M; i++)
        a[i] = val(mt_rank, i);

    /* vector, odd stride 7, blocks of 3; received contiguous */
    MPI_Datatype vec;
    OK(MPI_Type_vector(5, 3, 7, MPI_DOUBLE, &vec));
    OK(MPI_Type_commit(&vec));
    MPI_Aint lb, ext, tlb, text;
    OK(MPI_Type_get_extent(vec, &lb, &ext));
    CHECK_EQ(lb, 0);
    CHECK_EQ(ext, (4 * 7 + 3) * 8);
    int sz;
    OK(MPI_Type_size(vec, &sz));
    CHECK_EQ(sz, 15 * 8);
    memset(b, 0, M * sizeof(double));
    ring(a, 3, vec, b, 45, MPI_DOUBLE, &st); /* 3 vectors: consecutive at extent */
    for (int k = 0, n = 0; k < 3; k++)
        for (int blk = 0; blk < 5; blk++)
            for (int j = 0; j < 3; j++, n++)
                CHECK(b[n] == val(left, k * 31 + blk * 7 + j));
    /* and back: contiguous into the vector layout */
    for (int i = 0; i < M; i++)
        b[i] = -1;
    ring(a, 15, MPI_DOUBLE, b, 1, vec, &st);
    for (int blk = 0, n = 0; blk < 5; blk++)
        for (int j = 0; j < 7; j++)
            CHECK(b[blk * 7 + j] == (j < 3 ? val(left, n++) : -1));
    CHECK(b[4 * 7 + 3] == -1);

    /* Get_elements on a partial receive: 8 doubles into 2 vectors (30) */
    int right = (mt_rank + 1) % mt_size;
    MPI_Request rq;
    for (int i = 0; i < M; i++)
        b[i] = -1;
    OK(MPI_Irecv(b, 2, vec, left, 12, MPI_COMM_WORLD, &rq));
    OK(MPI_Send(a, 8, MPI_DOUBLE, right, 12, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq, &st));
    int n;
    OK(MPI_Get_elements(&st, vec, &n));
    CHECK_EQ(n, 8);
    OK(MPI_Get_count(&st, vec, &n));
    CHECK_EQ(n, MPI_UNDEFINED);
    OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
    CHECK_EQ(n, 8);
    CHECK(b[0] == val(left, 0) && b[7] == val(left, 3) && b[9] == val(left, 5));
    CHECK(b[14] == val(left, 6) && b[15] == val(left, 7) && b[16] == -1 && b[3] == -1);

    /* negative lower bound: hvector walking backwards, then resized */
    MPI_Datatype back, backr;
    OK(MPI_Type_create_hvector(4, 2, -5 * (MPI_Aint)sizeof(double), MPI_DOUBLE, &back));
    OK(MPI_Type_commit(&back));
    OK(MPI_Type_get_extent(back, &lb, &ext));
    CHECK_EQ(lb, -15 * 8);
    CHECK_EQ(ext, 17 * 8);
    OK(MPI_Type_get_true_extent(back, &tlb, &text));
    CHECK_EQ(tlb, -15 * 8);
    CHECK_EQ(text, 17 * 8);
    for (int i = 0; i < M; i++)
        b[i] = -1;
    double *mid = a + 100, *bmid = b + 100;
    ring(mid, 1, back, bmid, 1, back, &st);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 2; j++)
            CHECK(bmid[-5 * k + j] == val(left, 100 - 5 * k + j));
    CHECK(bmid[2] == -1 && bmid[-3] == -1);
    OK(MPI_Type_create_resized(back, -16 * (MPI_Aint)sizeof(double), 20 * sizeof(double), &backr));
    OK(MPI_Type_commit(&backr));
    OK(MPI_Type_get_extent(backr, &lb, &ext));
    CHECK(lb == -16 * 8 && ext == 20 * 8);
    for (int i = 0; i < M; i++)
        b[i] = -1;
    ring(a + 1000, 3, backr, b, 24, MPI_DOUBLE, &st); /* 3 copies, 20 doubles apart */
    for (int c = 0, m = 0; c < 3; c++)
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 2; j++, m++)
                CHECK(b[m] == val(left, 1000 + 20 * c - 5 * k + j));

    /* indexed with unordered, odd displacements; indexed_block; hindexed */
    int bl[4] = {2, 1, 3, 1}, dis[4] = {9, 0, 17, 4};
    MPI_Datatype idx, blk, hidx;
    OK(MPI_Type_indexed(4, bl, dis, MPI_DOUBLE, &idx));
    OK(MPI_Type_commit(&idx));
    OK(MPI_Type_get_extent(idx, &lb, &ext));
    CHECK(lb == 0 && ext == 20 * 8);
    ring(a, 2, idx, b, 14, MPI_DOUBLE, &st);
    int order[7] = {9, 10, 0, 17, 18, 19, 4};
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 7; k++)
            CHECK(b[c * 7 + k] == val(left, c * 20 + order[k]));
    int bdis[3] = {5, 1, 11};
    OK(MPI_Type_create_indexed_block(3, 2, bdis, MPI_DOUBLE, &blk));
    OK(MPI_Type_commit(&blk));
    ring(a, 1, blk, b, 6, MPI_DOUBLE, &st);
    for (int k = 0; k < 3; k++)
        CHECK(b[2 * k] == val(left, bdis[k]) && b[2 * k + 1] == val(left, bdis[k] + 1));
    int hbl[2] = {1, 2};
    MPI_Aint hdis[2] = {24, 3};
    OK(MPI_Type_create_hindexed(2, hbl, hdis, MPI_INT, &hidx)); /* unaligned on purpose */
    OK(MPI_Type_commit(&hidx));
    char cs[64], cr[64];
    for (int i = 0; i < 64; i++)
        cs[i] = (char)(mt_rank * 7 + i);
    ring(cs, 1, hidx, cr, 12, MPI_BYTE, &st);
    for (int i = 0; i < 4; i++)
        CHECK(cr[i] == (char)(left * 7 + 24 + i));
    for (int i = 0; i < 8; i++)
        CHECK(cr[4 + i] == (char)(left * 7 + 3 + i));

    /* struct with padding: extent follows the C struct */
    struct rec { char c; double d; int i[3]; short s; } rs[3], rr[3];
    int sbl[4] = {1, 1, 3, 1};
    MPI_Aint sdis[4] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i),
                        offsetof(struct rec, s)};
    MPI_Datatype stypes[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, srec;
    OK(MPI_Type_create_struct(4, sbl, sdis, stypes, &srec));
    OK(MPI_Type_commit(&srec));
    OK(MPI_Type_get_extent(srec, &lb, &ext));
    CHECK_EQ(ext, sizeof(struct rec));
    OK(MPI_Type_size(srec, &sz));
    CHECK_EQ(sz, 1 + 8 + 12 + 2);
    for (int k = 0; k < 3; k++) {
        rs[k].c = (char)('a' + mt_rank + k);
        rs[k].d = val(mt_rank, k);
        rs[k].i[0] = k, rs[k].i[1] = mt_rank, rs[k].i[2] = -k;
        rs[k].s = (short)(k * 3 + mt_rank);
    }
    memset(rr, 0, sizeof(rr));
    ring(rs, 3, srec, rr, 3, srec, &st);
    for (int k = 0; k < 3; k++)
        CHECK(rr[k].c == (char)('a' + left + k) && rr[k].d == val(left, k) && rr[k].i[1] == left &&
              rr[k].i[2] == -k && rr[k].s == (short)(k * 3 + left));
    OK(MPI_Get_elements(&st, srec, &n));
    CHECK_EQ(n, 3 * 6);
    /* partial: one record and the char and double of the next */
    OK(MPI_Irecv(rr, 3, srec, left, 13, MPI_COMM_WORLD, &rq));
    char packed[256];
    int pos = 0;
    OK(MPI_Pack(rs, 1, srec, packed, sizeof(packed), &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, 23);
    OK(MPI_Pack(&rs[1].c, 1, MPI_CHAR, packed, sizeof(packed), &pos, MPI_COMM_WORLD));
    OK(MPI_Pack(&rs[1].d, 1, MPI_DOUBLE, packed, sizeof(packed), &pos, MPI_COMM_WORLD));
    OK(MPI_Send(packed, pos, MPI_PACKED, right, 13, MPI_COMM_WORLD));
    OK(MPI_Wait(&rq, &st));
    OK(MPI_Get_elements(&st, srec, &n));
    CHECK_EQ(n, 6 + 2);
    CHECK(rr[1].d == val(left, 1));
    /* Pack_size and Unpack */
    OK(MPI_Pack_size(3, srec, MPI_COMM_WORLD, &sz));
    CHECK_EQ(sz, 3 * 23);
    pos = 0;
    OK(MPI_Pack(rs, 2, srec, packed, sizeof(packed), &pos, MPI_COMM_WORLD));
    struct rec un[2];
    int pos2 = 0;
    OK(MPI_Unpack(packed, pos, &pos2, un, 2, srec, MPI_COMM_WORLD));
    CHECK_EQ(pos2, pos);
    CHECK(un[1].d == rs[1].d && un[1].s == rs[1].s && un[0].c == rs[0].c);

    /* subarrays: a 3-D block of a 6x5x7 array, C and Fortran order */
    int sizes[3] = {6, 5, 7}, sub[3] = {2, 3, 4}, start[3] = {1, 2, 3};
    MPI_Datatype subc, subf;
    OK(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &subc));
    OK(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_DOUBLE, &subf));
    OK(MPI_Type_commit(&subc));
    OK(MPI_Type_commit(&subf));
    OK(MPI_Type_get_extent(subc, &lb, &ext));
    CHECK(lb == 0 && ext == 6 * 5 * 7 * 8);
    ring(a, 1, subc, b, 24, MPI_DOUBLE, &st);
    for (int i = 0, m = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++, m++)
                CHECK(b[m] == val(left, ((1 + i) * 5 + 2 + j) * 7 + 3 + k));
    ring(a, 1, subf, b, 24, MPI_DOUBLE, &st);
    for (int k = 0, m = 0; k < 4; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++, m++)
                CHECK(b[m] == val(left, ((3 + k) * 5 + 2 + j) * 6 + 1 + i));

    /* dup, envelope and contents */
    MPI_Datatype d2;
    OK(MPI_Type_dup(vec, &d2));
    int ni, na, nt, comb;
    OK(MPI_Type_get_envelope(d2, &ni, &na, &nt, &comb));
    CHECK(comb == MPI_COMBINER_DUP && ni == 0 && na == 0 && nt == 1);
    OK(MPI_Type_get_envelope(vec, &ni, &na, &nt, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nt == 1);
    int ints[3];
    MPI_Datatype inner;
    OK(MPI_Type_get_contents(vec, 3, 0, 1, ints, NULL, &inner));
    CHECK(ints[0] == 5 && ints[1] == 3 && ints[2] == 7 && inner == MPI_DOUBLE);
    OK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nt, &comb));
    CHECK_EQ(comb, MPI_COMBINER_NAMED);
    OK(MPI_Type_get_envelope(srec, &ni, &na, &nt, &comb));
    CHECK(comb == MPI_COMBINER_STRUCT && ni == 5 && na == 4 && nt == 4);
    ring(a, 2, d2, b, 30, MPI_DOUBLE, &st); /* the dup is committed like its source */
    CHECK(b[29] == val(left, 31 + 4 * 7 + 2));

    /* a type built on a freed type keeps working */
    MPI_Datatype c3, v3;
    OK(MPI_Type_contiguous(3, MPI_DOUBLE, &c3));
    OK(MPI_Type_vector(2, 1, 2, c3, &v3));
    OK(MPI_Type_free(&c3));
    OK(MPI_Type_commit(&v3));
    ring(a, 1, v3, b, 6, MPI_DOUBLE, &st);
    CHECK(b[3] == val(left, 6) && b[5] == val(left, 8));

    /* a zero-size type and count 0 */
    MPI_Datatype empty;
    OK(MPI_Type_contiguous(0, MPI_INT, &empty));
    OK(MPI_Type_commit(&empty));
    ring(a, 4, empty, b, 4, empty, &st);
    OK(MPI_Get_count(&st, empty, &n));
    CHECK_EQ(n, 0);

    /* absolute addresses with MPI_BOTTOM */
    MPI_Aint addr[2];
    double one = val(mt_rank, 1), two = val(mt_rank, 2), r1 = 0, r2 = 0;
    OK(MPI_Get_address(&one, &addr[0]));
    OK(MPI_Get_address(&two, &addr[1]));
    int ones[2] = {1, 1};
    MPI_Datatype abs_s, abs_r, dd[2] = {MPI_DOUBLE, MPI_DOUBLE};
    OK(MPI_Type_create_struct(2, ones, addr, dd, &abs_s));
    OK(MPI_Get_address(&r1, &addr[0]));
    OK(MPI_Get_address(&r2, &addr[1]));
    OK(MPI_Type_create_struct(2, ones, addr, dd, &abs_r));
    OK(MPI_Type_commit(&abs_s));
    OK(MPI_Type_commit(&abs_r));
    ring(MPI_BOTTOM, 1, abs_s, MPI_BOTTOM, 1, abs_r, &st);
    CHECK(r1 == val(left, 1) && r2 == val(left, 2));

    MPI_Datatype all[] = {vec, back, backr, idx, blk, hidx, srec, subc, subf, d2, v3, empty, abs_s, abs_r};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        OK(MPI_Type_free(&all[i]));
    free(a);
    free(b);
    return mt_finish("dtype");
}
