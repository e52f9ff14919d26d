/*
 * table.h - a grid of strings printed as aligned text or as CSV.
 *
 * Commands fill a table with display strings (for text) or raw numbers in
 * the units named by the header (for CSV: "time_s", "bytes").  The table
 * owns copies of every cell.
 */
#ifndef CL_TABLE_H
#define CL_TABLE_H

#include <stddef.h>
#include <stdio.h>

typedef struct table {
    size_t ncols;  /* columns, fixed at init */
    size_t ncells; /* cells filled, row-major */
    size_t cap;    /* cells allocated */
    char **cells;  /* the first ncols are the headers */
} table;

/* Starts a table with the given headers.  CL_ENOMEM leaves nothing. */
int table_init(table *t, size_t ncols, const char *const *headers);
void table_release(table *t);

/* Appends the next cell (rows wrap after ncols).  CL_ENOMEM: unchanged. */
int table_add(table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

size_t table_rows(const table *t); /* data rows, headers excluded */

/* Text: a header line, a rule, right-aligned columns except the first.
 * `indent` spaces start each line. */
void table_print(const table *t, FILE *f, int indent);
/* CSV: RFC 4180 quoting where a cell needs it. */
void table_print_csv(const table *t, FILE *f);

#endif
