/* ops_loss.c — cross-entropy (fused log-softmax), BCE-with-logits with a validity mask, sum, mean.
 * All four return a scalar (0-D tensor).  Every reduction runs over FIXED chunks (RED_CHUNK
 * elements or rows, independent of the thread count) whose partial sums, in double, are added
 * serially in chunk order: bitwise repeatable for any thread count. */
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rmath.h"

#define RED_CHUNK 4096L

/* ---------------- cross_entropy ---------------- */

typedef struct {
    int32_t *targets; /* [N] */
    real *lse;        /* [N] log Σ_v exp(logits[n, v]) */
} CECtx;

/* loss = (1/N) Σ_n (lse_n − x[n, t_n]),  lse_n = m_n + log Σ_v exp(x[n, v] − m_n),  m_n = max_v x[n, v].
 * Rows in parallel; row losses into rl[N], summed in fixed chunks. */
static double cross_entropy_forward(real *lse, real *rl, double *part, const real *x, const int32_t *tg, long N, int V) {
#pragma omp parallel for schedule(static) if (N * (long)V >= OMP_MIN_ELEMS / 4)
    for (long n = 0; n < N; n++) {
        const real *xr = x + n * V;
        real m = xr[0];
#pragma omp simd reduction(max : m)
        for (int v = 1; v < V; v++) m = xr[v] > m ? xr[v] : m;
        real s = 0;
#pragma omp simd reduction(+ : s)
        for (int v = 0; v < V; v++) s += rexp(xr[v] - m);
        lse[n] = m + rlog(s);
        rl[n] = lse[n] - xr[tg[n]];
    }
    const long nch = (N + RED_CHUNK - 1) / RED_CHUNK;
#pragma omp parallel for schedule(static) if (nch > 1)
    for (long c = 0; c < nch; c++) {
        double s = 0;
        for (long n = c * RED_CHUNK; n < N && n < (c + 1) * RED_CHUNK; n++) s += rl[n];
        part[c] = s;
    }
    double tot = 0;
    for (long c = 0; c < nch; c++) tot += part[c];
    return N ? tot / N : 0;
}
/* dx[n, v] += (dloss / N) · (softmax(x[n])_v − [v == t_n]) */
static void cross_entropy_backward(real *dx, real dloss, const real *x, const int32_t *tg, const real *lse, long N, int V) {
    const real g = dloss / (real)N;
#pragma omp parallel for schedule(static) if (N * (long)V >= OMP_MIN_ELEMS / 4)
    for (long n = 0; n < N; n++) {
        const real *xr = x + n * V;
        real *dr = dx + n * V;
        const real l = lse[n];
#pragma omp simd
        for (int v = 0; v < V; v++) dr[v] += g * rexp(xr[v] - l);
        dr[tg[n]] -= g;
    }
}

Tensor *op_cross_entropy(Tape *t, Tensor *logits, const int32_t *targets) {
    char sx[64];
    OP_CHECK(logits, "cross_entropy", "NULL logits");
    OP_CHECK(logits->ndim == 2 && logits->shape[1] >= 1, "cross_entropy", "logits %s must be 2-D [N, V] with V >= 1",
             shape_str(logits, sx, 64));
    const long N = logits->shape[0];
    const int V = logits->shape[1];
    OP_CHECK(targets || N == 0, "cross_entropy", "NULL targets for logits %s", shape_str(logits, sx, 64));
    for (long n = 0; n < N; n++)
        OP_CHECK(targets[n] >= 0 && targets[n] < V, "cross_entropy", "targets[%ld] = %d out of range [0, %d) for logits %s", n,
                 targets[n], V, shape_str(logits, sx, 64));
    Tensor *y = tape_tensor(t, 0, NULL, "cross_entropy");
    CECtx *cx = arena_alloc(&t->arena, sizeof(CECtx));
    cx->lse = arena_alloc(&t->arena, (size_t)N * sizeof(real));
    real *rl = arena_alloc(&t->arena, (size_t)N * sizeof(real));
    double *part = arena_alloc(&t->arena, (size_t)((N + RED_CHUNK - 1) / RED_CHUNK) * sizeof(double));
    y->data[0] = (real)cross_entropy_forward(cx->lse, rl, part, logits->data, targets, N, V);
    Tensor *in[1] = {logits};
    TapeNode *nd = tape_record(t, OP_CROSS_ENTROPY, y, 1, in);
    if (nd) {
        cx->targets = arena_alloc(&t->arena, (size_t)N * sizeof(int32_t));
        if (N) memcpy(cx->targets, targets, (size_t)N * sizeof(int32_t));
        nd->ctx = cx;
    }
    return y;
}

void cross_entropy_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    CECtx *cx = nd->ctx;
    if (x->shape[0] == 0) return;
    cross_entropy_backward(tape_grad(t, x), nd->out->grad[0], x->data, cx->targets, cx->lse, x->shape[0], x->shape[1]);
}

/* ---------------- bce_logits ---------------- */

/* code[i]: 0 = not valid, 1 = valid with target 0, 2 = valid with target 1 */
static inline real bce1(real x, real y) {
    /* max(x, 0) − x·y + log(1 + exp(−|x|)) */
    return (x > 0 ? x : 0) - x * y + rlog1p(rexp(-rfabs(x)));
}
static inline real sigmoid1(real x) {
    if (x >= 0) return 1 / (1 + rexp(-x));
    const real e = rexp(x);
    return e / (1 + e);
}

/* loss = (1/n_valid) Σ_{i valid} bce(x[i], y[i])  (0 when nothing is valid); fixed chunks */
static double bce_logits_forward(double *part, const real *x, const uint8_t *code, long n, long n_valid) {
    const long nch = (n + RED_CHUNK - 1) / RED_CHUNK;
#pragma omp parallel for schedule(static) if (nch > 1)
    for (long c = 0; c < nch; c++) {
        double s = 0;
        for (long i = c * RED_CHUNK; i < n && i < (c + 1) * RED_CHUNK; i++)
            if (code[i]) s += bce1(x[i], (real)(code[i] - 1));
        part[c] = s;
    }
    double tot = 0;
    for (long c = 0; c < nch; c++) tot += part[c];
    return n_valid ? tot / n_valid : 0;
}
/* dx[i] += (dloss / n_valid) · (sigmoid(x[i]) − y[i]) for valid i */
static void bce_logits_backward(real *dx, real dloss, const real *x, const uint8_t *code, long n, long n_valid) {
    const real g = dloss / (real)n_valid;
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS / 4)
    for (long i = 0; i < n; i++)
        if (code[i]) dx[i] += g * (sigmoid1(x[i]) - (real)(code[i] - 1));
}

Tensor *op_bce_logits(Tape *t, Tensor *logits, const int32_t *targets, const int32_t *valid) {
    char sx[64];
    OP_CHECK(logits, "bce_logits", "NULL logits");
    OP_CHECK(targets || logits->n == 0, "bce_logits", "NULL targets for logits %s", shape_str(logits, sx, 64));
    const long n = logits->n;
    uint8_t *code = arena_alloc(&t->arena, (size_t)n);
    long n_valid = 0;
    for (long i = 0; i < n; i++) {
        if (valid && !valid[i]) {
            code[i] = 0;
            continue;
        }
        OP_CHECK(targets[i] == 0 || targets[i] == 1, "bce_logits", "targets[%ld] = %d is not 0 or 1 (logits %s)", i, targets[i],
                 shape_str(logits, sx, 64));
        code[i] = (uint8_t)(1 + targets[i]);
        n_valid++;
    }
    Tensor *y = tape_tensor(t, 0, NULL, "bce_logits");
    double *part = arena_alloc(&t->arena, (size_t)((n + RED_CHUNK - 1) / RED_CHUNK) * sizeof(double));
    y->data[0] = (real)bce_logits_forward(part, logits->data, code, n, n_valid);
    Tensor *in[1] = {logits};
    TapeNode *nd = tape_record(t, OP_BCE_LOGITS, y, 1, in);
    if (nd) {
        nd->ctx = code;
        nd->iarg[0] = n_valid;
    }
    return y;
}

void bce_logits_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    if (nd->iarg[0] == 0) return; /* nothing valid: the loss is the constant 0 */
    bce_logits_backward(tape_grad(t, x), nd->out->grad[0], x->data, nd->ctx, x->n, nd->iarg[0]);
}

/* ---------------- sum, mean ---------------- */

/* Σ_i x[i] in fixed chunks (double partials, summed in chunk order) */
static double sum_fixed(Tape *t, const real *x, long n) {
    const long nch = (n + RED_CHUNK - 1) / RED_CHUNK;
    double *part = arena_alloc(&t->arena, (size_t)(nch ? nch : 1) * sizeof(double));
#pragma omp parallel for schedule(static) if (nch > 1)
    for (long c = 0; c < nch; c++) {
        /* 8 interleaved accumulators (a fixed order, independent of threads), then their sum */
        double acc[8] = {0};
        const long i0 = c * RED_CHUNK, i1 = (c + 1) * RED_CHUNK < n ? (c + 1) * RED_CHUNK : n;
        long i = i0;
        for (; i + 8 <= i1; i += 8)
            for (int l = 0; l < 8; l++) acc[l] += x[i + l];
        for (; i < i1; i++) acc[0] += x[i];
        part[c] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    double tot = 0;
    for (long c = 0; c < nch; c++) tot += part[c];
    return tot;
}
/* dx[i] += s  (s = dy for sum, dy / n for mean) */
static void fill_acc(real *dx, real s, long n) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
    for (long i = 0; i < n; i++) dx[i] += s;
}

/* y = Σ x */
Tensor *op_sum(Tape *t, Tensor *x) {
    OP_CHECK(x, "sum", "NULL input");
    Tensor *y = tape_tensor(t, 0, NULL, "sum");
    y->data[0] = (real)sum_fixed(t, x->data, x->n);
    Tensor *in[1] = {x};
    tape_record(t, OP_SUM, y, 1, in);
    return y;
}
void sum_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    fill_acc(tape_grad(t, x), nd->out->grad[0], x->n); /* dx += dy */
}

/* y = Σ x / n  (0 for an empty x) */
Tensor *op_mean(Tape *t, Tensor *x) {
    OP_CHECK(x, "mean", "NULL input");
    Tensor *y = tape_tensor(t, 0, NULL, "mean");
    y->data[0] = x->n ? (real)(sum_fixed(t, x->data, x->n) / x->n) : 0;
    Tensor *in[1] = {x};
    tape_record(t, OP_MEAN, y, 1, in);
    return y;
}
void mean_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    if (x->n) fill_acc(tape_grad(t, x), nd->out->grad[0] / (real)x->n, x->n); /* dx += dy / n */
}
