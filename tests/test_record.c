/* test_record.c - the record log and result statistics. */
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/record.h"
#include "tests/testutil.h"

static cl_record rec(int32_t rank, int32_t iter)
{
    cl_record r = {.posted = iter, .started = iter, .finished = iter + 0.5,
                   .rank = rank, .peer = -1, .iter = iter, .op = REC_COMPUTE, .blocking = 1};
    return r;
}

static void test_log_grows_and_keeps_order(void **state)
{
    (void)state;
    rec_log l;
    rec_log_init(&l, 0);
    assert_true(rec_log_check(&l));
    for (int i = 0; i < 10000; i++) {
        cl_record r = rec(i % 7, i);
        assert_int_equal(rec_log_add(&l, &r), 0);
    }
    assert_true(rec_log_check(&l));
    assert_int_equal(l.n, 10000);
    assert_int_equal(l.dropped, 0);
    assert_true(l.cap >= l.n);
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(l.v[i].iter, (int32_t)i);
        assert_int_equal(l.v[i].rank, (int32_t)(i % 7));
    }
    rec_log_release(&l);
    assert_null(l.v);
    assert_int_equal(l.n, 0);
    assert_true(rec_log_check(&l));
    rec_log_release(&l); /* twice is fine */
}

static void test_log_limit_counts_dropped(void **state)
{
    (void)state;
    rec_log l;
    rec_log_init(&l, 300);
    for (int i = 0; i < 1000; i++) {
        cl_record r = rec(0, i);
        assert_int_equal(rec_log_add(&l, &r), 0);
    }
    assert_true(rec_log_check(&l));
    assert_int_equal(l.n, 300);
    assert_int_equal(l.dropped, 700);
    assert_true(l.cap <= 300); /* a capped log never allocates past its cap */
    assert_int_equal(l.v[299].iter, 299); /* the first records are kept */
    rec_log_release(&l);
    assert_int_equal(l.limit, 300);
    assert_int_equal(l.dropped, 0);
}

/* A stalled record keeps what the call was, is blocking and stalled, and
 * spans since..until whatever the template said of its times. */
static void test_stalled_record(void **state)
{
    (void)state;
    rec_log l;
    rec_log_init(&l, 0);
    cl_record call = {.posted = 9, .started = 9, .finished = 9, .bytes = 64, .rank = 3,
                      .peer = 1, .tag = 7, .iter = 2, .op = REC_RECV};
    assert_int_equal(rec_log_stalled(&l, &call, 1.5, 4.0), 0);
    assert_int_equal(rec_log_stalled(&l, &call, 2.0, 2.0), 0);
    assert_int_equal(l.n, 2);
    const cl_record *r = &l.v[0];
    assert_true(r->posted == 1.5 && r->started == 4.0 && r->finished == 4.0);
    assert_int_equal(r->bytes, 64);
    assert_int_equal(r->rank, 3);
    assert_int_equal(r->peer, 1);
    assert_int_equal(r->tag, 7);
    assert_int_equal(r->iter, 2);
    assert_int_equal(r->op, REC_RECV);
    assert_int_equal(r->blocking, 1);
    assert_int_equal(r->stalled, 1);
    assert_int_equal(r->msg, 0);
    assert_true(l.v[1].posted == 2.0 && l.v[1].finished == 2.0);
    assert_true(rec_log_check(&l));
    rec_log_release(&l);
}

static void test_op_names(void **state)
{
    (void)state;
    assert_string_equal(rec_op_name(REC_SEND, 1), "send");
    assert_string_equal(rec_op_name(REC_SEND, 0), "isend");
    assert_string_equal(rec_op_name(REC_RECV, 0), "irecv");
    assert_string_equal(rec_op_name(REC_BARRIER, 1), "barrier");
    assert_string_equal(rec_op_name(REC_OP_COUNT, 1), "?");
}

static void test_stats_odd(void **state)
{
    (void)state;
    const double s[] = {3.0, 1.0, 2.0, 10.0, 4.0};
    double copy[5];
    memcpy(copy, s, sizeof s);
    cl_stats st;
    assert_int_equal(stats_compute(copy, 5, &st), 0);
    assert_memory_equal(copy, s, sizeof s); /* input untouched */
    assert_near(st.median, 3.0, 0);
    assert_near(st.min, 1.0, 0);
    assert_near(st.max, 10.0, 0);
    assert_near(st.mean, 4.0, 1e-15);
    assert_int_equal(st.n, 5);
    /* Quartiles at ranks 0.25 x 4 and 0.75 x 4 of 1 2 3 4 10: exact samples. */
    assert_near(st.q1, 2.0, 0);
    assert_near(st.q3, 4.0, 0);
}

static void test_stats_even_is_mean_of_middle_two(void **state)
{
    (void)state;
    const double s[] = {4e-6, 1e-6, 3e-6, 2e-6};
    cl_stats st;
    assert_int_equal(stats_compute(s, 4, &st), 0);
    assert_near(st.median, 2.5e-6, 1e-21);
    assert_near(st.mean, 2.5e-6, 1e-21);
    assert_near(st.min, 1e-6, 0);
    assert_near(st.max, 4e-6, 0);
    assert_int_equal(st.n, 4);
    /* Between samples (numpy.percentile([1, 2, 3, 4], [25, 75]) = 1.75, 3.25). */
    assert_near(st.q1, 1.75e-6, 1e-21);
    assert_near(st.q3, 3.25e-6, 1e-21);
}

static void test_stats_single_and_equal(void **state)
{
    (void)state;
    const double one = 0.9e-3;
    cl_stats st;
    assert_int_equal(stats_compute(&one, 1, &st), 0);
    assert_near(st.median, one, 0);
    assert_near(st.min, one, 0);
    assert_near(st.max, one, 0);
    assert_near(st.mean, one, 0);
    assert_near(st.q1, one, 0);
    assert_near(st.q3, one, 0);
    /* Equal large samples: the mean is exact and finite. */
    const double big[] = {1e308, 1e308, 1e308};
    assert_int_equal(stats_compute(big, 3, &st), 0);
    assert_true(isfinite(st.mean));
    assert_near(st.mean, 1e308, 0);
    assert_near(st.median, 1e308, 0);
}

static void test_stats_rejects_bad_input(void **state)
{
    (void)state;
    cl_stats st = {.median = 42, .n = 7};
    const double s[] = {1.0, NAN, 2.0};
    const double inf[] = {1.0, INFINITY};
    assert_int_equal(stats_compute(s, 0, &st), CL_EINVAL);
    assert_int_equal(stats_compute(NULL, 3, &st), CL_EINVAL);
    assert_int_equal(stats_compute(s, 3, &st), CL_EINVAL);
    assert_int_equal(stats_compute(inf, 2, &st), CL_EINVAL);
    /* unchanged on failure */
    assert_near(st.median, 42, 0);
    assert_int_equal(st.n, 7);
    assert_int_equal(stats_compute(s, 1, &st), 0);
    assert_false(isnan(st.median) || isnan(st.mean) || isnan(st.min) || isnan(st.max));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_grows_and_keeps_order),
        cmocka_unit_test(test_log_limit_counts_dropped),
        cmocka_unit_test(test_stalled_record),
        cmocka_unit_test(test_op_names),
        cmocka_unit_test(test_stats_odd),
        cmocka_unit_test(test_stats_even_is_mean_of_middle_two),
        cmocka_unit_test(test_stats_single_and_equal),
        cmocka_unit_test(test_stats_rejects_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
