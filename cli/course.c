/* course.c - loading the course's exercises.yaml files (cli/course.h). */
#include "cli/course.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "commlab.h"

void course_release(course *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->ex[i].commands);
        free(c->ex[i].steps);
        free(c->ex[i].values);
        free(c->ex[i].mistakes);
    }
    for (size_t i = 0; i < c->ndocs; i++)
        cfg_doc_release(&c->docs[i]);
    free(c->docs);
    free(c->ex);
    memset(c, 0, sizeof *c);
}

static int opt_string(cfg_doc *d, yaml_node_t *map, const char *key, const char **out,
                      cl_diag *g)
{
    yaml_node_t *n;
    int err = cfg_get(d, map, key, false, &n, g);
    if (!err && n)
        err = cfg_string(d, n, key, out, g);
    return err;
}

static int req_string(cfg_doc *d, yaml_node_t *map, const char *key, const char **out,
                      cl_diag *g)
{
    yaml_node_t *n;
    int err = cfg_get(d, map, key, true, &n, g);
    return err ? err : cfg_string(d, n, key, out, g);
}

static int opt_number(cfg_doc *d, yaml_node_t *map, const char *key, double *out, cl_diag *g)
{
    const char *s = NULL;
    int err = opt_string(d, map, key, &s, g);
    if (err || !s)
        return err;
    char *end;
    size_t len = strlen(s);
    double v = strtod(s, &end);
    if (end == s || (*end && !(*end == '%' && end == s + len - 1)) || !isfinite(v)) {
        yaml_node_t *n;
        cfg_get(d, map, key, true, &n, g);
        return cfg_error(d, n, g, "'%s' must be a number, got '%s'", key, s);
    }
    *out = *end == '%' ? v / 100 : v;
    return 0;
}

static int opt_long(cfg_doc *d, yaml_node_t *map, const char *key, long min, long max,
                    long *out, cl_diag *g)
{
    yaml_node_t *n;
    int err = cfg_get(d, map, key, false, &n, g);
    if (!err && n)
        err = cfg_int(d, n, key, min, max, out, g);
    return err;
}

const char *ex_fault_name(ex_fault f)
{
    static const char *const names[FAULT_COUNT] = {
        "deadlock", "failed", "exit", "output", "messages", "route", "data", "calls", "time",
        "leak",
    };
    return f < FAULT_COUNT ? names[f] : "?";
}

/* `hints:`, a map from a fault's name to its hint. */
static int load_hints(cfg_doc *d, yaml_node_t *map, ex_step *s, cl_diag *g)
{
    yaml_node_t *n;
    int err = cfg_get(d, map, "hints", false, &n, g);
    if (err || !n)
        return err;
    if ((err = cfg_expect_map(d, n, "hints", g)))
        return err;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
         p++) {
        yaml_node_t *key = yaml_document_get_node(&d->doc, p->key);
        const char *name = key && key->type == YAML_SCALAR_NODE
                               ? (const char *)key->data.scalar.value : "";
        ex_fault f = 0;
        while (f < FAULT_COUNT && strcmp(ex_fault_name(f), name) != 0)
            f++;
        if (f == FAULT_COUNT)
            return cfg_error(d, key, g, "unknown fault '%s' under 'hints' (deadlock, failed, "
                             "exit, output, messages, route, data, calls, time, leak)", name);
        if ((err = cfg_string(d, yaml_document_get_node(&d->doc, p->value), name,
                              &s->hints[f], g)))
            return err;
    }
    return 0;
}

/* "R<P R<P ..." (sep '<', or '>' for routes), or with more '+' sums
 * "R<P+Q+... R<P ...": checked here so a typo is an error of the file. */
static int check_items(cfg_doc *d, yaml_node_t *map, const char *key, const char *text,
                       char sep, char more, cl_diag *g)
{
    const char *p = text;
    while (*p) {
        char *end;
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        long a = strtol(p, &end, 10);
        bool ok = end != p && a >= 0 && *end == sep;
        for (char next = sep; ok && next && *end == next; next = more) {
            p = end + 1;
            long b = strtol(p, &end, 10);
            ok = end != p && b >= 0 && ((more && *end == more) || *end == ' ' || !*end);
        }
        if (!ok) {
            yaml_node_t *n;
            cfg_get(d, map, key, true, &n, g);
            return more ? cfg_error(d, n, g, "'%s' is a list of rank%crank%crank... items, got "
                                             "'%s'", key, sep, more, text)
                        : cfg_error(d, n, g, "'%s' is a list of rank%crank pairs, got '%s'", key,
                                    sep, text);
        }
        p = end;
    }
    return 0;
}

bool ex_draw_fits(const ex_draw *d, long v)
{
    switch (d->only) {
    case DRAW_ODD: return v % 2 == 1;
    case DRAW_EVEN: return v % 2 == 0;
    case DRAW_POW2: return (v & (v - 1)) == 0;
    case DRAW_X8: return v % 8 == 0;
    case DRAW_NOT_X8: return v % 8 != 0;
    default: return true;
    }
}

int ex_draw_parse(const char *text, bool times, ex_draw *out)
{
    static const char *const only[] = {"", "odd", "even", "pow2", "x8", "notx8"};
    *out = (ex_draw){.lo = 1, .hi = 0};
    const char *p = text;
    if (times && *p == '*')
        out->times = true, p++;
    char *end;
    out->lo = strtol(p, &end, 10);
    if (end == p || strncmp(end, "..", 2) != 0)
        return -1;
    p = end + 2;
    out->hi = strtol(p, &end, 10);
    if (end == p || out->lo < 1 || out->hi < out->lo || out->hi > (1L << 40))
        return -1;
    while (*end == ' ')
        end++;
    size_t i = 0;
    while (i < sizeof only / sizeof only[0] && strcmp(end, only[i]) != 0)
        i++;
    if (i == sizeof only / sizeof only[0])
        return -1;
    out->only = i;
    if (out->only == DRAW_POW2) { /* a power of two anywhere in the range */
        for (long v = 1; v <= out->hi; v *= 2)
            if (v >= out->lo)
                return 0;
        return -1;
    }
    for (long v = out->lo; v <= out->hi && v < out->lo + 16; v++) /* every filter but
                                                                     pow2 repeats by 8 */
        if (ex_draw_fits(out, v))
            return 0;
    return -1;
}

/* An optional draw under key into *out (nothing to draw when absent). */
static int opt_draw(cfg_doc *d, yaml_node_t *map, const char *key, bool times, ex_draw *out,
                    cl_diag *g)
{
    const char *text = NULL;
    *out = (ex_draw){.lo = 1, .hi = 0};
    int err = opt_string(d, map, key, &text, g);
    if (err || !text || !ex_draw_parse(text, times, out))
        return err;
    yaml_node_t *n;
    cfg_get(d, map, key, true, &n, g);
    return cfg_error(d, n, g, "'%s' is a range LO..HI with at most one of odd, even, pow2, "
                     "x8, notx8, and a value that fits%s, got '%s'", key, times ? " (and a leading * for times the "
                     "group)" : "", text);
}

static int opt_bool(cfg_doc *d, yaml_node_t *map, const char *key, bool *out, cl_diag *g)
{
    const char *text = NULL;
    int err = opt_string(d, map, key, &text, g);
    if (err || !text)
        return err;
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
        *out = text[0] == 't';
        return 0;
    }
    yaml_node_t *n;
    cfg_get(d, map, key, true, &n, g);
    return cfg_error(d, n, g, "'%s' is true or false, got '%s'", key, text);
}

static int load_step(cfg_doc *d, yaml_node_t *n, ex_step *s, cl_diag *g)
{
    int err = cfg_expect_map(d, n, "check", g);
    *s = (ex_step){.messages = -1, .factor = 1};
    if (!err)
        err = req_string(d, n, "run", &s->run, g);
    if (!err)
        err = opt_long(d, n, "exit", 0, 255, &s->exit, g);
    if (!err)
        err = opt_string(d, n, "output", &s->output, g);
    if (!err)
        err = opt_string(d, n, "every_rank", &s->every_rank, g);
    if (!err)
        err = opt_long(d, n, "messages", 0, LONG_MAX, &s->messages, g);
    if (!err)
        err = opt_string(d, n, "route", &s->route, g);
    if (!err && s->route)
        err = check_items(d, n, "route", s->route, '>', 0, g);
    if (!err)
        err = opt_string(d, n, "holds", &s->holds, g);
    if (!err && s->holds)
        err = check_items(d, n, "holds", s->holds, '<', 0, g);
    if (!err)
        err = opt_string(d, n, "sums", &s->sums, g);
    if (!err && s->sums)
        err = check_items(d, n, "sums", s->sums, '<', '+', g);
    if (!err)
        err = opt_string(d, n, "same_time_as", &s->same_time_as, g);
    if (!err)
        err = opt_number(d, n, "factor", &s->factor, g);
    if (!err)
        err = opt_string(d, n, "uses", &s->uses, g);
    if (!err)
        err = opt_string(d, n, "avoids", &s->avoids, g);
    if (!err)
        err = opt_draw(d, n, "ranks", true, &s->ranks, g);
    if (!err)
        err = opt_draw(d, n, "bytes", false, &s->bytes, g);
    if (!err)
        err = opt_draw(d, n, "group", false, &s->group, g);
    if (!err && s->ranks.times && s->group.lo > s->group.hi)
        return cfg_error(d, n, g, "'ranks' counts in groups ('*'), so the step needs 'group'");
    s->reference = s->exit == 0;
    if (!err)
        err = opt_bool(d, n, "reference", &s->reference, g);
    if (!err)
        err = opt_bool(d, n, "any_order", &s->any_order, g);
    if (!err)
        err = opt_bool(d, n, "same_lines", &s->same_lines, g);
    if (!err)
        err = opt_bool(d, n, "same_blocks", &s->same_blocks, g);
    if (!err)
        err = opt_string(d, n, "hint", &s->hint, g);
    if (!err)
        err = load_hints(d, n, s, g);
    return err;
}

/* An answer's 'values': what runs to read each expected number from. */
static int load_values(cfg_doc *d, yaml_node_t *vals, exercise *e, cl_diag *g)
{
    e->nvalues = cfg_seq_len(vals);
    e->values = calloc(e->nvalues ? e->nvalues : 1, sizeof *e->values);
    if (!e->values)
        return diag_set(g, CL_ENOMEM, "out of memory");
    int err = 0;
    for (size_t i = 0; !err && i < e->nvalues; i++) {
        yaml_node_t *v = cfg_seq_at(d, vals, i);
        ex_value *x = &e->values[i];
        x->scale = 1;
        err = cfg_expect_map(d, v, "values", g);
        if (!err)
            err = req_string(d, v, "run", &x->run, g);
        if (!err)
            err = opt_string(d, v, "column", &x->column, g);
        if (!err)
            err = opt_string(d, v, "after", &x->after, g);
        if (!err && !x->column == !x->after)
            return cfg_error(d, v, g, "a value needs either 'column' (CSV) or 'after' (the "
                             "figure printed after a text)");
        if (!err)
            err = opt_number(d, v, "scale", &x->scale, g);
    }
    return err;
}

/* An answer's 'mistakes': a likely wrong value and what to say of it. */
static int load_mistakes(cfg_doc *d, yaml_node_t *ms, exercise *e, cl_diag *g)
{
    e->nmistakes = cfg_seq_len(ms);
    e->mistakes = calloc(e->nmistakes ? e->nmistakes : 1, sizeof *e->mistakes);
    if (!e->mistakes)
        return diag_set(g, CL_ENOMEM, "out of memory");
    int err = 0;
    for (size_t i = 0; !err && i < e->nmistakes; i++) {
        yaml_node_t *m = cfg_seq_at(d, ms, i);
        ex_mistake *x = &e->mistakes[i];
        x->number = 1;
        err = cfg_expect_map(d, m, "mistakes", g);
        if (!err)
            err = opt_long(d, m, "number", 1, 64, &x->number, g);
        if (!err) {
            x->value = NAN;
            err = opt_number(d, m, "value", &x->value, g);
        }
        if (!err && isnan(x->value))
            return cfg_error(d, m, g, "a mistake needs its 'value'");
        if (!err)
            err = req_string(d, m, "says", &x->says, g);
    }
    return err;
}

static int load_answer(cfg_doc *d, yaml_node_t *n, exercise *e, cl_diag *g)
{
    int err = cfg_expect_map(d, n, "answer", g);
    e->tolerance = 0.01;
    if (!err)
        err = req_string(d, n, "ask", &e->ask, g);
    if (!err)
        err = req_string(d, n, "solution", &e->solution_answer, g);
    if (!err)
        err = opt_number(d, n, "tolerance", &e->tolerance, g);
    const char *exact = NULL;
    if (!err)
        err = opt_bool(d, n, "choice", &e->choice, g);
    if (!err)
        err = opt_string(d, n, "exact", &exact, g);
    for (const char *p = exact; !err && p && *p;) {
        char *end;
        long i = strtol(p, &end, 10);
        if (end == p || i < 1 || i > 64) {
            yaml_node_t *x;
            cfg_get(d, n, "exact", true, &x, g);
            return cfg_error(d, x, g, "'exact' lists the numbers (1 to 64) that are counts, "
                             "got '%s'", exact);
        }
        e->exact[i - 1] = true;
        p = end;
        while (*p == ' ' || *p == ',')
            p++;
    }
    yaml_node_t *vals = NULL, *sm = NULL, *best = NULL;
    if (!err)
        err = cfg_get(d, n, "values", false, &vals, g);
    if (!err)
        err = cfg_get(d, n, "smallest", false, &sm, g);
    if (!err)
        err = cfg_get(d, n, "best", false, &best, g);
    if (!err && (vals != NULL) + (sm != NULL) + (best != NULL) != 1)
        return cfg_error(d, n, g, "'answer' needs one of 'values', 'smallest' or 'best'");
    if (!err && vals && !(err = cfg_expect_seq(d, vals, "values", g)))
        err = load_values(d, vals, e, g);
    yaml_node_t *ms = NULL;
    if (!err)
        err = cfg_get(d, n, "mistakes", false, &ms, g);
    if (!err && ms && !(err = cfg_expect_seq(d, ms, "mistakes", g)))
        err = load_mistakes(d, ms, e, g);
    if (!err && best && !(err = cfg_expect_map(d, best, "best", g))) {
        e->best.scale = 1;
        err = req_string(d, best, "run", &e->best.run, g);
        if (!err)
            err = req_string(d, best, "column", &e->best.column, g);
        if (!err)
            err = opt_number(d, best, "scale", &e->best.scale, g);
    }
    if (!err && sm && !(err = cfg_expect_map(d, sm, "smallest", g))) {
        err = req_string(d, sm, "run", &e->smallest, g);
        if (!err)
            err = req_string(d, sm, "after", &e->after, g);
        if (!err)
            err = opt_number(d, sm, "at_most", &e->at_most, g);
    }
    return err;
}

static int load_exercise(cfg_doc *d, yaml_node_t *n, exercise *e, cl_diag *g)
{
    int err = cfg_expect_map(d, n, "exercises", g);
    if (!err)
        err = req_string(d, n, "id", &e->id, g);
    if (!err)
        err = req_string(d, n, "title", &e->title, g);
    if (!err)
        err = req_string(d, n, "task", &e->task, g);
    if (!err)
        err = opt_string(d, n, "explain", &e->explain, g);
    if (!err)
        err = opt_string(d, n, "file", &e->file, g);
    if (!err)
        err = opt_string(d, n, "start", &e->start, g);
    if (!err)
        err = opt_string(d, n, "solution", &e->solution, g);
    if (!err)
        err = opt_string(d, n, "seeds", &e->seeds, g);
    yaml_node_t *cmds = NULL, *check = NULL, *answer = NULL;
    if (!err)
        err = cfg_get(d, n, "commands", true, &cmds, g);
    if (!err && !(err = cfg_expect_seq(d, cmds, "commands", g))) {
        e->ncommands = cfg_seq_len(cmds);
        e->commands = calloc(e->ncommands ? e->ncommands : 1, sizeof *e->commands);
        if (!e->commands)
            return diag_set(g, CL_ENOMEM, "out of memory");
        for (size_t i = 0; !err && i < e->ncommands; i++)
            err = cfg_string(d, cfg_seq_at(d, cmds, i), "commands", &e->commands[i], g);
    }
    if (!err)
        err = cfg_get(d, n, "check", false, &check, g);
    if (!err)
        err = cfg_get(d, n, "answer", false, &answer, g);
    if (!err && !check == !answer)
        return cfg_error(d, n, g, "exercise '%s' needs either 'check' (code) or 'answer'",
                         e->id);
    if (!err && check && (!e->file || !e->solution))
        return cfg_error(d, n, g, "exercise '%s' has a check, so it needs 'file' and "
                         "'solution'", e->id);
    if (!err && check && !(err = cfg_expect_seq(d, check, "check", g))) {
        e->nsteps = cfg_seq_len(check);
        e->steps = calloc(e->nsteps ? e->nsteps : 1, sizeof *e->steps);
        if (!e->steps)
            return diag_set(g, CL_ENOMEM, "out of memory");
        for (size_t i = 0; !err && i < e->nsteps; i++)
            err = load_step(d, cfg_seq_at(d, check, i), &e->steps[i], g);
    }
    if (!err && answer)
        err = load_answer(d, answer, e, g);
    return err;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int course_add(course *c, const char *name, const char *text, const char *chapter,
               const char *dir, cl_diag *g)
{
    cfg_doc *docs = realloc(c->docs, (c->ndocs + 1) * sizeof *docs);
    if (!docs)
        return diag_set(g, CL_ENOMEM, "out of memory");
    c->docs = docs;
    cfg_doc *d = &c->docs[c->ndocs];
    int err = text ? cfg_doc_load_string(d, name, text, g) : cfg_doc_load(d, name, g);
    if (err)
        return err;
    c->ndocs++;
    yaml_node_t *top, *list;
    if ((err = cfg_root(d, &top, g)) || (err = cfg_get(d, top, "exercises", true, &list, g)) ||
        (err = cfg_expect_seq(d, list, "exercises", g)))
        return err;
    size_t k = cfg_seq_len(list);
    exercise *more = realloc(c->ex, (c->n + k + 1) * sizeof *more);
    if (!more)
        return diag_set(g, CL_ENOMEM, "out of memory");
    c->ex = more;
    memset(c->ex + c->n, 0, k * sizeof *more);
    for (size_t j = 0; !err && j < k; j++) {
        exercise *e = &c->ex[c->n++];
        cli_textf(e->chapter, sizeof e->chapter, "%s", chapter);
        cli_textf(e->dir, sizeof e->dir, "%s", dir);
        err = load_exercise(d, cfg_seq_at(d, list, j), e, g);
    }
    return err;
}

/* Loads chapters/<NN-topic>/exercises.yaml for every chapter, in order. */
int course_load(course *c)
{
    memset(c, 0, sizeof *c);
    char root[PATH_MAX];
    cl_diag g = {{0}};
    if (cli_data_path(root, sizeof root, "chapters", &g))
        return cli_diag(&g, CLI_EXIT_USAGE);
    struct dirent **names;
    int n = scandir(root, &names, NULL, by_name);
    if (n < 0)
        return cli_error("cannot list '%s': %s", root, strerror(errno));
    int err = 0;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 300], dir[PATH_MAX + 300];
        cli_textf(path, sizeof path, "%s/%s/exercises.yaml", root, names[i]->d_name);
        cli_textf(dir, sizeof dir, "%s/%s", root, names[i]->d_name);
        if (!err && names[i]->d_name[0] != '.' && access(path, R_OK) == 0 &&
            course_add(c, path, NULL, names[i]->d_name, dir, &g))
            err = cli_diag(&g, CLI_EXIT_USAGE);
        free(names[i]);
    }
    free(names);
    if (err)
        course_release(c);
    return err;
}

const exercise *course_find(const course *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->ex[i].id, id) == 0)
            return &c->ex[i];
    return NULL;
}
