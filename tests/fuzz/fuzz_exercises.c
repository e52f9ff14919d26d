/* fuzz_exercises.c - the exercises.yaml loader (cli/course.h) on any text:
 * it loads or refuses, and releases what it held either way. */
#include "tests/fuzz/fuzz.h"

#include "cli/course.h"
#include "commlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    course c;
    memset(&c, 0, sizeof c);
    cl_diag d = {{0}};
    if (course_add(&c, "exercises.yaml", text, "01-fuzz", "chapters/01-fuzz", &d) == 0)
        for (size_t i = 0; i < c.n; i++)
            FUZZ_CHECK(course_find(&c, c.ex[i].id) != NULL);
    else
        FUZZ_CHECK(d.msg[0]);
    course_release(&c);
    free(text);
    return 0;
}
