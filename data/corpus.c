/* corpus.c — input discovery and document reading for `deberta prep`.  See corpus.h. */
#include "data/corpus.h"
#include "autograd/base/util.h"
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- documents */

static void docset_add(DocSet *ds, const char *text, size_t len) {
    if (len == 0) return;
    if (ds->n == ds->cap) {
        ds->cap = ds->cap ? 2 * ds->cap : 1024;
        ds->off = xrealloc(ds->off, ds->cap * sizeof(size_t));
        ds->len = xrealloc(ds->len, ds->cap * sizeof(size_t));
    }
    if (ds->buf_len + len > ds->buf_cap) {
        size_t c = ds->buf_cap ? ds->buf_cap : 1 << 20;
        while (c < ds->buf_len + len) c *= 2;
        ds->buf = xrealloc(ds->buf, c);
        ds->buf_cap = c;
    }
    memcpy(ds->buf + ds->buf_len, text, len);
    ds->off[ds->n] = ds->buf_len;
    ds->len[ds->n] = len;
    ds->buf_len += len;
    ds->n++;
}

void docset_free(DocSet *ds) {
    free(ds->buf); free(ds->off); free(ds->len);
    memset(ds, 0, sizeof *ds);
}

/* ---------------------------------------------------------------- file discovery */

typedef struct { char **v; size_t n, cap; } StrList;
static void sl_push(StrList *l, const char *s) {
    if (l->n == l->cap) { l->cap = l->cap ? 2 * l->cap : 64; l->v = xrealloc(l->v, l->cap * sizeof(char *)); }
    l->v[l->n++] = xstrdup(s);
}
static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}
static int is_input_name(const char *s) { return ends_with(s, ".txt") || ends_with(s, ".jsonl"); }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int walk(const char *dir, StrList *out, char *err, size_t errlen, int depth) {
    if (depth > 64) { errf(err, errlen, "%s: folders nested too deeply (symlink loop?)", dir); return -1; }
    DIR *d = opendir(dir);
    if (!d) { errf(err, errlen, "%s: cannot open folder (%s)", dir, strerror(errno)); return -1; }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *p = xmalloc(n);
        snprintf(p, n, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0) { errf(err, errlen, "%s: cannot stat (%s)", p, strerror(errno)); rc = -1; }
        else if (S_ISDIR(st.st_mode)) rc = walk(p, out, err, errlen, depth + 1);
        else if (S_ISREG(st.st_mode) && is_input_name(e->d_name)) sl_push(out, p);
        free(p);
    }
    closedir(d);
    return rc;
}

int corpus_list_files(const char *const *paths, int n_paths, char ***files, size_t *n_files, char *err, size_t errlen) {
    StrList l = {0};
    int rc = 0;
    for (int i = 0; i < n_paths && rc == 0; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            errf(err, errlen, "input %s: cannot open (%s)", paths[i], strerror(errno));
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            char *p = xstrdup(paths[i]);
            size_t n = strlen(p);
            while (n > 1 && p[n - 1] == '/') p[--n] = 0;
            rc = walk(p, &l, err, errlen, 0);
            free(p);
        } else if (!is_input_name(paths[i])) {
            errf(err, errlen, "input %s: unsupported file type (expected .txt or .jsonl)", paths[i]);
            rc = -1;
        } else {
            sl_push(&l, paths[i]);
        }
    }
    if (rc == 0 && l.n == 0) { errf(err, errlen, "no .txt or .jsonl files found in the inputs"); rc = -1; }
    if (rc != 0) {
        for (size_t i = 0; i < l.n; i++) free(l.v[i]);
        free(l.v);
        return -1;
    }
    qsort(l.v, l.n, sizeof(char *), cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (k > 0 && strcmp(l.v[k - 1], l.v[i]) == 0) { free(l.v[i]); continue; }
        l.v[k++] = l.v[i];
    }
    *files = l.v;
    *n_files = k;
    return 0;
}

/* ---------------------------------------------------------------- JSON */

typedef struct {
    const char *s; size_t n, i;
    char *err; size_t errlen;
} JP;

static int jp_fail(JP *p, const char *what) {
    errf(p->err, p->errlen, "invalid JSON: %s at column %zu", what, p->i + 1);
    return -1;
}
static void jp_ws(JP *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}
static int hex4(JP *p, unsigned *v) {
    if (p->i + 4 > p->n) return jp_fail(p, "truncated \\u escape");
    unsigned x = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i + k];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return jp_fail(p, "bad hex digit in \\u escape");
    }
    p->i += 4;
    *v = x;
    return 0;
}
/* Parses a string at p->i (which is '"').  When out is given, the decoded bytes go there
 * (malloc'd); otherwise the string is only validated. */
static int jp_string(JP *p, char **out, size_t *out_len) {
    p->i++; /* opening quote */
    char *o = NULL;
    size_t k = 0;
    if (out) o = xmalloc(p->n - p->i + 1); /* decoded is never longer than the source */
    for (;;) {
        if (p->i >= p->n) { free(o); return jp_fail(p, "unterminated string"); }
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') { p->i++; break; }
        if (c < 0x20) { free(o); return jp_fail(p, "raw control character in string"); }
        if (c != '\\') { if (o) o[k++] = (char)c; p->i++; continue; }
        p->i++;
        if (p->i >= p->n) { free(o); return jp_fail(p, "unterminated escape"); }
        char e = p->s[p->i++];
        char ch = 0;
        switch (e) {
        case '"': ch = '"'; break;
        case '\\': ch = '\\'; break;
        case '/': ch = '/'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(p, &cp)) { free(o); return -1; }
            if (cp >= 0xDC00 && cp <= 0xDFFF) { free(o); return jp_fail(p, "lone low surrogate in \\u escape"); }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->i + 2 > p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
                    free(o); return jp_fail(p, "high surrogate not followed by a \\u low surrogate");
                }
                p->i += 2;
                if (hex4(p, &lo)) { free(o); return -1; }
                if (lo < 0xDC00 || lo > 0xDFFF) { free(o); return jp_fail(p, "high surrogate not followed by a low surrogate"); }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (o) k += utf8_put(o + k, cp);
            continue;
        }
        default: free(o); return jp_fail(p, "unknown escape");
        }
        if (o) o[k++] = ch;
    }
    if (out) { o[k] = 0; *out = o; *out_len = k; }
    return 0;
}
static int jp_value(JP *p, int depth);
static int jp_number(JP *p) {
    size_t st = p->i;
    if (p->i < p->n && p->s[p->i] == '-') p->i++;
    if (p->i >= p->n) return jp_fail(p, "bad number");
    if (p->s[p->i] == '0') p->i++;
    else if (p->s[p->i] >= '1' && p->s[p->i] <= '9') while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    else return jp_fail(p, "bad number");
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        size_t d = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (d == p->i) return jp_fail(p, "bad number");
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        size_t d = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (d == p->i) return jp_fail(p, "bad number");
    }
    return p->i > st ? 0 : jp_fail(p, "bad number");
}
static int jp_lit(JP *p, const char *w) {
    size_t l = strlen(w);
    if (p->i + l > p->n || memcmp(p->s + p->i, w, l) != 0) return jp_fail(p, "unexpected character");
    p->i += l;
    return 0;
}
static int jp_value(JP *p, int depth) {
    if (depth > 256) return jp_fail(p, "nesting too deep");
    jp_ws(p);
    if (p->i >= p->n) return jp_fail(p, "unexpected end of line");
    char c = p->s[p->i];
    if (c == '"') return jp_string(p, NULL, NULL);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        p->i++;
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == close) { p->i++; return 0; }
        for (;;) {
            if (c == '{') {
                jp_ws(p);
                if (p->i >= p->n || p->s[p->i] != '"') return jp_fail(p, "expected a string key");
                if (jp_string(p, NULL, NULL)) return -1;
                jp_ws(p);
                if (p->i >= p->n || p->s[p->i] != ':') return jp_fail(p, "expected ':'");
                p->i++;
            }
            if (jp_value(p, depth + 1)) return -1;
            jp_ws(p);
            if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
            if (p->i < p->n && p->s[p->i] == close) { p->i++; return 0; }
            return jp_fail(p, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    if (c == 't') return jp_lit(p, "true");
    if (c == 'f') return jp_lit(p, "false");
    if (c == 'n') return jp_lit(p, "null");
    if (c == '-' || (c >= '0' && c <= '9')) return jp_number(p);
    return jp_fail(p, "unexpected character");
}

int json_string_field(const char *line, size_t len, const char *field, char **out, size_t *out_len,
                      char *err, size_t errlen) {
    JP p = {line, len, 0, err, errlen};
    size_t flen = strlen(field);
    int found = 0;
    jp_ws(&p);
    if (p.i >= p.n || p.s[p.i] != '{') return jp_fail(&p, "expected an object '{'");
    p.i++;
    jp_ws(&p);
    if (p.i < p.n && p.s[p.i] == '}') p.i++;
    else for (;;) {
        jp_ws(&p);
        if (p.i >= p.n || p.s[p.i] != '"') goto fail_key;
        char *key; size_t klen;
        if (jp_string(&p, &key, &klen)) goto fail;
        int match = klen == flen && memcmp(key, field, flen) == 0;
        free(key);
        jp_ws(&p);
        if (p.i >= p.n || p.s[p.i] != ':') { jp_fail(&p, "expected ':'"); goto fail; }
        p.i++;
        jp_ws(&p);
        if (match && !found) {
            if (p.i >= p.n || p.s[p.i] != '"') {
                errf(err, errlen, "field \"%s\" is not a string", field);
                goto fail;
            }
            if (jp_string(&p, out, out_len)) goto fail;
            found = 1;
        } else if (jp_value(&p, 1)) goto fail;
        jp_ws(&p);
        if (p.i < p.n && p.s[p.i] == ',') { p.i++; continue; }
        if (p.i < p.n && p.s[p.i] == '}') { p.i++; break; }
        jp_fail(&p, "expected ',' or '}'");
        goto fail;
    }
    jp_ws(&p);
    if (p.i != p.n) { jp_fail(&p, "trailing characters after the object"); goto fail; }
    if (!found) return 1;
    return 0;
fail_key:
    jp_fail(&p, "expected a string key");
fail:
    if (found) { free(*out); *out = NULL; }
    return -1;
}

/* ---------------------------------------------------------------- files */

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

int corpus_read_file(const char *path, DocSet *ds, char *err, size_t errlen) {
    size_t n;
    char *b = read_file(path, &n);
    if (!b) return errf(err, errlen, "input %s: cannot open (%s)", path, strerror(errno));
    if (n == 0) return free(b), errf(err, errlen, "input %s: " FILE_EMPTY, path);
    int jsonl = ends_with(path, ".jsonl");
    size_t i = 0, line_no = 0;
    size_t doc_start = 0, doc_end = 0;
    int in_doc = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && b[e] != '\n') e++;
        line_no++;
        int blank = is_blank(b + i, e - i);
        if (jsonl) {
            if (!blank) {
                size_t l = e - i;
                if (l && b[i + l - 1] == '\r') l--;
                char *text = NULL, msg[512];
                size_t tl = 0;
                int rc = json_string_field(b + i, l, "text", &text, &tl, msg, sizeof msg);
                if (rc != 0) {
                    if (rc == 1) errf(err, errlen, "input %s:%zu: no string field \"text\"", path, line_no);
                    else errf(err, errlen, "input %s:%zu: %s", path, line_no, msg);
                    free(b);
                    return -1;
                }
                docset_add(ds, text, tl);
                free(text);
            }
        } else if (blank) {
            if (in_doc) docset_add(ds, b + doc_start, doc_end - doc_start);
            in_doc = 0;
        } else {
            if (!in_doc) { in_doc = 1; doc_start = i; }
            doc_end = e;
        }
        i = e + 1;
    }
    if (!jsonl && in_doc) docset_add(ds, b + doc_start, doc_end - doc_start);
    free(b);
    return 0;
}
