/* tool_jsoncheck.c - exits 0 when stdin is exactly one valid JSON value
 * (RFC 8259), 1 with the byte offset of the first error otherwise.  Used by
 * the CLI tests to check every --json output. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *s;
    size_t i, n;
    int depth;
} parser;

static bool value(parser *p);

static void ws(parser *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]))
        p->i++;
}

static bool lit(parser *p, const char *w)
{
    size_t l = strlen(w);
    if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0)
        return false;
    p->i += l;
    return true;
}

static bool string(parser *p)
{
    if (p->i >= p->n || p->s[p->i] != '"')
        return false;
    for (p->i++; p->i < p->n; p->i++) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') {
            p->i++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (++p->i >= p->n)
                return false;
            c = (unsigned char)p->s[p->i];
            if (c == 'u') {
                for (int k = 0; k < 4; k++)
                    if (++p->i >= p->n || !isxdigit((unsigned char)p->s[p->i]))
                        return false;
            } else if (!strchr("\"\\/bfnrt", c)) {
                return false;
            }
        }
    }
    return false;
}

static bool digits(parser *p)
{
    size_t start = p->i;
    while (p->i < p->n && isdigit((unsigned char)p->s[p->i]))
        p->i++;
    return p->i > start;
}

static bool number(parser *p)
{
    if (p->i < p->n && p->s[p->i] == '-')
        p->i++;
    if (p->i < p->n && p->s[p->i] == '0')
        p->i++;
    else if (!digits(p))
        return false;
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (!digits(p))
            return false;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
            p->i++;
        if (!digits(p))
            return false;
    }
    return true;
}

static bool members(parser *p, char close, bool keyed)
{
    p->i++;
    if (++p->depth > 512)
        return false;
    ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        p->depth--;
        return true;
    }
    for (;;) {
        ws(p);
        if (keyed) {
            if (!string(p))
                return false;
            ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':')
                return false;
        }
        if (!value(p))
            return false;
        ws(p);
        if (p->i >= p->n)
            return false;
        char c = p->s[p->i++];
        if (c == close) {
            p->depth--;
            return true;
        }
        if (c != ',')
            return false;
    }
}

static bool value(parser *p)
{
    ws(p);
    if (p->i >= p->n)
        return false;
    switch (p->s[p->i]) {
    case '{': return members(p, '}', true);
    case '[': return members(p, ']', false);
    case '"': return string(p);
    case 't': return lit(p, "true");
    case 'f': return lit(p, "false");
    case 'n': return lit(p, "null");
    default: return number(p);
    }
}

int main(void)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    if (!buf)
        return 2;
    parser p = {buf, 0, n, 0};
    bool ok = value(&p);
    ws(&p);
    if (!ok || p.i != n) {
        fprintf(stderr, "invalid JSON at byte %zu\n", p.i);
        free(buf);
        return 1;
    }
    free(buf);
    return 0;
}
