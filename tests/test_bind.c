/* test_bind.c - planning cores for ranks and binding a forked child to one.
 *
 * The binding itself is checked in a forked child, as the launcher uses it,
 * so the test process keeps its own affinity.  The expected PUs come from a
 * topology the test loads itself, not from the binder. */
#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commlab.h"
#include "tests/testutil.h"
#include "real/bind.h"

/* The test's own view of the machine: the cores the binder should count. */
typedef struct {
    hwloc_topology_t topo;
    hwloc_obj_type_t type; /* CORE, or PU when the topology has no cores */
    int ncores;
} machine;

static void machine_load(machine *m)
{
    assert_int_equal(hwloc_topology_init(&m->topo), 0);
    assert_int_equal(hwloc_topology_load(m->topo), 0);
    m->type = HWLOC_OBJ_CORE;
    m->ncores = hwloc_get_nbobjs_by_type(m->topo, HWLOC_OBJ_CORE);
    if (m->ncores <= 0) {
        m->type = HWLOC_OBJ_PU;
        m->ncores = hwloc_get_nbobjs_by_type(m->topo, HWLOC_OBJ_PU);
    }
    assert_true(m->ncores >= 1);
}

static hwloc_const_cpuset_t machine_core(const machine *m, int core)
{
    hwloc_obj_t obj = hwloc_get_obj_by_type(m->topo, m->type, (unsigned)core);
    assert_non_null(obj);
    return obj->cpuset;
}

static real_binder *binder_ok(int nranks, bool bind)
{
    real_binder *b = NULL;
    cl_diag d = {{0}};
    int err = real_binder_create(&b, nranks, bind, &d);
    if (err)
        fail_msg("real_binder_create(%d, %d) = %s: %s", nranks, bind, cl_errname(err), d.msg);
    assert_non_null(b);
    return b;
}

/* Child exit codes, so the parent can say what went wrong. */
enum { CHILD_OK = 0, CHILD_APPLY = 1, CHILD_AFFINITY = 2, CHILD_MISMATCH = 3 };

/* In the child: apply, then compare the affinity with want PU by PU. */
static int child_check(const real_binder *b, int rank, hwloc_const_cpuset_t want)
{
    cl_diag d = {{0}};
    int err = real_binder_apply(b, rank, &d);
    if (err) {
        fprintf(stderr, "apply(rank %d) = %s: %s\n", rank, cl_errname(err), d.msg);
        return CHILD_APPLY;
    }
    cpu_set_t got;
    CPU_ZERO(&got);
    if (sched_getaffinity(0, sizeof got, &got) < 0) {
        perror("sched_getaffinity");
        return CHILD_AFFINITY;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &got) != !hwloc_bitmap_isset(want, (unsigned)cpu)) {
            char *w = NULL;
            hwloc_bitmap_list_asprintf(&w, want);
            fprintf(stderr, "rank %d: cpu %d is %s the affinity, want PUs %s\n", rank, cpu,
                    CPU_ISSET(cpu, &got) ? "in" : "not in", w ? w : "?");
            free(w);
            return CHILD_MISMATCH;
        }
    }
    return CHILD_OK;
}

/* Forks a child that applies rank's binding and checks it; the parent's
 * own affinity is never touched. */
static void apply_in_child(const real_binder *b, int rank, hwloc_const_cpuset_t want)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child_check(b, rank, want));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status))
        fail_msg("child for rank %d died, status %#x", rank, status);
    if (WEXITSTATUS(status) != CHILD_OK)
        fail_msg("child for rank %d failed with code %d (see stderr)", rank,
                 WEXITSTATUS(status));
}

static void test_cores(void **state)
{
    (void)state;
    machine m;
    machine_load(&m);
    real_binder *b = binder_ok(4, true);
    assert_int_equal(real_binder_cores(b), m.ncores);
    real_binder_destroy(b);
    b = binder_ok(1, false); /* not binding still counts */
    assert_int_equal(real_binder_cores(b), m.ncores);
    real_binder_destroy(b);
    hwloc_topology_destroy(m.topo);
}

static void test_apply_in_child(void **state)
{
    (void)state;
    machine m;
    machine_load(&m);
    real_binder *b = binder_ok(4, true);
    /* rank r -> core r % ncores, as bind.h promises; rank 1 lands on a
     * second core whenever there is one. */
    for (int r = 0; r < 4; r++)
        apply_in_child(b, r, machine_core(&m, r % m.ncores));
    real_binder_destroy(b);
    hwloc_topology_destroy(m.topo);
}

static void test_describe(void **state)
{
    (void)state;
    machine m;
    machine_load(&m);
    real_binder *b = binder_ok(4, true);
    char want[64], got[64];
    snprintf(want, sizeof want, "bound to cores %d,%d,%d,%d", 0 % m.ncores, 1 % m.ncores,
             2 % m.ncores, 3 % m.ncores);
    assert_string_equal(real_binder_describe(b, got, sizeof got), want);

    /* Too small: whole numbers, then "...". */
    char small[19]; /* "bound to cores " + 3 */
    real_binder_describe(b, small, sizeof small);
    assert_true(strlen(small) < sizeof small);
    assert_string_equal(small + strlen(small) - 3, "...");
    char tiny[1];
    assert_string_equal(real_binder_describe(b, tiny, sizeof tiny), "");
    real_binder_destroy(b);
    hwloc_topology_destroy(m.topo);
}

static void test_not_bound(void **state)
{
    (void)state;
    real_binder *b = binder_ok(4, false);
    assert_true(real_binder_cores(b) >= 1);
    char buf[32];
    assert_string_equal(real_binder_describe(b, buf, sizeof buf), "not bound");

    cpu_set_t before, after;
    CPU_ZERO(&before);
    CPU_ZERO(&after);
    assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
    cl_diag d = {{0}};
    assert_int_equal(real_binder_apply(b, 3, &d), 0);
    assert_int_equal(real_binder_apply(b, 0, NULL), 0);
    assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
    assert_true(CPU_EQUAL(&before, &after));
    assert_string_equal(d.msg, "");
    real_binder_destroy(b);
}

static void test_more_ranks_than_cores(void **state)
{
    (void)state;
    real_binder *b = binder_ok(9, true);
    int n = real_binder_cores(b);
    char buf[128], want[128];
    size_t k = (size_t)snprintf(want, sizeof want, "bound to cores ");
    for (int r = 0; r < 9; r++)
        k += (size_t)snprintf(want + k, sizeof want - k, "%s%d", r ? "," : "", r % n);
    assert_string_equal(real_binder_describe(b, buf, sizeof buf), want);
    real_binder_destroy(b);
}

static void test_destroy_null(void **state)
{
    (void)state;
    real_binder_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cores),           cmocka_unit_test(test_apply_in_child),
        cmocka_unit_test(test_describe),        cmocka_unit_test(test_not_bound),
        cmocka_unit_test(test_more_ranks_than_cores), cmocka_unit_test(test_destroy_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
