/* row_rdma_fabric.c - `commlab fabric`, the rdma row's listing: the
 * libfabric providers here, with what commlab's rdma backend needs of
 * them, like a short `fi_info`. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"
#include "real/rdma.h"

static void print_json(const rdma_provider_desc *v, size_t n, const char *pick)
{
    json_writer w;
    json_init(&w, stdout, true);
    json_begin_object(&w);
    json_kv_string(&w, "command", "fabric");
    json_kv_string(&w, "auto", pick);
    json_key(&w, "providers");
    json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        json_begin_object(&w);
        json_kv_string(&w, "provider", v[i].name);
        json_kv_string(&w, "fabric", v[i].fabric);
        json_kv_string(&w, "domain", v[i].domain);
        json_key(&w, "tagged");
        json_bool(&w, v[i].tagged);
        json_key(&w, "rma");
        json_bool(&w, v[i].rma);
        json_key(&w, "usable");
        json_bool(&w, v[i].tagged && !v[i].local_mr);
        json_kv_string(&w, "matching", v[i].own_match ? "commlab" : "libfabric");
        json_kv_uint(&w, "inject_bytes", v[i].inject_bytes);
        json_kv_uint(&w, "max_message_bytes", v[i].max_msg);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_finish(&w);
}

/* The providers as a table, and what --provider auto takes. */
static int print_table(const rdma_provider_desc *v, size_t n, const char *pick)
{
    const char *h[] = {"provider", "fabric", "domain", "tagged", "RMA", "inject", "max message",
                       "commlab"};
    table t;
    if (table_init(&t, 8, h))
        return cli_error("out of memory");
    for (size_t i = 0; i < n; i++) {
        char inj[UNITS_BUF], max[UNITS_BUF];
        table_add(&t, "%s", v[i].name);
        table_add(&t, "%s", v[i].fabric);
        table_add(&t, "%s", v[i].domain);
        table_add(&t, "%s", v[i].tagged ? "yes" : "no");
        table_add(&t, "%s", v[i].rma ? "yes" : "no");
        table_add(&t, "%s", units_size_str(inj, v[i].inject_bytes));
        table_add(&t, "%s", units_size_str(max, v[i].max_msg));
        table_add(&t, "%s", v[i].local_mr ? "no (local MR)" : !v[i].tagged ? "no (untagged)"
                          : v[i].own_match ? "yes, own matching" : "yes");
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    printf("\n--provider auto picks: %s\n", pick[0] ? pick : "none (no usable provider)");
    return CLI_EXIT_OK;
}

int fabric_rdma(bool as_json)
{
    rdma_provider_desc *v;
    size_t n;
    cl_diag d = {{0}};
    if (rdma_providers_list(&v, &n, &d))
        return cli_diag(&d, CLI_EXIT_FAILED);
    char pick[32] = "";
    if (rdma_provider_auto(pick, sizeof pick, false, &d))
        pick[0] = 0;
    int out = CLI_EXIT_OK;
    if (as_json)
        print_json(v, n, pick);
    else
        out = print_table(v, n, pick);
    free(v);
    return out;
}
