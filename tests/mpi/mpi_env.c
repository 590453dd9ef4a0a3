/* Environment: init state, versions, names, time, predefined attributes,
 * thread level, handle conversions, statuses. */
#include "mt.h"

int main(int argc, char **argv)
{
    int flag = -1;
    OK(MPI_Initialized(&flag));
    CHECK_EQ(flag, 0);
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_SERIALIZED);
    int q;
    OK(MPI_Query_thread(&q));
    CHECK_EQ(q, provided);
    OK(MPI_Is_thread_main(&flag));
    CHECK_EQ(flag, 1);
    OK(MPI_Initialized(&flag));
    CHECK_EQ(flag, 1);
    OK(MPI_Finalized(&flag));
    CHECK_EQ(flag, 0);

    int v, sv;
    OK(MPI_Get_version(&v, &sv));
    CHECK_EQ(v, MPI_VERSION);
    CHECK_EQ(sv, MPI_SUBVERSION);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    OK(MPI_Get_library_version(lib, &len));
    CHECK(strstr(lib, "knit") != NULL);
    CHECK_EQ(len, (int)strlen(lib));
    char name[MPI_MAX_PROCESSOR_NAME];
    OK(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len == (int)strlen(name));

    double t0 = MPI_Wtime(), tick = MPI_Wtick();
    CHECK(tick > 0 && tick < 1e-3);
    double t1 = MPI_Wtime();
    CHECK(t1 >= t0);

    int *val;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag));
    CHECK(flag && *val >= 32767);
    int tag_ub = *val;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &val, &flag));
    CHECK(flag && (*val == 0 || *val == 1));
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &val, &flag));
    CHECK(flag && *val == 0);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &val, &flag));
    CHECK(flag && *val >= mt_size);
    OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag));
    CHECK(flag && *val == tag_ub);

    /* the largest tag works */
    int x = 7, y = 0;
    MPI_Status st;
    OK(MPI_Sendrecv(&x, 1, MPI_INT, mt_rank, tag_ub, &y, 1, MPI_INT, mt_rank, tag_ub, MPI_COMM_WORLD, &st));
    CHECK_EQ(y, 7);
    CHECK_EQ(st.MPI_TAG, tag_ub);
    CHECK_EQ(st.MPI_SOURCE, mt_rank);

    /* conversions round-trip */
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE);
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL);
    CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY);
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM);

    int s;
    OK(MPI_Type_size(MPI_DOUBLE_INT, &s));
    CHECK_EQ(s, sizeof(double) + sizeof(int));
    OK(MPI_Type_size(MPI_2INT, &s));
    CHECK_EQ(s, 2 * sizeof(int));
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(MPI_SHORT_INT, &lb, &ext));
    struct { short a; int b; } si;
    CHECK_EQ(ext, sizeof(si));
    OK(MPI_Type_get_extent(MPI_LONG_DOUBLE_INT, &lb, &ext));
    struct { long double a; int b; } ldi;
    CHECK_EQ(ext, sizeof(ldi));
    MPI_Count sx;
    OK(MPI_Type_size_x(MPI_C_DOUBLE_COMPLEX, &sx));
    CHECK_EQ(sx, 16);

    /* status helpers */
    MPI_Status fake;
    OK(MPI_Status_set_elements(&fake, MPI_INT, 5));
    int n;
    OK(MPI_Get_count(&fake, MPI_INT, &n));
    CHECK_EQ(n, 5);
    OK(MPI_Get_count(&fake, MPI_DOUBLE, &n));
    CHECK_EQ(n, MPI_UNDEFINED); /* 20 bytes are 2.5 doubles */
    OK(MPI_Status_set_elements(&fake, MPI_DOUBLE_INT, 3)); /* one pair and one double */
    MPI_Count ec;
    OK(MPI_Get_elements_x(&fake, MPI_DOUBLE_INT, &ec));
    CHECK_EQ(ec, 3);
    OK(MPI_Get_count(&fake, MPI_DOUBLE_INT, &n));
    CHECK_EQ(n, MPI_UNDEFINED);
    OK(MPI_Status_set_cancelled(&fake, 1));
    OK(MPI_Test_cancelled(&fake, &flag));
    CHECK_EQ(flag, 1);

    int dims[3] = {0, 0, 0};
    OK(MPI_Dims_create(12, 3, dims));
    CHECK(dims[0] * dims[1] * dims[2] == 12 && dims[0] >= dims[1] && dims[1] >= dims[2]);
    CHECK_EQ(dims[0], 3);
    OK(MPI_Pcontrol(1));

    char cname[MPI_MAX_OBJECT_NAME];
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, cname, &len));
    CHECK(!strcmp(cname, "MPI_COMM_WORLD"));
    OK(MPI_Type_get_name(MPI_INT, cname, &len));
    CHECK(!strcmp(cname, "MPI_INT"));

    mt_finish("env");
    OK(MPI_Finalized(&flag));
    CHECK_EQ(flag, 1);
    return 0;
}
