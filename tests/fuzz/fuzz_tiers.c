/* fuzz_tiers.c - the tiers loader (core/tier.h) on any text: it loads, or
 * refuses with a file:line:column message; a loaded set keeps its
 * invariants. */
#include "tests/fuzz/fuzz.h"

#include "commlab.h"
#include "core/tier.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    tier_set s;
    cl_diag d = {{0}};
    int err = tier_set_load_string(&s, "f.yaml", text, &d);
    if (err) {
        FUZZ_CHECK(s.tiers == NULL && d.msg[0]);
    } else {
        FUZZ_CHECK(s.n >= 1 && s.n <= TIER_MAX);
        for (size_t i = 0; i < s.n; i++) {
            FUZZ_CHECK(s.tiers[i].alpha >= 0 && s.tiers[i].bandwidth > 0);
            FUZZ_CHECK(tier_set_find(&s, s.tiers[i].name) == &s.tiers[i]);
        }
        tier_set_release(&s);
    }
    free(text);
    return 0;
}
