/* fuzz_units.c - the unit parsers (core/units.h) on any text: a size, a
 * time, a bandwidth and a size list.  A parsed size printed compactly
 * parses back to itself; a parsed time or bandwidth is finite and >= 0. */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "commlab.h"
#include "core/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    uint64_t bytes, back;
    char buf[UNITS_BUF];
    if (units_parse_size(text, "f", &bytes, NULL) == 0) {
        FUZZ_CHECK(units_parse_size(units_size_arg(buf, bytes), "f", &back, NULL) == 0);
        FUZZ_CHECK(back == bytes);
        units_size_str(buf, bytes);
    }
    double x;
    if (units_parse_time(text, "f", &x, NULL) == 0) {
        FUZZ_CHECK(isfinite(x) && x >= 0);
        units_time_str(buf, x);
    }
    if (units_parse_bandwidth(text, "f", &x, NULL) == 0) {
        FUZZ_CHECK(isfinite(x) && x >= 0);
        units_bandwidth_str(buf, x);
    }
    uint64_t *list;
    size_t n;
    if (units_parse_sizes(text, "f", &list, &n, NULL) == 0) {
        FUZZ_CHECK(n >= 1 && n <= UNITS_MAX_SIZES);
        free(list);
    }
    free(text);
    return 0;
}
