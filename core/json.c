/* json.c - streaming JSON output. */
#include "core/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

void json_init(json_writer *w, FILE *f, bool pretty)
{
    w->f = f;
    w->depth = 0;
    w->first[0] = true;
    w->array[0] = true;
    w->keyed = false;
    w->pretty = pretty;
}

static void newline(json_writer *w)
{
    if (!w->pretty)
        return;
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

/* A value after a key follows it directly; in an array it needs a comma
 * unless it is the first element. */
static void before_value(json_writer *w)
{
    if (w->keyed) {
        w->keyed = false;
        return;
    }
    assert(w->array[w->depth] && "a value inside an object needs json_key first");
    if (w->depth > 0) {
        if (!w->first[w->depth])
            fputc(',', w->f);
        newline(w);
    }
    w->first[w->depth] = false;
}

static void write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void json_key(json_writer *w, const char *key)
{
    assert(!w->array[w->depth] && !w->keyed);
    if (!w->first[w->depth])
        fputc(',', w->f);
    w->first[w->depth] = false;
    newline(w);
    write_string(w->f, key);
    fputs(w->pretty ? ": " : ":", w->f);
    w->keyed = true;
}

static void open_level(json_writer *w, char c, bool array)
{
    before_value(w);
    assert(w->depth + 1 < JSON_MAX_DEPTH);
    fputc(c, w->f);
    w->depth++;
    w->first[w->depth] = true;
    w->array[w->depth] = array;
}

static void close_level(json_writer *w, char c)
{
    assert(w->depth > 0 && !w->keyed);
    bool empty = w->first[w->depth];
    w->depth--;
    if (!empty)
        newline(w);
    fputc(c, w->f);
}

void json_begin_object(json_writer *w) { open_level(w, '{', false); }
void json_end_object(json_writer *w) { close_level(w, '}'); }
void json_begin_array(json_writer *w) { open_level(w, '[', true); }
void json_end_array(json_writer *w) { close_level(w, ']'); }

void json_string(json_writer *w, const char *s)
{
    before_value(w);
    if (s)
        write_string(w->f, s);
    else
        fputs("null", w->f);
}

void json_number(json_writer *w, double v)
{
    before_value(w);
    if (isfinite(v)) {
        /* The shortest of %.15g..%.17g that reads back exactly. */
        char buf[32];
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        fputs(buf, w->f);
    }
    else
        fputs("null", w->f);
}

void json_uint(json_writer *w, uint64_t v)
{
    before_value(w);
    fprintf(w->f, "%" PRIu64, v);
}

void json_int(json_writer *w, long long v)
{
    before_value(w);
    fprintf(w->f, "%lld", v);
}

void json_bool(json_writer *w, bool v)
{
    before_value(w);
    fputs(v ? "true" : "false", w->f);
}

void json_finish(json_writer *w)
{
    while (w->depth > 0)
        close_level(w, w->array[w->depth] ? ']' : '}');
    fputc('\n', w->f);
}

void json_kv_string(json_writer *w, const char *key, const char *s)
{
    json_key(w, key);
    json_string(w, s);
}

void json_kv_number(json_writer *w, const char *key, double v)
{
    json_key(w, key);
    json_number(w, v);
}

void json_kv_uint(json_writer *w, const char *key, uint64_t v)
{
    json_key(w, key);
    json_uint(w, v);
}
