/* row_mpi_fabric.c - `commlab fabric --mpi`, the mpi row's listing: the
 * MPI library the mpi backend runs over, and its eager limits (MPI_T
 * control variables), the sizes above which its sends wait for the
 * matching receive. */
#include <stdio.h>

#include "cli/cli.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"
#ifdef CL_HAVE_MPI
#include "real/mpi/mpib.h"
#endif

int fabric_mpi(bool as_json)
{
#ifndef CL_HAVE_MPI
    (void)as_json;
    return cli_error("fabric --mpi: the mpi backend is not built here (no mpicc when commlab "
                     "was built: install libopenmpi-dev and run make again)");
#else
    mpib_limit v[64];
    size_t n;
    char lib[256];
    cl_diag d = {{0}};
    if (mpib_library(lib, sizeof lib, &d) || mpib_limits(v, sizeof v / sizeof v[0], &n, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    if (as_json) {
        json_writer w;
        json_init(&w, stdout, true);
        json_begin_object(&w);
        json_kv_string(&w, "command", "fabric");
        json_kv_string(&w, "library", lib);
        json_key(&w, "eager_limits");
        json_begin_array(&w);
        for (size_t i = 0; i < n; i++) {
            json_begin_object(&w);
            json_kv_string(&w, "variable", v[i].name);
            json_kv_uint(&w, "bytes", v[i].bytes);
            json_end_object(&w);
        }
        json_end_array(&w);
        json_finish(&w);
        return CLI_EXIT_OK;
    }
    printf("%s: its eager limits (a send of more waits for the matching receive; the limit "
           "counts the library's own header)\n\n", lib);
    const char *h[] = {"variable", "bytes", "size"};
    table t;
    if (table_init(&t, 3, h))
        return cli_error("out of memory");
    for (size_t i = 0; i < n; i++) {
        char sz[UNITS_BUF];
        table_add(&t, "%s", v[i].name);
        table_add(&t, "%llu", (unsigned long long)v[i].bytes);
        table_add(&t, "%s", units_size_str(sz, v[i].bytes));
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    printf("\nrun --backend mpi uses the shared-memory one within a host, the tcp one across "
           "hosts\n");
    return CLI_EXIT_OK;
#endif
}
