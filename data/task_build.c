/* task_build.c — task examples from the readers' examples.  See task_build.h and docs/FORMATS.md. */
#include "data/task_build.h"
#include "data/task_format.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- labels */

static int is_int(const char *s) {
    if (*s == '-' || *s == '+') s++;
    if (!*s || strlen(s) > 18) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int cmp_num(const void *a, const void *b) {
    long long x = strtoll(*(char *const *)a, NULL, 10), y = strtoll(*(char *const *)b, NULL, 10);
    return (x > y) - (x < y);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Label names of ls sorted for bsearch: (name, id) pairs. */
typedef struct { const char *name; int id; } NameId;
static int cmp_nameid(const void *a, const void *b) { return strcmp(((const NameId *)a)->name, ((const NameId *)b)->name); }

static NameId *label_index(const TaskSet *ls) {
    NameId *ix = xmalloc((size_t)(ls->n_labels ? ls->n_labels : 1) * sizeof(NameId));
    for (int l = 0; l < ls->n_labels; l++) ix[l] = (NameId){ls->label_names[l], l};
    qsort(ix, (size_t)ls->n_labels, sizeof(NameId), cmp_nameid);
    return ix;
}
static int label_find(const NameId *ix, int n, const char *name) {
    NameId key = {name, 0};
    const NameId *f = bsearch(&key, ix, (size_t)n, sizeof(NameId), cmp_nameid);
    return f ? f->id : -1;
}

static void label_list(const TaskSet *ls, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int l = 0; l < ls->n_labels && k + 8 < cap; l++) k += (size_t)snprintf(buf + k, cap - k, "%s%s", l ? ", " : "", ls->label_names[l]);
    if (k + 8 >= cap) snprintf(buf + cap - 8, 8, ", ...");
}

/* A decimal number that is not an integer: "0.5", "-1.25e3", "3." (is_int's labels stay class names). */
static int is_decimal(const char *s) {
    if (is_int(s)) return 0;
    if (*s == '-' || *s == '+') s++;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++) digits++;
    if (*s == '.') for (s++; *s >= '0' && *s <= '9'; s++) digits++;
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+') s++;
        if (!(*s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return !*s;
}

/* The first line of train holding the label (tagging: the tag) name; 0 when none does. */
static long label_line(const TaskExamples *train, int tag, const char *name) {
    for (size_t j = 0; j < train->n; j++) {
        const TaskExample *e = &train->ex[j];
        if (tag) { for (int w = 0; w < e->n_words && e->tags; w++) if (!strcmp(e->tags[w], name)) return e->line; }
        else if (e->label && !strcmp(e->label, name)) return e->line;
    }
    return 0;
}

/* Appends the name s[0..n) to ls; where names it in a message ("--labels", "labels.txt:3"). */
static int add_label(TaskSet *ls, const char *s, size_t n, const char *where, char *err, size_t errlen) {
    if (n == 0 || n >= TASK_LABEL_LEN) return errf(err, errlen, "%s: an empty label or one longer than %d bytes", where, TASK_LABEL_LEN - 1);
    size_t bad;
    if (!utf8_valid(s, n, &bad)) return errf(err, errlen, "%s: invalid UTF-8 (byte 0x%02x at offset %zu of the label)", where, (unsigned char)s[bad], bad);
    if (memchr(s, '\n', n) || memchr(s, '\r', n)) return errf(err, errlen, "%s: the label holds a line break", where);
    if (ls->n_labels == TASK_MAX_LABELS) return errf(err, errlen, "%s: more than %d labels", where, TASK_MAX_LABELS);
    memcpy(ls->label_names[ls->n_labels], s, n);
    ls->label_names[ls->n_labels][n] = 0;
    for (int l = 0; l < ls->n_labels; l++)
        if (!strcmp(ls->label_names[l], ls->label_names[ls->n_labels])) return errf(err, errlen, "%s: '%s' twice", where, ls->label_names[l]);
    ls->n_labels++;
    return 0;
}

/* The names of --labels-file: one per line, blank lines skipped, a trailing \r dropped. */
static int labels_from_file(const char *path, TaskSet *ls, char *err, size_t errlen) {
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) return errf(err, errlen, "--labels-file %s: cannot read (%s)", path, errno == EIO ? "read error" : strerror(errno));
    int rc = 0;
    long line = 0;
    for (char *p = buf, *end = buf + len; p < end && rc == 0;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        if (n && p[n - 1] == '\r') n--;
        char where[4200];
        snprintf(where, sizeof where, "--labels-file %.4000s:%ld", path, line);
        if (n) rc = add_label(ls, p, n, where, err, errlen);
        p = nl ? nl + 1 : end;
    }
    if (rc == 0 && ls->n_labels == 0) rc = errf(err, errlen, "--labels-file %s: no label in it (one label per line)", path);
    free(buf);
    return rc;
}

int task_label_set(const TaskExamples *train, const char *path, const TaskBuildSpec *spec, TaskSet *ls, char *err, size_t errlen) {
    ls->n_labels = 0;
    if (spec->kind == TASK_REGRESSION) {
        ls->n_labels = 1;
        snprintf(ls->label_names[0], TASK_LABEL_LEN, "%s", spec->label_field ? spec->label_field : "label");
        return 0;
    }
    const int tag = spec->kind == TASK_TAGGING;
    size_t total = 0;
    for (size_t i = 0; i < train->n; i++) total += tag ? (size_t)train->ex[i].n_words : 1;
    const char **all = xmalloc((total ? total : 1) * sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < train->n; i++) {
        const TaskExample *e = &train->ex[i];
        if (tag) { for (int w = 0; w < e->n_words; w++) if (e->tags) all[k++] = e->tags[w]; }
        else if (e->label) all[k++] = e->label;
    }
    qsort(all, k, sizeof(char *), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || strcmp(all[i], all[u - 1])) all[u++] = all[i];
    int rc = 0;
    if (spec->labels_file) {
        rc = labels_from_file(spec->labels_file, ls, err, errlen);
    } else if (spec->label_order) { /* "A,B,C" */
        for (const char *p = spec->label_order; rc == 0;) {
            const char *c = strchr(p, ',');
            const size_t n = c ? (size_t)(c - p) : strlen(p);
            rc = add_label(ls, p, n, "--labels", err, errlen);
            if (!c) break;
            p = c + 1;
        }
    }
    if (spec->labels_file || spec->label_order) {
        /* the given set; every train label must be in it */
        NameId *ix = rc ? NULL : label_index(ls);
        for (size_t i = 0; rc == 0 && i < u; i++)
            if (label_find(ix, ls->n_labels, all[i]) < 0)
                rc = errf(err, errlen, "%s:%ld: label '%s' is not one of %s%s", path, label_line(train, tag, all[i]), all[i],
                          spec->labels_file ? "the labels of --labels-file " : "--labels", spec->labels_file ? spec->labels_file : "");
        free(ix);
    } else {
        /* a number with a fraction is a regression label (docs/FORMATS.md "Task inputs"), not a class name */
        for (size_t i = 0; rc == 0 && !tag && i < u; i++)
            if (is_decimal(all[i]))
                rc = errf(err, errlen, "%s:%ld: label '%s' is a number that is not an integer (a number label needs --regression; to keep such "
                          "labels as class names, name them all with --labels-file FILE)", path, label_line(train, tag, all[i]), all[i]);
        int numeric = 1;
        for (size_t i = 0; i < u; i++) numeric &= is_int(all[i]);
        if (numeric) qsort(all, u, sizeof(char *), cmp_num);
        if (rc == 0 && u > TASK_MAX_LABELS) rc = errf(err, errlen, "%s: %zu different labels (at most %d; is --label-field the label?)", path, u, TASK_MAX_LABELS);
        for (size_t i = 0; rc == 0 && i < u; i++) snprintf(ls->label_names[ls->n_labels++], TASK_LABEL_LEN, "%s", all[i]);
    }
    if (rc == 0 && ls->n_labels < 2) rc = errf(err, errlen, "%s: %d different label%s in the train split (at least 2)", path, ls->n_labels, ls->n_labels == 1 ? "" : "s");
    free(all);
    return rc;
}

/* ---------------------------------------------------------------- split */

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

void task_split_draw(size_t n, uint64_t seed, double dev_fraction, double test_fraction, int want_dev, int want_test,
                     size_t *sel[3], size_t n_sel[3]) {
    size_t *perm = xmalloc((n ? n : 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++) perm[i] = i;
    const uint64_t stream = rng_stream(RNG_SHUFFLE, 0, 34);
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)(rng_u64(seed, stream, (uint64_t)i) % (uint64_t)(i + 1));
        size_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    size_t nd = want_dev ? (size_t)llround((double)n * dev_fraction) : 0;
    size_t nt = want_test ? (size_t)llround((double)n * test_fraction) : 0;
    if (nd > n) nd = n;
    if (nt > n - nd) nt = n - nd;
    const size_t cnt[3] = {n - nd - nt, nd, nt}, off[3] = {nd + nt, 0, nd};
    for (int k = 0; k < 3; k++) {
        if ((k == 1 && !want_dev) || (k == 2 && !want_test)) { sel[k] = NULL; n_sel[k] = 0; continue; }
        sel[k] = xmalloc((cnt[k] ? cnt[k] : 1) * sizeof(size_t));
        memcpy(sel[k], perm + off[k], cnt[k] * sizeof(size_t));
        qsort(sel[k], cnt[k], sizeof(size_t), cmp_size);
        n_sel[k] = cnt[k];
    }
    free(perm);
}

/* ---------------------------------------------------------------- encoding */

static const char *label_set_name(const TaskBuildSpec *spec) {
    return spec->labels_file ? "labels of --labels-file" : spec->label_order ? "labels of --labels" : "train split's labels";
}

typedef struct {
    const TokFile *tk;
    TokEncoder *enc;          /* BPE */
    int32_t *spm_ids;         /* SPM: the last result */
    char *buf;
    size_t cap;
} Enc;

static const int32_t *enc_text(Enc *e, const char *s, size_t n, int lead_space, size_t *nid) {
    if (e->tk->kind == TOKFILE_BPE) {
        if (lead_space) {
            if (n + 2 > e->cap) { e->cap = 2 * (n + 2); e->buf = xrealloc(e->buf, e->cap); }
            e->buf[0] = ' ';
            memcpy(e->buf + 1, s, n);
            s = e->buf;
            n++;
        }
        return tok_encode(e->enc, s, n, nid);
    }
    free(e->spm_ids);
    e->spm_ids = spm_encode(e->tk->spm, s, n, nid);
    return e->spm_ids;
}

typedef struct { int32_t *v; size_t n, cap; } IVec;
static void iv_push(IVec *a, int32_t x) {
    if (a->n == a->cap) { a->cap = a->cap ? 2 * a->cap : 256; a->v = xrealloc(a->v, a->cap * sizeof(int32_t)); }
    a->v[a->n++] = x;
}

/* One new example row (grown as needed); returns its index. */
typedef struct { TaskSet *ts; int64_t cap; } Rows;
static int64_t new_row(Rows *r, int32_t example, int64_t line) {
    TaskSet *ts = r->ts;
    const int T = ts->T, tag = ts->kind == TASK_TAGGING;
    if (ts->N == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        ts->ids = xrealloc(ts->ids, (size_t)r->cap * T * sizeof(int32_t));
        if (ts->kind == TASK_REGRESSION) ts->targets = xrealloc(ts->targets, (size_t)r->cap * sizeof(float));
        else ts->labels = xrealloc(ts->labels, (size_t)r->cap * (tag ? T : 1) * sizeof(int32_t));
        if (tag) ts->word_ids = xrealloc(ts->word_ids, (size_t)r->cap * T * sizeof(int32_t));
        ts->example = xrealloc(ts->example, (size_t)r->cap * sizeof(int32_t));
        ts->line = xrealloc(ts->line, (size_t)r->cap * sizeof(int64_t));
    }
    int64_t n = ts->N++;
    int32_t *row = ts->ids + n * T;
    for (int i = 0; i < T; i++) row[i] = ts->pad_id;
    if (tag) for (int i = 0; i < T; i++) ts->labels[n * T + i] = TASK_IGNORE, ts->word_ids[n * T + i] = -1;
    ts->example[n] = example;
    ts->line[n] = line;
    return n;
}

int task_build_examples(const TaskExamples *ex, const size_t *sel, size_t n_sel, const char *path, const TaskBuildSpec *spec,
                        const TaskSet *ls, const TokFile *tk, const char *split, TaskSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const int T = spec->T, tag = spec->kind == TASK_TAGGING, reg = spec->kind == TASK_REGRESSION;
    if (T < (spec->pair ? 4 : 3)) return errf(err, errlen, "task: sequence length %d is too short", T);
    if (tag && spec->pair) return errf(err, errlen, "task: tagging examples cannot be text pairs");
    out->kind = spec->kind;
    snprintf(out->name, sizeof out->name, "%s", spec->name ? spec->name : task_kind_name(spec->kind));
    snprintf(out->split, sizeof out->split, "%s", split);
    out->T = T;
    out->pair = spec->pair;
    out->n_labels = ls->n_labels;
    memcpy(out->label_names, ls->label_names, sizeof out->label_names);
    out->pad_id = tk->sp.pad; out->cls_id = tk->sp.cls; out->sep_id = tk->sp.sep;
    snprintf(out->tokenizer_kind, sizeof out->tokenizer_kind, "%s", tk->kind == TOKFILE_SPM ? "spm" : "bpe");
    size_t tlen;
    const uint8_t *tb = tokfile_bytes(tk, &tlen);
    out->tokenizer = xmalloc(tlen ? tlen : 1);
    memcpy(out->tokenizer, tb, tlen);
    out->tokenizer_len = tlen;
    snprintf(out->tokenizer_hash, sizeof out->tokenizer_hash, "%s", tk->hash);
    out->vocab_size = tk->vocab_size;
    snprintf(out->source, sizeof out->source, "%s", path);
    snprintf(out->input_format, sizeof out->input_format, "%s", ex->format->name);
    out->split_seed = -1;

    NameId *ix = reg ? NULL : label_index(ls);
    Enc e = {.tk = tk, .enc = tk->kind == TOKFILE_BPE ? tok_encoder_new(tk->bpe) : NULL};
    Rows rows = {out, 0};
    IVec a = {0}, b = {0}, lab = {0}, wid = {0};
    const size_t W = (size_t)T - 2;
    int rc = 0;
    const size_t count = sel ? n_sel : ex->n;
    for (size_t q = 0; q < count && rc == 0; q++) {
        const size_t idx = sel ? sel[q] : q;
        const TaskExample *x = &ex->ex[idx];
        if (!tag) {
            size_t na, nb = 0;
            const int32_t *r = enc_text(&e, x->text, strlen(x->text), 0, &na);
            a.n = 0;
            for (size_t i = 0; i < na; i++) iv_push(&a, r[i]);
            if (spec->pair) {
                if (!x->text_pair) { rc = errf(err, errlen, "%s:%ld: no second text of the pair", path, x->line); break; }
                r = enc_text(&e, x->text_pair, strlen(x->text_pair), 0, &nb);
                b.n = 0;
                for (size_t i = 0; i < nb; i++) iv_push(&b, r[i]);
            }
            int32_t label = TASK_IGNORE;
            float target = NAN;
            if (x->label && reg) {
                char *end;
                errno = 0;
                double v = strtod(x->label, &end);
                if (end == x->label || *end || !isfinite(v) || !isfinite((float)v)) {
                    rc = errf(err, errlen, "%s:%ld: the label '%.60s' is not a finite number (--regression)", path, x->line, x->label);
                    break;
                }
                target = (float)v;
            } else if (x->label && (label = label_find(ix, ls->n_labels, x->label)) < 0) {
                char list[512];
                label_list(ls, list, sizeof list);
                rc = errf(err, errlen, "%s:%ld: label '%s' is not among the %s (%s)%s%s%s", path, x->line, x->label, label_set_name(spec), list,
                          spec->unseen_hint ? " (" : "", spec->unseen_hint ? spec->unseen_hint : "", spec->unseen_hint ? ")" : "");
                break;
            }
            /* truncation: a single text to T - 2; a pair longest first to T - 3 (the pair side on ties) */
            size_t la = na, lb = nb;
            if (!spec->pair) { if (la > W) la = W; }
            else while (la + lb > W - 1) { if (la > lb) la--; else lb--; }
            if (la < na || lb < nb) out->n_truncated++;
            int64_t n = new_row(&rows, (int32_t)idx, x->line);
            int32_t *row = out->ids + n * T;
            size_t p = 0;
            row[p++] = out->cls_id;
            memcpy(row + p, a.v, la * sizeof(int32_t)); p += la;
            row[p++] = out->sep_id;
            if (spec->pair) { memcpy(row + p, b.v, lb * sizeof(int32_t)); p += lb; row[p++] = out->sep_id; }
            if (reg) out->targets[n] = target;
            else out->labels[n] = label;
            continue;
        }
        /* tagging: each word alone, its label on the first sub-token */
        a.n = lab.n = wid.n = 0;
        for (int w = 0; w < x->n_words && rc == 0; w++) {
            size_t nid;
            const int32_t *r = enc_text(&e, x->words[w], strlen(x->words[w]), w > 0, &nid);
            if (nid == 0) { rc = errf(err, errlen, "%s:%ld: word %d '%.40s' encodes to no token", path, x->line, w + 1, x->words[w]); break; }
            int32_t l = TASK_IGNORE;
            if (x->tags && (l = label_find(ix, ls->n_labels, x->tags[w])) < 0) {
                char list[512];
                label_list(ls, list, sizeof list);
                rc = errf(err, errlen, "%s:%ld: tag '%s' (word %d) is not among the %s (%s)%s%s%s", path, x->line + (ex->format->word_per_line ? w : 0),
                          x->tags[w], w + 1, label_set_name(spec), list, spec->unseen_hint ? " (" : "", spec->unseen_hint ? spec->unseen_hint : "",
                          spec->unseen_hint ? ")" : "");
                break;
            }
            for (size_t j = 0; j < nid; j++) { iv_push(&a, r[j]); iv_push(&lab, j == 0 ? l : TASK_IGNORE); iv_push(&wid, w); }
        }
        if (rc) break;
        /* windows at word boundaries, each at most W tokens; a word longer than W keeps its first W */
        int first = 1;
        for (size_t p0 = 0; p0 < a.n;) {
            size_t p1 = p0;
            while (p1 < a.n) {               /* add whole words while they fit */
                size_t e2 = p1;
                while (e2 < a.n && wid.v[e2] == wid.v[p1]) e2++;
                if (e2 - p0 > W) break;
                p1 = e2;
            }
            size_t next = p1;
            if (p1 == p0) {                  /* one word alone longer than W */
                while (next < a.n && wid.v[next] == wid.v[p0]) next++;
                p1 = p0 + W;
                out->n_truncated++;
            }
            int64_t n = new_row(&rows, (int32_t)idx, x->line);
            int32_t *row = out->ids + n * T;
            row[0] = out->cls_id;
            memcpy(row + 1, a.v + p0, (p1 - p0) * sizeof(int32_t));
            memcpy(out->labels + n * T + 1, lab.v + p0, (p1 - p0) * sizeof(int32_t));
            memcpy(out->word_ids + n * T + 1, wid.v + p0, (p1 - p0) * sizeof(int32_t));
            row[p1 - p0 + 1] = out->sep_id;
            if (!first) out->n_windows++;
            first = 0;
            p0 = next;
        }
    }
    free(a.v); free(b.v); free(lab.v); free(wid.v); free(e.buf); free(e.spm_ids); free(ix);
    if (e.enc) tok_encoder_free(e.enc);
    if (rc == 0 && out->N == 0) rc = errf(err, errlen, "%s: the %s split has no examples", path, split);
    if (rc) task_free(out);
    return rc;
}
