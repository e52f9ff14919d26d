/* fuzz_topology.c - the topology loader (sim/net.h) on any text, with the
 * course's four tiers: a loaded network of two or more ranks routes
 * between its first and last. */
#include "tests/fuzz/fuzz.h"

#include "commlab.h"
#include "core/tier.h"
#include "sim/net.h"

static const char tiers_yaml[] =
    "tiers:\n"
    "  - {name: nvlink, alpha: 1us, bandwidth: 300GB/s, scope: intra-node}\n"
    "  - {name: pcie, alpha: 2us, bandwidth: 25GB/s, scope: intra-node}\n"
    "  - {name: infiniband, alpha: 3us, bandwidth: 50GB/s, scope: inter-node}\n"
    "  - {name: ethernet, alpha: 30us, bandwidth: 3.1GB/s, scope: inter-node}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tier_set tiers;
    cl_diag d = {{0}};
    if (!tiers.n && tier_set_load_string(&tiers, "tiers.yaml", tiers_yaml, &d))
        abort();
    char *text = fuzz_text(data, size);
    sim_net *n = NULL;
    if (sim_net_load_string(&n, "f.yaml", text, &tiers, &d) == 0) {
        int r = sim_net_ranks(n);
        FUZZ_CHECK(r >= 1 && r <= SIM_NET_MAX_RANKS);
        if (r >= 2)
            FUZZ_CHECK(sim_net_time(n, 0, r - 1, 4096) >= 0);
        sim_net_destroy(n);
    } else {
        FUZZ_CHECK(n == NULL && d.msg[0]);
    }
    free(text);
    return 0;
}
