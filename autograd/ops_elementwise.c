/* ops_elementwise.c — add (residual), bias add, scale, elementwise mul, GELU (exact erf form) and
 * the fused bias+GELU.  Every loop writes disjoint elements; bias gradients use the fixed-order
 * column sum of rmath.h, so results are bitwise repeatable for any thread count. */
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rmath.h"

static int same_shape(const Tensor *a, const Tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

static void check_same(const char *op, const Tensor *a, const Tensor *b) {
    char sa[64], sb[64];
    OP_CHECK(a && b, op, "NULL input (a=%p, b=%p)", (const void *)a, (const void *)b);
    OP_CHECK(same_shape(a, b), op, "shapes differ: a %s, b %s", shape_str(a, sa, 64), shape_str(b, sb, 64));
}

static void check_bias(const char *op, const Tensor *x, const Tensor *b) {
    char sx[64], sb[64];
    OP_CHECK(x && b, op, "NULL input (x=%p, b=%p)", (const void *)x, (const void *)b);
    OP_CHECK(x->ndim >= 1 && b->ndim == 1 && b->shape[0] == x->shape[x->ndim - 1], op,
             "bias %s does not match the last dim of x %s", shape_str(b, sb, 64), shape_str(x, sx, 64));
}

/* dst[i] += s · src[i] (s = 1 is a plain add) */
static void axpy_acc(real *dst, const real *src, real s, long n) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
    for (long i = 0; i < n; i++) dst[i] += s * src[i];
}

/* ---------------- add ---------------- */

/* y[n] = a[n] + b[n] */
static void add_forward(real *y, const real *a, const real *b, long n) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
    for (long i = 0; i < n; i++) y[i] = a[i] + b[i];
}

Tensor *op_add(Tape *t, Tensor *a, Tensor *b) {
    check_same("add", a, b);
    Tensor *y = tape_tensor(t, a->ndim, a->shape, "add");
    add_forward(y->data, a->data, b->data, a->n);
    Tensor *in[2] = {a, b};
    tape_record(t, OP_ADD, y, 2, in);
    return y;
}

void add_backward_node(Tape *t, TapeNode *nd) {
    Tensor *a = nd->in[0], *b = nd->in[1];
    /* da += dy;  db += dy.  Separate calls (not one fused loop) so that add(a, a) assigns, then adds */
    int fresh;
    if (a->requires_grad) {
        real *da = tape_grad_put(t, a, &fresh);
        grad_put(da, nd->out->grad, a->n, fresh);
    }
    if (b->requires_grad) {
        real *db = tape_grad_put(t, b, &fresh);
        grad_put(db, nd->out->grad, b->n, fresh);
    }
}

/* ---------------- bias_add ---------------- */

/* y[R, C] = x[R, C] + b[C] */
static void bias_add_forward(real *y, const real *x, const real *b, long R, int C) {
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long r = 0; r < R; r++)
        for (int c = 0; c < C; c++) y[r * C + c] = x[r * C + c] + b[c];
}
/* dx += dy;  db[c] += Σ_r dy[r, c] (fixed order, scratch from the arena) */
static void bias_add_backward(Arena *a, real *dx, real *db, const real *dy, long R, int C) {
    if (dx) axpy_acc(dx, dy, 1, R * C);
    if (db) colsum_acc(a, db, dy, R, C);
}

Tensor *op_bias_add(Tape *t, Tensor *x, Tensor *b) {
    check_bias("bias_add", x, b);
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "bias_add");
    bias_add_forward(y->data, x->data, b->data, trows(x), b->shape[0]);
    Tensor *in[2] = {x, b};
    tape_record(t, OP_BIAS_ADD, y, 2, in);
    return y;
}

void bias_add_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0], *b = nd->in[1];
    bias_add_backward(&t->arena, x->requires_grad ? tape_grad(t, x) : NULL, b->requires_grad ? tape_grad(t, b) : NULL, nd->out->grad,
                      trows(x), b->shape[0]);
}

/* ---------------- scale ---------------- */

/* y[n] = s · x[n] */
static void scale_forward(real *y, const real *x, real s, long n) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
    for (long i = 0; i < n; i++) y[i] = s * x[i];
}
/* dx += s · dy */
static void scale_backward(real *dx, const real *dy, real s, long n) { axpy_acc(dx, dy, s, n); }

Tensor *op_scale(Tape *t, Tensor *x, real s) {
    OP_CHECK(x, "scale", "NULL input");
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "scale");
    scale_forward(y->data, x->data, s, x->n);
    Tensor *in[1] = {x};
    TapeNode *nd = tape_record(t, OP_SCALE, y, 1, in);
    if (nd) nd->farg[0] = s;
    return y;
}

void scale_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    scale_backward(tape_grad(t, x), nd->out->grad, (real)nd->farg[0], x->n);
}

/* ---------------- mul ---------------- */

/* y[n] = a[n] · b[n] */
static void mul_forward(real *y, const real *a, const real *b, long n) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
    for (long i = 0; i < n; i++) y[i] = a[i] * b[i];
}
/* da += dy · b  (into `dx` with `other` = b), and the same for db with other = a */
static void mul_backward(real *dx, const real *dy, const real *other, long n) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
    for (long i = 0; i < n; i++) dx[i] += dy[i] * other[i];
}

Tensor *op_mul(Tape *t, Tensor *a, Tensor *b) {
    check_same("mul", a, b);
    Tensor *y = tape_tensor(t, a->ndim, a->shape, "mul");
    mul_forward(y->data, a->data, b->data, a->n);
    Tensor *in[2] = {a, b};
    tape_record(t, OP_MUL, y, 2, in);
    return y;
}

void mul_backward_node(Tape *t, TapeNode *nd) {
    Tensor *a = nd->in[0], *b = nd->in[1];
    if (a->requires_grad) mul_backward(tape_grad(t, a), nd->out->grad, b->data, a->n);
    if (b->requires_grad) mul_backward(tape_grad(t, b), nd->out->grad, a->data, b->n);
}

/* ---------------- gelu (exact) ---------------- */

#define INV_SQRT_2PI 0.39894228040143267794

/* d/dx [0.5 x (1 + erf(x/√2))] = 0.5 (1 + erf(x/√2)) + x · φ(x),  φ(x) = exp(−x²/2)/√(2π) */
static inline real gelu_grad1(real x) {
    return (real)0.5 * (1 + rerf(x * (real)INV_SQRT2)) + x * (real)INV_SQRT_2PI * rexp((real)-0.5 * x * x);
}

/* Vectorised loops (libmvec erf/exp, see rmath.h) run over fixed blocks of GELU_BLOCK elements,
 * so whether an element takes the vector or the scalar path (the results may differ in the last
 * ulp) depends on its position only, never on the thread count. */
#define GELU_BLOCK 1024L

/* y[n] = gelu(x[n]) */
static void gelu_forward(real *y, const real *x, long n) {
    const long nb = (n + GELU_BLOCK - 1) / GELU_BLOCK;
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS / 8)
    for (long k = 0; k < nb; k++) {
        const long i1 = (k + 1) * GELU_BLOCK < n ? (k + 1) * GELU_BLOCK : n;
#pragma omp simd
        for (long i = k * GELU_BLOCK; i < i1; i++) y[i] = gelu1(x[i]);
    }
}
/* dx += dy · gelu'(x) */
static void gelu_backward(real *dx, const real *dy, const real *x, long n) {
    const long nb = (n + GELU_BLOCK - 1) / GELU_BLOCK;
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS / 8)
    for (long k = 0; k < nb; k++) {
        const long i1 = (k + 1) * GELU_BLOCK < n ? (k + 1) * GELU_BLOCK : n;
#pragma omp simd
        for (long i = k * GELU_BLOCK; i < i1; i++) dx[i] += dy[i] * gelu_grad1(x[i]);
    }
}

Tensor *op_gelu(Tape *t, Tensor *x) {
    OP_CHECK(x, "gelu", "NULL input");
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "gelu");
    gelu_forward(y->data, x->data, x->n);
    Tensor *in[1] = {x};
    tape_record(t, OP_GELU, y, 1, in);
    return y;
}

void gelu_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    gelu_backward(tape_grad(t, x), nd->out->grad, x->data, x->n);
}

/* ---------------- bias_gelu (fused) ---------------- */

/* y[R, C] = gelu(x[R, C] + b[C]) */
static void bias_gelu_forward(real *y, const real *x, const real *b, long R, int C) {
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS / 8)
    for (long r = 0; r < R; r++) {
#pragma omp simd
        for (int c = 0; c < C; c++) y[r * C + c] = gelu1(x[r * C + c] + b[c]);
    }
}
/* g = dy · gelu'(x + b);  dx += g (= when dx_fresh);  db[c] += Σ_r g[r, c].
 * Fixed chunks of COLSUM_ROWS rows in parallel: each chunk updates its own dx rows and writes its
 * column sums of g to part[k, :]; colsum_finish adds the chunks in order (see rmath.h). */
static void bias_gelu_backward(real *dx, int dx_fresh, real *db, real *part, const real *dy, const real *x, const real *b, long R,
                               int C) {
    const long nch = colsum_nchunks(R);
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS / 8)
    for (long k = 0; k < nch; k++) {
        real *pk = part + k * C;
        const long r0 = k * COLSUM_ROWS, r1 = r0 + COLSUM_ROWS < R ? r0 + COLSUM_ROWS : R;
        for (int c = 0; c < C; c++) pk[c] = 0;
        for (long r = r0; r < r1; r++) {
            if (dx) {
#pragma omp simd
                for (int c = 0; c < C; c++) {
                    const real g = dy[r * C + c] * gelu_grad1(x[r * C + c] + b[c]);
                    dx[r * C + c] = dx_fresh ? g : dx[r * C + c] + g;
                    pk[c] += g;
                }
            } else {
#pragma omp simd
                for (int c = 0; c < C; c++) pk[c] += dy[r * C + c] * gelu_grad1(x[r * C + c] + b[c]);
            }
        }
    }
    if (db) colsum_finish(db, part, nch, C);
}

Tensor *op_bias_gelu(Tape *t, Tensor *x, Tensor *b) {
    check_bias("bias_gelu", x, b);
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "bias_gelu");
    bias_gelu_forward(y->data, x->data, b->data, trows(x), b->shape[0]);
    Tensor *in[2] = {x, b};
    tape_record(t, OP_BIAS_GELU, y, 2, in);
    return y;
}

void bias_gelu_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0], *b = nd->in[1];
    const long R = trows(x);
    const int C = b->shape[0];
    real *part = arena_alloc(&t->arena, (size_t)(colsum_nchunks(R) ? colsum_nchunks(R) : 1) * C * sizeof(real));
    int fresh = 0;
    real *dx = x->requires_grad ? tape_grad_put(t, x, &fresh) : NULL;
    bias_gelu_backward(dx, fresh, b->requires_grad ? tape_grad(t, b) : NULL, part, nd->out->grad, x->data, b->data, R, C);
}
