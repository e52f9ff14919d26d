/* cmd_fabric.c - `commlab fabric`: what the rdma backend runs over (the
 * libfabric providers here, cli/row_rdma_fabric.c) or, with --mpi, the
 * mpi backend (the MPI library's eager limits, cli/row_mpi_fabric.c). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

const char cmd_fabric_usage[] =
    "usage: commlab fabric [--json]\n"
    "\n"
    "Lists the libfabric providers that offer reliable datagram endpoints here, one\n"
    "line per provider and domain: whether they have tagged messages and RDMA\n"
    "reads (what `run --backend rdma` uses), their inject size and largest\n"
    "message, which one `--provider auto` picks, and whose matching a run uses:\n"
    "libfabric's tagged messages, or commlab's own where the provider's is known\n"
    "to lose messages in this libfabric (the README says which and why).\n"
    "\n"
    "      --mpi      the MPI library's eager limits instead (what `run --backend mpi`\n"
    "                 runs over)\n"
    "      --json     one JSON object\n"
    "  -h, --help     this text\n";

/* The providers as JSON; pick: what --provider auto takes ("": none). */
int cmd_fabric(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"mpi", no_argument, NULL, 'm'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool as_json = false, mpi = false;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(cmd_fabric_usage, stdout);
            return CLI_EXIT_OK;
        }
        if (c == 'j' || c == 'm') {
            as_json |= c == 'j';
            mpi |= c == 'm';
            continue;
        }
        return cli_bad_option("fabric", opts, argv, c);
    }
    int rc = cli_no_extra("fabric", argc, argv);
    if (rc)
        return rc;
    return mpi ? fabric_mpi(as_json) : fabric_rdma(as_json);
}
