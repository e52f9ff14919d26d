/* ex_answer.c - checks the numbers of an answer exercise (cli/exercise.h).
 *
 * `answer:` says which commlab outputs the numbers must match (`values:`,
 * each within the tolerance, or exactly for a count listed in `exact:`),
 * the command whose printed figure the smallest answer must bring under a
 * bound (`smallest:`), or the command whose CSV figure the answer's first
 * number must make least, the second being that least (`best:`).
 *
 * A wrong number is told by the hint of a likely mistake (`mistakes:`),
 * and for the student's first EX_DIRECTIONS failed tries of an exercise
 * by its direction and the size of the gap; after that only "not yet", so
 * no answer can be bisected out of the grader.  The figure itself, or a
 * neighbour's, is never printed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exercise.h"
#include "core/units.h"

int ex_answer_parse(const char *text, double *out, int *digits, size_t max, size_t *n)
{
    char buf[2048];
    cli_textf(buf, sizeof buf, "%s", text);
    *n = 0;
    char *save, *tok;
    for (tok = strtok_r(buf, " ,;\t\n", &save); tok; tok = strtok_r(NULL, " ,;\t\n", &save)) {
        if (*n == max)
            return cli_error("the answer has more than %zu numbers", max);
        char *end, unit[32];
        double v = strtod(tok, &end);
        uint64_t scale = 1;
        cli_textf(unit, sizeof unit, "1%s", end); /* "292.97KiB": 292.97 x 1KiB */
        if (end == tok || !isfinite(v) || (*end && units_parse_size(unit, "--answer", &scale,
                                                                   NULL)))
            return cli_error("--answer must be numbers (sizes may carry units), got '%s'",
                             tok);
        const char *point = memchr(tok, '.', (size_t)(end - tok));
        bool plain = !*end && !memchr(tok, 'e', (size_t)(end - tok)) &&
                     !memchr(tok, 'E', (size_t)(end - tok));
        digits[*n] = !plain ? -1 : point ? (int)(end - point - 1) : 0;
        out[(*n)++] = v * (double)scale;
    }
    if (*n == 0)
        return cli_error("--answer is empty");
    return 0;
}

/* Whether x is within about 3% of a power of ten times 1, away from 1. */
static int decades_off(double ratio)
{
    double l = log10(ratio), r = round(l);
    return r != 0 && fabs(l - r) < 0.013 ? (int)r : 0;
}

/* The likely mistake number i (from 0) of the answer is, or NULL. */
static const char *mistake_of(const exercise *e, size_t i, double got)
{
    for (size_t m = 0; m < e->nmistakes; m++) {
        const ex_mistake *x = &e->mistakes[m];
        double tol = e->exact[i] ? 0 : e->tolerance * fabs(x->value);
        if ((size_t)x->number == i + 1 && fabs(got - x->value) <= tol)
            return x->says;
    }
    return NULL;
}

/* How the answer's number i (got) is off from the figure (want), in
 * words that never give the figure: the exercise's own hint when got is
 * one of its likely mistakes; with directions, the direction and the size
 * of the gap; else only the unit, or "not yet". */
static void how_wrong(const check_ctx *k, size_t i, double got, double want, char *out,
                      size_t len)
{
    const char *dir = got < want ? "too low" : "too high";
    const char *says = mistake_of(k->e, i, got);
    double ratio = want != 0 ? got / want : INFINITY;
    int dec = isfinite(ratio) && ratio > 0 ? decades_off(ratio) : 0;
    if (says && k->directions)
        cli_textf(out, len, "%s: %s", dir, says);
    else if (says)
        cli_textf(out, len, "not yet: %s", says);
    else if (dec)
        cli_textf(out, len, "%s by a factor of about 10^%d: check the unit the question asks "
                  "in (ms, us, bytes)", k->directions ? dir : "off", abs(dec));
    else if (!k->directions)
        cli_textf(out, len, "not yet right (after %d tries the check no longer says in which "
                  "direction: work it out from the formula)", EX_DIRECTIONS);
    else if (!(got > 0) && want > 0)
        cli_textf(out, len, "%s: it must be above zero", dir);
    else if (ratio > 0.97 && ratio < 1.03)
        cli_textf(out, len, "%s by a few percent: the smaller term, or rounding too early",
                  dir);
    else if (fabs(ratio - 1.048576) < 0.01 || fabs(ratio - 1 / 1.048576) < 0.01 ||
             fabs(ratio - 1.024) < 0.005 || fabs(ratio - 1 / 1.024) < 0.005)
        cli_textf(out, len, "%s by 2.4%% or 4.9%%: KiB is 1024 bytes, KB is 1000", dir);
    else if (ratio > 0.3 && ratio < 1)
        cli_textf(out, len, "too low: you may have left out a term, or counted one too few "
                  "times");
    else if (ratio > 1 && ratio < 3.4)
        cli_textf(out, len, "too high: a term counted too many times, or one that is not "
                  "there");
    else
        cli_textf(out, len, "%s, by more than a factor of 3: go back to the formula", dir);
}

/* The number that follows the first `text` in output, into *fig: 1 when
 * there is one, else 0. */
static size_t figure_after(const char *output, const char *text, double *fig)
{
    const char *p = strstr(output, text);
    if (!p)
        return 0;
    char *end;
    double v = strtod(p + strlen(text), &end);
    if (end == p + strlen(text))
        return 0;
    *fig = v;
    return 1;
}

#define MIN_SIGNIFICANT 4 /* digits an answer rounded to what is printed must have */

/* Whether got, typed with `digits` digits after the point, is want
 * rounded to those digits. */
static bool rounds_to(double got, int digits, double want)
{
    return digits >= 0 && fabs(got - want) <= 0.5 * pow(10, -digits) * (1 + 1e-9);
}

static int significant(double got, int digits)
{
    return got == 0 ? 0 : digits + (int)floor(log10(fabs(got))) + 1;
}

/* Whether got, typed with `digits` digits after the point, is want: a
 * count exactly; else within the tolerance, or want rounded to the digits
 * typed when they are at least MIN_SIGNIFICANT significant ones (what a
 * student copies from a table: 1.345 for 1.34501). */
static bool number_right(const exercise *e, size_t i, double got, int digits, double want)
{
    if (e->exact[i])
        return got == want;
    if (fabs(got - want) <= e->tolerance * fabs(want))
        return true;
    return significant(got, digits) >= MIN_SIGNIFICANT && rounds_to(got, digits, want);
}

/* A choice is right or not as a whole: which of its numbers is wrong
 * would narrow the search, so a wrong one is told only the hints of the
 * likely mistakes it holds. */
static int check_choice(check_ctx *k, const double *ans, const int *digits, const double *want,
                        size_t n)
{
    const exercise *e = k->e;
    bool right = true;
    for (size_t i = 0; i < n; i++)
        right = right && number_right(e, i, ans[i], digits[i], want[i]);
    if (right) {
        ex_verdict(k, "your answer", e->ask, NULL, NULL, NULL);
        return 0;
    }
    printf("  FAIL  your answer\n        not this one (its numbers name one choice, right only "
           "as a whole)\n");
    for (size_t i = 0; i < n; i++) {
        const char *says = mistake_of(e, i, ans[i]);
        if (says)
            printf("        %s\n", says);
    }
    k->failed++;
    return 0;
}

static int check_values(check_ctx *k, const double *ans, const int *digits, size_t nans)
{
    const exercise *e = k->e;
    double want[64];
    size_t nwant = 0;
    char sources[2048] = "";
    int used = 0;
    ex_subst none = ex_subst_none();
    for (size_t i = 0; i < e->nvalues; i++) {
        child_run r;
        char shown[1024];
        int rc = ex_run_args(e->values[i].run, &none, NULL, false, k->budget, &r, shown,
                             sizeof shown);
        if (rc)
            return rc;
        const ex_value *v = &e->values[i];
        size_t got = r.status || nwant == 64 ? 0
                     : v->column ? ex_csv_column(r.output, v->column, want + nwant, 64 - nwant)
                                 : figure_after(r.output, v->after, want + nwant);
        free(r.output);
        if (got == 0)
            return cli_error("exercise %s: '%s' gave no %s '%s' (exit %d)", e->id, shown,
                             v->column ? "column" : "figure after", v->column ? v->column
                                                                            : v->after,
                             r.status);
        for (size_t j = 0; j < got; j++)
            want[nwant + j] *= e->values[i].scale;
        nwant += got;
        cli_appendf(sources, sizeof sources, &used, "%s%s", i ? "; " : "", shown);
    }
    char what[2400];
    cli_textf(what, sizeof what, "%zu number%s, each within %g%% (counts exactly) of: %s",
              nwant, nwant == 1 ? "" : "s", e->tolerance * 100, sources);
    if (nans != nwant) {
        char why[200];
        cli_textf(why, sizeof why, "the answer has %zu number%s, the question asks for %zu",
                 nans, nans == 1 ? "" : "s", nwant);
        ex_verdict(k, "your answer", what, why, NULL, NULL);
        return 0;
    }
    if (e->choice)
        return check_choice(k, ans, digits, want, nwant);
    int wrong = 0;
    for (size_t i = 0; i < nwant; i++)
        if (!number_right(e, i, ans[i], digits[i], want[i])) {
            if (!wrong++)
                printf("  FAIL  your answer\n");
            char words[300];
            if (!e->exact[i] && rounds_to(ans[i], digits[i], want[i]))
                cli_textf(words, sizeof words, "rounded too far: give at least %d significant "
                          "digits", MIN_SIGNIFICANT);
            else
                how_wrong(k, i, ans[i], want[i], words, sizeof words);
            printf("        number %zu (%.6g) is %s\n", i + 1, ans[i], words);
        }
    if (wrong) {
        k->failed++;
        return 0;
    }
    ex_verdict(k, "your answer", what, NULL, NULL, NULL);
    return 0;
}

/* The figure after e->after in the output of the smallest-command at n. */
static int figure_at(check_ctx *k, long n, double *fig, char *shown, size_t len)
{
    const exercise *e = k->e;
    child_run r;
    ex_subst sub = ex_subst_none();
    sub.n = n;
    int rc = ex_run_args(e->smallest, &sub, NULL, false, k->budget, &r, shown, len);
    if (rc)
        return rc;
    rc = r.status || !figure_after(r.output, e->after, fig)
             ? cli_error("exercise %s: '%s' printed no '%s' figure (exit %d)", e->id, shown,
                         e->after, r.status)
             : 0;
    free(r.output);
    return rc;
}

/* The answer n is the smallest with the figure at most e->at_most.  A
 * wrong n is told "not enough" or "not the smallest" (with directions),
 * never the figure of n - 1. */
static int check_smallest(check_ctx *k, const double *ans, size_t nans)
{
    const exercise *e = k->e;
    if (nans != 1 || ans[0] != floor(ans[0]) || ans[0] < 1 || ans[0] > 100000)
        return cli_error("exercise %s asks for one whole number from 1 to 100000", e->id);
    long n = (long)ans[0];
    double fig, prev = 0;
    char shown[1024], pshown[1024], why[1400], what[1400];
    int rc = figure_at(k, n, &fig, shown, sizeof shown);
    if (!rc && n > 1)
        rc = figure_at(k, n - 1, &prev, pshown, sizeof pshown);
    if (rc)
        return rc;
    cli_textf(what, sizeof what, "%s prints '%s%g', at most %g, and one less is not enough",
              shown, e->after, fig, e->at_most);
    bool enough = fig <= e->at_most, smallest = n == 1 || prev > e->at_most;
    const char *says = mistake_of(e, 0, ans[0]);
    if (!k->directions && !(enough && smallest))
        cli_textf(why, sizeof why, "%ld is not yet the answer (after %d tries the check no "
                  "longer says in which direction)", n, EX_DIRECTIONS);
    else if (!enough)
        cli_textf(why, sizeof why, "%s prints '%s%g', above %g: %ld is not enough", shown,
                 e->after, fig, e->at_most, n);
    else if (!smallest)
        cli_textf(why, sizeof why, "%ld is enough, but not the smallest that is", n);
    ex_verdict(k, "your answer", what, enough && smallest ? NULL : why, says, NULL);
    return 0;
}

/* The value of the best-command's column at n, times its scale. */
static int best_value_at(check_ctx *k, long n, double *v, char *shown, size_t len)
{
    const exercise *e = k->e;
    child_run r;
    ex_subst sub = ex_subst_none();
    sub.n = n;
    int rc = ex_run_args(e->best.run, &sub, NULL, false, k->budget, &r, shown, len);
    if (rc)
        return rc;
    if (r.status || ex_csv_column(r.output, e->best.column, v, 1) != 1)
        rc = cli_error("exercise %s: '%s' gave no column '%s' (exit %d: %.*s)", e->id, shown,
                       e->best.column, r.status, (int)strcspn(r.output, "\n"), r.output);
    free(r.output);
    *v *= e->best.scale;
    return rc;
}

#define BEST_MOST 100000 /* the largest n a best-answer may give */

/* Whether the best-command's figure stops falling after m: f(m + 1) >=
 * f(m). */
static int best_rises(check_ctx *k, long m, bool *rises)
{
    char shown[1024];
    double at, next;
    int rc = best_value_at(k, m, &at, shown, sizeof shown);
    if (!rc)
        rc = best_value_at(k, m + 1, &next, shown, sizeof shown);
    *rises = !rc && next >= at;
    return rc;
}

/* The answer "n value": n must give the least value of the best-command
 * (ties allowed), value must be that least value.  The figure is convex
 * in n (a term growing with n plus one falling with it), so whether it
 * rises after m is false up to the best n and true from there: doubling
 * from the student's n finds a point past it, halving the interval finds
 * it, in about 2 log2(n) runs of each of two commands. */
static int check_best(check_ctx *k, const double *ans, const int *digits, size_t nans)
{
    const exercise *e = k->e;
    if (nans != 2 || ans[0] != floor(ans[0]) || ans[0] < 1 || ans[0] >= BEST_MOST)
        return cli_error("exercise %s asks for two numbers: a whole number from 1 to %d, "
                         "then a figure", e->id, BEST_MOST - 1);
    long n = (long)ans[0], lo = 1, hi = n;
    char shown[1024], best_shown[1024];
    double at_n, least;
    bool rises;
    int rc = best_value_at(k, n, &at_n, shown, sizeof shown);
    if (!rc)
        rc = best_rises(k, hi, &rises);
    while (!rc && !rises && hi < BEST_MOST - 1) {
        lo = hi + 1;
        hi = hi * 2 < BEST_MOST - 1 ? hi * 2 : BEST_MOST - 1;
        rc = best_rises(k, hi, &rises);
    }
    while (!rc && lo < hi) {
        long mid = lo + (hi - lo) / 2;
        rc = best_rises(k, mid, &rises);
        if (rises)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!rc)
        rc = best_value_at(k, lo, &least, best_shown, sizeof best_shown);
    if (rc)
        return rc;
    char what[1400];
    cli_textf(what, sizeof what, "number 1 gives the least %s of %s, number 2 is that "
              "figure within %g%%", e->best.column, shown, e->tolerance * 100);
    bool n_ok = at_n <= least, v_ok = number_right(e, 1, ans[1], digits[1], least);
    if (n_ok && v_ok) {
        ex_verdict(k, "your answer", what, NULL, NULL, NULL);
        return 0;
    }
    k->failed++;
    printf("  FAIL  your answer\n        %s\n", what);
    if (!n_ok) {
        const char *says = mistake_of(e, 0, ans[0]);
        if (!k->directions)
            printf("        number 1 (%ld) is not yet the best%s%s\n", n, says ? ": " : "",
                   says ? says : " (the check no longer says in which direction)");
        else
            printf("        number 1 (%ld) is too %s: %s\n", n, lo > n ? "low" : "high",
                   says ? says
                        : lo > n ? "more gives a lower figure" : "fewer gives a lower figure");
    }
    if (!v_ok) {
        char words[300];
        how_wrong(k, 1, ans[1], least, words, sizeof words);
        printf("        number 2 (%.6g) is %s\n", ans[1], words);
    }
    return 0;
}

int ex_answer_check(check_ctx *k, const double *ans, const int *digits, size_t n)
{
    return k->e->smallest   ? check_smallest(k, ans, n)
           : k->e->best.run ? check_best(k, ans, digits, n)
                            : check_values(k, ans, digits, n);
}
