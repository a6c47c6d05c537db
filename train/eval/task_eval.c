/* task_eval.c — predictions, scores and baselines of a task set; see task_eval.h. */
#include "train/eval/task_eval.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

/* 1 when position i of example n is a row (see task_eval.h) */
static int is_row(const TaskSet *ts, int64_t n, int i) {
    const int64_t k = n * ts->T + i;
    if (ts->word_ids) return ts->word_ids[k] >= 0 && (i == 0 || ts->word_ids[k - 1] != ts->word_ids[k]);
    return ts->labels[k] != TASK_IGNORE;
}

void task_preds_free(TaskPreds *p) {
    free(p->gold); free(p->pred); free(p->prob); free(p->gold_v); free(p->pred_v); free(p->ex); free(p->pos);
    memset(p, 0, sizeof *p);
}

/* The order examples are run in: by length (ties by index) when by_length, else as they are. */
static int64_t *run_order(const TaskSet *ts, int by_length, int32_t *len) {
    int64_t *ord = xmalloc((size_t)(ts->N ? ts->N : 1) * sizeof(int64_t));
    for (int64_t n = 0; n < ts->N; n++) { ord[n] = n; len[n] = by_length ? task_example_len(ts, n) : ts->T; }
    if (!by_length) return ord;
    /* counting sort on the length: stable, so equal lengths keep their order */
    long *start = xcalloc((size_t)ts->T + 2, sizeof(long));
    for (int64_t n = 0; n < ts->N; n++) start[len[n] + 1]++;
    for (int l = 1; l <= ts->T + 1; l++) start[l] += start[l - 1];
    for (int64_t n = 0; n < ts->N; n++) ord[start[len[n]]++] = n;
    free(start);
    return ord;
}

void task_eval_run_ordered(Encoder *enc, TaskHead *head, Tape *t, const TaskSet *ts, int B, int by_length, TaskPreds *out) {
    memset(out, 0, sizeof *out);
    const int T = ts->T, L = head->n_labels, tag = ts->kind == TASK_TAGGING, reg = ts->kind == TASK_REGRESSION;
    int32_t *len = xmalloc((size_t)(ts->N ? ts->N : 1) * sizeof(int32_t));
    int64_t *ord = run_order(ts, by_length, len);
    /* row0[e]: the first output row of example e (rows stay in example order whatever the run order) */
    int64_t *row0 = xmalloc((size_t)(ts->N + 1) * sizeof(int64_t));
    row0[0] = 0;
    for (int64_t e = 0; e < ts->N; e++) {
        long k = 1;
        if (tag) { k = 0; for (int i = 0; i < len[e]; i++) k += is_row(ts, e, i); }
        row0[e + 1] = row0[e] + k;
    }
    const long cap = (long)row0[ts->N];
    const size_t c1 = (size_t)(cap ? cap : 1);
    out->ex = xmalloc(c1 * sizeof(int64_t));
    out->pos = xmalloc(c1 * sizeof(int32_t));
    if (reg) { out->gold_v = xmalloc(c1 * sizeof(double)); out->pred_v = xmalloc(c1 * sizeof(double)); }
    else { out->gold = xmalloc(c1 * sizeof(int32_t)); out->pred = xmalloc(c1 * sizeof(int32_t)); out->prob = xmalloc(c1 * sizeof(float)); }
    int32_t *ids = xmalloc((size_t)B * T * sizeof(int32_t)), *mask = xmalloc((size_t)B * T * sizeof(int32_t));
    double *loss_ex = xcalloc((size_t)(ts->N ? ts->N : 1), sizeof(double));
    long nl = 0;
    const int was = t->training;
    t->training = 0;
    const double t0 = now_seconds();
    for (int64_t s = 0; s < ts->N; s += B) {
        const int nb = (int)MIN((int64_t)B, ts->N - s);
        /* the batch padded to its longest example, Tb <= T: no position after it is computed */
        int Tb = 1;
        for (int b = 0; b < nb; b++) Tb = MAX(Tb, len[ord[s + b]]);
        for (int b = 0; b < nb; b++) {
            memcpy(ids + (size_t)b * Tb, ts->ids + ord[s + b] * T, (size_t)Tb * sizeof(int32_t));
            for (int i = 0; i < Tb; i++) mask[(size_t)b * Tb + i] = ids[(size_t)b * Tb + i] != ts->pad_id;
        }
        out->computed_positions += (long long)nb * Tb;
        tape_reset(t);
        tape_nograd_begin(t);
        /* a [CLS] head reads [CLS] alone, so the last layer runs only there (encoder_forward_cls); a mean
         * pooler reads every token */
        const int all = tag || head->pooler == POOL_MEAN;
        Tensor *h = all ? encoder_forward(t, enc, NULL, ids, mask, nb, Tb, NULL) : encoder_forward_cls(t, enc, ids, mask, nb, Tb);
        TaskHeadOut o;
        task_head_forward(t, head, h, nb, all ? Tb : 1, mask, NULL, &o);
        tape_nograd_end(t);
        for (int b = 0; b < nb; b++) {
            const int64_t e = ord[s + b];
            long n = (long)row0[e];
            for (int i = 0; i < (tag ? Tb : 1); i++) {
                if (tag && !is_row(ts, e, i)) continue;
                const real *row = o.logits->data + (size_t)(tag ? b * Tb + i : b) * L;
                out->ex[n] = e;
                out->pos[n] = i;
                if (reg) {
                    out->gold_v[n] = ts->targets[e];
                    out->pred_v[n] = row[0];
                    if (isfinite(out->gold_v[n])) { loss_ex[e] += (row[0] - out->gold_v[n]) * (row[0] - out->gold_v[n]); nl++; }
                } else {
                    int a = 0;
                    for (int k = 1; k < L; k++) if (row[k] > row[a]) a = k;
                    double z = 0;
                    for (int k = 0; k < L; k++) z += exp((double)row[k] - row[a]);
                    const int32_t g = tag ? ts->labels[e * T + i] : ts->labels[e];
                    out->gold[n] = g;
                    out->pred[n] = a;
                    out->prob[n] = (float)(1.0 / z);
                    if (g != TASK_IGNORE) { loss_ex[e] += log(z) - ((double)row[g] - row[a]); nl++; }
                }
                n++;
            }
        }
        if (s == 0) { out->first_batch_seconds = now_seconds() - t0; out->first_batch_positions = out->computed_positions; }
    }
    tape_reset(t);
    t->training = was;
    /* the mean loss summed in example order, as the rows are */
    double loss = 0;
    for (int64_t e = 0; e < ts->N; e++) loss += loss_ex[e];
    out->n = cap;
    out->n_labelled = nl;
    out->loss = nl ? loss / nl : NAN;
    free(row0); free(len); free(ord); free(ids); free(mask); free(loss_ex);
}

void task_eval_run(Encoder *enc, TaskHead *head, Tape *t, const TaskSet *ts, int B, TaskPreds *out) {
    task_eval_run_ordered(enc, head, t, ts, B, 1, out);
}

/* ---------------------------------------------------------------- scores */

/* The scores of gold/pred over the rows whose gold is labelled; tagging sequences break where the
 * source record (ts->example of the row's example) changes. */
static void score_rows(const TaskSet *ts, const int32_t *gold, const int32_t *pred, const int64_t *ex, long n, TaskMetrics *m) {
    int32_t *g = xmalloc((size_t)(n ? n : 1) * sizeof(int32_t)), *p = xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    long *st = xmalloc((size_t)(n + 2) * sizeof(long)), k = 0, ns = 0;
    int64_t last = -1;
    for (long r = 0; r < n; r++) {
        if (gold[r] == TASK_IGNORE) continue;
        const int64_t rec = ts->example ? ts->example[ex[r]] : ex[r];
        if (ns == 0 || rec != last) st[ns++] = k;
        last = rec;
        g[k] = gold[r];
        p[k++] = pred[r];
    }
    st[ns] = k;
    tm_classification(g, p, k, ts->n_labels, m);
    if (ts->kind == TASK_TAGGING) tm_entities(g, p, st, ns, ts->label_names, ts->n_labels, m);
    free(g); free(p); free(st);
}

static void score_values(const double *gold, const double *pred, long n, TaskMetrics *m) {
    double *g = xmalloc((size_t)(n ? n : 1) * sizeof(double)), *p = xmalloc((size_t)(n ? n : 1) * sizeof(double));
    long k = 0;
    for (long r = 0; r < n; r++)
        if (isfinite(gold[r])) { g[k] = gold[r]; p[k++] = pred[r]; }
    tm_regression(g, p, k, m);
    free(g); free(p);
}

void task_preds_metrics(const TaskSet *ts, const TaskPreds *p, TaskMetrics *m) {
    if (ts->kind == TASK_REGRESSION) score_values(p->gold_v, p->pred_v, p->n, m);
    else score_rows(ts, p->gold, p->pred, p->ex, p->n, m);
    m->loss = p->loss;
}

double task_metrics_score(const TaskMetrics *m) {
    const double s = m->regression ? m->pearson : m->acc;
    return isfinite(s) ? s : -2.0;
}

/* ---------------------------------------------------------------- baselines */

/* eval's labelled rows in row-major order: their gold labels and examples */
static long labelled_rows(const TaskSet *ts, int32_t **gold, int64_t **ex) {
    const int tag = ts->kind == TASK_TAGGING;
    const long n = (long)task_n_labelled(ts);
    *gold = xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    *ex = xmalloc((size_t)(n ? n : 1) * sizeof(int64_t));
    long k = 0;
    for (int64_t e = 0; e < ts->N; e++)
        for (int i = 0; i < (tag ? ts->T : 1); i++) {
            const int32_t l = tag ? ts->labels[e * ts->T + i] : ts->labels[e];
            if (l == TASK_IGNORE) continue;
            (*gold)[k] = l;
            (*ex)[k++] = e;
        }
    return k;
}

static int is_special(const TaskSet *ts, int32_t id) { return id == ts->cls_id || id == ts->sep_id || id == ts->pad_id; }

/* Multinomial naive Bayes over each example's tokens; pred[e] for every example of eval. */
static void naive_bayes(const TaskSet *train, const TaskSet *eval, int32_t *pred) {
    const int L = train->n_labels, T = train->T;
    const int64_t V = train->vocab_size;
    int32_t *cnt = xcalloc((size_t)L * V, sizeof(int32_t));
    double *tot = xcalloc((size_t)L, sizeof(double)), *prior = xcalloc((size_t)L, sizeof(double));
    uint8_t *seen = xcalloc((size_t)V, 1);
    long n_lab = 0;
    for (int64_t e = 0; e < train->N; e++) {
        const int32_t c = train->labels[e];
        if (c == TASK_IGNORE) continue;
        prior[c]++;
        n_lab++;
        for (int i = 0; i < T; i++) {
            const int32_t id = train->ids[e * T + i];
            if (is_special(train, id)) continue;
            cnt[(size_t)c * V + id]++;
            tot[c]++;
            seen[id] = 1;
        }
    }
    long nv = 0;
    for (int64_t v = 0; v < V; v++) nv += seen[v];
    double *score = xmalloc((size_t)L * sizeof(double));
    for (int64_t e = 0; e < eval->N; e++) {
        for (int c = 0; c < L; c++) score[c] = prior[c] > 0 ? log(prior[c] / n_lab) : -INFINITY;
        for (int i = 0; i < eval->T; i++) {
            const int32_t id = eval->ids[e * eval->T + i];
            if (is_special(eval, id) || id >= V || !seen[id]) continue;
            for (int c = 0; c < L; c++) score[c] += log((cnt[(size_t)c * V + id] + 1.0) / (tot[c] + nv));
        }
        int b = 0;
        for (int c = 1; c < L; c++) if (score[c] > score[b]) b = c;
        pred[e] = b;
    }
    free(cnt); free(tot); free(prior); free(seen); free(score);
}

/* The baselines of the task kind fitted on train and scored on eval's labelled rows. */
static void task_baselines_eval(const TaskSet *train, const TaskSet *eval, TaskBaselines *b) {
    memset(b, 0, sizeof *b);
    if (train->kind == TASK_REGRESSION) {
        double mean = 0;
        long k = 0;
        for (int64_t e = 0; e < train->N; e++) if (isfinite(train->targets[e])) { mean += train->targets[e]; k++; }
        mean = k ? mean / k : 0;
        double *g = xmalloc((size_t)(eval->N ? eval->N : 1) * sizeof(double)), *p = xmalloc((size_t)(eval->N ? eval->N : 1) * sizeof(double));
        for (int64_t e = 0; e < eval->N; e++) { g[e] = eval->targets[e]; p[e] = mean; }
        snprintf(b->key[0], sizeof b->key[0], "mean");
        snprintf(b->what[0], sizeof b->what[0], "train mean %.4g, MSE", mean);
        score_values(g, p, (long)eval->N, &b->m[0]);
        b->n = 1;
        free(g); free(p);
        return;
    }
    int32_t *gold;
    int64_t *ex;
    const long n = labelled_rows(eval, &gold, &ex);
    int32_t *pred = xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    const int maj = task_majority_label(train);
    for (long r = 0; r < n; r++) pred[r] = maj;
    snprintf(b->key[b->n], sizeof b->key[0], "majority");
    snprintf(b->what[b->n], sizeof b->what[0], "majority class '%.60s'", train->label_names[maj]);
    score_rows(eval, gold, pred, ex, n, &b->m[b->n++]);
    if (train->kind == TASK_TAGGING) {
        task_word_tag_predict(train, eval, pred);
        snprintf(b->key[b->n], sizeof b->key[0], "word_tag");
        snprintf(b->what[b->n], sizeof b->what[0], "most frequent tag per word");
        score_rows(eval, gold, pred, ex, n, &b->m[b->n++]);
    } else {
        int32_t *all = xmalloc((size_t)(eval->N ? eval->N : 1) * sizeof(int32_t));
        naive_bayes(train, eval, all);
        for (long r = 0; r < n; r++) pred[r] = all[ex[r]];
        free(all);
        snprintf(b->key[b->n], sizeof b->key[0], "naive_bayes");
        snprintf(b->what[b->n], sizeof b->what[0], "naive Bayes (bag of tokens)");
        score_rows(eval, gold, pred, ex, n, &b->m[b->n++]);
    }
    free(gold); free(ex); free(pred);
}

void task_report(const TaskSet *train, const TaskSet *test, const TaskMetrics *model, const char *head, const char *tail,
                 MetricsRecord *rec, char *text, size_t cap) {
    TaskBaselines b;
    task_baselines_eval(train, test, &b);
    tm_record(rec, "", model);
    char line[512];
    tm_format(model, line, sizeof line);
    int k = snprintf(text, cap, "%s: %s  (n %ld) | baselines: ", head, line, model->n);
    for (int i = 0; i < b.n && (size_t)k < cap; i++)
        k += snprintf(text + k, cap - (size_t)k, "%s%s %.4f", i ? ", " : "", b.what[i], b.m[i].regression ? b.m[i].mse : b.m[i].acc);
    if ((size_t)k < cap) k += snprintf(text + k, cap - (size_t)k, "%s\n", tail);
    for (int i = 0; i < b.n && (size_t)k < cap; i++) {
        char pre[64];
        snprintf(pre, sizeof pre, "baseline_%s_", b.key[i]);
        tm_record(rec, pre, &b.m[i]);
        tm_format(&b.m[i], line, sizeof line);
        k += snprintf(text + k, cap - (size_t)k, "  baseline %-11s %s  (%s)\n", b.key[i], line, b.what[i]);
    }
}
