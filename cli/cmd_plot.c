/* cmd_plot.c - `commlab plot FILE.csv`, and the --plot / --timeline outputs
 * of price, sweep and run.  cli/plot.c does the work; this file finds the
 * templates, names the output folder and turns errors into exit codes. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/plot.h"
#include "commlab.h"
#include "core/file.h"
#include "core/tier.h"
#include "core/units.h"

const char cmd_plot_usage[] =
    "usage: commlab plot FILE.csv [FILE2.csv] [--term LIST] [--out DIR]\n"
    "\n"
    "Draws a saved result with gnuplot.  The CSV's first line names what it\n"
    "holds (`# commlab-plot: KIND`), its second the title (`# title: ...`):\n"
    "\n"
    "  compare    from `commlab compare --csv` or `commlab calibrate --csv`:\n"
    "             three figures, latency vs size (log-log: the model as a curve,\n"
    "             measurements at their median with a bar over the interquartile\n"
    "             range, min and max as marks), bandwidth vs size, prediction\n"
    "             error (%) vs size\n"
    "  tiers      from `commlab price --plot`: one message's time on each tier,\n"
    "             the latency term alpha and the bandwidth term n/B stacked\n"
    "  sweep      from `commlab sweep --plot`: T(n) per tier (log-log), each\n"
    "             tier's crossover n* = alpha x B marked\n"
    "  timeline   from `commlab run --timeline FILE.csv`: what every rank did\n"
    "             in the run's last iteration, one row of bars per rank\n"
    "\n"
    "Two timeline files are drawn in one figure, the first above the second:\n"
    "give the modeled run first and the measured one second to see where the\n"
    "model and the machine differ (a pipeline's bubble, a deadlock's stall).\n"
    "The CSV is checked before gnuplot runs: an error names the line, the\n"
    "column and the bad value.\n"
    "\n"
    "  -T, --term LIST     png, svg, dumb (drawn in the terminal), all, or a\n"
    "                      comma list (default png,svg)\n"
    "  -o, --out DIR       where figures go (default plots/out, made if missing)\n"
    "  -h, --help          this text\n"
    "\n"
    "Figures are named after the CSV: plots/out/NAME.png and NAME.svg, with\n"
    "-latency, -bandwidth and -error for compare, and A-vs-B for two\n"
    "timelines; their paths are printed.  Templates are plots/*.gp, found in\n"
    "$COMMLAB_HOME/plots, then next to the binary's source tree, then in\n"
    "PREFIX/share/commlab/plots.  $COMMLAB_GNUPLOT names the gnuplot program\n"
    "(default: gnuplot on PATH; `make deps` installs gnuplot-nox).\n"
    "\n"
    "exit status: 0 ok, 2 bad usage, a bad CSV or no gnuplot, 4 gnuplot failed\n"
    "(its messages are shown)\n"
    "\n"
    "examples:\n"
    "  commlab price --plot                  # writes and draws plots/out/price.csv\n"
    "  commlab run pipeline -n 4 --compute 1ms --timeline sim.csv\n"
    "  commlab run pipeline -n 4 --compute 1ms --backend shm --timeline shm.csv\n"
    "  commlab plot sim.csv shm.csv --term dumb\n";

#define DEFAULT_OUT "plots/out"

static int exit_for(int err)
{
    return err == CL_EIO ? CLI_EXIT_FAILED : CLI_EXIT_USAGE;
}

int cli_plot_terms(const char *text, unsigned *terms)
{
    cl_diag d = {{0}};
    if (plot_terms_parse(text ? text : "png,svg", terms, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}

/* The folder holding the templates: the one that has plots/common.gp. */
static int find_plotdir(char *buf, size_t len)
{
    cl_diag d = {{0}};
    char path[PATH_MAX];
    if (cli_data_path(path, sizeof path, "plots/common.gp", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    *strrchr(path, '/') = 0;
    cli_textf(buf, len, "%s", path);
    return 0;
}

/* The width of the terminal a dumb plot is drawn in: $COLUMNS when set,
 * else the terminal's own on stdout; 0 when neither says (not a terminal). */
static unsigned terminal_columns(void)
{
    const char *env = getenv("COLUMNS");
    char *end;
    long n = env ? strtol(env, &end, 10) : 0;
    if (env && *env && !*end && n >= 40 && n <= 1000)
        return (unsigned)n;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 0;
}

/* Loads and checks paths[0..n), then draws them as one job. */
static int draw(const char *const *paths, size_t n, unsigned terms, const char *outdir,
                FILE *report)
{
    plot_csv csv[2];
    cl_diag d = {{0}};
    for (size_t i = 0; i < n; i++)
        if (plot_csv_load(paths[i], &csv[i], &d))
            return cli_diag(&d, CLI_EXIT_USAGE);
    char plotdir[PATH_MAX];
    int rc = find_plotdir(plotdir, sizeof plotdir);
    if (rc)
        return rc;
    const char *gnuplot = getenv("COMMLAB_GNUPLOT");
    plot_job job = {
        .path = {paths[0], n > 1 ? paths[1] : NULL}, .csv = {&csv[0], &csv[1]},
        .plotdir = plotdir, .outdir = outdir, .terms = terms,
        .gnuplot = gnuplot && *gnuplot ? gnuplot : NULL, .columns = terminal_columns(),
    };
    int err = plot_render(&job, report, &d);
    if (err)
        return cli_diag(&d, exit_for(err));
    return 0;
}

int cmd_plot(int argc, char **argv)
{
    static const struct option opts[] = {
        {"term", required_argument, NULL, 'T'},
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *outdir = DEFAULT_OUT;
    unsigned terms = 0;
    int c, rc;
    if ((rc = cli_plot_terms(NULL, &terms)))
        return rc;
    while ((c = getopt_long(argc, argv, ":T:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'T':
            if ((rc = cli_plot_terms(optarg, &terms)))
                return rc;
            break;
        case 'o':
            if (!*optarg)
                return cli_error("--out needs a folder, got ''");
            outdir = optarg;
            break;
        case 'h': fputs(cmd_plot_usage, stdout); return CLI_EXIT_OK;
        default: return cli_bad_option("plot", opts, argv, c);
        }
    }
    int n = argc - optind;
    if (n < 1)
        return cli_error("plot: which file? give a CSV written by price/sweep/collectives/validate "
                         "--plot, run --timeline or compare --csv\ntry 'commlab help plot'");
    if (n > 2)
        return cli_error("plot: one file, or two timelines to stack; got %d files", n);
    return draw((const char *const *)argv + optind, (size_t)n, terms, outdir, stdout);
}

/* ---- the --plot of price and sweep ---- */

/* "host NAME", or "" when the name cannot be had. */
static void host_words(char *buf, size_t len)
{
    char h[256];
    if (gethostname(h, sizeof h) == 0) {
        h[sizeof h - 1] = 0;
        snprintf(buf, len, ", host %s", h);
    } else {
        buf[0] = 0;
    }
}

/* Writes outdir/NAME.csv with the writer (via write_csv), then draws it;
 * paths go to report. */
typedef int write_fn(FILE *f, const void *arg, const char *title);

static int write_and_draw(const char *name, write_fn *fn, const void *arg, const char *title,
                          unsigned terms, FILE *report)
{
    cl_diag d = {{0}};
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.csv", DEFAULT_OUT, name);
    if (plot_dirs_make(DEFAULT_OUT, &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    file_out o;
    if (file_out_open(&o, path, "data", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    fn(o.f, arg, title); /* a write error is found again by the commit */
    if (file_out_commit(&o, "data", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    fprintf(report, "%s\n", path);
    const char *paths[] = {path};
    return draw(paths, 1, terms, DEFAULT_OUT, report);
}

typedef struct tiers_arg { const tier_set *ts; uint64_t bytes; } tiers_arg;
typedef struct sweep_arg { const tier_set *ts; const uint64_t *sizes; size_t n; } sweep_arg;

static int write_tiers(FILE *f, const void *arg, const char *title)
{
    const tiers_arg *a = arg;
    return plot_write_tiers(f, a->ts, a->bytes, title);
}

static int write_sweep(FILE *f, const void *arg, const char *title)
{
    const sweep_arg *a = arg;
    return plot_write_sweep(f, a->ts, a->sizes, a->n, title);
}

int cli_plot_tiers(const tier_set *ts, uint64_t bytes, unsigned terms, FILE *report)
{
    char host[300], sz[UNITS_BUF], title[PLOT_TITLE_MAX];
    host_words(host, sizeof host);
    cli_textf(title, sizeof title, "one %s message on each tier, alpha-beta model%s",
              units_size_str(sz, bytes), host);
    tiers_arg a = {ts, bytes};
    return write_and_draw("price", write_tiers, &a, title, terms, report);
}

int cli_plot_sweep(const tier_set *ts, const uint64_t *sizes, size_t n, unsigned terms,
                   FILE *report)
{
    char host[300], title[PLOT_TITLE_MAX];
    host_words(host, sizeof host);
    cli_textf(title, sizeof title, "T(n) = alpha + n/B per tier, alpha-beta model%s", host);
    sweep_arg a = {ts, sizes, n};
    return write_and_draw("sweep", write_sweep, &a, title, terms, report);
}

typedef struct coll_arg { const plot_coll_row *rows; size_t n; } coll_arg;

static int write_coll(FILE *f, const void *arg, const char *title)
{
    const coll_arg *a = arg;
    return plot_write_collectives(f, a->rows, a->n, title);
}

/* write_and_draw as plots/out/KIND-NAME, titled what and the host. */
static int draw_titled(const char *kind, const char *name, const char *what, write_fn *fn,
                       const void *arg, unsigned terms, FILE *report)
{
    char host[300], title[PLOT_TITLE_MAX], file[128];
    host_words(host, sizeof host);
    cli_textf(title, sizeof title, "%s%s", what, host);
    cli_textf(file, sizeof file, "%s-%s", kind, name);
    return write_and_draw(file, fn, arg, title, terms, report);
}

int cli_plot_collectives(const char *name, const char *what, const plot_coll_row *rows,
                         size_t n, unsigned terms, FILE *report)
{
    coll_arg a = {rows, n};
    return draw_titled("collectives", name, what, write_coll, &a, terms, report);
}

typedef struct step_arg { const plot_step_row *rows; size_t n; } step_arg;

static int write_step(FILE *f, const void *arg, const char *title)
{
    const step_arg *a = arg;
    return plot_write_step(f, a->rows, a->n, title);
}

int cli_plot_step(const char *name, const char *what, const plot_step_row *rows, size_t n,
                  unsigned terms, FILE *report)
{
    step_arg a = {rows, n};
    return draw_titled("step", name, what, write_step, &a, terms, report);
}

typedef struct validate_arg { const plot_validate_row *rows; size_t n; } validate_arg;

static int write_validate(FILE *f, const void *arg, const char *title)
{
    const validate_arg *a = arg;
    return plot_write_validate(f, a->rows, a->n, title);
}

int cli_plot_validate(const char *backend, const char *what, const plot_validate_row *rows,
                      size_t n, unsigned terms, FILE *report)
{
    validate_arg a = {rows, n};
    return draw_titled("validate", backend, what, write_validate, &a, terms, report);
}

/* ---- run --timeline ---- */

int cli_timeline_write(const char *path, const rec_log *log, const char *pattern,
                       const char *backend, const char *where, int ranks, uint64_t bytes,
                       int status)
{
    if (log->dropped)
        return cli_error("--timeline: the run made more records than the %zu kept, so its "
                         "last iteration is missing; run fewer --iters", log->n);
    if (log->n == 0)
        return cli_error("--timeline: the run left no records to draw");
    char host[300], sz[UNITS_BUF], title[PLOT_TITLE_MAX];
    host_words(host, sizeof host);
    /* The records are the last iteration's (a table's figures are the
     * median's): the title says so. */
    cli_textf(title, sizeof title, "%s, %s%s%s%s, %d rank%s, %s, last iteration%s", pattern,
              backend, where ? " (" : "", where ? where : "", where ? ")" : "", ranks,
              ranks == 1 ? "" : "s", units_size_str(sz, bytes), host);
    plot_timeline_meta meta = {
        .title = title, .side = backend,
        .status = status == 0 ? "ok" : status == CL_EDEADLOCK ? "deadlock" : cl_errname(status),
    };
    cl_diag d = {{0}};
    file_out o;
    if (file_out_open(&o, path, "timeline", &d))
        return cli_diag(&d, CLI_EXIT_USAGE);
    int err = plot_write_timeline(o.f, log->v, log->n, &meta);
    if (err && err != CL_EIO) {
        file_out_abort(&o);
        return cli_error("cannot write the timeline '%s': %s", path, cl_strerror(err));
    }
    if (file_out_commit(&o, "timeline", &d)) /* a write error is found again here */
        return cli_diag(&d, CLI_EXIT_USAGE);
    return 0;
}
