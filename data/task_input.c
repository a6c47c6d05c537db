/* task_input.c — JSONL (libjansson), CSV (libcsv), TSV and CoNLL readers.  See task_input.h and
 * docs/FORMATS.md, "Task inputs". */
#include "data/task_input.h"
#include "data/tokenizer.h"
#include "autograd/base/util.h"
#include <csv.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FORMAT_NAMES[4] = {"jsonl", "csv", "tsv", "conll"}; /* TI_JSONL .. TI_CONLL */

int task_input_format_parse(const char *s, TaskInputFormat *f) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, FORMAT_NAMES[i])) { *f = (TaskInputFormat)(TI_JSONL + i); return 0; }
    return -1;
}

static const char *task_input_format_name(TaskInputFormat f) { return f >= TI_JSONL && f <= TI_CONLL ? FORMAT_NAMES[f - TI_JSONL] : "?"; }

int utf8_valid(const char *s, size_t n, size_t *bad) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = (size_t)utf8_valid_len((const uint8_t *)s + i, n - i))) {
            if (bad) *bad = i;
            return 0;
        }
    return 1;
}

/* ---------------------------------------------------------------- the arena and the example list */

typedef struct Block { struct Block *next; size_t used, cap; char data[]; } Block;
typedef struct { Block *head; } Arena;

static void *arena_alloc(Arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->used + n > a->head->cap) {
        size_t cap = n > (1 << 20) ? n : (1 << 20);
        Block *b = xmalloc(sizeof(Block) + cap);
        b->next = a->head; b->used = 0; b->cap = cap;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    return p;
}
static char *arena_str(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
static void arena_free(Arena *a) {
    for (Block *b = a->head; b;) { Block *n = b->next; free(b); b = n; }
    a->head = NULL;
}

typedef struct {
    const char *name;            /* the file, in messages */
    const TaskInputSpec *spec;
    Arena arena;
    TaskExample *ex;
    size_t n, cap;
    char *err;
    size_t errlen;
} Reader;

static TaskExample *push(Reader *r, long line) {
    if (r->n == r->cap) { r->cap = r->cap ? 2 * r->cap : 256; r->ex = xrealloc(r->ex, r->cap * sizeof(TaskExample)); }
    TaskExample *e = &r->ex[r->n++];
    memset(e, 0, sizeof *e);
    e->line = line;
    return e;
}

/* A field's bytes as an arena string: UTF-8 and no NUL byte, else -1 with "NAME:LINE: what (in ...)". */
static const char *field_str(Reader *r, long line, const char *s, size_t n, const char *what) {
    size_t bad;
    if (!utf8_valid(s, n, &bad)) {
        errf(r->err, r->errlen, "%s:%ld: invalid UTF-8 (byte 0x%02x at offset %zu of %s)", r->name, line, (unsigned char)s[bad], bad, what);
        return NULL;
    }
    const char *z = memchr(s, 0, n);
    if (z) { errf(r->err, r->errlen, "%s:%ld: a NUL byte at offset %zu of %s", r->name, line, (size_t)(z - s), what); return NULL; }
    return arena_str(&r->arena, s, n);
}

static int check_label(Reader *r, long line, const char *lab, const char *what) {
    if (!lab[0]) return errf(r->err, r->errlen, "%s:%ld: empty label %s", r->name, line, what);
    for (const char *p = lab; *p; p++)
        if (*p == '\n' || *p == '\r') return errf(r->err, r->errlen, "%s:%ld: the label %s holds a line break", r->name, line, what);
    if (strlen(lab) > 63) return errf(r->err, r->errlen, "%s:%ld: the label %s is longer than 63 bytes", r->name, line, what);
    return 0;
}

/* ---------------------------------------------------------------- lines */

typedef struct { const char *p; size_t n; long no; } Line;

/* The next line of buf (without its \n or \r\n); 0 at the end. */
static int next_line(const char *buf, size_t len, size_t *pos, long *no, Line *l) {
    if (*pos >= len) return 0;
    size_t a = *pos, e = a;
    while (e < len && buf[e] != '\n') e++;
    *pos = e < len ? e + 1 : e;
    l->p = buf + a;
    l->n = e - a;
    if (l->n && l->p[l->n - 1] == '\r') l->n--;
    l->no = ++*no;
    return 1;
}

static int blank(const Line *l) {
    for (size_t i = 0; i < l->n; i++)
        if (l->p[i] != ' ' && l->p[i] != '\t') return 0;
    return 1;
}

/* ---------------------------------------------------------------- JSONL */

/* The label value v as text (string, integer, real), or -1 with a message. */
static const char *json_label(Reader *r, long line, json_t *v, const char *key) {
    char buf[64];
    if (json_is_string(v)) {
        const char *s = field_str(r, line, json_string_value(v), json_string_length(v), "the label");
        return s && !check_label(r, line, s, key) ? s : NULL;
    }
    if (json_is_integer(v)) { snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v)); return arena_str(&r->arena, buf, strlen(buf)); }
    if (json_is_real(v)) { snprintf(buf, sizeof buf, "%.17g", json_real_value(v)); return arena_str(&r->arena, buf, strlen(buf)); }
    errf(r->err, r->errlen, "%s:%ld: the label at key '%s' is not a string or a number", r->name, line, key);
    return NULL;
}

static const char *json_text(Reader *r, long line, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) { errf(r->err, r->errlen, "%s:%ld: no key '%s'", r->name, line, key); return NULL; }
    if (!json_is_string(v)) { errf(r->err, r->errlen, "%s:%ld: the value at key '%s' is not a string", r->name, line, key); return NULL; }
    char what[128];
    snprintf(what, sizeof what, "key '%.100s'", key);
    const char *s = field_str(r, line, json_string_value(v), json_string_length(v), what);
    if (s && !s[0]) { errf(r->err, r->errlen, "%s:%ld: empty text at key '%s'", r->name, line, key); return NULL; }
    return s;
}

static int jsonl_record(Reader *r, const Line *l, json_t *obj) {
    const TaskInputSpec *sp = r->spec;
    TaskExample *e = push(r, l->no);
    if (!sp->tagging) {
        if (!(e->text = json_text(r, l->no, obj, sp->text_field))) return -1;
        if (sp->text_pair_field && !(e->text_pair = json_text(r, l->no, obj, sp->text_pair_field))) return -1;
        if (!sp->label_field) return 0;
        json_t *v = json_object_get(obj, sp->label_field);
        if (!v || json_is_null(v)) {
            if (sp->need_labels) return errf(r->err, r->errlen, "%s:%ld: no label at key '%s'", r->name, l->no, sp->label_field);
            return 0;
        }
        return (e->label = json_label(r, l->no, v, sp->label_field)) ? 0 : -1;
    }
    const char *tk = sp->tokens_field ? sp->tokens_field : "tokens", *tg = sp->tags_field ? sp->tags_field : "tags";
    json_t *toks = json_object_get(obj, tk), *tags = json_object_get(obj, tg);
    if (!toks) return errf(r->err, r->errlen, "%s:%ld: no key '%s'", r->name, l->no, tk);
    if (!json_is_array(toks)) return errf(r->err, r->errlen, "%s:%ld: the value at key '%s' is not a list", r->name, l->no, tk);
    size_t n = json_array_size(toks);
    if (n == 0) return errf(r->err, r->errlen, "%s:%ld: empty list at key '%s'", r->name, l->no, tk);
    if (n > 1000000) return errf(r->err, r->errlen, "%s:%ld: %zu tokens at key '%s' (at most 1000000)", r->name, l->no, n, tk);
    if (tags && json_is_null(tags)) tags = NULL;
    if (!tags && sp->need_labels) return errf(r->err, r->errlen, "%s:%ld: no key '%s'", r->name, l->no, tg);
    if (tags && !json_is_array(tags)) return errf(r->err, r->errlen, "%s:%ld: the value at key '%s' is not a list", r->name, l->no, tg);
    if (tags && json_array_size(tags) != n)
        return errf(r->err, r->errlen, "%s:%ld: %zu tokens at key '%s' but %zu tags at key '%s'", r->name, l->no, n, tk, json_array_size(tags), tg);
    const char **w = arena_alloc(&r->arena, n * sizeof(char *));
    const char **t = tags ? arena_alloc(&r->arena, n * sizeof(char *)) : NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(toks, i);
        char what[64];
        snprintf(what, sizeof what, "token %zu", i + 1);
        if (!json_is_string(v)) return errf(r->err, r->errlen, "%s:%ld: %s at key '%s' is not a string", r->name, l->no, what, tk);
        if (!(w[i] = field_str(r, l->no, json_string_value(v), json_string_length(v), what))) return -1;
        if (!w[i][0]) return errf(r->err, r->errlen, "%s:%ld: %s at key '%s' is empty", r->name, l->no, what, tk);
        if (t) {
            snprintf(what, sizeof what, "tag %zu at key '%s'", i + 1, tg);
            v = json_array_get(tags, i);
            if (!json_is_string(v) && !json_is_integer(v)) return errf(r->err, r->errlen, "%s:%ld: %s is not a string or an integer", r->name, l->no, what);
            if (!(t[i] = json_label(r, l->no, v, tg))) return -1;
        }
    }
    e->n_words = (int)n;
    e->words = w;
    e->tags = t;
    return 0;
}

static int read_jsonl(Reader *r, const char *buf, size_t len) {
    size_t pos = 0;
    long no = 0;
    Line l;
    while (next_line(buf, len, &pos, &no, &l)) {
        if (blank(&l)) continue;
        size_t bad;
        if (!utf8_valid(l.p, l.n, &bad))
            return errf(r->err, r->errlen, "%s:%ld: invalid UTF-8 (byte 0x%02x at column %zu)", r->name, l.no, (unsigned char)l.p[bad], bad + 1);
        json_error_t je;
        json_t *obj = json_loadb(l.p, l.n, JSON_REJECT_DUPLICATES, &je);
        if (!obj) return errf(r->err, r->errlen, "%s:%ld: not JSON: %s (column %d)", r->name, l.no, je.text, je.column);
        int rc = json_is_object(obj) ? jsonl_record(r, &l, obj) : errf(r->err, r->errlen, "%s:%ld: not a JSON object", r->name, l.no);
        json_decref(obj);
        if (rc) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- CSV and TSV: records of fields */

typedef struct {
    char **f;          /* the fields of the current record (xmalloc'd) */
    size_t *len;
    int n, cap;
} Fields;

static void fields_add(Fields *fs, const char *s, size_t n) {
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? 2 * fs->cap : 16;
        fs->f = xrealloc(fs->f, (size_t)fs->cap * sizeof(char *));
        fs->len = xrealloc(fs->len, (size_t)fs->cap * sizeof(size_t));
    }
    fs->f[fs->n] = xmalloc(n + 1);
    if (n) memcpy(fs->f[fs->n], s, n);
    fs->f[fs->n][n] = 0;
    fs->len[fs->n++] = n;
}
static void fields_clear(Fields *fs) {
    for (int i = 0; i < fs->n; i++) free(fs->f[i]);
    fs->n = 0;
}
static void fields_free(Fields *fs) {
    fields_clear(fs);
    free(fs->f); free(fs->len);
}

/* Column state shared by CSV and TSV: the header, then one example per record. */
typedef struct {
    Reader *r;
    int have_header, n_cols;
    int c_text, c_pair, c_label;   /* column indices, -1 when absent */
    long header_line;
} Table;

static int find_col(const Fields *h, const char *name) {
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->f[i], name)) return i;
    return -1;
}

static int missing_col(Table *t, const Fields *h, const char *name) {
    char list[256];
    size_t k = 0;
    list[0] = 0;
    for (int i = 0; i < h->n && k < sizeof list - 8; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%.40s", i ? ", " : "", h->f[i]);
    if (k >= sizeof list - 8) snprintf(list + sizeof list - 8, 8, ", ...");
    return errf(t->r->err, t->r->errlen, "%s:%ld: no column '%s' (the header has: %s)", t->r->name, t->header_line, name, list);
}

static int table_record(Table *t, const Fields *fs, long line) {
    Reader *r = t->r;
    const TaskInputSpec *sp = r->spec;
    if (!t->have_header) {
        t->header_line = line;
        for (int i = 0; i < fs->n; i++) {
            size_t bad;
            if (!utf8_valid(fs->f[i], fs->len[i], &bad))
                return errf(r->err, r->errlen, "%s:%ld: invalid UTF-8 in header column %d (byte 0x%02x at offset %zu)", r->name, line, i + 1,
                            (unsigned char)fs->f[i][bad], bad);
        }
        if ((t->c_text = find_col(fs, sp->text_field)) < 0) return missing_col(t, fs, sp->text_field);
        t->c_pair = -1;
        if (sp->text_pair_field && (t->c_pair = find_col(fs, sp->text_pair_field)) < 0) return missing_col(t, fs, sp->text_pair_field);
        t->c_label = sp->label_field ? find_col(fs, sp->label_field) : -1;
        if (sp->label_field && t->c_label < 0 && sp->need_labels) return missing_col(t, fs, sp->label_field);
        t->n_cols = fs->n;
        t->have_header = 1;
        return 0;
    }
    if (fs->n != t->n_cols) return errf(r->err, r->errlen, "%s:%ld: %d fields, the header has %d", r->name, line, fs->n, t->n_cols);
    TaskExample *e = push(r, line);
    char what[128];
    snprintf(what, sizeof what, "column '%.100s'", sp->text_field);
    if (!(e->text = field_str(r, line, fs->f[t->c_text], fs->len[t->c_text], what))) return -1;
    if (!e->text[0]) return errf(r->err, r->errlen, "%s:%ld: empty text in column '%s'", r->name, line, sp->text_field);
    if (t->c_pair >= 0) {
        snprintf(what, sizeof what, "column '%.100s'", sp->text_pair_field);
        if (!(e->text_pair = field_str(r, line, fs->f[t->c_pair], fs->len[t->c_pair], what))) return -1;
        if (!e->text_pair[0]) return errf(r->err, r->errlen, "%s:%ld: empty text in column '%s'", r->name, line, sp->text_pair_field);
    }
    if (t->c_label >= 0) {
        snprintf(what, sizeof what, "column '%.100s'", sp->label_field);
        if (!(e->label = field_str(r, line, fs->f[t->c_label], fs->len[t->c_label], what))) return -1;
        snprintf(what, sizeof what, "in column '%.100s'", sp->label_field);
        if (check_label(r, line, e->label, what)) return -1;
    }
    return 0;
}

/* libcsv calls back per field and per record; the first error stops the reading. */
typedef struct { Table t; Fields fs; long rec_line; int failed; } CsvState;

static void csv_field_cb(void *s, size_t n, void *data) {
    CsvState *c = data;
    if (!c->failed) fields_add(&c->fs, s ? s : "", s ? n : 0);
}
static void csv_record_cb(int term, void *data) {
    CsvState *c = data;
    if (!c->failed && table_record(&c->t, &c->fs, c->rec_line)) c->failed = 1;
    fields_clear(&c->fs);
}
static int csv_no_space(unsigned char ch) { return 0; } /* RFC 4180: spaces are part of a field */

enum { LIBCSV_ROW_NOT_BEGUN = 0 }; /* libcsv.c's pstate between records */

static int read_csv(Reader *r, const char *buf, size_t len) {
    CsvState c;
    memset(&c, 0, sizeof c);
    c.t.r = r;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL)) return errf(r->err, r->errlen, "%s: cannot start the CSV parser", r->name);
    csv_set_space_func(&p, csv_no_space);
    size_t pos = 0;
    long no = 0;
    Line l;
    int rc = 0;
    while (!c.failed && next_line(buf, len, &pos, &no, &l)) {
        if (p.pstate == LIBCSV_ROW_NOT_BEGUN) c.rec_line = l.no;
        const size_t n = pos - (size_t)(l.p - buf); /* the line with its line end */
        if (csv_parse(&p, l.p, n, csv_field_cb, csv_record_cb, &c) != n) {
            rc = errf(r->err, r->errlen, "%s:%ld: CSV: %s (a quote inside an unquoted field, or text after a closing quote)", r->name, l.no,
                      csv_strerror(csv_error(&p)));
            break;
        }
    }
    if (!rc && !c.failed && csv_fini(&p, csv_field_cb, csv_record_cb, &c) != 0)
        rc = errf(r->err, r->errlen, "%s:%ld: unterminated quoted field (its record starts on this line)", r->name, c.rec_line);
    csv_free(&p);
    fields_free(&c.fs);
    if (c.failed) rc = -1;
    if (!rc && !c.t.have_header) rc = errf(r->err, r->errlen, "%s: empty (no header)", r->name);
    return rc;
}

static int read_tsv(Reader *r, const char *buf, size_t len) {
    Table t;
    memset(&t, 0, sizeof t);
    t.r = r;
    Fields fs;
    memset(&fs, 0, sizeof fs);
    size_t pos = 0;
    long no = 0;
    Line l;
    int rc = 0;
    while (!rc && next_line(buf, len, &pos, &no, &l)) {
        if (l.n == 0) continue;
        for (size_t a = 0;;) {
            size_t e = a;
            while (e < l.n && l.p[e] != '\t') e++;
            fields_add(&fs, l.p + a, e - a);
            if (e == l.n) break;
            a = e + 1;
        }
        rc = table_record(&t, &fs, l.no);
        fields_clear(&fs);
    }
    fields_free(&fs);
    if (!rc && !t.have_header) rc = errf(r->err, r->errlen, "%s: empty (no header)", r->name);
    return rc;
}

/* ---------------------------------------------------------------- CoNLL */

typedef struct { const char **v; size_t n, cap; } PVec;
static void pv_push(PVec *a, const char *s) {
    if (a->n == a->cap) { a->cap = a->cap ? 2 * a->cap : 64; a->v = xrealloc(a->v, a->cap * sizeof(char *)); }
    a->v[a->n++] = s;
}

static int conll_flush(Reader *r, PVec *w, PVec *t, long first_line) {
    if (!w->n) return 0;
    if (w->n > 1000000) return errf(r->err, r->errlen, "%s:%ld: a sentence of %zu tokens (at most 1000000)", r->name, first_line, w->n);
    TaskExample *e = push(r, first_line);
    e->n_words = (int)w->n;
    const char **wa = arena_alloc(&r->arena, w->n * sizeof(char *));
    memcpy(wa, w->v, w->n * sizeof(char *));
    e->words = wa;
    if (t->n == w->n) {
        const char **ta = arena_alloc(&r->arena, t->n * sizeof(char *));
        memcpy(ta, t->v, t->n * sizeof(char *));
        e->tags = ta;
    }
    w->n = t->n = 0;
    return 0;
}

static int read_conll(Reader *r, const char *buf, size_t len) {
    const TaskInputSpec *sp = r->spec;
    const int tc = sp->token_column > 0 ? sp->token_column : 1, gc = sp->tag_column;
    PVec w = {0}, t = {0};
    size_t pos = 0;
    long no = 0, first = 0;
    Line l;
    int rc = 0;
    enum { MAXC = 64 };
    while (!rc && next_line(buf, len, &pos, &no, &l)) {
        if (blank(&l)) { rc = conll_flush(r, &w, &t, first); continue; }
        size_t bad;
        if (!utf8_valid(l.p, l.n, &bad)) {
            rc = errf(r->err, r->errlen, "%s:%ld: invalid UTF-8 (byte 0x%02x at column %zu)", r->name, l.no, (unsigned char)l.p[bad], bad + 1);
            break;
        }
        if (memchr(l.p, 0, l.n)) { rc = errf(r->err, r->errlen, "%s:%ld: a NUL byte", r->name, l.no); break; }
        const char *cs[MAXC];
        size_t cl[MAXC];
        int nc = 0;
        for (size_t i = 0; i < l.n && nc < MAXC;) {
            while (i < l.n && (l.p[i] == ' ' || l.p[i] == '\t')) i++;
            if (i >= l.n) break;
            size_t e = i;
            while (e < l.n && l.p[e] != ' ' && l.p[e] != '\t') e++;
            cs[nc] = l.p + i; cl[nc] = e - i; nc++;
            i = e;
        }
        if (cl[0] == 10 && !memcmp(cs[0], "-DOCSTART-", 10)) { rc = conll_flush(r, &w, &t, first); continue; }
        if (nc < tc) { rc = errf(r->err, r->errlen, "%s:%ld: %d column%s, --token-column %d needs at least %d", r->name, l.no, nc, nc == 1 ? "" : "s", tc, tc); break; }
        const int g = gc > 0 ? gc : nc;
        const int want_tag = sp->need_labels || gc > 0;
        if (want_tag && gc == 0 && nc < 2) {
            rc = errf(r->err, r->errlen, "%s:%ld: 1 column, a token and its tag need at least 2", r->name, l.no);
            break;
        }
        if (want_tag && nc < g) { rc = errf(r->err, r->errlen, "%s:%ld: %d column%s, --tag-column %d needs at least %d", r->name, l.no, nc, nc == 1 ? "" : "s", g, g); break; }
        if (!w.n) first = l.no;
        pv_push(&w, arena_str(&r->arena, cs[tc - 1], cl[tc - 1]));
        if (want_tag || (nc >= 2 && gc == 0 && t.n == w.n - 1)) {
            const char *tag = arena_str(&r->arena, cs[g - 1], cl[g - 1]);
            if (check_label(r, l.no, tag, "")) { rc = -1; break; }
            pv_push(&t, tag);
        }
    }
    if (!rc) rc = conll_flush(r, &w, &t, first);
    free(w.v); free(t.v);
    return rc;
}

/* ---------------------------------------------------------------- entry points */

int task_input_read_mem(const char *buf, size_t len, const char *name, const TaskInputSpec *spec, TaskExamples *out, char *err,
                        size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!spec->tagging && !spec->text_field) return errf(err, errlen, "%s: no text field given", name);
    if (spec->tagging && spec->format != TI_JSONL && spec->format != TI_CONLL)
        return errf(err, errlen, "%s: token examples are read from jsonl or conll, not %s", name, task_input_format_name(spec->format));
    if (!spec->tagging && spec->format == TI_CONLL) return errf(err, errlen, "%s: conll holds token examples (tags per word)", name);
    if (spec->need_labels && !spec->tagging && !spec->label_field) return errf(err, errlen, "%s: no label field given", name);
    Reader r = {.name = name, .spec = spec, .err = err, .errlen = errlen};
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) { buf += 3; len -= 3; }
    int rc;
    switch (spec->format) {
    case TI_JSONL: rc = read_jsonl(&r, buf, len); break;
    case TI_CSV: rc = read_csv(&r, buf, len); break;
    case TI_TSV: rc = read_tsv(&r, buf, len); break;
    case TI_CONLL: rc = read_conll(&r, buf, len); break;
    default: rc = errf(err, errlen, "%s: unknown input format", name);
    }
    if (!rc && r.n == 0) rc = errf(err, errlen, "%s: no examples", name);
    if (rc) {
        free(r.ex);
        arena_free(&r.arena);
        return -1;
    }
    out->ex = r.ex;
    out->n = r.n;
    out->has_labels = 1;
    for (size_t i = 0; i < r.n; i++)
        if (spec->tagging ? !r.ex[i].tags : !r.ex[i].label) out->has_labels = 0;
    Arena *a = xmalloc(sizeof *a);
    *a = r.arena;
    out->arena_ = a;
    return 0;
}

int task_input_read(const char *path, const TaskInputSpec *spec, TaskExamples *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    size_t len;
    char *buf = read_file(path, &len); /* errno EIO: opened but not readable */
    if (!buf && errno == EIO) return errf(err, errlen, "%s: read error", path);
    if (!buf) return errf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    if (len == 0) { free(buf); return errf(err, errlen, "%s: empty file", path); }
    int rc = task_input_read_mem(buf, len, path, spec, out, err, errlen);
    free(buf);
    return rc;
}

void task_examples_free(TaskExamples *e) {
    if (e->arena_) { arena_free(e->arena_); free(e->arena_); }
    free(e->ex);
    memset(e, 0, sizeof *e);
}
