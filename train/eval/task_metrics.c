/* task_metrics.c — classification, regression and entity scores; see task_metrics.h. */
#include "train/eval/task_metrics.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

double tm_macro_f1(const long *cm, int L) {
    double sum = 0;
    int n = 0;
    for (int l = 0; l < L; l++) {
        long tp = cm[l * L + l], gold = 0, pred = 0;
        for (int k = 0; k < L; k++) { gold += cm[l * L + k]; pred += cm[k * L + l]; }
        if (gold == 0 && pred == 0) continue;
        sum += 2.0 * (double)tp / (double)(gold + pred);
        n++;
    }
    return n ? sum / n : 0.0;
}

static void metrics_clear(TaskMetrics *m) {
    memset(m, 0, sizeof *m);
    m->loss = m->acc = m->macro_f1 = m->mcc = m->pos_f1 = m->mse = m->pearson = m->spearman = NAN;
    m->ent_p = m->ent_r = m->ent_f1 = NAN;
}

void tm_classification(const int32_t *gold, const int32_t *pred, long n, int L, TaskMetrics *m) {
    metrics_clear(m);
    long *cm = xcalloc((size_t)L * L, sizeof(long));
    long ok = 0;
    for (long i = 0; i < n; i++) {
        if (gold[i] < 0 || gold[i] >= L || pred[i] < 0 || pred[i] >= L) fatal("task metrics: label outside [0, %d) at row %ld", L, i);
        cm[gold[i] * L + pred[i]]++;
        ok += gold[i] == pred[i];
    }
    m->n = n;
    m->acc = n ? (double)ok / (double)n : NAN;
    m->macro_f1 = tm_macro_f1(cm, L);
    if (L == 2) {
        const double tn = (double)cm[0], fp = (double)cm[1], fn = (double)cm[2], tp = (double)cm[3];
        const double den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn);
        m->binary = 1;
        m->mcc = den > 0 ? (tp * tn - fp * fn) / sqrt(den) : 0.0;
        m->pos_f1 = tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 0.0;
    }
    free(cm);
}

static double tm_pearson(const double *x, const double *y, long n) {
    if (n < 2) return NAN;
    double mx = 0, my = 0;
    for (long i = 0; i < n; i++) { mx += x[i]; my += y[i]; }
    mx /= n;
    my /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (long i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

static const double *g_sort_key;
static int cmp_by_key(const void *a, const void *b) {
    const double x = g_sort_key[*(const long *)a], y = g_sort_key[*(const long *)b];
    return x < y ? -1 : x > y;
}

/* 1-based ranks, tied values get the mean of the ranks they span */
static void ranks(const double *v, long n, double *r) {
    long *ix = xmalloc((size_t)(n ? n : 1) * sizeof(long));
    for (long i = 0; i < n; i++) ix[i] = i;
    g_sort_key = v;
    qsort(ix, (size_t)n, sizeof(long), cmp_by_key);
    for (long i = 0; i < n;) {
        long j = i;
        while (j + 1 < n && v[ix[j + 1]] == v[ix[i]]) j++;
        const double avg = (double)(i + j) / 2.0 + 1.0;
        for (long k = i; k <= j; k++) r[ix[k]] = avg;
        i = j + 1;
    }
    free(ix);
}

static double tm_spearman(const double *x, const double *y, long n) {
    double *rx = xmalloc((size_t)(n ? n : 1) * sizeof(double)), *ry = xmalloc((size_t)(n ? n : 1) * sizeof(double));
    ranks(x, n, rx);
    ranks(y, n, ry);
    const double s = tm_pearson(rx, ry, n);
    free(rx);
    free(ry);
    return s;
}

void tm_regression(const double *gold, const double *pred, long n, TaskMetrics *m) {
    metrics_clear(m);
    m->regression = 1;
    m->n = n;
    double se = 0;
    for (long i = 0; i < n; i++) se += (pred[i] - gold[i]) * (pred[i] - gold[i]);
    m->mse = n ? se / n : NAN;
    m->pearson = tm_pearson(gold, pred, n);
    m->spearman = tm_spearman(gold, pred, n);
}

/* ---------------------------------------------------------------- entities */

int tm_is_bio(const char (*names)[TASK_LABEL_LEN], int L) {
    int b = 0;
    for (int l = 0; l < L; l++) {
        const char *s = names[l];
        if (!strcmp(s, "O")) continue;
        if ((s[0] != 'B' && s[0] != 'I') || s[1] != '-' || !s[2]) return 0;
        b += s[0] == 'B';
    }
    return b > 0;
}

typedef struct { long start, end; int type; } Span; /* rows [start, end) */

/* The entities of rows [a, b): each label's tag (O/B/I) and type id given. */
static long spans_of(const int32_t *tags, long a, long b, const char *tag, const int *type, Span *out) {
    long n = 0, open = -1;
    int ot = -1;
    for (long i = a; i <= b; i++) {
        const char c = i < b ? tag[tags[i]] : 'O';
        const int ty = i < b ? type[tags[i]] : -1;
        const int continues = c == 'I' && open >= 0 && ot == ty;
        if (open >= 0 && !continues) { out[n++] = (Span){open, i, ot}; open = -1; }
        if (c != 'O' && !continues) { open = i; ot = ty; }
    }
    return n;
}

void tm_entities(const int32_t *gold, const int32_t *pred, const long *seq_start, long n_seq, const char (*names)[TASK_LABEL_LEN],
                 int L, TaskMetrics *m) {
    m->entities = 0;
    if (!tm_is_bio(names, L)) return;
    char *tag = xmalloc((size_t)L);
    int *type = xmalloc((size_t)L * sizeof(int));
    for (int l = 0; l < L; l++) {
        tag[l] = !strcmp(names[l], "O") ? 'O' : names[l][0];
        type[l] = -1;
        if (tag[l] == 'O') continue;
        for (int k = 0; k < l && type[l] < 0; k++)
            if (tag[k] != 'O' && !strcmp(names[k] + 2, names[l] + 2)) type[l] = type[k];
        if (type[l] < 0) type[l] = l;
    }
    long longest = 0;
    for (long s = 0; s < n_seq; s++) longest = MAX(longest, seq_start[s + 1] - seq_start[s]);
    Span *g = xmalloc((size_t)(longest + 1) * sizeof(Span)), *p = xmalloc((size_t)(longest + 1) * sizeof(Span));
    long ng_all = 0, np_all = 0, ok = 0;
    for (long s = 0; s < n_seq; s++) {
        const long ng = spans_of(gold, seq_start[s], seq_start[s + 1], tag, type, g);
        const long np = spans_of(pred, seq_start[s], seq_start[s + 1], tag, type, p);
        for (long i = 0, j = 0; i < ng && j < np;) {
            if (g[i].start < p[j].start) i++;
            else if (p[j].start < g[i].start) j++;
            else { ok += g[i].end == p[j].end && g[i].type == p[j].type; i++; j++; }
        }
        ng_all += ng;
        np_all += np;
    }
    m->entities = 1;
    m->ent_gold = ng_all;
    m->ent_pred = np_all;
    m->ent_correct = ok;
    m->ent_p = np_all ? (double)ok / (double)np_all : 0.0;
    m->ent_r = ng_all ? (double)ok / (double)ng_all : 0.0;
    m->ent_f1 = m->ent_p + m->ent_r > 0 ? 2 * m->ent_p * m->ent_r / (m->ent_p + m->ent_r) : 0.0;
    free(tag); free(type); free(g); free(p);
}

/* ---------------------------------------------------------------- output */

void tm_format(const TaskMetrics *m, char *buf, size_t cap) {
    int k = 0;
#define PUT(...) do { if ((size_t)k < cap) k += snprintf(buf + k, cap - (size_t)k, __VA_ARGS__); } while (0)
    buf[0] = 0;
    if (m->regression) {
        PUT("Pearson %.4f  Spearman %.4f  MSE %.6g", m->pearson, m->spearman, m->mse);
    } else {
        PUT("acc %.4f  macro-F1 %.4f", m->acc, m->macro_f1);
        if (m->binary) PUT("  MCC %.4f  F1(pos) %.4f", m->mcc, m->pos_f1);
        if (m->entities) PUT("  entity P %.4f R %.4f F1 %.4f", m->ent_p, m->ent_r, m->ent_f1);
    }
#undef PUT
}

void tm_record(MetricsRecord *r, const char *prefix, const TaskMetrics *m) {
    char key[96];
#define NUM(name, v) do { snprintf(key, sizeof key, "%s%s", prefix, name); mrec_num(r, key, v); } while (0)
#define INT(name, v) do { snprintf(key, sizeof key, "%s%s", prefix, name); mrec_int(r, key, v); } while (0)
    if (m->regression) {
        NUM("mse", m->mse);
        NUM("pearson", m->pearson);
        NUM("spearman", m->spearman);
    } else {
        NUM("acc", m->acc);
        NUM("macro_f1", m->macro_f1);
        if (m->binary) { NUM("mcc", m->mcc); NUM("pos_f1", m->pos_f1); }
        if (m->entities) {
            NUM("entity_p", m->ent_p);
            NUM("entity_r", m->ent_r);
            NUM("entity_f1", m->ent_f1);
            INT("entity_gold", m->ent_gold);
            INT("entity_pred", m->ent_pred);
            INT("entity_correct", m->ent_correct);
        }
    }
#undef NUM
#undef INT
}
