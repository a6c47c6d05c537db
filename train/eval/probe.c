/* probe.c — the linear POS probe of the frozen discriminator; see probe.h. */
#include "train/eval/probe.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/util.h"

int probe_open_dir(const char *dir, const ModelConfig *cfg, const char *tokenizer_hash, Probe *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    char tr[4200], dv[4200];
    snprintf(tr, sizeof tr, "%s/%s/train.h5", dir, PROBE_DIR);
    snprintf(dv, sizeof dv, "%s/%s/dev.h5", dir, PROBE_DIR);
    if (access(tr, F_OK) != 0 || access(dv, F_OK) != 0) return 0;
    if (task_read(tr, &p->train, err, errlen) || task_read(dv, &p->dev, err, errlen) || task_check_same(&p->train, tr, &p->dev, dv, err, errlen)) {
        probe_free(p);
        return -1;
    }
    const char *bad = NULL;
    if (p->train.kind != TASK_TAGGING) bad = "is not a tagging (pos) task file";
    else if (p->train.vocab_size != cfg->vocab_size) bad = "has another vocabulary size than the model";
    else if (tokenizer_hash && strcmp(tokenizer_hash, p->train.tokenizer_hash)) bad = "was made with another tokenizer than the shards";
    if (!bad && p->train.T > cfg->max_seq_len) {
        snprintf(err, errlen, "%s: seq_len %d is above the model's max_seq_len %d: no probe", tr, p->train.T, cfg->max_seq_len);
        probe_free(p);
        return 2;
    }
    if (bad) {
        probe_free(p);
        return errf(err, errlen, "probe %s %s (re-make it: deberta prep-task --task pos --shards %s --out %s/%s --seq-len %d)", tr, bad, dir,
                    dir, PROBE_DIR, cfg->max_seq_len);
    }
    p->n_fit = p->train.N < PROBE_FIT ? (int)p->train.N : PROBE_FIT;
    p->n_dev = p->dev.N < PROBE_DEV ? (int)p->dev.N : PROBE_DEV;
    return 1;
}

void probe_free(Probe *p) {
    task_free(&p->train);
    task_free(&p->dev);
    memset(p, 0, sizeof *p);
}

/* The discriminator's hidden states of examples idx(s0 .. s0+b) of ts (example k·N/n of the n used):
 * layer l of example e at position i is feat(l)[(e·T + i)·H ..]. */
typedef struct {
    int32_t *ids, *mask, *zeros;
    const real *layer[PROBE_MAX_LAYERS];
} Feats;

static void forward(const Electra *m, Tape *t, const TaskSet *ts, int n, int s0, int b, Feats *f, int n_layers) {
    const int T = ts->T;
    for (int e = 0; e < b; e++) {
        const int64_t k = (int64_t)(s0 + e) * ts->N / n;
        memcpy(f->ids + (size_t)e * T, ts->ids + k * T, (size_t)T * sizeof(int32_t));
        for (int i = 0; i < T; i++) f->mask[e * T + i] = i == 0 || ts->ids[k * T + i] != 0; /* [PAD] = 0 after the example */
    }
    ElectraInput in = {.B = b, .T = T, .input_ids = f->ids, .attention_mask = f->mask, .labels = f->zeros};
    DiscOut d;
    tape_reset(t);
    tape_nograd_begin(t);
    discriminator_forward(t, m, &in, f->ids, &d);
    tape_nograd_end(t);
    f->layer[0] = d.enc.emb->data;
    for (int l = 1; l < n_layers; l++) f->layer[l] = d.enc.layers[l - 1]->data;
}

/* Cholesky solve of A x = B in place (A [D, D] symmetric positive definite, B [D, K] -> x). */
static int cholesky_solve(double *A, double *B, int D, int K) {
    for (int j = 0; j < D; j++) {
        double s = A[j * D + j];
        for (int k = 0; k < j; k++) s -= A[j * D + k] * A[j * D + k];
        if (!(s > 0)) return -1;
        const double ljj = sqrt(s);
        A[j * D + j] = ljj;
        for (int i = j + 1; i < D; i++) {
            double v = A[i * D + j];
            for (int k = 0; k < j; k++) v -= A[i * D + k] * A[j * D + k];
            A[i * D + j] = v / ljj;
        }
    }
    for (int c = 0; c < K; c++) {
        for (int i = 0; i < D; i++) { /* L y = b */
            double v = B[i * K + c];
            for (int k = 0; k < i; k++) v -= A[i * D + k] * B[k * K + c];
            B[i * K + c] = v / A[i * D + i];
        }
        for (int i = D - 1; i >= 0; i--) { /* L^T x = y */
            double v = B[i * K + c];
            for (int k = i + 1; k < D; k++) v -= A[k * D + i] * B[k * K + c];
            B[i * K + c] = v / A[i * D + i];
        }
    }
    return 0;
}

ProbeResult probe_eval(const Electra *m, Tape *t, const Probe *p, int B) {
    ProbeResult r;
    memset(&r, 0, sizeof r);
    const int H = m->cfg.hidden_size, D = H + 1, K = p->train.n_labels, T = p->train.T;
    const int L = m->cfg.num_hidden_layers + 1 < PROBE_MAX_LAYERS ? m->cfg.num_hidden_layers + 1 : PROBE_MAX_LAYERS;
    r.n_layers = L;
    Feats f;
    memset(&f, 0, sizeof f);
    f.ids = xmalloc((size_t)B * T * sizeof(int32_t));
    f.mask = xmalloc((size_t)B * T * sizeof(int32_t));
    f.zeros = xcalloc((size_t)B * T, sizeof(int32_t));
    double *G = xcalloc((size_t)L * D * D, sizeof(double)), *C = xcalloc((size_t)L * D * K, sizeof(double));
    double *X = xmalloc((size_t)B * T * D * sizeof(double));
    int *y = xmalloc((size_t)B * T * sizeof(int));
    const int saved_training = t->training;
    t->training = 0;
    /* pass 1: the normal equations, summed in example and position order */
    for (int s0 = 0; s0 < p->n_fit; s0 += B) {
        const int b = p->n_fit - s0 < B ? p->n_fit - s0 : B;
        forward(m, t, &p->train, p->n_fit, s0, b, &f, L);
        for (int l = 0; l < L; l++) {
            int n = 0;
            for (int e = 0; e < b; e++) {
                const int64_t k = (int64_t)(s0 + e) * p->train.N / p->n_fit;
                for (int i = 0; i < T; i++) {
                    const int lab = p->train.labels[k * p->train.T + i]; /* tagging: TASK_IGNORE (< 0) off the first sub-tokens */
                    if (lab < 0) continue;
                    const real *h = f.layer[l] + ((size_t)e * T + i) * H;
                    for (int q = 0; q < H; q++) X[(size_t)n * D + q] = h[q];
                    X[(size_t)n * D + H] = 1;
                    y[n++] = lab;
                }
            }
            if (l == 0) r.n_fit_words += n;
            double *Gl = G + (size_t)l * D * D, *Cl = C + (size_t)l * D * K;
#pragma omp parallel for schedule(static)
            for (int i = 0; i < D; i++) /* row i of the Gram matrix, upper part: one thread, sample order */
                for (int s = 0; s < n; s++) {
                    const double xi = X[(size_t)s * D + i];
                    const double *xs = X + (size_t)s * D;
                    double *g = Gl + (size_t)i * D;
                    for (int j = i; j < D; j++) g[j] += xi * xs[j];
                    Cl[(size_t)i * K + y[s]] += xi;
                }
        }
    }
    /* the ridge solutions, one per layer (C becomes W [D, K]) */
    int *ok = xcalloc((size_t)L, sizeof(int));
    for (int l = 0; l < L; l++) {
        double *Gl = G + (size_t)l * D * D;
        double tr = 0;
        for (int i = 0; i < H; i++) tr += Gl[(size_t)i * D + i];
        const double lam = PROBE_RIDGE * tr / H;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < i; j++) Gl[(size_t)i * D + j] = Gl[(size_t)j * D + i];
        for (int i = 0; i < H; i++) Gl[(size_t)i * D + i] += lam;
        ok[l] = cholesky_solve(Gl, C + (size_t)l * D * K, D, K) == 0;
    }
    /* pass 2: dev accuracy */
    long *right = xcalloc((size_t)L, sizeof(long));
    const int maj = task_majority_label(&p->train);
    long n_maj = 0;
    for (int s0 = 0; s0 < p->n_dev; s0 += B) {
        const int b = p->n_dev - s0 < B ? p->n_dev - s0 : B;
        forward(m, t, &p->dev, p->n_dev, s0, b, &f, L);
        for (int e = 0; e < b; e++) {
            const int64_t k = (int64_t)(s0 + e) * p->dev.N / p->n_dev;
            for (int i = 0; i < T; i++) {
                const int lab = p->dev.labels[k * p->dev.T + i];
                if (lab < 0) continue;
                r.n_dev_words++;
                n_maj += lab == maj;
                for (int l = 0; l < L; l++) {
                    const real *h = f.layer[l] + ((size_t)e * T + i) * H;
                    const double *W = C + (size_t)l * D * K;
                    int best = 0;
                    double best_s = -INFINITY;
                    for (int c = 0; c < K; c++) {
                        double s = W[(size_t)H * K + c];
                        for (int q = 0; q < H; q++) s += h[q] * W[(size_t)q * K + c];
                        if (s > best_s) best_s = s, best = c;
                    }
                    right[l] += best == lab;
                }
            }
        }
    }
    tape_reset(t);
    t->training = saved_training;
    r.best = 0;
    for (int l = 0; l < L; l++) {
        r.acc[l] = ok[l] && r.n_dev_words ? (double)right[l] / r.n_dev_words : NAN;
        if (r.acc[l] > r.acc[r.best] || isnan(r.acc[r.best])) r.best = l;
    }
    r.majority = r.n_dev_words ? (double)n_maj / r.n_dev_words : NAN;
    free(right);
    free(ok);
    free(G);
    free(C);
    free(X);
    free(y);
    free(f.ids);
    free(f.mask);
    free(f.zeros);
    return r;
}
