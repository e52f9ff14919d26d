/* step_sweep.c - `commlab step FILE --sweep`: the step's model and batch
 * laid out every way its ranks allow (tp x dp x pp, core/step.h's
 * step_relayout), each modeled on the simulator, ranked by step time. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/step_run.h"
#include "core/json.h"
#include "core/table.h"
#include "core/units.h"

/* One layout: modeled, or refused with why. */
typedef struct layout {
    int tp, dp, pp;
    cl_step step;   /* the file's step laid out so (step_relayout) */
    step_sum s;
    char why[120];  /* "": modeled */
} layout;

static int by_time(const void *a, const void *b)
{
    const layout *x = a, *y = b;
    if (x->why[0] || y->why[0])
        return (x->why[0] != 0) - (y->why[0] != 0); /* refused ones last */
    if (x->s.time != y->s.time)
        return x->s.time < y->s.time ? -1 : 1;
    return x->tp != y->tp ? x->tp - y->tp : x->pp - y->pp;
}

/* Every tp x dp x pp of n ranks, tp then pp ascending; *count of them. */
static layout *layouts_of(int n, size_t *count)
{
    size_t k = 0;
    for (int tp = 1; tp <= n; tp++)
        for (int pp = 1; n % tp == 0 && pp <= n / tp; pp++)
            k += (n / tp) % pp == 0;
    layout *v = calloc(k, sizeof *v);
    if (!v)
        return NULL;
    k = 0;
    for (int tp = 1; tp <= n; tp++)
        for (int pp = 1; n % tp == 0 && pp <= n / tp; pp++)
            if ((n / tp) % pp == 0)
                v[k++] = (layout){.tp = tp, .dp = n / tp / pp, .pp = pp};
    *count = k;
    return v;
}

static void print_text(const step_desc *sd, const run_opts *o, const backend_desc *net,
                       const layout *v, size_t n)
{
    char a[UNITS_BUF], b[UNITS_BUF];
    printf("training step layouts on sim: %s\n", sd->path);
    step_print_layout(sd);
    printf("  every tp x dp x pp of %d ranks: the same model and batch (%d microbatches a step "
           "in all), a layer's compute shared by its tp ranks\n", step_ranks(&sd->step),
           sd->step.microbatches * sd->step.dp);
    printf("  network: %s, sharing %s, no payload\n\n", net->note,
           run_sharing_name(o->sim.sharing, true));
    const char *h[] = {"", "tp", "dp", "pp", "m", "step time", "pipeline", "after it",
                       "waiting", "bubble", "tp a rank", "pp a rank", "dp a rank"};
    table t;
    if (table_init(&t, 13, h))
        return;
    for (size_t i = 0; i < n && !v[i].why[0]; i++) {
        const layout *l = &v[i];
        table_add(&t, "%zu", i + 1);
        table_add(&t, "%d", l->tp);
        table_add(&t, "%d", l->dp);
        table_add(&t, "%d", l->pp);
        table_add(&t, "%d", l->step.microbatches);
        table_add(&t, "%s", units_time_digits(a, l->s.time, 4));
        table_add(&t, "%s", units_time_digits(a, l->s.pipe_end, 4));
        table_add(&t, "%s", units_time_digits(a, l->s.time - l->s.pipe_end, 4));
        table_add(&t, "%s", units_time_digits(a, l->s.time - l->s.compute, 4));
        table_add(&t, "%.1f %%", 100 * step_bubble_fraction(&l->step));
        for (int k = 0; k < 3; k++)
            table_add(&t, "%s", units_size_str(a, l->s.most[k]));
    }
    table_print(&t, stdout, 0);
    table_release(&t);
    if (n > 0 && !v[0].why[0])
        printf("fastest: tp %d, dp %d, pp %d, %s a step, of which %s waiting (the step less "
               "the compute: communication nothing hid, and the bubble)\n", v[0].tp, v[0].dp,
               v[0].pp, units_time_digits(a, v[0].s.time, 4),
               units_time_digits(b, v[0].s.time - v[0].s.compute, 4));
    for (size_t i = 0; i < n; i++)
        if (v[i].why[0])
            printf("not laid out: tp %d x dp %d x pp %d: %s\n", v[i].tp, v[i].dp, v[i].pp,
                   v[i].why);
}

static void print_json(const step_desc *sd, const run_opts *o, const backend_desc *net,
                       const layout *v, size_t n)
{
    static const char *const kinds[3] = {"tp", "pp", "dp"};
    json_writer w;
    step_json_open(&w, sd, "sim");
    json_kv_string(&w, "network", net->note);
    json_kv_string(&w, "sharing", run_sharing_name(o->sim.sharing, false));
    json_key(&w, "layouts");
    json_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        const layout *l = &v[i];
        json_begin_object(&w);
        json_kv_uint(&w, "tp", (uint64_t)l->tp);
        json_kv_uint(&w, "dp", (uint64_t)l->dp);
        json_kv_uint(&w, "pp", (uint64_t)l->pp);
        if (l->why[0]) {
            json_kv_string(&w, "refused", l->why);
            json_end_object(&w);
            continue;
        }
        json_kv_uint(&w, "rank", (uint64_t)(i + 1));
        json_kv_uint(&w, "microbatches", (uint64_t)l->step.microbatches);
        json_kv_number(&w, "step_s", l->s.time);
        json_kv_number(&w, "pipeline_s", l->s.pipe_end);
        json_kv_number(&w, "compute_s", l->s.compute);
        json_kv_number(&w, "bubble_fraction_ideal", step_bubble_fraction(&l->step));
        json_key(&w, "sent_per_rank_bytes");
        json_begin_object(&w);
        for (int k = 0; k < 3; k++)
            json_kv_uint(&w, kinds[k], l->s.most[k]);
        json_end_object(&w);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_finish(&w);
}

/* The layouts laid out, fastest first (their step's own figures). */
static void print_csv(const layout *v, size_t n)
{
    for (size_t i = 0; i < n && !v[i].why[0]; i++)
        step_print_csv(&v[i].step, &v[i].s, i == 0);
}

/* The sweep's figure: its layouts, fastest first. */
static int plot_sweep(const step_desc *sd, const run_opts *o, const layout *v, size_t n,
                      unsigned plot)
{
    plot_step_row *rows = malloc((n ? n : 1) * sizeof *rows);
    if (!rows)
        return cli_error("out of memory");
    size_t k = 0;
    for (; k < n && !v[k].why[0]; k++) /* laid out first: sorted by time */
        rows[k] = step_plot_row(&v[k].step, &v[k].s);
    char what[200];
    cli_textf(what, sizeof what, "every layout of %d ranks, %s", step_ranks(&sd->step),
              sd->path);
    int rc = step_plot(sd, rows, k, what, o, plot);
    free(rows);
    return rc;
}

int step_sweep(const step_desc *sd, run_opts *o, unsigned plot)
{
    size_t n = 0;
    layout *v = layouts_of(step_ranks(&sd->step), &n);
    if (!v)
        return cli_error("out of memory");
    backend_desc net;
    memset(&net, 0, sizeof net);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        layout *l = &v[i];
        step_desc one = *sd;
        if (step_relayout(&one, l->tp, l->dp, l->pp, l->why, sizeof l->why))
            continue;
        run_row row;
        rc = step_run(&one, o, &row, &net, &l->s);
        l->step = one.step;
    }
    o->args.step = NULL;
    if (rc == CLI_EXIT_OK) {
        qsort(v, n, sizeof *v, by_time);
        if (o->fmt == CLI_JSON)
            print_json(sd, o, &net, v, n);
        else if (o->fmt == CLI_CSV)
            print_csv(v, n);
        else
            print_text(sd, o, &net, v, n);
        if (plot)
            rc = plot_sweep(sd, o, v, n, plot);
    }
    free(v);
    return rc;
}
