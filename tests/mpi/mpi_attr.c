/* Attributes: keyvals with copy and delete callbacks on dup and free,
 * set/get/delete, predefined copy functions, datatype attributes, and the
 * MPI_COMM_SELF delete callback at MPI_Finalize. */
#include "mt.h"

static int copies, deletes, self_deleted;
static int extra_seen = 0;

static int copy_fn(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)kv;
    extra_seen = *(int *)extra;
    copies++;
    *(void **)out = (void *)((long)in + 1); /* copies carry value + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int kv, void *val, void *extra)
{
    (void)c, (void)kv, (void)val, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int self_delete(MPI_Comm c, int kv, void *val, void *extra)
{
    (void)c, (void)kv, (void)val, (void)extra;
    self_deleted = 1;
    if (mt_rank == 0)
        printf("ok attr.finalize_callback\n");
    fflush(stdout);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int extra = 42, kv, kv_nocopy, kv_dup, flag;
    void *v;
    OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &extra));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_nocopy, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dup, NULL));
    MPI_Comm a, b;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    OK(MPI_Comm_get_attr(a, kv, &v, &flag));
    CHECK_EQ(flag, 0);
    OK(MPI_Comm_set_attr(a, kv, (void *)10L));
    OK(MPI_Comm_set_attr(a, kv_nocopy, (void *)20L));
    OK(MPI_Comm_set_attr(a, kv_dup, (void *)30L));
    OK(MPI_Comm_get_attr(a, kv, &v, &flag));
    CHECK(flag && (long)v == 10);
    OK(MPI_Comm_dup(a, &b));
    CHECK_EQ(copies, 1);
    CHECK_EQ(extra_seen, 42);
    OK(MPI_Comm_get_attr(b, kv, &v, &flag));
    CHECK(flag && (long)v == 11);
    OK(MPI_Comm_get_attr(b, kv_nocopy, &v, &flag));
    CHECK_EQ(flag, 0);
    OK(MPI_Comm_get_attr(b, kv_dup, &v, &flag));
    CHECK(flag && (long)v == 30);
    /* replacing calls delete on the old value */
    OK(MPI_Comm_set_attr(b, kv, (void *)12L));
    CHECK_EQ(deletes, 1);
    OK(MPI_Comm_delete_attr(b, kv));
    CHECK_EQ(deletes, 2);
    OK(MPI_Comm_get_attr(b, kv, &v, &flag));
    CHECK_EQ(flag, 0);
    /* free: the keyval lives on while attributes use it */
    OK(MPI_Comm_free_keyval(&kv));
    CHECK_EQ(kv, MPI_KEYVAL_INVALID);
    OK(MPI_Comm_free(&b));
    CHECK_EQ(deletes, 2);
    OK(MPI_Comm_free(&a));
    CHECK_EQ(deletes, 3);
    OK(MPI_Comm_free_keyval(&kv_nocopy));
    OK(MPI_Comm_free_keyval(&kv_dup));

    /* MPI-1 names */
    int old;
    OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &old, NULL));
    OK(MPI_Attr_put(MPI_COMM_WORLD, old, (void *)5L));
    OK(MPI_Attr_get(MPI_COMM_WORLD, old, &v, &flag));
    CHECK(flag && (long)v == 5);
    OK(MPI_Attr_delete(MPI_COMM_WORLD, old));
    OK(MPI_Keyval_free(&old));

    /* datatype attributes follow MPI_Type_dup */
    int tkv;
    OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &tkv, NULL));
    MPI_Datatype t, t2;
    OK(MPI_Type_contiguous(2, MPI_INT, &t));
    OK(MPI_Type_set_attr(t, tkv, (void *)77L));
    OK(MPI_Type_dup(t, &t2));
    OK(MPI_Type_get_attr(t2, tkv, &v, &flag));
    CHECK(flag && (long)v == 77);
    OK(MPI_Type_delete_attr(t2, tkv));
    OK(MPI_Type_get_attr(t2, tkv, &v, &flag));
    CHECK_EQ(flag, 0);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_free(&t2));
    OK(MPI_Type_free_keyval(&tkv));
    int wkv;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &wkv, NULL));
    OK(MPI_Win_free_keyval(&wkv));

    /* a library's cleanup hook on MPI_COMM_SELF runs inside MPI_Finalize */
    int skv;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &skv, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, skv, NULL));
    return mt_finish("attr");
}
