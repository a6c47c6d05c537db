/* ops_norm.c — LayerNorm over the last dim (biased variance, affine), mean and rstd saved in the
 * node for the backward. */
#include <omp.h>
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rmath.h"

typedef struct {
    real *mean, *rstd; /* [R] each, arena */
} LNCtx;

/* y[R, C] = (x − mean_r) · rstd_r · g[C] + b[C],  mean_r = Σ_c x / C,  var_r = Σ_c (x − mean_r)² / C,
 * rstd_r = 1/sqrt(var_r + eps).  g or b may be NULL (then 1 or 0).  Two passes per row, in double; the sums
 * are SIMD reductions (partial sums per vector lane, then added: an order fixed at compile time), not one
 * serial chain of additions. */
/* One row of the forward (also the fused op's, so that both compute the same bits). */
static inline void ln_row_forward(real *yr, real *mean, real *rstd, const real *xr, const real *g, const real *b, int C, real eps) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int c = 0; c < C; c++) s += xr[c];
    const real m = (real)(s / C);
    double v = 0;
#pragma omp simd reduction(+ : v)
    for (int c = 0; c < C; c++) {
        const double d = (double)(xr[c] - m);
        v += d * d;
    }
    const real rs = (real)(1.0 / sqrt(v / C + (double)eps));
    *mean = m;
    *rstd = rs;
    for (int c = 0; c < C; c++) {
        real xh = (xr[c] - m) * rs;
        yr[c] = xh * (g ? g[c] : 1) + (b ? b[c] : 0);
    }
}

static void layernorm_forward(real *y, real *mean, real *rstd, const real *x, const real *g, const real *b, long R, int C,
                              real eps) {
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long r = 0; r < R; r++) ln_row_forward(y + r * C, mean + r, rstd + r, x + r * C, g, b, C, eps);
}

/* The backward's row sums: s1 = mean_c(dxhat), s2 = mean_c(dxhat · xhat). */
static inline void ln_row_sums(real *s1o, real *s2o, const real *dyr, const real *xr, const real *g, real m, real rs, int C) {
    real s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s1, s2)
    for (int c = 0; c < C; c++) {
        const real dxh = dyr[c] * (g ? g[c] : 1);
        s1 += dxh;
        s2 += dxh * (xr[c] - m) * rs;
    }
    *s1o = s1 / C;
    *s2o = s2 / C;
}

/* dx of one element: rstd · (dxhat − s1 − xhat · s2) */
static inline real ln_dx(real dy, real gc, real x, real m, real rs, real s1, real s2) {
    const real dxh = dy * gc;
    return rs * (dxh - s1 - (x - m) * rs * s2);
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
                real s1, s2;
                ln_row_sums(&s1, &s2, dyr, xr, g, m, rs, C);
                for (int c = 0; c < C; c++) {
                    const real v = ln_dx(dyr[c], g ? g[c] : 1, xr[c], m, rs, s1, s2);
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

/* ---------------- dropout_add_layernorm: LN(dropout(y) + res) in one op ---------------- */

typedef struct {
    real *mean, *rstd; /* [R] each */
    uint8_t *keep;     /* the dropout's mask, NULL when it is the identity */
    real p;
} DALNCtx;

/* s = dropout(y) + res of row r into sr, the dropped row as op_dropout_batch then op_add compute it:
 * daln_row_draw draws the mask into keepr (forward; keepr NULL: no dropout), daln_row_again reads it
 * back (backward).  Both scale kept entries by 1/(1 − p) as dropout_apply does: the same bits. */
static inline void daln_row_add(real *sr, const real *resr, int C) {
    for (int c = 0; c < C; c++) sr[c] = sr[c] + resr[c];
}

static inline void daln_row_draw(real *sr, const real *yr, const real *resr, uint8_t *keepr, real p, uint64_t seed,
                                 uint64_t stream, int64_t off, int C) {
    if (keepr) dropout_apply(sr, keepr, yr, C, p, seed, stream, off);
    else memcpy(sr, yr, (size_t)C * sizeof(real));
    daln_row_add(sr, resr, C);
}

static inline void daln_row_again(real *sr, const real *yr, const real *resr, const uint8_t *keepr, real p, int C) {
    if (keepr) {
        const real s = 1 / (1 - p);
        for (int c = 0; c < C; c++) sr[c] = rselect(keepr[c], yr[c] * s, 0);
    } else
        memcpy(sr, yr, (size_t)C * sizeof(real));
    daln_row_add(sr, resr, C);
}

/* The op, its output a fresh tensor or (over) written over res's data row by row (each row of the sum is
 * made in scratch before the row of res is overwritten). */
static Tensor *dropout_add_layernorm(Tape *t, Tensor *y, real p, Tensor *res, Tensor *g, Tensor *b, real eps, int over) {
    char sy[64], sr[64], sg[64], sb[64];
    const char *op = over ? "dropout_add_layernorm_over" : "dropout_add_layernorm";
    OP_CHECK(!over || t->nograd > 0, op, "%s", "outside a no-grad scope (a recorded node may read res)");
    OP_CHECK(y && res, op, "NULL input");
    OP_CHECK(y != res && y->data != res->data, op, "y and res are the same tensor (use op_add and op_layernorm)");
    OP_CHECK(y->ndim >= 1 && y->ndim == res->ndim && !memcmp(y->shape, res->shape, (size_t)y->ndim * sizeof(int)), op,
             "y %s and res %s differ in shape", shape_str(y, sy, 64), shape_str(res, sr, 64));
    const int C = y->shape[y->ndim - 1];
    OP_CHECK(C > 0, op, "y %s has no last dim to normalise", shape_str(y, sy, 64));
    OP_CHECK(!g || (g->ndim == 1 && g->shape[0] == C), op, "gain %s does not match y %s (expected [%d])", shape_str(g, sg, 64),
             shape_str(y, sy, 64), C);
    OP_CHECK(!b || (b->ndim == 1 && b->shape[0] == C), op, "bias %s does not match y %s (expected [%d])", shape_str(b, sb, 64),
             shape_str(y, sy, 64), C);
    OP_CHECK(eps >= 0, op, "eps %g is negative", (double)eps);
    uint64_t stream = 0;
    const int64_t off = dropout_begin(t, y, p, 1, &stream); /* the stream op_dropout_batch(y, p) would take */
    const long R = trows(y);
    Tensor *out = over ? tape_view(t, res, res->ndim, res->shape) : tape_tensor(t, y->ndim, y->shape, op);
    DALNCtx *cx = arena_alloc(&t->arena, sizeof *cx);
    cx->mean = arena_alloc(&t->arena, (size_t)R * sizeof(real));
    cx->rstd = arena_alloc(&t->arena, (size_t)R * sizeof(real));
    cx->keep = off >= 0 ? arena_alloc(&t->arena, (size_t)y->n) : NULL;
    cx->p = p;
    const int nt = omp_get_max_threads();
    const size_t sbytes = (size_t)nt * C * sizeof(real);
    real *scratch = tape_scratch(t, sbytes, 0);
    const real *gd = g ? g->data : NULL, *bd = b ? b->data : NULL;
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long r = 0; r < R; r++) {
        real *s = scratch + (long)omp_get_thread_num() * C;
        daln_row_draw(s, y->data + r * C, res->data + r * C, cx->keep ? cx->keep + r * C : NULL, p, t->seed, stream,
                      off + r * C, C);
        ln_row_forward(out->data + r * C, cx->mean + r, cx->rstd + r, s, gd, bd, C, eps);
    }
    tape_scratch_release(t, scratch, sbytes);
    Tensor *in[4] = {y, res, g, b};
    TapeNode *nd = tape_record(t, OP_DROPOUT_ADD_LAYERNORM, out, 4, in);
    if (nd) nd->ctx = cx;
    return out;
}

Tensor *op_dropout_add_layernorm(Tape *t, Tensor *y, real p, Tensor *res, Tensor *g, Tensor *b, real eps) {
    return dropout_add_layernorm(t, y, p, res, g, b, eps, 0);
}

Tensor *op_dropout_add_layernorm_over(Tape *t, Tensor *y, real p, Tensor *res, Tensor *g, Tensor *b, real eps) {
    return dropout_add_layernorm(t, y, p, res, g, b, eps, 1);
}

/* The backward of LN(s), s = dropout(y) + res, as those of op_layernorm, op_add and op_dropout_batch in turn
 * would compute it (the same values): ds from the LN, res += ds, y += keep ? ds/(1 − p) : 0; the row s is
 * recomputed from y, res and the mask instead of being kept. */
void dropout_add_layernorm_backward_node(Tape *t, TapeNode *nd) {
    Tensor *y = nd->in[0], *res = nd->in[1], *g = nd->in[2], *b = nd->in[3];
    const DALNCtx *cx = nd->ctx;
    const long R = trows(y);
    const int C = y->shape[y->ndim - 1];
    const long nch = colsum_nchunks(R);
    const size_t pbytes = (size_t)(nch ? nch : 1) * C * sizeof(real);
    real *pg = arena_alloc(&t->arena, pbytes), *pb = arena_alloc(&t->arena, pbytes);
    int yfresh = 0, rfresh = 0;
    real *dy = y->requires_grad ? tape_grad_put(t, y, &yfresh) : NULL;
    real *dres = res->requires_grad ? tape_grad_put(t, res, &rfresh) : NULL;
    real *dg = g && g->requires_grad ? tape_grad(t, g) : NULL, *db = b && b->requires_grad ? tape_grad(t, b) : NULL;
    const real *gd = g ? g->data : NULL, *dout = nd->out->grad;
    const real ks = 1 / (1 - cx->p);
    const int nt = omp_get_max_threads();
    const size_t sbytes = (size_t)nt * 2 * C * sizeof(real);
    real *scratch = tape_scratch(t, sbytes, 0);
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long k = 0; k < nch; k++) {
        real *s = scratch + (long)omp_get_thread_num() * 2 * C, *v = s + C; /* the row's s and its gradient */
        const long r0 = k * COLSUM_ROWS, r1 = r0 + COLSUM_ROWS < R ? r0 + COLSUM_ROWS : R;
        real *pgk = pg + k * C, *pbk = pb + k * C;
        for (int c = 0; c < C; c++) pgk[c] = pbk[c] = 0;
        for (long r = r0; r < r1; r++) {
            const real *dyr = dout + r * C;
            const uint8_t *kr = cx->keep ? cx->keep + r * C : NULL;
            daln_row_again(s, y->data + r * C, res->data + r * C, kr, cx->p, C);
            const real m = cx->mean[r], rs = cx->rstd[r];
            if (dy || dres) { /* v = the LN's input gradient of the row, then one plain loop per output */
                real s1, s2;
                ln_row_sums(&s1, &s2, dyr, s, gd, m, rs, C);
                if (gd)
                    for (int c = 0; c < C; c++) v[c] = ln_dx(dyr[c], gd[c], s[c], m, rs, s1, s2);
                else
                    for (int c = 0; c < C; c++) v[c] = ln_dx(dyr[c], 1, s[c], m, rs, s1, s2);
                real *drrow = dres ? dres + r * C : NULL, *dyrow = dy ? dy + r * C : NULL;
                if (drrow && rfresh) memcpy(drrow, v, (size_t)C * sizeof(real));
                else if (drrow)
                    for (int c = 0; c < C; c++) drrow[c] += v[c];
                if (dyrow && !kr) {
                    if (yfresh) memcpy(dyrow, v, (size_t)C * sizeof(real));
                    else
                        for (int c = 0; c < C; c++) dyrow[c] += v[c];
                } else if (dyrow && yfresh) {
                    for (int c = 0; c < C; c++) dyrow[c] = rselect(kr[c], v[c] * ks, 0);
                } else if (dyrow) { /* (adding 0 where dropped would turn a −0 into +0: a select keeps it) */
                    for (int c = 0; c < C; c++) dyrow[c] = rselect(kr[c], dyrow[c] + v[c] * ks, dyrow[c]);
                }
            }
            for (int c = 0; c < C; c++) {
                pgk[c] += dyr[c] * ((s[c] - m) * rs);
                pbk[c] += dyr[c];
            }
        }
    }
    tape_scratch_release(t, scratch, sbytes);
    if (dg) colsum_finish(dg, pg, nch, C);
    if (db) colsum_finish(db, pb, nch, C);
}
