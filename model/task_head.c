/* task_head.c — token and sequence classification heads, the regression head; see task_head.h. */
#include "model/task_head.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autograd/ops.h"
#include "autograd/base/util.h"

static Tensor *add(ParamSet *ps, const char *prefix, const char *name, int ndim, int d0, int d1) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    const int shape[2] = {d0, d1};
    return params_add(ps, full, ndim, shape);
}

void task_head_register(TaskHead *h, ParamSet *ps, HeadKind kind, int H, int n_labels, real p_pool, real p_cls,
                        const char *prefix) {
    memset(h, 0, sizeof *h);
    if (n_labels < 1 || H < 1) fatal("task head: %d labels over width %d", n_labels, H);
    if (kind == HEAD_REGRESSION && n_labels != 1) fatal("task head: a regression head has one output, not %d", n_labels);
    h->kind = kind;
    h->H = H;
    h->n_labels = n_labels;
    h->p_pool = p_pool;
    h->p_cls = p_cls;
    if (!prefix) prefix = "";
    if (kind != HEAD_TOKEN) {
        h->pool_w = add(ps, prefix, "pooler.dense.weight", 2, H, H);
        h->pool_b = add(ps, prefix, "pooler.dense.bias", 1, H, 0);
    }
    h->cls_w = add(ps, prefix, "classifier.weight", 2, n_labels, H);
    h->cls_b = add(ps, prefix, "classifier.bias", 1, n_labels, 0);
}

int task_head_pooler_parse(const char *s) { return !strcmp(s, "cls") ? POOL_CLS : !strcmp(s, "mean") ? POOL_MEAN : -1; }
const char *task_head_pooler_name(HeadPooler p) { return p == POOL_MEAN ? "mean" : "cls"; }

/* hidden [B, T, H] -> the mean over each row's non-pad tokens [B, H], as one product with a constant
 * weight matrix w [B, B·T] (w[b, b·T + i] = mask[b, i] / count_b, else 0): its backward is matmul's,
 * dh[b, i] = w[b, b·T + i] · dc[b]. */
static Tensor *mean_pool(Tape *t, Tensor *hidden, int B, int T, int H, const int32_t *mask) {
    const int sw[2] = {B, B * T}, s2[2] = {B * T, H};
    Tensor *w = tape_tensor(t, 2, sw, "mean_pool_weights");
    memset(w->data, 0, (size_t)w->n * sizeof(real));
    for (int b = 0; b < B; b++) {
        int n = 0;
        for (int i = 0; i < T; i++) n += !mask || mask[(size_t)b * T + i] != 0;
        if (!n) fatal("task head: row %d has no token to pool (every position is padding)", b);
        for (int i = 0; i < T; i++)
            if (!mask || mask[(size_t)b * T + i] != 0) w->data[(size_t)b * B * T + (size_t)b * T + i] = (real)1 / (real)n;
    }
    return op_matmul(t, w, op_reshape(t, hidden, 2, s2), 0, 0);   /* [B, H] */
}

Tensor *task_head_forward(Tape *t, const TaskHead *h, Tensor *hidden, int B, int T, const int32_t *mask, const int32_t *labels,
                          TaskHeadOut *out) {
    memset(out, 0, sizeof *out);
    if (hidden->ndim != 3 || hidden->shape[0] != B || hidden->shape[1] != T || hidden->shape[2] != h->H)
        fatal("task head: hidden state has the wrong shape (expected [%d, %d, %d])", B, T, h->H);
    const int L = h->n_labels, n_rows = h->kind == HEAD_TOKEN ? B * T : B;
    Tensor *x;
    if (h->kind == HEAD_TOKEN) {
        const int s2[2] = {B * T, h->H};
        x = op_reshape(t, hidden, 2, s2);                        /* [B·T, H] */
    } else {
        Tensor *c;
        if (h->pooler == POOL_MEAN) c = mean_pool(t, hidden, B, T, h->H, mask);   /* [B, H] */
        else {
            int32_t *first = arena_alloc(&t->arena, (size_t)B * sizeof(int32_t));
            for (int b = 0; b < B; b++) first[b] = b * T;        /* h[b, 0] */
            const int s2[2] = {B * T, h->H};
            c = op_index_select(t, op_reshape(t, hidden, 2, s2), first, B);   /* [B, H] */
        }
        c = op_dropout(t, c, h->p_pool);
        x = op_gelu(t, op_linear(t, c, h->pool_w, h->pool_b));   /* ContextPooler */
    }
    x = op_dropout(t, x, h->p_cls);
    out->logits = op_linear(t, x, h->cls_w, h->cls_b);           /* [n_rows, L] */
    if (!labels) return out->logits;
    if (h->kind == HEAD_REGRESSION) fatal("task head: a regression head takes float targets (task_head_mse), not labels");
    int32_t *rows = arena_alloc(&t->arena, (size_t)n_rows * sizeof(int32_t));
    int32_t *tg = arena_alloc(&t->arena, (size_t)n_rows * sizeof(int32_t));
    int n = 0;
    for (int r = 0; r < n_rows; r++) {
        int32_t l = labels[r];
        if (l == HEAD_IGNORE) continue;
        if (l < 0 || l >= L) fatal("task head: label %d of row %d is outside [0, %d) (and not %d)", l, r, L, HEAD_IGNORE);
        rows[n] = r;
        tg[n++] = l;
    }
    out->n_counted = n;
    Tensor *sel = n == n_rows ? out->logits : op_index_select(t, out->logits, rows, n);
    out->loss = op_cross_entropy(t, sel, tg);
    return out->loss;
}

Tensor *task_head_mse(Tape *t, const TaskHead *h, Tensor *hidden, int B, int T, const int32_t *mask, const real *targets,
                      TaskHeadOut *out) {
    if (h->kind != HEAD_REGRESSION) fatal("task head: task_head_mse needs a regression head");
    Tensor *y = task_head_forward(t, h, hidden, B, T, mask, NULL, out);   /* [B, 1] */
    const int s2[2] = {B, 1};
    Tensor *neg = tape_tensor(t, 2, s2, "regression_targets");      /* -targets, no gradient */
    for (int b = 0; b < B; b++) {
        if (!isfinite((double)targets[b])) fatal("task head: regression target %d is not a finite number", b);
        neg->data[b] = -targets[b];
    }
    Tensor *d = op_add(t, y, neg);
    out->n_counted = B;
    out->loss = op_mean(t, op_mul(t, d, d));
    return out->loss;
}
