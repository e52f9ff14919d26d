/* test_dlib.c - libfabric and the MPI library are opened only when asked
 * for (real/dlib.h): a simulated run maps neither, opening one keeps the
 * process's signal dispositions, and a library or a name that cannot be
 * found is an error naming it.  The tests run in order: the first checks
 * what this process maps before anything here opened a library. */
#include "tests/testutil.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "real/dlib.h"
#include "real/rdma_lib.h"
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib_dl.h"
#endif
#include "tests/simcase.h"

cl_pattern_fn ring;

/* Whether a file whose path contains `name` is mapped into this process. */
static bool mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

static void test_sim_run_maps_neither(void **state)
{
    (void)state;
    run r;
    run_pattern(&r, ring, 4, 64 * 1024, NULL, NULL);
    run_release(&r);
    if (mapped("libfabric"))
        fail_msg("a simulated run mapped libfabric");
    if (mapped("libmpi"))
        fail_msg("a simulated run mapped the MPI library");
}

static int handled;
static void on_signal(int sig)
{
    handled = sig;
}

/* libinfinipath's constructor, run when libfabric is opened, sets its own
 * handlers for SIGINT, SIGTERM and the crash signals: opening it must leave
 * the process's. */
static void test_signals_kept(void **state)
{
    (void)state;
    struct sigaction mine = {.sa_handler = on_signal}, old_int, old_term, got;
    sigemptyset(&mine.sa_mask);
    assert_int_equal(sigaction(SIGINT, &mine, &old_int), 0);
    assert_int_equal(sigaction(SIGTERM, &(struct sigaction){.sa_handler = SIG_DFL}, &old_term),
                     0);
    cl_diag d = {{0}};
    if (rdma__lib_load(&d))
        fail_msg("%s", d.msg);
    assert_true(mapped("libfabric")); /* what the first test looked for can be seen */
    assert_int_equal(sigaction(SIGINT, NULL, &got), 0);
    assert_ptr_equal(got.sa_handler, on_signal);
    assert_int_equal(sigaction(SIGTERM, NULL, &got), 0);
    assert_ptr_equal(got.sa_handler, SIG_DFL);
    raise(SIGINT);
    assert_int_equal(handled, SIGINT);
    /* Loaded once: the table stays, a second call returns at once. */
    assert_int_equal(rdma__lib_load(&d), 0);
    assert_true(fi_version() >= FI_VERSION(1, 0));
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}

static void test_mpi_loaded(void **state)
{
    (void)state;
#ifdef CL_HAVE_MPI
    cl_diag d = {{0}};
    if (mpib__load(&d))
        fail_msg("%s", d.msg);
    assert_true(mapped("libmpi"));
    assert_non_null(MPI_COMM_WORLD);
#else
    fprintf(stderr, "skipped: the mpi backend is not built here\n");
    skip();
#endif
}

static void test_missing_library_named(void **state)
{
    (void)state;
    cl_diag d = {{0}};
    assert_null(dlib_open("libcommlab-absent.so.7", RTLD_NOW, "the absent backend", &d));
    if (!strstr(d.msg, "the absent backend needs libcommlab-absent.so.7, which cannot be "
                       "loaded: "))
        fail_msg("message: '%s'", d.msg);
}

static void test_missing_name_named(void **state)
{
    (void)state;
    cl_diag d = {{0}};
    void *libc = dlib_open("libc.so.6", RTLD_NOW, "the test", &d);
    assert_non_null(libc);
    assert_non_null(dlib_sym(libc, "libc.so.6", "getpid", &d));
    assert_null(dlib_sym(libc, "libc.so.6", "commlab_not_in_libc", &d));
    if (!strstr(d.msg, "libc.so.6 has no 'commlab_not_in_libc'"))
        fail_msg("message: '%s'", d.msg);
    dlclose(libc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_run_maps_neither),
        cmocka_unit_test(test_signals_kept),
        cmocka_unit_test(test_mpi_loaded),
        cmocka_unit_test(test_missing_library_named),
        cmocka_unit_test(test_missing_name_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
