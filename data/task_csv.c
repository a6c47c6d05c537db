/* task_csv.c — the task-input formats csv and tsv: tables of sequence examples whose first record is
 * the header naming the columns (text_field, text_pair_field, label_field); one table reader, two ways
 * of cutting a file into records of fields:
 *   csv  RFC 4180 (libcsv, strict): comma-separated, fields in double quotes may hold commas, quotes
 *        ("") and line breaks; a record's line is the line it starts on.
 *   tsv  tab-separated, one record per non-empty line, no quoting (GLUE's .tsv files): a field is the
 *        bytes between tabs.
 * A record with another number of fields than the header is an error.  See task_format.h and
 * docs/FORMATS.md, "Task inputs". */
#include "data/task_reader.h"
#include "autograd/base/util.h"
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    TaskReader *r;
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
    TaskReader *r = t->r;
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
    TaskExample *e = tr_push(r, line);
    char what[128];
    snprintf(what, sizeof what, "column '%.100s'", sp->text_field);
    if (!(e->text = tr_field(r, line, fs->f[t->c_text], fs->len[t->c_text], what))) return -1;
    if (!e->text[0]) return errf(r->err, r->errlen, "%s:%ld: empty text in column '%s'", r->name, line, sp->text_field);
    if (t->c_pair >= 0) {
        snprintf(what, sizeof what, "column '%.100s'", sp->text_pair_field);
        if (!(e->text_pair = tr_field(r, line, fs->f[t->c_pair], fs->len[t->c_pair], what))) return -1;
        if (!e->text_pair[0]) return errf(r->err, r->errlen, "%s:%ld: empty text in column '%s'", r->name, line, sp->text_pair_field);
    }
    if (t->c_label >= 0) {
        snprintf(what, sizeof what, "column '%.100s'", sp->label_field);
        if (!(e->label = tr_field(r, line, fs->f[t->c_label], fs->len[t->c_label], what))) return -1;
        snprintf(what, sizeof what, "in column '%.100s'", sp->label_field);
        if (tr_label(r, line, e->label, what)) return -1;
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

static int read_csv(TaskReader *r, const char *buf, size_t len) {
    CsvState c;
    memset(&c, 0, sizeof c);
    c.t.r = r;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL)) return errf(r->err, r->errlen, "%s: cannot start the CSV parser", r->name);
    csv_set_space_func(&p, csv_no_space);
    size_t pos = 0;
    long no = 0;
    TaskLine l;
    int rc = 0;
    while (!c.failed && tr_next_line(buf, len, &pos, &no, &l)) {
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

static int read_tsv(TaskReader *r, const char *buf, size_t len) {
    Table t;
    memset(&t, 0, sizeof t);
    t.r = r;
    Fields fs;
    memset(&fs, 0, sizeof fs);
    size_t pos = 0;
    long no = 0;
    TaskLine l;
    int rc = 0;
    while (!rc && tr_next_line(buf, len, &pos, &no, &l)) {
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

const TaskFormat task_format_csv = {"csv", "RFC 4180, a header row naming the columns: a text [+ pair] and its label",
                                    TASK_HOLDS_SEQUENCES, 0, read_csv};
const TaskFormat task_format_tsv = {"tsv", "tab-separated, no quoting, a header row naming the columns: a text [+ pair] and its label",
                                    TASK_HOLDS_SEQUENCES, 0, read_tsv};
