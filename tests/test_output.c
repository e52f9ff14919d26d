/* test_output.c - the JSON writer and the text/CSV table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/json.h"
#include "core/table.h"
#include "tests/testutil.h"

static void test_json_nesting(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    json_writer w;
    json_init(&w, f, false);
    json_begin_object(&w);
    json_kv_string(&w, "command", "price \"q\"\n");
    json_kv_uint(&w, "bytes", 268435456);
    json_key(&w, "results");
    json_begin_array(&w);
    json_begin_object(&w);
    json_kv_number(&w, "time_s", 0.1);
    json_kv_number(&w, "nan", 0.0 / 0.0);
    json_end_object(&w);
    json_number(&w, 3e11);
    json_end_array(&w);
    json_key(&w, "empty");
    json_begin_array(&w);
    json_end_array(&w);
    json_finish(&w);
    fclose(f);
    assert_string_equal(out, "{\"command\":\"price \\\"q\\\"\\n\",\"bytes\":268435456,"
                             "\"results\":[{\"time_s\":0.1,\"nan\":null},300000000000],"
                             "\"empty\":[]}\n");
    free(out);
}

static void test_table_text_and_csv(void **state)
{
    (void)state;
    const char *h[] = {"tier", "T (ms)"};
    table t;
    assert_int_equal(table_init(&t, 2, h), 0);
    table_add(&t, "nvlink");
    table_add(&t, "%.2f", 0.8958);
    table_add(&t, "a,\"b\"");
    table_add(&t, "10.74");
    assert_int_equal(table_rows(&t), 2);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    table_print(&t, f, 0);
    table_print_csv(&t, f);
    fclose(f);
    assert_string_equal(out, "tier    T (ms)\n"
                             "--------------\n"
                             "nvlink    0.90\n"
                             "a,\"b\"    10.74\n"
                             "tier,T (ms)\n"
                             "nvlink,0.90\n"
                             "\"a,\"\"b\"\"\",10.74\n");
    free(out);
    table_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_nesting),
        cmocka_unit_test(test_table_text_and_csv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
