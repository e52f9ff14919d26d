/* tool_flowbench.c - runs sim_flow_bench (sim/flow.h) until `commlab bench
 * sim` calls it: prints the flow solver's figures. */
#include <stdio.h>

#include "commlab.h"
#include "sim/flow.h"

int main(void)
{
    int rc = sim_flow_bench(stdout);
    if (rc)
        fprintf(stderr, "tool_flowbench: %s\n", cl_strerror(rc));
    return rc ? 1 : 0;
}
