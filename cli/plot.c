/* plot.c - plot CSVs: the kinds and their columns, and reading and
 * checking a file (see plot.h; plot_render.c runs gnuplot, plot_write.c
 * writes the CSVs, cli/plot_impl.h has what the three share). */
#include "cli/plot.h"
#include "cli/plot_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"
#include "core/file.h"

/* ---- the kinds ---- */

/* What a column may hold.  Bounds exist because of the axes: a size or a
 * time drawn on a log axis must be > 0. */
typedef enum col_type {
    COL_TEXT, /* anything without a comma or a quote */
    COL_KEY,  /* a series name: no spaces or quotes either */
    COL_INT,  /* an integer >= min */
    COL_NUM,  /* a finite number >= min (> min when open) */
} col_type;

typedef struct col_spec {
    const char *name;    /* header word */
    col_type type;
    double min;          /* COL_INT, COL_NUM: smallest value */
    bool open;           /* COL_NUM: min itself is refused */
    const char *choices; /* COL_TEXT: comma-separated allowed words, or NULL */
} col_spec;

#define NO_MIN (-INFINITY)
#define MAX_COLS 11

typedef struct kind_spec {
    const char *name;             /* "compare" */
    const char *figures[4];       /* templates plots/NAME.gp, NULL-terminated */
    int ncols;
    col_spec cols[MAX_COLS];
    int series_cols[3];           /* columns joined with ',' into a series key (timeline:
                                     the ops present); -1 ends */
    int model_from;               /* compare: the columns from this one on may all be
                                     empty together (a row of the model alone, for
                                     its curve); -1: every column is required */
} kind_spec;

static const char timeline_ops[] = "send,isend,recv,irecv,wait,compute,barrier,iter";

static const kind_spec kinds[PLOT_KIND_COUNT] = {
    [PLOT_COMPARE] = {
        "compare", {"latency", "bandwidth", "error", NULL}, 11,
        {{"pattern", COL_KEY, 0, false, NULL},
         {"backend", COL_KEY, 0, false, NULL},
         {"ranks", COL_INT, 1, false, NULL},
         {"bytes", COL_INT, 1, false, NULL},
         {"modeled_s", COL_NUM, 0, true, NULL},
         {"measured_median_s", COL_NUM, 0, true, NULL},
         {"measured_min_s", COL_NUM, 0, true, NULL},
         {"measured_max_s", COL_NUM, 0, true, NULL},
         {"error_pct", COL_NUM, NO_MIN, false, NULL},
         {"measured_q1_s", COL_NUM, 0, true, NULL},
         {"measured_q3_s", COL_NUM, 0, true, NULL}},
        {0, 1, 2}, 5,
    },
    [PLOT_TIERS] = {
        "tiers", {"tiers", NULL}, 7,
        {{"tier", COL_KEY, 0, false, NULL},
         {"scope", COL_TEXT, 0, false, NULL},
         {"bytes", COL_INT, 0, false, NULL},
         {"alpha_s", COL_NUM, 0, false, NULL},
         {"bandwidth_Bps", COL_NUM, 0, true, NULL},
         {"time_s", COL_NUM, 0, false, NULL},
         {"ratio", COL_NUM, 0, false, NULL}},
        {0, -1, -1}, -1,
    },
    [PLOT_SWEEP] = {
        "sweep", {"sweep", NULL}, 7,
        {{"bytes", COL_INT, 1, false, NULL},
         {"tier", COL_KEY, 0, false, NULL},
         {"time_s", COL_NUM, 0, true, NULL},
         {"regime", COL_TEXT, 0, false, "latency,bandwidth"},
         {"crossover_bytes", COL_NUM, 0, false, NULL},
         {"alpha_s", COL_NUM, 0, false, NULL},
         {"bandwidth_Bps", COL_NUM, 0, true, NULL}},
        {1, -1, -1}, -1,
    },
    [PLOT_TIMELINE] = {
        "timeline", {"timeline", NULL}, 9,
        {{"rank", COL_INT, 0, false, NULL},
         {"op", COL_TEXT, 0, false, timeline_ops},
         {"posted_s", COL_NUM, NO_MIN, false, NULL},
         {"started_s", COL_NUM, NO_MIN, false, NULL},
         {"finished_s", COL_NUM, NO_MIN, false, NULL},
         {"peer", COL_INT, -1, false, NULL},
         {"bytes", COL_INT, 0, false, NULL},
         {"tag", COL_INT, -1, false, NULL},
         {"stalled", COL_TEXT, 0, false, "0,1"}},
        {1, -1, -1}, -1,
    },
    [PLOT_COLLECTIVES] = {
        "collectives", {"collectives", NULL}, 5,
        {{"bytes", COL_INT, 1, false, NULL},
         {"algorithm", COL_KEY, 0, false, NULL},
         {"simulated_s", COL_NUM, 0, true, NULL},
         {"formula_s", COL_NUM, 0, true, NULL},
         {"best", COL_TEXT, 0, false, "yes,no"}},
        {1, -1, -1}, -1,
    },
    [PLOT_VALIDATE] = {
        "validate", {"validate", NULL}, 5,
        {{"pattern", COL_KEY, 0, false, NULL},
         {"bytes", COL_INT, 1, false, NULL},
         {"modeled_s", COL_NUM, 0, true, NULL},
         {"measured_median_s", COL_NUM, 0, true, NULL},
         {"error_pct", COL_NUM, NO_MIN, false, NULL}},
        {0, -1, -1}, -1,
    },
    [PLOT_STEP] = {
        "step", {"step", NULL}, 6,
        {{"layout", COL_KEY, 0, false, NULL},
         {"step_s", COL_NUM, 0, true, NULL},
         {"compute_s", COL_NUM, 0, false, NULL},
         {"tp_wait_s", COL_NUM, 0, false, NULL},
         {"pp_wait_s", COL_NUM, 0, false, NULL},
         {"dp_wait_s", COL_NUM, 0, false, NULL}},
        {0, -1, -1}, -1,
    },
};

int plot_kind_find(const char *name)
{
    for (int k = 0; k < PLOT_KIND_COUNT; k++)
        if (strcmp(kinds[k].name, name) == 0)
            return k;
    return -1;
}

const char *plot_kind_name(int kind)
{
    return kind >= 0 && kind < PLOT_KIND_COUNT ? kinds[kind].name : "?";
}

const char *plot_kind_header(int kind)
{
    /* Spelt out once more than the specs: test_plot checks the two agree. */
    static const char *const headers[PLOT_KIND_COUNT] = {
        [PLOT_COMPARE] = "pattern,backend,ranks,bytes,modeled_s,measured_median_s,"
                         "measured_min_s,measured_max_s,error_pct,measured_q1_s,"
                         "measured_q3_s",
        [PLOT_TIERS] = "tier,scope,bytes,alpha_s,bandwidth_Bps,time_s,ratio",
        [PLOT_SWEEP] = "bytes,tier,time_s,regime,crossover_bytes,alpha_s,bandwidth_Bps",
        [PLOT_TIMELINE] = "rank,op,posted_s,started_s,finished_s,peer,bytes,tag,stalled",
        [PLOT_COLLECTIVES] = "bytes,algorithm,simulated_s,formula_s,best",
        [PLOT_VALIDATE] = "pattern,bytes,modeled_s,measured_median_s,error_pct",
        [PLOT_STEP] = "layout,step_s,compute_s,tp_wait_s,pp_wait_s,dp_wait_s",
    };
    return kind >= 0 && kind < PLOT_KIND_COUNT ? headers[kind] : "";
}

const char *const *plot__figures(int kind)
{
    return kinds[kind].figures;
}

/* ---- reading a CSV ---- */

/* A reader's state: the file, where it is, and what it found. */
typedef struct csv_reader {
    FILE *f;
    const char *name;   /* for messages */
    char *line;         /* getline's buffer */
    size_t cap;
    size_t lineno;      /* of the line in `line`, from 1 */
    plot_csv *out;
    const kind_spec *k;
    double num[MAX_COLS]; /* the current row's numbers (COL_INT, COL_NUM) */
} csv_reader;

/* Reads the next line without its "\n" or "\r\n"; false at the end or on
 * error (then ferror tells). */
static bool next_line(csv_reader *r)
{
    ssize_t len = getline(&r->line, &r->cap, r->f);
    if (len < 0)
        return false;
    r->lineno++;
    while (len > 0 && (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
        r->line[--len] = 0;
    return true;
}

void plot__clean_copy(char *buf, size_t len, const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = 0;
    for (; *s && n + 1 < len; s++)
        buf[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s;
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    buf[n] = 0;
}

/* "# key: value" -> key and value (pointers into line), or false. */
static bool meta_line(char *line, char **key, char **value)
{
    if (line[0] != '#')
        return false;
    char *p = line + 1;
    while (*p == ' ')
        p++;
    char *colon = strchr(p, ':');
    if (!colon)
        return false;
    *colon = 0;
    *key = p;
    *value = colon + 1;
    return true;
}

/* The number in text, or an error naming the column. */
static int parse_number(csv_reader *r, const col_spec *c, const char *text, double *v,
                        cl_diag *d)
{
    char *end;
    errno = 0;
    if (c->type == COL_INT) {
        long long x = strtoll(text, &end, 10);
        if (!*text || *end || errno || (double)x < c->min)
            return diag_set(d, CL_EPARSE, "%s:%zu: column '%s' must be an integer >= %.0f, got "
                            "'%s'", r->name, r->lineno, c->name, c->min, text);
        *v = (double)x;
        return 0;
    }
    double x = strtod(text, &end);
    if (!*text || *end || !isfinite(x))
        return diag_set(d, CL_EPARSE, "%s:%zu: column '%s' must be a number, got '%s'",
                        r->name, r->lineno, c->name, text);
    if (x < c->min || (c->open && x == c->min))
        return diag_set(d, CL_EPARSE, "%s:%zu: column '%s' must be %s %g, got '%s'", r->name,
                        r->lineno, c->name, c->open ? ">" : ">=", c->min, text);
    *v = x;
    return 0;
}

/* True when word is one of the comma-separated choices. */
static bool is_choice(const char *choices, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = choices; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && strncmp(p, word, n) == 0)
            return true;
        p += n + (comma != NULL);
    }
    return false;
}

static int check_text(csv_reader *r, const col_spec *c, const char *text, cl_diag *d)
{
    if (!*text && (c->type == COL_KEY || c->choices))
        return diag_set(d, CL_EPARSE, "%s:%zu: column '%s' is empty", r->name, r->lineno,
                        c->name);
    if (strpbrk(text, "\"'\\`") || (c->type == COL_KEY && strpbrk(text, " \t")))
        return diag_set(d, CL_EPARSE, "%s:%zu: column '%s' must not contain quotes%s, got "
                        "'%s'", r->name, r->lineno, c->name,
                        c->type == COL_KEY ? " or spaces" : "", text);
    if (c->choices && !is_choice(c->choices, text))
        return diag_set(d, CL_EPARSE, "%s:%zu: column '%s' must be one of %s, got '%s'",
                        r->name, r->lineno, c->name, c->choices, text);
    return 0;
}

/* Adds the row's series key (its series columns joined by ',') to the
 * list, unless it is there already. */
static int add_series(csv_reader *r, char **field, cl_diag *d)
{
    if (r->k->series_cols[0] < 0)
        return 0;
    char key[256];
    size_t n = 0;
    for (int i = 0; i < 3 && r->k->series_cols[i] >= 0; i++)
        n += (size_t)snprintf(key + n, n < sizeof key ? sizeof key - n : 0, "%s%s",
                              i ? "," : "", field[r->k->series_cols[i]]);
    if (n >= sizeof key)
        return diag_set(d, CL_EPARSE, "%s:%zu: series name '%.40s...' is too long", r->name,
                        r->lineno, key);
    plot_csv *o = r->out;
    /* O(series x rows) with a handful of series; a set if that changes. */
    for (const char *p = o->series; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, key, n) == 0)
            return 0;
        p += len + (p[len] == ' ');
    }
    size_t used = strlen(o->series);
    if (used + 1 + n + 1 > sizeof o->series || o->nseries >= 32)
        return diag_set(d, CL_EPARSE, "%s:%zu: too many series to draw (at most 32), at '%s'",
                        r->name, r->lineno, key);
    snprintf(o->series + used, sizeof o->series - used, "%s%s", used ? " " : "", key);
    o->nseries++;
    return 0;
}

/* True when the row's columns from k->model_from on are all empty: a row
 * of the model alone. */
static bool model_only(const kind_spec *k, char **field)
{
    if (k->model_from < 0)
        return false;
    for (int i = k->model_from; i < k->ncols; i++)
        if (field[i][0])
            return false;
    return true;
}

/* What holds between the columns of one row. */
static int check_row(csv_reader *r, bool model, cl_diag *d)
{
    const double *v = r->num;
    if (r->k == &kinds[PLOT_COMPARE] && !model &&
        !(v[6] <= v[9] && v[9] <= v[5] && v[5] <= v[10] && v[10] <= v[7]))
        return diag_set(d, CL_EPARSE, "%s:%zu: measured_min_s <= measured_q1_s <= "
                        "measured_median_s <= measured_q3_s <= measured_max_s does not hold "
                        "(%g, %g, %g, %g, %g)", r->name, r->lineno, v[6], v[9], v[5], v[10],
                        v[7]);
    if (r->k == &kinds[PLOT_TIMELINE] && !(v[2] <= v[3] && v[3] <= v[4]))
        return diag_set(d, CL_EPARSE, "%s:%zu: posted_s <= started_s <= finished_s does not "
                        "hold (%g, %g, %g)", r->name, r->lineno, v[2], v[3], v[4]);
    return 0;
}

/* Checks the data row in r->line. */
static int read_row(csv_reader *r, cl_diag *d)
{
    char *field[MAX_COLS];
    int n = 0;
    for (char *p = r->line;; n++) {
        char *comma = strchr(p, ',');
        if (n < MAX_COLS)
            field[n] = p;
        if (!comma) {
            n++;
            break;
        }
        *comma = 0;
        p = comma + 1;
    }
    if (n != r->k->ncols)
        return diag_set(d, CL_EPARSE, "%s:%zu: expected %d columns (%s), got %d", r->name,
                        r->lineno, r->k->ncols, plot_kind_header((int)(r->k - kinds)), n);
    bool model = model_only(r->k, field);
    for (int i = 0; i < (model ? r->k->model_from : n); i++) {
        const col_spec *c = &r->k->cols[i];
        int err = c->type == COL_TEXT || c->type == COL_KEY
                      ? check_text(r, c, field[i], d)
                      : parse_number(r, c, field[i], &r->num[i], d);
        if (err)
            return err;
    }
    int err = check_row(r, model, d);
    if (!err)
        err = add_series(r, field, d);
    return err;
}

/* "# origin_s:" (seconds) or "# eager_limit_bytes:" as a number a figure
 * can use: 0 when it is not one (the line is the reader's aid, never worth
 * refusing a file). */
static double origin_of(const char *value)
{
    char *end;
    double x = strtod(value, &end);
    return end != value && *end == 0 && isfinite(x) && x >= 0 && x < 1e9 ? x : 0;
}

/* The `# key: value` lines at the top, up to the header line (left in
 * r->line).  The first must name the kind. */
static int read_meta(csv_reader *r, cl_diag *d)
{
    char *key, *value;
    if (!next_line(r) || !meta_line(r->line, &key, &value) ||
        strcmp(key, "commlab-plot") != 0) {
        if (ferror(r->f))
            return diag_set(d, CL_EIO, "%s: cannot read: %s", r->name, strerror(errno));
        return diag_set(d, CL_EPARSE, "%s:1: not a plot CSV: the first line must be "
                        "'# commlab-plot: KIND' (compare, tiers, sweep, timeline, "
                        "collectives, validate)", r->name);
    }
    char kind[32];
    plot__clean_copy(kind, sizeof kind, value);
    int k = plot_kind_find(kind);
    if (k < 0)
        return diag_set(d, CL_EPARSE, "%s:1: unknown plot kind '%s' (compare, tiers, sweep, "
                        "timeline, collectives, validate)", r->name, kind);
    r->out->kind = (plot_kind)k;
    r->k = &kinds[k];
    while (next_line(r)) {
        if (r->line[0] != '#')
            return 0;
        if (!meta_line(r->line, &key, &value))
            continue; /* a plain comment */
        if (strcmp(key, "title") == 0)
            plot__clean_copy(r->out->title, sizeof r->out->title, value);
        else if (strcmp(key, "side") == 0)
            plot__clean_copy(r->out->side, sizeof r->out->side, value);
        else if (strcmp(key, "status") == 0)
            plot__clean_copy(r->out->status, sizeof r->out->status, value);
        else if (strcmp(key, "origin_s") == 0)
            r->out->origin = origin_of(value);
        else if (strcmp(key, "eager_limit_bytes") == 0)
            r->out->eager = origin_of(value);
    }
    if (ferror(r->f))
        return diag_set(d, CL_EIO, "%s: cannot read: %s", r->name, strerror(errno));
    return diag_set(d, CL_EPARSE, "%s:%zu: the header line is missing; a %s CSV has '%s'",
                    r->name, r->lineno, kind, plot_kind_header(k));
}

/* The whole file: metadata, header, rows. */
static int read_all(csv_reader *r, cl_diag *d)
{
    int err = read_meta(r, d);
    if (err)
        return err;
    const char *want = plot_kind_header(r->out->kind);
    if (strcmp(r->line, want) != 0)
        return diag_set(d, CL_EPARSE, "%s:%zu: a %s CSV's header must be '%s', got '%.120s'",
                        r->name, r->lineno, r->k->name, want, r->line);
    size_t blank = 0;
    while (next_line(r)) {
        if (r->line[0] == '#')
            continue;
        if (!r->line[0]) {
            blank = blank ? blank : r->lineno;
            continue;
        }
        if (blank)
            return diag_set(d, CL_EPARSE, "%s:%zu: empty line between data rows (gnuplot "
                            "would break the data there)", r->name, blank);
        if ((err = read_row(r, d)))
            return err;
        r->out->rows++;
    }
    if (ferror(r->f))
        return diag_set(d, CL_EIO, "%s: cannot read: %s", r->name, strerror(errno));
    if (!r->out->rows)
        return diag_set(d, CL_EPARSE, "%s: no data rows after the header", r->name);
    return 0;
}

int plot_csv_read(FILE *f, const char *name, plot_csv *out, cl_diag *d)
{
    memset(out, 0, sizeof *out);
    csv_reader r = {.f = f, .name = name, .out = out};
    int err = read_all(&r, d);
    free(r.line);
    if (err)
        return err;
    if (!out->title[0]) {
        const char *slash = strrchr(name, '/');
        plot__clean_copy(out->title, sizeof out->title, slash ? slash + 1 : name);
    }
    if (!out->status[0])
        snprintf(out->status, sizeof out->status, "ok");
    return 0;
}

int plot_csv_load(const char *path, plot_csv *out, cl_diag *d)
{
    FILE *f;
    int err = file_open_read(path, "CSV file", &f, d);
    if (err)
        return err;
    err = plot_csv_read(f, path, out, d);
    fclose(f);
    return err;
}
