/*
 * units.h - sizes, times and bandwidths written out with their units.
 *
 * Inside commlab a size is a uint64_t of bytes, a time a double of seconds
 * and a bandwidth a double of bytes per second.  Text with units exists only
 * at the edges: command lines and configs are parsed here, tables print
 * through here.
 *
 *   sizes       8  4KiB  256MiB  1GB (1e9 B)  1.5KiB  (B, kB/KB, MB, GB, TB,
 *               KiB, MiB, GiB, TiB, PiB, EiB; a bare number is bytes)
 *   times       1.5us  2ms  30us  1e-6s  5ns  (s, ms, us, ns; unit required)
 *   bandwidths  300GB/s (3e11 B/s)  25Gbit/s  3.1GB/s  10MiB/s  (unit required)
 *
 * Every parser rejects negatives, overflow, trailing garbage and missing or
 * unknown units; on failure it returns CL_EPARSE or CL_ERANGE, sets *why to
 * a static reason ("unknown unit 'XB'" style text lives in the diag the
 * caller writes) and leaves *out unchanged.
 */
#ifndef CL_UNITS_H
#define CL_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"

/* Parsers: 0, CL_EPARSE or CL_ERANGE; on failure *out is unchanged and
 * d (may be NULL) says why, quoting text.  `what` names the value in the
 * message ("--bytes", "bandwidth"). */
int units_parse_size(const char *text, const char *what, uint64_t *out, cl_diag *d);
int units_parse_time(const char *text, const char *what, double *out, cl_diag *d);
int units_parse_bandwidth(const char *text, const char *what, double *out, cl_diag *d);

/* The length of the plain decimal number text starts with: digits with an
 * optional fraction and exponent ("8", "1.5", ".5", "1e-3"); 0 when there
 * is none.  No sign, and never hex ("0x10"), inf or nan, which strtod
 * would take.  Cannot fail. */
size_t units_decimal_len(const char *text);

/* A size list: comma-separated sizes and geometric ranges FROM:TO:xF
 * ("8,1KiB,4MiB", "8:4MiB:x4"; TO is included when the steps hit it).
 * On success *out is a malloc'd array the caller frees; at most
 * UNITS_MAX_SIZES entries.  On failure nothing is allocated. */
#define UNITS_MAX_SIZES 4096
int units_parse_sizes(const char *text, const char *what, uint64_t **out, size_t *n,
                      cl_diag *d);

/* Geometric range from..to by factor (>= 2) into a malloc'd array; the same
 * contract as units_parse_sizes. */
int units_size_range(uint64_t from, uint64_t to, uint64_t factor, const char *what,
                     uint64_t **out, size_t *n, cl_diag *d);

/* Printers: write into buf (always NUL-terminated), return buf. */
#define UNITS_BUF 32
/* Binary units: "8 B", "4 KiB", "1.5 MiB", "256 MiB". */
char *units_size_str(char buf[UNITS_BUF], uint64_t bytes);
/* Compact form that parses back: "8", "4KiB", "1536" for 1.5 KiB. */
char *units_size_arg(char buf[UNITS_BUF], uint64_t bytes);
/* Seconds scaled to s, ms, us or ns with 3 significant digits: "5.37 ms". */
char *units_time_str(char buf[UNITS_BUF], double seconds);
/* The same with `digits` significant digits (1..17): "5.372 ms" for 4. */
char *units_time_digits(char buf[UNITS_BUF], double seconds, int digits);
/* Bytes per second in decimal units: "300 GB/s", "3.1 GB/s". */
char *units_bandwidth_str(char buf[UNITS_BUF], double bytes_per_s);
/* A port's rate as people write it: bits per second, decimal prefixes, as
 * tc and switch vendors count ("1 Gbit/s", "100 Mbit/s"). */
char *units_rate_str(char buf[UNITS_BUF], double bytes_per_s);

#endif
