/* ops_matmul.c — batched matmul with optional transposes, and linear (x·W^T + b).
 * Every product goes through gemm (gemm.h: sgemm or dgemm by precision, split across the threads). */
#include <omp.h>
#include <string.h>
#include "autograd/gemm.h"
#include "autograd/ops.h"

/* Geometry of C = op(A)·op(B) for one batch item. */
typedef struct {
    int M, N, K, lda, ldb, batch, shared_b;
    long sa, sb, sc; /* strides between batch items */
} MMGeom;

static MMGeom mm_geometry(const Tensor *a, const Tensor *b, int ta, int tb) {
    char sa[64], sb[64];
    OP_CHECK(a && b, "matmul", "NULL input");
    OP_CHECK(a->ndim >= 2 && b->ndim >= 2, "matmul", "inputs must be at least 2-D, got %s and %s",
             shape_str(a, sa, 64), shape_str(b, sb, 64));
    MMGeom g;
    int ar = a->shape[a->ndim - 2], ac = a->shape[a->ndim - 1];
    int br = b->shape[b->ndim - 2], bc = b->shape[b->ndim - 1];
    g.M = ta ? ac : ar;
    g.K = ta ? ar : ac;
    int kb = tb ? bc : br;
    g.N = tb ? br : bc;
    OP_CHECK(g.K == kb, "matmul", "inner dimensions differ: A %s%s, B %s%s", shape_str(a, sa, 64), ta ? "^T" : "",
             shape_str(b, sb, 64), tb ? "^T" : "");
    g.lda = ac;
    g.ldb = bc;
    g.batch = (int)(a->n / ((long)ar * ac));
    g.shared_b = b->ndim == 2;
    if (!g.shared_b) {
        OP_CHECK(b->ndim == a->ndim, "matmul", "leading dims differ: A %s, B %s", shape_str(a, sa, 64), shape_str(b, sb, 64));
        for (int i = 0; i < a->ndim - 2; i++)
            OP_CHECK(a->shape[i] == b->shape[i], "matmul", "leading dims differ: A %s, B %s", shape_str(a, sa, 64),
                     shape_str(b, sb, 64));
    }
    g.sa = (long)ar * ac;
    g.sb = g.shared_b ? 0 : (long)br * bc;
    g.sc = (long)g.M * g.N;
    return g;
}

/* C[b] (+)= op(A[b])·op(B[b]) for every batch item b.  C: [batch, M, N]. */
static void matmul_forward(real *c, const real *a, const real *b, const MMGeom *g, int ta, int tb) {
    if (g->shared_b && !ta) { /* one big GEMM over all rows */
        gemm(0, tb, g->batch * g->M, g->N, g->K, 1, a, g->lda, b, g->ldb, 0, c, g->N);
        return;
    }
    const int par = g->batch >= omp_get_max_threads();
#pragma omp parallel for schedule(static) if (par)
    for (int i = 0; i < g->batch; i++)
        gemm(ta, tb, g->M, g->N, g->K, 1, a + i * g->sa, g->lda, b + i * g->sb, g->ldb, 0, c + i * g->sc, g->N);
}

/* Given dC, accumulate dA (if da) and dB (if db):
 *   d op(A) = dC · op(B)^T,   d op(B) = op(A)^T · dC.
 * A fresh buffer (da_fresh / db_fresh: from tape_grad_put) is assigned instead (gemm beta 0). */
static void matmul_backward(real *da, int da_fresh, real *db, int db_fresh, const real *dc, const real *a, const real *b,
                            const MMGeom *g, int ta, int tb) {
    const int M = g->M, N = g->N, K = g->K;
    const real bda = da_fresh ? 0 : 1, bdb = db_fresh ? 0 : 1;
    if (da) {
        if (g->shared_b && !ta) {
            /* dA[batch·M, K] += dC · op(B)^T */
            gemm(0, !tb, g->batch * M, K, N, 1, dc, N, b, g->ldb, bda, da, K);
        } else {
            const int par = g->batch >= omp_get_max_threads();
#pragma omp parallel for schedule(static) if (par)
            for (int i = 0; i < g->batch; i++) {
                const real *dci = dc + i * g->sc, *bi = b + i * g->sb;
                real *dai = da + i * g->sa;
                if (!ta) /* A [M,K]: dA += dC[M,N] · op(B)^T[N,K] */
                    gemm(0, !tb, M, K, N, 1, dci, N, bi, g->ldb, bda, dai, K);
                else /* A [K,M]: dA += op(B)[K,N] · dC^T[N,M] */
                    gemm(tb, 1, K, M, N, 1, bi, g->ldb, dci, N, bda, dai, M);
            }
        }
    }
    if (db) {
        if (g->shared_b && !ta) {
            if (!tb) /* B [K,N]: dB += A^T[K, batch·M] · dC[batch·M, N] */
                gemm(1, 0, K, N, g->batch * M, 1, a, g->lda, dc, N, bdb, db, N);
            else /* B [N,K]: dB += dC^T[N, batch·M] · A[batch·M, K] */
                gemm(1, 0, N, K, g->batch * M, 1, dc, N, a, g->lda, bdb, db, K);
        } else {
            /* Shared B with transposed A accumulates over batch items: serial, fixed order. */
            const int par = !g->shared_b && g->batch >= omp_get_max_threads();
#pragma omp parallel for schedule(static) if (par)
            for (int i = 0; i < g->batch; i++) {
                const real *dci = dc + i * g->sc, *ai = a + i * g->sa;
                real *dbi = db + i * g->sb;
                const real beta = g->shared_b && i > 0 ? 1 : bdb; /* a shared dB: only the first item assigns */
                if (!tb) /* B [K,N]: dB += op(A)^T[K,M] · dC[M,N] */
                    gemm(!ta, 0, K, N, M, 1, ai, g->lda, dci, N, beta, dbi, N);
                else /* B [N,K]: dB += dC^T[N,M] · op(A)[M,K] */
                    gemm(1, ta, N, K, M, 1, dci, N, ai, g->lda, beta, dbi, K);
            }
        }
    }
}

Tensor *op_matmul(Tape *t, Tensor *a, Tensor *b, int ta, int tb) {
    MMGeom g = mm_geometry(a, b, ta, tb);
    int shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < a->ndim - 2; i++) shape[i] = a->shape[i];
    shape[a->ndim - 2] = g.M;
    shape[a->ndim - 1] = g.N;
    Tensor *c = tape_tensor(t, a->ndim, shape, "matmul");
    matmul_forward(c->data, a->data, b->data, &g, ta, tb);
    Tensor *in[2] = {a, b};
    TapeNode *nd = tape_record(t, OP_MATMUL, c, 2, in);
    if (nd) {
        nd->iarg[0] = ta;
        nd->iarg[1] = tb;
    }
    return c;
}

void matmul_backward_node(Tape *t, TapeNode *nd) {
    Tensor *a = nd->in[0], *b = nd->in[1], *c = nd->out;
    int ta = (int)nd->iarg[0], tb = (int)nd->iarg[1];
    MMGeom g = mm_geometry(a, b, ta, tb);
    int fa = 0, fb = 0;
    real *da = a->requires_grad ? tape_grad_put(t, a, &fa) : NULL;
    real *db = b->requires_grad ? tape_grad_put(t, b, &fb) : NULL; /* b == a: not fresh, adds to what da's pass wrote */
    matmul_backward(da, fa, db, fb, c->grad, a->data, b->data, &g, ta, tb);
}

/* ---------------- linear ---------------- */

static void linear_check(const Tensor *x, const Tensor *w, const Tensor *b) {
    char sx[64], sw[64], sb[64];
    OP_CHECK(x && w, "linear", "NULL input");
    OP_CHECK(x->ndim >= 1 && w->ndim == 2 && x->shape[x->ndim - 1] == w->shape[1], "linear",
             "x %s does not match weight %s (expected [OUT, IN] with IN = last dim of x)", shape_str(x, sx, 64),
             shape_str(w, sw, 64));
    OP_CHECK(!b || (b->ndim == 1 && b->shape[0] == w->shape[0]), "linear", "bias %s does not match weight %s",
             b ? shape_str(b, sb, 64) : "NULL", shape_str(w, sw, 64));
}

/* y[R, OUT] = x[R, IN] · W[OUT, IN]^T + b[OUT] */
static void linear_forward(real *y, const real *x, const real *w, const real *b, long R, int IN, int OUT) {
    gemm_linear((int)R, OUT, IN, x, IN, w, IN, b, 0, y, OUT);
}

/* dx += dy · W (dx = when dx_fresh);  dW += dy^T · x;  db += Σ_r dy[r, :] */
static void linear_backward(real *dx, int dx_fresh, real *dw, real *db, const real *dy, const real *x, const real *w, long R,
                            int IN, int OUT) {
    if (dx) gemm(0, 0, (int)R, IN, OUT, 1, dy, OUT, w, IN, dx_fresh ? 0 : 1, dx, IN);
    if (dw) gemm(1, 0, OUT, IN, (int)R, 1, dy, OUT, x, IN, 1, dw, IN);
    if (db) {
        /* columns split into fixed blocks; each block sums rows in order: bitwise repeatable */
#pragma omp parallel for schedule(static)
        for (int o0 = 0; o0 < OUT; o0 += 64) {
            int o1 = o0 + 64 < OUT ? o0 + 64 : OUT;
            for (long r = 0; r < R; r++) {
                const real *row = dy + r * OUT;
                for (int o = o0; o < o1; o++) db[o] += row[o];
            }
        }
    }
}

Tensor *op_linear(Tape *t, Tensor *x, Tensor *w, Tensor *b) {
    linear_check(x, w, b);
    int shape[TENSOR_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = w->shape[0];
    Tensor *y = tape_tensor(t, x->ndim, shape, "linear");
    linear_forward(y->data, x->data, w->data, b ? b->data : NULL, trows(x), w->shape[1], w->shape[0]);
    Tensor *in[3] = {x, w, b};
    tape_record(t, OP_LINEAR, y, b ? 3 : 2, in);
    return y;
}

Tensor *op_linear_gelu(Tape *t, Tensor *x, Tensor *w, Tensor *b) {
    OP_CHECK(b, "linear_gelu", "NULL bias");
    Tensor *in[3] = {x, w, b};
    if (tape_records(t, 3, in)) return op_bias_gelu(t, op_linear(t, x, w, NULL), b);
    linear_check(x, w, b);
    int shape[TENSOR_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = w->shape[0];
    Tensor *y = tape_tensor(t, x->ndim, shape, "linear_gelu");
    gemm_linear((int)trows(x), w->shape[0], w->shape[1], x->data, w->shape[1], w->data, w->shape[1], b->data, 1, y->data,
                w->shape[0]);
    tape_record(t, OP_LINEAR, y, 3, in); /* records nothing here; the profile counts the op as a linear layer's */
    return y;
}

void linear_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0], *w = nd->in[1], *b = nd->nin > 2 ? nd->in[2] : NULL;
    int fresh = 0;
    real *dx = x->requires_grad ? tape_grad_put(t, x, &fresh) : NULL;
    linear_backward(dx, fresh, w->requires_grad ? tape_grad(t, w) : NULL, b && b->requires_grad ? tape_grad(t, b) : NULL,
                    nd->out->grad, x->data, w->data, trows(x), w->shape[1], w->shape[0]);
}
