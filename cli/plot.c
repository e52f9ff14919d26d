/* plot.c - plot CSVs: the kinds, checking a file, running gnuplot, and the
 * writers (see plot.h). */
#include "cli/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commlab.h"
#include "core/file.h"
#include "core/tier.h"

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
    };
    return kind >= 0 && kind < PLOT_KIND_COUNT ? headers[kind] : "";
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

/* Copies s into buf (size len) with control characters as spaces and
 * surrounding spaces trimmed. */
static void clean_copy(char *buf, size_t len, const char *s)
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
    clean_copy(kind, sizeof kind, value);
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
            clean_copy(r->out->title, sizeof r->out->title, value);
        else if (strcmp(key, "side") == 0)
            clean_copy(r->out->side, sizeof r->out->side, value);
        else if (strcmp(key, "status") == 0)
            clean_copy(r->out->status, sizeof r->out->status, value);
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
        clean_copy(out->title, sizeof out->title, slash ? slash + 1 : name);
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

/* ---- rendering ---- */

int plot_terms_parse(const char *text, unsigned *terms, cl_diag *d)
{
    static const struct { const char *name; unsigned bits; } words[] = {
        {"png", PLOT_PNG}, {"svg", PLOT_SVG}, {"dumb", PLOT_DUMB},
        {"all", PLOT_PNG | PLOT_SVG | PLOT_DUMB},
    };
    unsigned t = 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        size_t i = 0;
        while (i < sizeof words / sizeof words[0] &&
               (strlen(words[i].name) != len || strncmp(words[i].name, p, len) != 0))
            i++;
        if (i == sizeof words / sizeof words[0])
            return diag_set(d, CL_EPARSE, "unknown --term '%.*s' (png, svg, dumb, all, or a "
                            "comma list)", (int)len, p);
        t |= words[i].bits;
        if (!p[len])
            break;
        p += len + 1;
    }
    *terms = t;
    return 0;
}

/* A growing `gnuplot -e` program: name='value'; ... */
typedef struct gp_args {
    char buf[8192];
    size_t used;
    bool overflow;
} gp_args;

/* Appends name='value';  Inside gnuplot's single quotes nothing is special
 * but the quote itself, written twice.  Control characters could end the
 * command line: callers refuse them in paths and titles have none. */
static void gp_set(gp_args *a, const char *name, const char *value)
{
    char q[2 * PATH_MAX + 2 * PLOT_SERIES_MAX];
    size_t n = 0;
    for (const char *s = value; *s && n + 2 < sizeof q; s++) {
        if (*s == '\'')
            q[n++] = '\'';
        q[n++] = *s;
    }
    q[n] = 0;
    size_t room = sizeof a->buf - a->used;
    int len = snprintf(a->buf + a->used, room, "%s='%s'; ", name, q);
    if (len < 0 || (size_t)len >= room)
        a->overflow = true;
    else
        a->used += (size_t)len;
}

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* The program's path: name itself when it has a '/', else the first
 * executable of that name on PATH.  CL_ENOENT when there is none. */
static int find_program(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(buf, len, "%s", name);
        return access(buf, X_OK) == 0 ? 0 : CL_ENOENT;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        int w = snprintf(buf, len, "%.*s/%s", (int)n, p, name);
        if (n && w > 0 && (size_t)w < len && access(buf, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return CL_ENOENT;
}

int plot_dirs_make(const char *dir, cl_diag *d)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return diag_set(d, CL_EINVAL, "output folder '%.60s...' is too long", dir);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return diag_set(d, CL_EINVAL, "cannot make folder '%s': %s", p, strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return diag_set(d, CL_EINVAL, "'%s' is not a folder", dir);
    return 0;
}

/* The file's name without its folder and a ".csv" ending. */
static void base_name(char *buf, size_t len, const char *path)
{
    const char *slash = strrchr(path, '/');
    snprintf(buf, len, "%s", slash ? slash + 1 : path);
    size_t n = strlen(buf);
    if (n > 4 && strcmp(buf + n - 4, ".csv") == 0)
        buf[n - 4] = 0;
}

/* Runs `gnuplot -e ARGS TEMPLATE` with stdin from /dev/null; stdout and
 * stderr are ours (dumb plots and gnuplot's own messages). */
static int run_gnuplot(const char *prog, const char *args, const char *tmpl, cl_diag *d)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return diag_set(d, CL_EIO, "cannot start '%s': %s", prog, strerror(errno));
    if (pid == 0) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, STDIN_FILENO);
            close(fd);
        }
        char *argv[] = {(char *)prog, (char *)"-e", (char *)args, (char *)tmpl, NULL};
        execv(prog, argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return diag_set(d, CL_EIO, "waiting for '%s': %s", prog, strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st))
        return diag_set(d, CL_EIO, "gnuplot failed on '%s' (exit status %d%s)", tmpl,
                        WEXITSTATUS(st), WEXITSTATUS(st) == 127 ? ": it could not be run" : "");
    return diag_set(d, CL_EIO, "gnuplot was killed by signal %d on '%s'", WTERMSIG(st), tmpl);
}

/* Appends name=N; */
static void gp_num(gp_args *a, const char *name, size_t v)
{
    size_t room = sizeof a->buf - a->used;
    int len = snprintf(a->buf + a->used, room, "%s=%zu; ", name, v);
    if (len < 0 || (size_t)len >= room)
        a->overflow = true;
    else
        a->used += (size_t)len;
}

/* name=v for a finite v (a real, written so gnuplot reads it as one). */
static void gp_real(gp_args *a, const char *name, double v)
{
    size_t room = sizeof a->buf - a->used;
    int len = snprintf(a->buf + a->used, room, "%s=%.9e; ", name, v);
    if (len < 0 || (size_t)len >= room)
        a->overflow = true;
    else
        a->used += (size_t)len;
}

/* The inputs a template reads for one panel (suffix "" or "2"): datafile,
 * plottitle, side, status, series, nseries, origin; empty when c is NULL. */
static void panel_args(gp_args *a, const char *suffix, const char *path, const plot_csv *c)
{
    static const char *const names[] = {"datafile", "plottitle", "side", "status", "series"};
    const char *values[] = {path, c ? c->title : NULL, c ? c->side : NULL,
                            c ? c->status : NULL, c ? c->series : NULL};
    char name[32];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(name, sizeof name, "%s%s", names[i], suffix);
        gp_set(a, name, values[i] ? values[i] : "");
    }
    snprintf(name, sizeof name, "nseries%s", suffix);
    gp_num(a, name, c ? c->nseries : 0);
    snprintf(name, sizeof name, "origin%s", suffix);
    gp_real(a, name, c ? c->origin : 0);
    snprintf(name, sizeof name, "eager%s", suffix);
    gp_real(a, name, c ? c->eager : 0);
}

static int check_job(const plot_job *job, cl_diag *d)
{
    if (job->path[1] && (job->csv[0]->kind != PLOT_TIMELINE || job->csv[1]->kind != PLOT_TIMELINE))
        return diag_set(d, CL_EINVAL, "two files are drawn together only when both are "
                        "timelines; got %s and %s", plot_kind_name((int)job->csv[0]->kind),
                        plot_kind_name((int)job->csv[1]->kind));
    const char *paths[] = {job->path[0], job->path[1], job->plotdir, job->outdir};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i] && has_control(paths[i]))
            return diag_set(d, CL_EINVAL, "the path '%s' has control characters", paths[i]);
    if (!job->terms)
        return diag_set(d, CL_EINVAL, "no output format asked for");
    return 0;
}

int plot_render(const plot_job *job, FILE *report, cl_diag *d)
{
    static const struct { unsigned bit; const char *term, *ext; } terms[] = {
        {PLOT_PNG, "png", ".png"}, {PLOT_SVG, "svg", ".svg"}, {PLOT_DUMB, "dumb", ""},
    };
    int err = check_job(job, d);
    if (err)
        return err;
    char prog[PATH_MAX];
    const char *want = job->gnuplot ? job->gnuplot : "gnuplot";
    if (find_program(want, prog, sizeof prog))
        return diag_set(d, CL_ENOENT, "cannot find '%s' to draw with; install gnuplot (`make "
                        "deps` installs gnuplot-nox, or: apt-get install gnuplot-nox)", want);
    if ((job->terms & (PLOT_PNG | PLOT_SVG)) && (err = plot_dirs_make(job->outdir, d)))
        return err;
    const kind_spec *k = &kinds[job->csv[0]->kind];
    char base[PATH_MAX], other[PATH_MAX / 2];
    base_name(base, sizeof base / 2, job->path[0]);
    if (job->path[1]) {
        base_name(other, sizeof other, job->path[1]);
        strcat(base, "-vs-");
        strcat(base, other);
    }
    for (int f = 0; k->figures[f]; f++) {
        char tmpl[PATH_MAX];
        snprintf(tmpl, sizeof tmpl, "%s/%s.gp", job->plotdir, k->figures[f]);
        if (access(tmpl, R_OK) != 0)
            return diag_set(d, CL_ENOENT, "the template '%s' is missing (set COMMLAB_HOME to "
                            "the folder holding plots/)", tmpl);
        for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
            if (!(job->terms & terms[t].bit))
                continue;
            char out[PATH_MAX] = "";
            if (terms[t].ext[0] &&
                snprintf(out, sizeof out, "%s/%s%s%s%s", job->outdir, base,
                         k->figures[1] ? "-" : "", k->figures[1] ? k->figures[f] : "",
                         terms[t].ext) >= (int)sizeof out)
                return diag_set(d, CL_EINVAL, "the output path for '%s' is too long", base);
            /* gnuplot writes the figure under the temporary name of a
             * file_out, never through what may be at out. */
            file_out fo = {.f = NULL};
            if (out[0] && (err = file_out_open(&fo, out, "figure", d)))
                return err;
            gp_args a = {.used = 0};
            gp_set(&a, "plotdir", job->plotdir);
            gp_set(&a, "term", terms[t].term);
            gp_set(&a, "output", !out[0] ? "" : fo.tmp[0] ? fo.tmp : fo.path);
            gp_num(&a, "cols", job->columns ? job->columns : 110);
            panel_args(&a, "", job->path[0], job->csv[0]);
            panel_args(&a, "2", job->path[1], job->path[1] ? job->csv[1] : NULL);
            if (a.overflow) {
                file_out_abort(&fo);
                return diag_set(d, CL_EINVAL, "gnuplot's inputs for '%s' are too long", base);
            }
            err = run_gnuplot(prog, a.buf, tmpl, d);
            struct stat st;
            if (!err && fo.tmp[0] && (stat(fo.tmp, &st) != 0 || st.st_size == 0))
                err = diag_set(d, CL_EIO, "gnuplot wrote nothing to '%s' with '%s'", out, tmpl);
            if (err) {
                file_out_abort(&fo);
                return err;
            }
            if (out[0] && (err = file_out_commit(&fo, "figure", d)))
                return err;
            if (out[0])
                fprintf(report, "%s\n", out);
        }
    }
    return 0;
}

/* ---- writers ---- */

static void write_head(FILE *f, int kind, const char *title)
{
    char t[PLOT_TITLE_MAX];
    clean_copy(t, sizeof t, title ? title : "");
    fprintf(f, "# commlab-plot: %s\n# title: %s\n", plot_kind_name(kind), t);
}

static int write_end(FILE *f)
{
    return fflush(f) != 0 || ferror(f) ? CL_EIO : 0;
}

int plot_write_tiers(FILE *f, const tier_set *ts, uint64_t bytes, const char *title)
{
    double best = INFINITY;
    for (size_t i = 0; i < ts->n; i++)
        best = fmin(best, tier_time(&ts->tiers[i], bytes));
    write_head(f, PLOT_TIERS, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_TIERS));
    for (size_t i = 0; i < ts->n; i++) {
        const cl_tier *t = &ts->tiers[i];
        double time = tier_time(t, bytes);
        fprintf(f, "%s,%s,%llu,%.9g,%.9g,%.9g,%.6g\n", t->name, t->scope,
                (unsigned long long)bytes, t->alpha, t->bandwidth, time,
                best > 0 ? time / best : 1.0);
    }
    return write_end(f);
}

int plot_write_sweep(FILE *f, const tier_set *ts, const uint64_t *sizes, size_t n,
                     const char *title)
{
    write_head(f, PLOT_SWEEP, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_SWEEP));
    for (size_t k = 0; k < ts->n; k++) {
        const cl_tier *t = &ts->tiers[k];
        double x = tier_crossover(t);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%llu,%s,%.9g,%s,%.9g,%.9g,%.9g\n", (unsigned long long)sizes[i], t->name,
                    tier_time(t, sizes[i]), (double)sizes[i] < x ? "latency" : "bandwidth", x,
                    t->alpha, t->bandwidth);
    }
    return write_end(f);
}

int plot_write_collectives(FILE *f, const plot_coll_row *rows, size_t n, const char *title)
{
    write_head(f, PLOT_COLLECTIVES, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_COLLECTIVES));
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%llu,%s,%.9g,%.9g,%s\n", (unsigned long long)rows[i].bytes, rows[i].algo,
                rows[i].simulated, rows[i].formula, rows[i].best ? "yes" : "no");
    return write_end(f);
}

int plot_write_validate(FILE *f, const plot_validate_row *rows, size_t n, const char *title)
{
    write_head(f, PLOT_VALIDATE, title);
    fprintf(f, "%s\n", plot_kind_header(PLOT_VALIDATE));
    for (size_t i = 0; i < n; i++) {
        const plot_validate_row *r = &rows[i];
        fprintf(f, "%s,%llu,%.9g,%.9g,%.6g\n", r->pattern, (unsigned long long)r->bytes,
                r->modeled, r->measured, 100.0 * (r->modeled - r->measured) / r->measured);
    }
    return write_end(f);
}

/* Rows by rank, then time posted, then their order in the log. */
static int cmp_rec(const void *a, const void *b)
{
    const cl_record *x = *(const cl_record *const *)a, *y = *(const cl_record *const *)b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->posted != y->posted)
        return x->posted < y->posted ? -1 : 1;
    return (x > y) - (x < y);
}

int plot_write_timeline(FILE *f, const cl_record *recs, size_t n,
                        const plot_timeline_meta *meta)
{
    if (n == 0)
        return CL_EINVAL;
    int32_t iter = recs[0].iter;
    for (size_t i = 0; i < n; i++) {
        const cl_record *r = &recs[i];
        if (!isfinite(r->posted) || !isfinite(r->started) || !isfinite(r->finished) ||
            r->finished < r->posted || r->rank < 0)
            return CL_EINVAL;
        if (r->iter > iter)
            iter = r->iter;
    }
    const cl_record **v = malloc(n * sizeof *v);
    if (!v)
        return CL_ENOMEM;
    size_t m = 0;
    double origin = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (recs[i].iter == iter) {
            v[m++] = &recs[i];
            origin = fmin(origin, recs[i].posted);
        }
    qsort(v, m, sizeof *v, cmp_rec);
    write_head(f, PLOT_TIMELINE, meta->title);
    char side[16], status[32];
    clean_copy(side, sizeof side, meta->side ? meta->side : "");
    clean_copy(status, sizeof status, meta->status ? meta->status : "ok");
    /* The run's clock at time 0, so a figure can name a moment as the
     * run's report does ("deadlock ... at t = 710 ms"). */
    fprintf(f, "# side: %s\n# status: %s\n# iteration: %d\n# origin_s: %.9g\n%s\n", side, status,
            (int)iter, origin, plot_kind_header(PLOT_TIMELINE));
    for (size_t i = 0; i < m; i++) {
        const cl_record *r = v[i];
        /* started is clamped into [posted, finished] as the trace does. */
        double started = fmin(fmax(r->started, r->posted), r->finished);
        fprintf(f, "%d,%s,%.12g,%.12g,%.12g,%d,%llu,%d,%d\n", (int)r->rank,
                rec_op_name(r->op, r->blocking), r->posted - origin, started - origin,
                r->finished - origin, (int)(r->peer < 0 ? -1 : r->peer),
                (unsigned long long)r->bytes, (int)(r->tag < 0 ? -1 : r->tag),
                r->stalled ? 1 : 0);
    }
    free(v);
    return write_end(f);
}
