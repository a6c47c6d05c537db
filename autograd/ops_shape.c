/* ops_shape.c — reshape (a zero-copy view), transpose of the last two dims, split/merge heads.
 * The view shares x's data but has its own grad buffer; its backward adds the view's gradient
 * into x's.  The others copy (tensors stay contiguous). */
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rmath.h"

/* ---------------- reshape ---------------- */

/* y = x viewed as `shape` (one entry may be −1: inferred).  Backward: dx += dy (same layout). */
Tensor *op_reshape(Tape *t, Tensor *x, int ndim, const int *shape) {
    char sx[64];
    OP_CHECK(x, "reshape", "NULL input");
    OP_CHECK(ndim >= 0 && ndim <= TENSOR_MAX_DIMS, "reshape", "%d dims requested for x %s (0..4 allowed)", ndim,
             shape_str(x, sx, 64));
    OP_CHECK(shape || ndim == 0, "reshape", "NULL shape for x %s", shape_str(x, sx, 64));
    int sh[TENSOR_MAX_DIMS] = {0}, infer = -1;
    long known = 1;
    for (int i = 0; i < ndim; i++) {
        sh[i] = shape[i];
        if (shape[i] == -1) {
            OP_CHECK(infer < 0, "reshape", "more than one -1 in the new shape of x %s", shape_str(x, sx, 64));
            infer = i;
        } else {
            OP_CHECK(shape[i] >= 0, "reshape", "dimension %d of the new shape is %d (x %s)", i, shape[i], shape_str(x, sx, 64));
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        OP_CHECK(known > 0 && x->n % known == 0, "reshape", "cannot infer dimension %d: x %s has %ld elements, the rest %ld",
                 infer, shape_str(x, sx, 64), x->n, known);
        sh[infer] = (int)(x->n / known);
        known *= sh[infer];
    }
    OP_CHECK(known == x->n, "reshape", "x %s has %ld elements, the new shape has %ld", shape_str(x, sx, 64), x->n, known);
    Tensor *y = tape_view(t, x, ndim, sh);
    Tensor *in[1] = {x};
    tape_record(t, OP_RESHAPE, y, 1, in);
    return y;
}

void reshape_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    int fresh;
    real *dx = tape_grad_put(t, x, &fresh);
    grad_put(dx, nd->out->grad, x->n, fresh); /* dx += dy */
}

/* ---------------- transpose ---------------- */

#define TR_TILE 32

/* dst[b, c, r] (= or +=) src[b, r, c]   src [nb, R, C], dst [nb, C, R].  Tiles of TR_TILE rows in
 * parallel: a tile of source rows writes a disjoint set of destination columns. */
static void transpose_kernel(real *dst, const real *src, long nb, int R, int C, int acc) {
    const long tiles_r = (R + TR_TILE - 1) / TR_TILE;
#pragma omp parallel for schedule(static) if (nb * (long)R * C >= OMP_MIN_ELEMS)
    for (long w = 0; w < nb * tiles_r; w++) {
        const long b = w / tiles_r;
        const int r0 = (int)(w % tiles_r) * TR_TILE, r1 = r0 + TR_TILE < R ? r0 + TR_TILE : R;
        const real *s = src + b * (long)R * C;
        real *d = dst + b * (long)R * C;
        for (int c0 = 0; c0 < C; c0 += TR_TILE) {
            const int c1 = c0 + TR_TILE < C ? c0 + TR_TILE : C;
            for (int c = c0; c < c1; c++)
                for (int r = r0; r < r1; r++) {
                    if (acc) d[(long)c * R + r] += s[(long)r * C + c];
                    else d[(long)c * R + r] = s[(long)r * C + c];
                }
        }
    }
}

/* y[..., c, r] = x[..., r, c];  backward: dx[..., r, c] += dy[..., c, r] */
Tensor *op_transpose(Tape *t, Tensor *x) {
    char sx[64];
    OP_CHECK(x, "transpose", "NULL input");
    OP_CHECK(x->ndim >= 2, "transpose", "x %s must have at least 2 dims", shape_str(x, sx, 64));
    int shape[TENSOR_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    const int R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
    shape[x->ndim - 2] = C;
    shape[x->ndim - 1] = R;
    Tensor *y = tape_tensor(t, x->ndim, shape, "transpose");
    const long nb = (R && C) ? x->n / ((long)R * C) : 0;
    transpose_kernel(y->data, x->data, nb, R, C, 0);
    Tensor *in[1] = {x};
    tape_record(t, OP_TRANSPOSE, y, 1, in);
    return y;
}

void transpose_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    const int R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
    const long nb = (R && C) ? x->n / ((long)R * C) : 0;
    /* dy is [nb, C, R]: transposing it back gives [nb, R, C] = the layout of dx */
    transpose_kernel(tape_grad(t, x), nd->out->grad, nb, C, R, 1);
}

/* ---------------- split_heads / merge_heads ---------------- */

/* split: dst[b, h, t, d] (= or +=) src[b, t, h·D + d]   (merge = 0)
 * merge: dst[b, t, h·D + d] (= or +=) src[b, h, t, d]   (merge = 1)
 * One (b, h, t) row of D elements per iteration: disjoint writes. */
static void heads_kernel(real *dst, const real *src, int B, int T, int H, int D, int merge, int acc) {
    const long n = (long)B * H * T;
#pragma omp parallel for schedule(static) if (n * D >= OMP_MIN_ELEMS)
    for (long w = 0; w < n; w++) {
        const int b = (int)(w / ((long)H * T)), h = (int)(w / T % H), tt = (int)(w % T);
        const long bht = w * D;                                     /* [b, h, t, 0] */
        const long bth = (((long)b * T + tt) * H + h) * D;          /* [b, t, h·D]  */
        real *d = dst + (merge ? bth : bht);
        const real *s = src + (merge ? bht : bth);
        if (acc)
            for (int k = 0; k < D; k++) d[k] += s[k];
        else
            memcpy(d, s, (size_t)D * sizeof(real));
    }
}

/* [B, T, H·D] -> [B, H, T, D];  backward: dx = merge(dy) added */
Tensor *op_split_heads(Tape *t, Tensor *x, int heads) {
    char sx[64];
    OP_CHECK(x, "split_heads", "NULL input");
    OP_CHECK(x->ndim == 3, "split_heads", "x %s must be [B, T, H*D]", shape_str(x, sx, 64));
    OP_CHECK(heads > 0 && x->shape[2] % heads == 0, "split_heads", "heads = %d does not divide the last dim of x %s", heads,
             shape_str(x, sx, 64));
    const int B = x->shape[0], T = x->shape[1], H = heads, D = x->shape[2] / heads;
    const int shape[4] = {B, H, T, D};
    Tensor *y = tape_tensor(t, 4, shape, "split_heads");
    heads_kernel(y->data, x->data, B, T, H, D, 0, 0);
    Tensor *in[1] = {x};
    tape_record(t, OP_SPLIT_HEADS, y, 1, in);
    return y;
}

void split_heads_backward_node(Tape *t, TapeNode *nd) {
    const Tensor *y = nd->out;
    int fresh;
    real *dx = tape_grad_put(t, nd->in[0], &fresh);
    heads_kernel(dx, y->grad, y->shape[0], y->shape[2], y->shape[1], y->shape[3], 1, !fresh);
}

/* [B, H, T, D] -> [B, T, H·D];  backward: dx = split(dy) added */
Tensor *op_merge_heads(Tape *t, Tensor *x) {
    char sx[64];
    OP_CHECK(x, "merge_heads", "NULL input");
    OP_CHECK(x->ndim == 4, "merge_heads", "x %s must be [B, H, T, D]", shape_str(x, sx, 64));
    const int B = x->shape[0], H = x->shape[1], T = x->shape[2], D = x->shape[3];
    const int shape[3] = {B, T, H * D};
    Tensor *y = tape_tensor(t, 3, shape, "merge_heads");
    heads_kernel(y->data, x->data, B, T, H, D, 1, 0);
    Tensor *in[1] = {x};
    tape_record(t, OP_MERGE_HEADS, y, 1, in);
    return y;
}

void merge_heads_backward_node(Tape *t, TapeNode *nd) {
    const Tensor *x = nd->in[0];
    int fresh;
    real *dx = tape_grad_put(t, nd->in[0], &fresh);
    heads_kernel(dx, nd->out->grad, x->shape[0], x->shape[2], x->shape[1], x->shape[3], 0, !fresh);
}
