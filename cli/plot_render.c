/* plot_render.c - drawing a plot CSV: --term lists, gnuplot found and run
 * once per figure and output format with its inputs as `-e` assignments,
 * figures written under a temporary name then put in place (see plot.h). */
#include "cli/plot.h"
#include "cli/plot_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commlab.h"
#include "core/file.h"

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
    const char *const *figures = plot__figures((int)job->csv[0]->kind);
    char base[PATH_MAX], other[PATH_MAX / 2];
    base_name(base, sizeof base / 2, job->path[0]);
    if (job->path[1]) {
        base_name(other, sizeof other, job->path[1]);
        strcat(base, "-vs-");
        strcat(base, other);
    }
    for (int f = 0; figures[f]; f++) {
        char tmpl[PATH_MAX];
        snprintf(tmpl, sizeof tmpl, "%s/%s.gp", job->plotdir, figures[f]);
        if (access(tmpl, R_OK) != 0)
            return diag_set(d, CL_ENOENT, "the template '%s' is missing (set COMMLAB_HOME to "
                            "the folder holding plots/)", tmpl);
        for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
            if (!(job->terms & terms[t].bit))
                continue;
            char out[PATH_MAX] = "";
            if (terms[t].ext[0] &&
                snprintf(out, sizeof out, "%s/%s%s%s%s", job->outdir, base,
                         figures[1] ? "-" : "", figures[1] ? figures[f] : "",
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
