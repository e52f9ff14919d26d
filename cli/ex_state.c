/* ex_state.c - what a student has passed and tried (cli/exercise.h).
 *
 * One small text file per user: $XDG_STATE_HOME/commlab/exercises, or
 * ~/.local/state/commlab/exercises, one line per exercise:
 *
 *     ID passed N      passed; N failed tries before
 *     ID tries N       not passed yet; N failed tries
 *
 * It lets `exercise check` print an exercise's explanation only once the
 * student passed it, and stop telling the direction of a wrong answer
 * after a few tries.  It is rewritten whole through core/file.h's
 * file_out (a new file renamed into place, never through a link).  Without a home or a writable place
 * nothing is kept, and every check counts as a first try.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/exercise.h"
#include "core/file.h"

#define STATE_MAX 256 /* exercises kept */

typedef struct state_line {
    char id[32];
    bool passed;
    long tries;
} state_line;

/* The folder of the state file into dir; false when there is none. */
static bool state_dir(char *dir, size_t len)
{
    return cli_user_dir(dir, len, "XDG_STATE_HOME", ".local/state");
}

static size_t state_read(state_line *v, size_t max)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (!state_dir(dir, sizeof dir))
        return 0;
    cli_textf(path, sizeof path, "%s/exercises", dir);
    FILE *f;
    cl_diag d = {{0}};
    if (file_open_read(path, "the exercise record", &f, &d))
        return 0; /* none yet, or not a file: nothing kept */
    size_t n = 0;
    char line[128], word[16];
    while (n < max && fgets(line, sizeof line, f)) {
        state_line s = {0};
        if (sscanf(line, "%31s %15s %ld", s.id, word, &s.tries) == 3 &&
            (strcmp(word, "passed") == 0 || strcmp(word, "tries") == 0) && s.tries >= 0) {
            s.passed = word[0] == 'p';
            v[n++] = s;
        }
    }
    fclose(f);
    return n;
}

static void state_write(const state_line *v, size_t n)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (!state_dir(dir, sizeof dir) || cli_make_dirs(dir))
        return;
    cli_textf(path, sizeof path, "%s/exercises", dir);
    file_out o;
    cl_diag d = {{0}};
    if (file_out_open(&o, path, "the exercise record", &d))
        return;
    for (size_t i = 0; i < n; i++)
        fprintf(o.f, "%s %s %ld\n", v[i].id, v[i].passed ? "passed" : "tries", v[i].tries);
    file_out_commit(&o, "the exercise record", &d);
}

static const state_line *state_find(const state_line *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].id, id) == 0)
            return &v[i];
    return NULL;
}

bool ex_state_passed(const char *id)
{
    state_line v[STATE_MAX];
    const state_line *s = state_find(v, state_read(v, STATE_MAX), id);
    return s && s->passed;
}

long ex_state_tries(const char *id)
{
    state_line v[STATE_MAX];
    const state_line *s = state_find(v, state_read(v, STATE_MAX), id);
    return s ? s->tries : 0;
}

void ex_state_record(const char *id, bool passed)
{
    state_line v[STATE_MAX];
    size_t n = state_read(v, STATE_MAX);
    state_line *s = (state_line *)state_find(v, n, id);
    if (!s && n == STATE_MAX)
        return;
    if (!s) {
        s = &v[n++];
        *s = (state_line){0};
        cli_textf(s->id, sizeof s->id, "%s", id);
    }
    if (passed)
        s->passed = true;
    else if (!s->passed)
        s->tries++;
    state_write(v, n);
}
