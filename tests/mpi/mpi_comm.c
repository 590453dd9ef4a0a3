/* Communicators and groups: dup (isolation from the parent), split with
 * MPI_UNDEFINED and keys, split_type SHARED (= node), create,
 * create_group, compare, group operations, names. */
#include "mt.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Status st;
    int res, r, n, x;

    /* dup: same group, separate matching */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_compare(dup, dup, &res));
    CHECK_EQ(res, MPI_IDENT);
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    x = 1;
    OK(MPI_Send(&x, 1, MPI_INT, right, 0, MPI_COMM_WORLD));
    x = 2;
    OK(MPI_Send(&x, 1, MPI_INT, right, 0, dup));
    OK(MPI_Recv(&x, 1, MPI_INT, left, 0, dup, &st)); /* the dup's message, not world's */
    CHECK_EQ(x, 2);
    OK(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK_EQ(x, 1);
    OK(MPI_Comm_set_name(dup, "my dup"));
    char name[MPI_MAX_OBJECT_NAME];
    OK(MPI_Comm_get_name(dup, name, &n));
    CHECK(!strcmp(name, "my dup"));

    /* split: even ranks in reverse order, odd ranks MPI_UNDEFINED */
    MPI_Comm even;
    OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2 ? MPI_UNDEFINED : 7, -mt_rank, &even));
    if (mt_rank % 2) {
        CHECK(even == MPI_COMM_NULL);
    } else {
        OK(MPI_Comm_size(even, &n));
        CHECK_EQ(n, (mt_size + 1) / 2);
        OK(MPI_Comm_rank(even, &r));
        CHECK_EQ(r, n - 1 - mt_rank / 2);
        /* ring inside, with ANY_SOURCE translated to the communicator's ranks */
        int v = r, w = -1;
        OK(MPI_Sendrecv(&v, 1, MPI_INT, (r + 1) % n, 3, &w, 1, MPI_INT, MPI_ANY_SOURCE, 3, even, &st));
        CHECK_EQ(w, (r + n - 1) % n);
        CHECK_EQ(st.MPI_SOURCE, (r + n - 1) % n);
        MPI_Group ge, gw;
        OK(MPI_Comm_group(even, &ge));
        OK(MPI_Comm_group(MPI_COMM_WORLD, &gw));
        int zero = 0, tr;
        OK(MPI_Group_translate_ranks(ge, 1, &zero, gw, &tr));
        CHECK_EQ(tr, ((mt_size - 1) / 2) * 2); /* the highest even world rank */
        OK(MPI_Group_free(&ge));
        OK(MPI_Group_free(&gw));
        if (n > 1) {
            OK(MPI_Comm_compare(even, MPI_COMM_WORLD, &res));
            CHECK_EQ(res, MPI_UNEQUAL);
        }
        OK(MPI_Comm_free(&even));
        CHECK(even == MPI_COMM_NULL);
    }

    /* same colour, keys all equal: order of the parent */
    MPI_Comm same;
    OK(MPI_Comm_split(dup, 0, 0, &same));
    OK(MPI_Comm_compare(same, MPI_COMM_WORLD, &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_free(&same));

    /* split_type SHARED: the ranks of this node */
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Comm_size(node, &n));
    const char *ls = getenv("KNIT_LOCAL_SIZE");
    if (ls)
        CHECK_EQ(n, atoi(ls));
    else
        CHECK_EQ(n, mt_size);
    OK(MPI_Comm_free(&node));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL);

    /* create from a group (every other rank, reversed), and create_group */
    MPI_Group world, g;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int *ranks = malloc(mt_size * sizeof(int)), k = 0;
    for (int i = mt_size - 1; i >= 0; i -= 2)
        ranks[k++] = i;
    OK(MPI_Group_incl(world, k, ranks, &g));
    OK(MPI_Group_size(g, &n));
    CHECK_EQ(n, k);
    OK(MPI_Group_rank(g, &r));
    int member = (mt_size - 1 - mt_rank) % 2 == 0;
    CHECK_EQ(r, member ? (mt_size - 1 - mt_rank) / 2 : MPI_UNDEFINED);
    MPI_Comm sub;
    OK(MPI_Comm_create(MPI_COMM_WORLD, g, &sub));
    CHECK((sub != MPI_COMM_NULL) == member);
    if (member) {
        int sr;
        OK(MPI_Comm_rank(sub, &sr));
        CHECK_EQ(sr, r);
        MPI_Comm sub2;
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 99, &sub2));
        OK(MPI_Comm_compare(sub, sub2, &res));
        CHECK_EQ(res, MPI_CONGRUENT);
        int v = sr * 10, w = -1;
        OK(MPI_Sendrecv(&v, 1, MPI_INT, (sr + 1) % k, 0, &w, 1, MPI_INT, (sr + k - 1) % k, 0, sub2, &st));
        CHECK_EQ(w, ((sr + k - 1) % k) * 10);
        OK(MPI_Comm_free(&sub2));
        OK(MPI_Comm_free(&sub));
    }

    /* group algebra */
    MPI_Group u, in, diff, ex, rng;
    OK(MPI_Group_union(g, world, &u));
    OK(MPI_Group_compare(u, world, &res));
    CHECK(res == (mt_size <= 2 && k == mt_size ? MPI_IDENT : MPI_SIMILAR) || res == MPI_SIMILAR || res == MPI_IDENT);
    OK(MPI_Group_size(u, &n));
    CHECK_EQ(n, mt_size);
    OK(MPI_Group_intersection(world, g, &in));
    OK(MPI_Group_size(in, &n));
    CHECK_EQ(n, k);
    OK(MPI_Group_difference(world, g, &diff));
    OK(MPI_Group_size(diff, &n));
    CHECK_EQ(n, mt_size - k);
    OK(MPI_Group_excl(world, k, ranks, &ex));
    OK(MPI_Group_compare(ex, diff, &res));
    CHECK_EQ(res, MPI_IDENT);
    int range[1][3] = {{mt_size - 1, 0, -2}};
    OK(MPI_Group_range_incl(world, 1, range, &rng));
    OK(MPI_Group_compare(rng, g, &res));
    CHECK_EQ(res, MPI_IDENT);
    MPI_Group grps[] = {u, in, diff, ex, rng, g, world};
    for (size_t i = 0; i < sizeof(grps) / sizeof(grps[0]); i++)
        OK(MPI_Group_free(&grps[i]));
    free(ranks);

    /* many communicators in a row: context ids are recycled */
    for (int i = 0; i < 300; i++) {
        MPI_Comm c;
        OK(MPI_Comm_dup(dup, &c));
        OK(MPI_Comm_free(&c));
    }
    int flag;
    OK(MPI_Comm_test_inter(dup, &flag));
    CHECK_EQ(flag, 0);
    OK(MPI_Topo_test(dup, &res));
    CHECK_EQ(res, MPI_UNDEFINED);
    OK(MPI_Comm_free(&dup));
    return mt_finish("comm");
}
