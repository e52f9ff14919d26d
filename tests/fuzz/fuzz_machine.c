/* fuzz_machine.c - the machine-file loader (core/machine.h) on any text: a
 * loaded machine passes machine_check, and what machine_write prints of it
 * loads again. */
#include "tests/fuzz/fuzz.h"

#include "commlab.h"
#include "core/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    machine m;
    cl_diag d = {{0}};
    if (machine_load_string(&m, "f.yaml", text, &d) == 0) {
        FUZZ_CHECK(machine_check(&m));
        (void)machine_time(&m, 1 << 20);
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        FUZZ_CHECK(f && machine_write(&m, f) == 0);
        fclose(f);
        machine back;
        if (machine_load_string(&back, "back.yaml", out, &d) != 0) {
            fprintf(stderr, "written machine does not load: %s\n%s", d.msg, out);
            abort();
        }
        FUZZ_CHECK(back.nseg == m.nseg && back.nduplex == m.nduplex);
        free(out);
    } else {
        FUZZ_CHECK(d.msg[0]);
    }
    free(text);
    return 0;
}
