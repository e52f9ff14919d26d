/* table.c - aligned text and CSV output of a grid of strings. */
#include "core/table.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "commlab.h"

static int push(table *t, char *cell)
{
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c)
            return CL_ENOMEM;
        t->cells = c;
        t->cap = cap;
    }
    t->cells[t->ncells++] = cell;
    return 0;
}

int table_init(table *t, size_t ncols, const char *const *headers)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (size_t i = 0; i < ncols; i++) {
        char *h = strdup(headers[i]);
        if (!h || push(t, h)) {
            free(h);
            table_release(t);
            return CL_ENOMEM;
        }
    }
    return 0;
}

void table_release(table *t)
{
    for (size_t i = 0; i < t->ncells; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

int table_add(table *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cell = NULL;
    int n = vasprintf(&cell, fmt, ap);
    va_end(ap);
    if (n < 0)
        return CL_ENOMEM;
    if (push(t, cell)) {
        free(cell);
        return CL_ENOMEM;
    }
    return 0;
}

size_t table_rows(const table *t)
{
    return t->ncols ? t->ncells / t->ncols - 1 : 0;
}

/* Display width: counts UTF-8 code points, not bytes. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* A column reads as text (left-aligned) when its first data cell does not
 * start like a number. */
static bool numeric_column(const table *t, size_t c)
{
    if (t->ncells < 2 * t->ncols)
        return true;
    const char *s = t->cells[t->ncols + c];
    return (*s >= '0' && *s <= '9') || *s == '-' || *s == '.';
}

void table_print(const table *t, FILE *f, int indent)
{
    size_t w[64] = {0};
    size_t ncols = t->ncols < 64 ? t->ncols : 64;
    for (size_t i = 0; i < t->ncells; i++)
        if (i % t->ncols < ncols && width(t->cells[i]) > w[i % t->ncols])
            w[i % t->ncols] = width(t->cells[i]);
    size_t rows = t->ncells / t->ncols;
    for (size_t r = 0; r < rows; r++) {
        fprintf(f, "%*s", indent, "");
        for (size_t c = 0; c < ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            int pad = (int)(w[c] - width(s));
            if (c == 0 || !numeric_column(t, c))
                fprintf(f, "%s%s%*s", c ? "  " : "", s, c + 1 < ncols ? pad : 0, "");
            else
                fprintf(f, "  %*s%s", pad, "", s);
        }
        fputc('\n', f);
        if (r == 0) {
            size_t total = 0;
            for (size_t c = 0; c < ncols; c++)
                total += w[c] + (c ? 2 : 0);
            fprintf(f, "%*s", indent, "");
            for (size_t i = 0; i < total; i++)
                fputc('-', f);
            fputc('\n', f);
        }
    }
}

static void csv_cell(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void table_print_csv(const table *t, FILE *f)
{
    for (size_t i = 0; i < t->ncells; i++) {
        csv_cell(f, t->cells[i]);
        fputc((i + 1) % t->ncols ? ',' : '\n', f);
    }
}
