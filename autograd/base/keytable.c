/* keytable.c — see keytable.h. */
#include "autograd/base/keytable.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

static int only_blanks(const char *s) {
    while (isspace((unsigned char)*s)) s++;
    return *s == 0;
}

/* The one set of number parsers: the whole string (trailing blanks allowed) must be the number. */
static int key_parse_long(const char *s, long *out) {
    char *end;
    errno = 0;
    const long x = strtol(s, &end, 10);
    if (errno || end == s || !only_blanks(end)) return -1;
    *out = x;
    return 0;
}

/* A finite number. */
static int key_parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    const double x = strtod(s, &end);
    if (errno || end == s || !only_blanks(end) || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

/* 1/true/True/yes, 0/false/False/no */
static int key_parse_bool(const char *s, int *out) {
    if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "yes")) *out = 1;
    else if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "no")) *out = 0;
    else return -1;
    return 0;
}

/* a == b, with '-' in a matching '_' in b */
static int same_flag(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (*a != *b && !(*a == '-' && *b == '_')) return 0;
    return *a == *b;
}

const KeyRow *key_find(const KeyRow *rows, int n, const char *name, int by_flag) {
    for (int i = 0; i < n; i++) {
        const KeyRow *r = &rows[i];
        if (!by_flag && r->key && !strcmp(r->key, name)) return r;
        if (by_flag && !(r->flags & KEY_NO_FLAG) && ((r->flag && same_flag(name, r->flag)) || (r->alias && same_flag(name, r->alias))))
            return r;
    }
    return NULL;
}

int key_set(const KeyRow *r, void *base, const char *value, int checked) {
    void *p = (char *)base + r->off;
    long l;
    double d;
    switch (r->type) {
    case KEY_INT:
    case KEY_LONG:
    case KEY_U64:
        if (r->type == KEY_U64 && !checked) { /* as written: the whole uint64 range */
            char *end;
            errno = 0;
            const unsigned long long u = strtoull(value, &end, 10);
            if (errno || end == value || !only_blanks(end)) return -1;
            *(uint64_t *)p = u;
            return 0;
        }
        if (key_parse_long(value, &l)) return -1;
        if (checked && (l < (long)r->lo || (r->hi > 0 && l > (long)r->hi))) return -1;
        if (r->type == KEY_INT) {
            if (l < -2147483647L || l > 2147483647L) return -1;
            *(int *)p = (int)l;
        } else if (r->type == KEY_LONG) {
            *(long *)p = l;
        } else {
            if (l < 0) return -1;
            *(uint64_t *)p = (uint64_t)l;
        }
        return 0;
    case KEY_DOUBLE:
        if (key_parse_double(value, &d)) return -1;
        if (checked && (d < r->lo || (r->hi > 0 && d >= r->hi))) return -1;
        *(double *)p = d;
        return 0;
    case KEY_BOOL: return key_parse_bool(value, p);
    case KEY_STR:
        if (strlen(value) >= r->size) return -1;
        memcpy(p, value, strlen(value) + 1);
        return 0;
    case KEY_CUSTOM: return r->codec->parse(base, p, value);
    }
    return -1;
}

int key_set_flag(const KeyRow *rows, int n, void *base, const char *flag, const char *value, char *err, size_t errlen) {
    const KeyRow *k = key_find(rows, n, flag, 1);
    if (!k) return 0;
    if (k->type == KEY_BOOL) return key_set(k, base, "true", 1), 2;
    if (!value) return errf(err, errlen, "--%s needs a value", k->flag);
    if (key_set(k, base, value, 1))
        return k->type == KEY_STR ? errf(err, errlen, "--%s: value too long", k->flag) : errf(err, errlen, "--%s '%s' must be %s", k->flag, value, k->want);
    return 1;
}

int key_is_zero(const KeyRow *r, const void *base) {
    const void *p = (const char *)base + r->off;
    switch (r->type) {
    case KEY_INT:
    case KEY_BOOL: return *(const int *)p == 0;
    case KEY_LONG: return *(const long *)p == 0;
    case KEY_U64: return *(const uint64_t *)p == 0;
    case KEY_DOUBLE: return *(const double *)p == 0;
    case KEY_CUSTOM: /* every byte of the field 0 */
        for (size_t i = 0; i < r->size; i++)
            if (((const unsigned char *)p)[i]) return 0;
        return 1;
    default: return 0;
    }
}

void key_keep_resume_ok(const KeyRow *rows, int n, void *dst, const void *src) {
    for (int i = 0; i < n; i++) {
        const KeyRow *r = &rows[i];
        const char *s = (const char *)src + r->off;
        if (!(r->flags & KEY_RESUME_OK) || (r->type == KEY_STR ? !s[0] : key_is_zero(r, src))) continue;
        memcpy((char *)dst + r->off, s, r->size);
    }
}

void key_write_value(const KeyRow *r, const void *base, FILE *f) {
    const void *p = (const char *)base + r->off;
    switch (r->type) {
    case KEY_INT: fprintf(f, "%d", *(const int *)p); break;
    case KEY_LONG: fprintf(f, "%ld", *(const long *)p); break;
    case KEY_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case KEY_DOUBLE: fprintf(f, "%.17g", *(const double *)p); break;
    case KEY_BOOL: fputs(*(const int *)p ? "true" : "false", f); break;
    case KEY_STR: fputs((const char *)p, f); break;
    case KEY_CUSTOM: fputs(r->codec->name(base, p), f); break;
    }
}

char *key_trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

int key_text_each(const char *text, int (*fn)(const char *key, const char *value, void *ctx), void *ctx) {
    char *buf = strdup(text ? text : ""), *save = NULL;
    if (!buf) return -1;
    int rc = 0;
    for (char *line = strtok_r(buf, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        if (!*key_trim(line)) continue;
        char *eq = strchr(line, '=');
        if (eq) *eq = 0;
        rc = fn(key_trim(line), eq ? key_trim(eq + 1) : NULL, ctx);
    }
    free(buf);
    return rc;
}

char *key_table_to_text(const KeyRow *rows, int n, const void *base, const char *prefix, int (*skip)(const KeyRow *r, const void *base)) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) fatal("out of memory");
    for (int i = 0; i < n; i++) {
        const KeyRow *r = &rows[i];
        if (!r->key || ((r->flags & KEY_SKIP_ZERO) && key_is_zero(r, base)) || (skip && skip(r, base))) continue;
        fprintf(f, "%s%s = ", prefix, r->key);
        key_write_value(r, base, f);
        fputc('\n', f);
    }
    fclose(f);
    return buf;
}

typedef struct FromText {
    const KeyRow *rows;
    int n;
    void *base;
    const char *prefix, *const *ignore, *what;
    char *err;
    size_t errlen;
} FromText;

static int from_text_line(const char *key, const char *v, void *ctx) {
    FromText *x = ctx;
    const size_t np = strlen(x->prefix);
    if (strncmp(key, x->prefix, np) || !v || !*v) return 0;
    for (const char *const *ig = x->ignore; ig && *ig; ig++)
        if (!strcmp(key + np, *ig)) return 0;
    const KeyRow *r = key_find(x->rows, x->n, key + np, 0);
    if (!r) return errf(x->err, x->errlen, "unknown %s option '%s' in the checkpoint", x->what, key), 1;
    if (key_set(r, x->base, v, 0)) return errf(x->err, x->errlen, "%s option '%s' has a bad value '%s' in the checkpoint", x->what, key, v), 1;
    return 0;
}

int key_table_from_text(const KeyRow *rows, int n, void *base, const char *prefix, const char *const *ignore, const char *what,
                        const char *text, char *err, size_t errlen) {
    FromText x = {rows, n, base, prefix, ignore, what, err, errlen};
    const int rc = key_text_each(text, from_text_line, &x);
    if (rc < 0) errf(err, errlen, "out of memory reading the %s options", what);
    return rc ? -1 : 0;
}
