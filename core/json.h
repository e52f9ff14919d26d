/*
 * json.h - a small streaming JSON writer.
 *
 * Keeps the nesting and the commas; strings are escaped, non-finite numbers
 * become null.  The writer does not allocate; nesting is limited to
 * JSON_MAX_DEPTH (deeper is a bug, asserted).
 */
#ifndef CL_JSON_H
#define CL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_writer {
    FILE *f;                     /* where the text goes */
    int depth;                   /* open objects and arrays */
    bool first[JSON_MAX_DEPTH];  /* no member yet at this depth */
    bool array[JSON_MAX_DEPTH];  /* this depth is an array */
    bool keyed;                  /* a key was written, its value is next */
    bool pretty;                 /* newline + indent between members */
} json_writer;

void json_init(json_writer *w, FILE *f, bool pretty);
/* Object members: json_key() then exactly one value (or begin_*). */
void json_key(json_writer *w, const char *key);
void json_begin_object(json_writer *w);
void json_end_object(json_writer *w);
void json_begin_array(json_writer *w);
void json_end_array(json_writer *w);
void json_string(json_writer *w, const char *s);
void json_number(json_writer *w, double v);
void json_uint(json_writer *w, uint64_t v);
void json_int(json_writer *w, long long v);
void json_bool(json_writer *w, bool v);
/* Closes what is open and ends with a newline. */
void json_finish(json_writer *w);

/* Shorthands for a member: key then value. */
void json_kv_string(json_writer *w, const char *key, const char *s);
void json_kv_number(json_writer *w, const char *key, double v);
void json_kv_uint(json_writer *w, const char *key, uint64_t v);

#endif
