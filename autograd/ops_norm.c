/* ops_norm.c — LayerNorm over the last dim (biased variance, affine), mean and rstd saved in the
 * node for the backward. */
#include "autograd/ops.h"
#include "autograd/rmath.h"

typedef struct {
    real *mean, *rstd; /* [R] each, arena */
} LNCtx;

/* y[R, C] = (x − mean_r) · rstd_r · g[C] + b[C],  mean_r = Σ_c x / C,  var_r = Σ_c (x − mean_r)² / C,
 * rstd_r = 1/sqrt(var_r + eps).  g or b may be NULL (then 1 or 0).  Two passes per row, in double. */
static void layernorm_forward(real *y, real *mean, real *rstd, const real *x, const real *g, const real *b, long R, int C,
                              real eps) {
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long r = 0; r < R; r++) {
        const real *xr = x + r * C;
        real *yr = y + r * C;
        double s = 0;
        for (int c = 0; c < C; c++) s += xr[c];
        const real m = (real)(s / C);
        double v = 0;
        for (int c = 0; c < C; c++) {
            const double d = (double)(xr[c] - m);
            v += d * d;
        }
        const real rs = (real)(1.0 / sqrt(v / C + (double)eps));
        mean[r] = m;
        rstd[r] = rs;
        for (int c = 0; c < C; c++) {
            real xh = (xr[c] - m) * rs;
            yr[c] = xh * (g ? g[c] : 1) + (b ? b[c] : 0);
        }
    }
}

/* With xhat = (x − mean)·rstd and dxhat = dy·g:
 *   dx[r, c] += rstd_r · (dxhat − mean_c(dxhat) − xhat · mean_c(dxhat · xhat))   (= when dx_fresh)
 *   dg[c] += Σ_r dy · xhat,  db[c] += Σ_r dy
 * Fixed chunks of COLSUM_ROWS rows in parallel: a chunk updates its own dx rows and writes its
 * column sums to pg[k, :], pb[k, :]; colsum_finish adds the chunks in order (rmath.h). */
static void layernorm_backward(real *dx, int dx_fresh, real *dg, real *db, real *pg, real *pb, const real *dy, const real *x,
                               const real *g, const real *mean, const real *rstd, long R, int C) {
    const long nch = colsum_nchunks(R);
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long k = 0; k < nch; k++) {
        const long r0 = k * COLSUM_ROWS, r1 = r0 + COLSUM_ROWS < R ? r0 + COLSUM_ROWS : R;
        real *pgk = pg + k * C, *pbk = pb + k * C;
        for (int c = 0; c < C; c++) pgk[c] = pbk[c] = 0;
        for (long r = r0; r < r1; r++) {
            const real *xr = x + r * C, *dyr = dy + r * C;
            const real m = mean[r], rs = rstd[r];
            if (dx) {
                real *dxr = dx + r * C;
                real s1 = 0, s2 = 0;
                for (int c = 0; c < C; c++) {
                    const real dxh = dyr[c] * (g ? g[c] : 1);
                    s1 += dxh;
                    s2 += dxh * (xr[c] - m) * rs;
                }
                s1 /= C;
                s2 /= C;
                for (int c = 0; c < C; c++) {
                    const real dxh = dyr[c] * (g ? g[c] : 1), v = rs * (dxh - s1 - (xr[c] - m) * rs * s2);
                    dxr[c] = dx_fresh ? v : dxr[c] + v;
                }
            }
            for (int c = 0; c < C; c++) {
                pgk[c] += dyr[c] * ((xr[c] - m) * rs);
                pbk[c] += dyr[c];
            }
        }
    }
    if (dg) colsum_finish(dg, pg, nch, C);
    if (db) colsum_finish(db, pb, nch, C);
}

Tensor *op_layernorm(Tape *t, Tensor *x, Tensor *g, Tensor *b, real eps) {
    char sx[64], sg[64], sb[64];
    OP_CHECK(x, "layernorm", "NULL input x");
    OP_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] > 0, "layernorm", "x %s has no last dim to normalise", shape_str(x, sx, 64));
    const int C = x->shape[x->ndim - 1];
    OP_CHECK(!g || (g->ndim == 1 && g->shape[0] == C), "layernorm", "gain %s does not match x %s (expected [%d])",
             shape_str(g, sg, 64), shape_str(x, sx, 64), C);
    OP_CHECK(!b || (b->ndim == 1 && b->shape[0] == C), "layernorm", "bias %s does not match x %s (expected [%d])",
             shape_str(b, sb, 64), shape_str(x, sx, 64), C);
    OP_CHECK(eps >= 0, "layernorm", "eps %g is negative", (double)eps);
    const long R = trows(x);
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "layernorm");
    LNCtx *cx = arena_alloc(&t->arena, sizeof(LNCtx));
    cx->mean = arena_alloc(&t->arena, (size_t)R * sizeof(real));
    cx->rstd = arena_alloc(&t->arena, (size_t)R * sizeof(real));
    layernorm_forward(y->data, cx->mean, cx->rstd, x->data, g ? g->data : NULL, b ? b->data : NULL, R, C, eps);
    Tensor *in[3] = {x, g, b};
    TapeNode *nd = tape_record(t, OP_LAYERNORM, y, 3, in);
    if (nd) nd->ctx = cx;
    return y;
}

void layernorm_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0], *g = nd->in[1], *b = nd->in[2];
    LNCtx *cx = nd->ctx;
    const long R = trows(x);
    const int C = x->shape[x->ndim - 1];
    const size_t scratch = (size_t)(colsum_nchunks(R) ? colsum_nchunks(R) : 1) * C * sizeof(real);
    real *pg = arena_alloc(&t->arena, scratch), *pb = arena_alloc(&t->arena, scratch);
    int fresh = 0;
    real *dx = x->requires_grad ? tape_grad_put(t, x, &fresh) : NULL;
    layernorm_backward(dx, fresh, g && g->requires_grad ? tape_grad(t, g) : NULL,
                       b && b->requires_grad ? tape_grad(t, b) : NULL, pg, pb, nd->out->grad, x->data, g ? g->data : NULL,
                       cx->mean, cx->rstd, R, C);
}
