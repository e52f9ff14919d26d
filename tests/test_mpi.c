/* test_mpi.c - what of the mpi backend runs in one process: the library's
 * name and eager limits read through the MPI tool interface, a library
 * call for every collective (--library), and the launcher's refusal to run an in-process transport outside a launcher's
 * job.  Runs of patterns need mpirun: tests/cli/test_mpi.sh.  Every test
 * skips, saying why, where the backend is not built (no mpicc). */
#include "tests/testutil.h"

#include <stdio.h>
#include <string.h>

#include "core/pattern.h"
#include "real/launch.h"
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib.h"
#endif

/* Open MPI's tool interface leaves allocations of components it has
 * unloaded, which LeakSanitizer reports with no module to suppress them
 * by: under AddressSanitizer the tests that start it skip (the plain run
 * of this file checks them). */
#if defined(__SANITIZE_ADDRESS__) && defined(CL_HAVE_MPI)
#define MPI_T_LEAKS 1
#endif

#ifdef MPI_T_LEAKS
static void leaks(void)
{
    fprintf(stderr, "skipped under AddressSanitizer: Open MPI's MPI_T leaks what its unloaded "
                    "components allocated\n");
    skip();
}
#endif

#ifndef CL_HAVE_MPI
static void not_built(void)
{
    fprintf(stderr, "skipped: the mpi backend is not built here (no mpicc when commlab was "
                    "built)\n");
    skip();
}
#endif

static void test_library_named(void **state)
{
    (void)state;
#ifdef CL_HAVE_MPI
    char lib[256];
    cl_diag d = {{0}};
    assert_int_equal(mpib_library(lib, sizeof lib, &d), 0);
    assert_true(strlen(lib) > 0);
    assert_null(strchr(lib, '\n'));
    assert_null(strchr(lib, ','));
#else
    not_built();
#endif
}

/* Every limit found is an eager limit, and the one a run within a host
 * uses is among them. */
static void test_eager_limits(void **state)
{
    (void)state;
#if defined(MPI_T_LEAKS)
    leaks();
#elif defined(CL_HAVE_MPI)
    mpib_limit v[64];
    size_t n = 0;
    cl_diag d = {{0}};
    assert_int_equal(mpib_limits(v, 64, &n, &d), 0);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(v[i].name);
        assert_true(len >= 11);
        assert_string_equal(v[i].name + len - 11, "eager_limit");
    }
    uint64_t local = 0;
    assert_int_equal(mpib_eager_limit(true, &local), 0);
    bool listed = false;
    for (size_t i = 0; i < n; i++)
        listed |= (strcmp(v[i].name, "btl_vader_eager_limit") == 0 ||
                   strcmp(v[i].name, "btl_sm_eager_limit") == 0) && v[i].bytes == local;
    assert_true(listed);
    assert_true(local > 0);
    /* Room for fewer than there are: it stops at the room, no overflow. */
    mpib_limit one[1];
    assert_int_equal(mpib_limits(one, 1, &n, &d), 0);
    assert_int_equal(n, 1);
#else
    not_built();
#endif
}

/* --library: every collective of core/pattern.h has the library's own
 * call, and a name that is not a collective has none. */
static void test_library_calls(void **state)
{
    (void)state;
#ifdef CL_HAVE_MPI
    const collective_info *c;
    size_t n = 0;
    for (size_t i = 0; (c = collective_at(i)) != NULL; i++, n++)
        if (!mpib_coll_find(c->name))
            fail_msg("no library call for the collective '%s'", c->name);
    assert_int_equal(n, 9);
    assert_null(mpib_coll_find("pingpong"));
    assert_null(mpib_coll_find(""));
    assert_ptr_not_equal(mpib_coll_find("allreduce"), mpib_coll_find("broadcast"));
#else
    not_built();
#endif
}

static int idle(cl_comm *c, const cl_args *a)
{
    (void)c;
    (void)a;
    return 0;
}

/* A rank that runs in the launcher's process needs a launcher's job around
 * it: without one, real_run says so and starts nothing. */
static void test_needs_a_launcher(void **state)
{
    (void)state;
#ifdef CL_HAVE_MPI
    real_opts o = {
        .job = {.fn = idle, .nranks = 2, .iters = 1, .eager_limit = 4096},
        .backend = "mpi", .deadlock_timeout = 1.0,
    };
    run_result res;
    assert_int_equal(real_run(&o, &res), CL_EINVAL);
    assert_non_null(strstr(res.diag.msg, "one rank per process of a launcher"));
    run_result_release(&res);
#else
    not_built();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_named),
        cmocka_unit_test(test_eager_limits),
        cmocka_unit_test(test_library_calls),
        cmocka_unit_test(test_needs_a_launcher),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
