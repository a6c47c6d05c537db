/* attention.c — disentangled self-attention block, see attention.h. */
#include "model/attention.h"
#include <math.h>
#include <string.h>
#include "autograd/base/util.h"
#include "autograd/gemm.h"
#include "autograd/rmath.h"
#include "model/relpos.h"

int g_attention_unfused = 0;
AttentionStats *g_attention_stats = NULL;

/* Adds P [B, A, T, T] (rows of padded queries are all zero and skipped) to slot st->next. */
void attention_stats_add(AttentionStats *st, const Tensor *P, const int32_t *mask) {
    if (st->next >= ATTN_STATS_MAX_LAYERS) return;
    const int B = P->shape[0], A = P->shape[1], T = P->shape[2];
    const int l = st->next++;
    for (int b = 0; b < B; b++) {
        int nk = 0;
        for (int j = 0; j < T; j++) nk += mask[b * T + j] != 0;
        const double lognk = nk > 1 ? log((double)nk) : 1.0;
        for (int a = 0; a < A; a++)
            for (int i = 0; i < T; i++) {
                if (!mask[b * T + i]) continue;
                const real *p = P->data + (((long)b * A + a) * T + i) * T;
                double h = 0, loc = 0;
                for (int j = 0; j < T; j++) {
                    if (p[j] > 0) h -= (double)p[j] * log((double)p[j]);
                    const int d = i > j ? i - j : j - i;
                    if (d >= 1 && d <= 3) loc += p[j];
                }
                st->entropy[l] += h;
                st->norm_entropy[l] += h / lognk;
                st->self[l] += p[i];
                st->near[l] += (i > 0 ? p[i - 1] : 0) + (i + 1 < T ? p[i + 1] : 0);
                st->local[l] += loc;
                st->rows[l] += 1;
            }
    }
}

void relctx_build(Tape *t, RelContext *rc, const ModelConfig *cfg, Tensor *rel_w, Tensor *rel_ln_g, Tensor *rel_ln_b,
                  const int32_t *mask, int B, int T) {
    memset(rc, 0, sizeof *rc);
    rc->B = B;
    rc->T = T;
    rc->terms = cfg->att_terms;
    int32_t *m = arena_alloc(&t->arena, (size_t)B * T * sizeof(int32_t));
    for (long i = 0; i < (long)B * T; i++) m[i] = mask ? (mask[i] != 0) : 1;
    rc->mask = rc->qmask = m;
    if (!(cfg->att_terms & (ATT_C2P | ATT_P2C))) return;
    const int S = config_att_span(cfg), R = 2 * S;
    if (rel_w->ndim != 2 || rel_w->shape[0] != R || rel_w->shape[1] != cfg->hidden_size)
        fatal("relative table '%s' has %d x %d rows/cols, the config needs [%d, %d]", rel_w->name ? rel_w->name : "?",
              rel_w->shape[0], rel_w->ndim > 1 ? rel_w->shape[1] : 0, R, cfg->hidden_size);
    /* c(i,j) = clamp(bucket(i − j) + S, 0, 2S − 1); only rows r0..r1 are reachable at this length */
    int r0, r1;
    rc->c = arena_alloc(&t->arena, (size_t)T * T * sizeof(int32_t));
    relpos_index(rc->c, T, T, cfg->position_buckets, cfg->max_relative_positions, S, &r0, &r1);
    for (long i = 0; i < (long)T * T; i++) rc->c[i] -= r0;
    rc->r0 = r0;
    rc->n_rows = r1 - r0 + 1;
    /* R̂ = LN_rel(W_rel[r0 .. r1]): row-wise, so equal to the rows of LN_rel(W_rel) (spec §1.4) */
    int32_t *rows = arena_alloc(&t->arena, (size_t)rc->n_rows * sizeof(int32_t));
    for (int r = 0; r < rc->n_rows; r++) rows[r] = r0 + r;
    Tensor *sel = op_index_select(t, rel_w, rows, rc->n_rows); /* [n_rows, H] */
    rc->rel = cfg->norm_rel_ebd ? op_layernorm(t, sel, rel_ln_g, rel_ln_b, (real)cfg->layer_norm_eps) : sel;
}

/* x [n, H] -> split_heads(proj(x)) [1, A, n, D] */
static Tensor *project_table(Tape *t, Tensor *x, Tensor *w, Tensor *b, int A) {
    const int s3[3] = {1, x->shape[0], x->shape[1]};
    return op_split_heads(t, op_linear(t, op_reshape(t, x, 3, s3), w, b), A);
}

/* The projected relative tables of one block: kr (c2p) and qr (p2c), NULL for a term that is off. */
static void rel_tables(Tape *t, const ModelConfig *cfg, const AttentionParams *p, const RelContext *rc, Tensor **qr, Tensor **kr) {
    const int A = cfg->num_attention_heads, terms = cfg->att_terms;
    *qr = *kr = NULL;
    if (!(terms & (ATT_C2P | ATT_P2C))) return;
    /* R̃ = Dropout_h(R̂), a fresh mask per layer and call (spec §1.4 step 2) */
    Tensor *rd = op_dropout(t, rc->rel, (real)cfg->hidden_dropout_prob);
    if (terms & ATT_C2P) *kr = project_table(t, rd, p->wk, p->bk, A); /* Kr = R̃·Wk^T + bk  [1, A, n, D] */
    if (terms & ATT_P2C) *qr = project_table(t, rd, p->wq, p->bq, A); /* Qr = R̃·Wq^T + bq */
}

static real att_scale(const ModelConfig *cfg) {
    return (real)(1.0 / sqrt((double)cfg->attention_head_size * config_num_terms(cfg)));
}

/* The attention probabilities P [B, A, T, T] of one block (before attention dropout), from the
 * projected q, k and the shared context: the fused op, or with unfused != 0 the readable
 * composition of generic ops (attention_probs_unfused). */
static Tensor *attention_probs(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *q, Tensor *k,
                               const RelContext *rc, int unfused) {
    Tensor *qr, *kr;
    rel_tables(t, cfg, p, rc, &qr, &kr);
    if (unfused) return attention_probs_unfused(t, q, k, qr, kr, rc->c, cfg->att_terms, att_scale(cfg), rc->qmask, rc->mask);
    return op_disentangled_attention_probs(t, q, k, qr, kr, rc->c, cfg->att_terms, att_scale(cfg), rc->qmask, rc->mask);
}

/* The context of ONE query row per sequence (the [CLS]-only last layer) in a forward that records nothing and
 * drops nothing, without the keys and values of the Tk positions: with k_j = Wk·x_j + bk and v_j = Wv·x_j + bv
 * (head a: the rows a·D .. a·D + D − 1 of Wk, Wv),
 *   c2c_j = q·k_j = x_j·(Wkᵀq) + q·bk,   p2c_j = k_j·qr[c(0,j)] = x_j·(Wkᵀqr[c]) + bk·qr[c],
 *   c2p_j = q·kr[c(0,j)],               ctx = Σ_j P_j v_j = Wv·(Σ_j P_j x_j) + (Σ_j P_j)·bv,
 * so the head's H-vectors Wkᵀq and Wkᵀqr[c] (c < n_rows) replace the [Tk, A·D] projections: ~1/60 of their
 * FLOPs at 32 × 128, tiny.  The scores as the op sums them, S_j = scale·((c2c_j + c2p_j) + p2c_j), less q·bk
 * (one value per row: the softmax is the same without it), and the op's masked softmax rows; equal to the op up
 * to rounding (tests/test_model_attention.c, one_query_context_equals_the_op).
 * q [B, 1, A·D], kv [B, Tk, H]; returns ctx [B, 1, A·D]. */
static Tensor *context_one_query(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *q, Tensor *kv,
                                 const RelContext *rc, Tensor *qr, Tensor *kr) {
    const int B = kv->shape[0], Tk = kv->shape[1], H = kv->shape[2], A = cfg->num_attention_heads;
    const int D = q->shape[2] / A, C = A * D, terms = cfg->att_terms, n = rc->n_rows;
    const real scale = att_scale(cfg), *wk = p->wk->data, *bk = p->bk ? p->bk->data : NULL, *x = kv->data;
    const int c2c = (terms & ATT_C2C) != 0, c2p = (terms & ATT_C2P) != 0, p2c = (terms & ATT_P2C) != 0;
    Arena *ar = &t->arena;
    real *u = arena_alloc(ar, sizeof(real) * (size_t)B * A * H);                 /* Wkᵀq per (b, a) */
    real *wp = p2c ? arena_alloc(ar, sizeof(real) * (size_t)A * n * H) : NULL;   /* Wkᵀqr[c] per (a, c) */
    real *bp = p2c ? arena_alloc(ar, sizeof(real) * (size_t)A * n) : NULL;       /* bk·qr[c] */
    real *z = arena_alloc(ar, sizeof(real) * (size_t)B * A * H);                 /* Σ_j P_j x_j per (b, a) */
    real *ps = arena_alloc(ar, sizeof(real) * (size_t)B * A);                    /* Σ_j P_j */
    real *sc = arena_alloc(ar, sizeof(real) * (size_t)B * (Tk * A + A * Tk));   /* per b: x·uᵀ [Tk, A], S [A, Tk] */
    for (int a = 0; a < A; a++) {
        gemm(0, 0, B, H, D, 1, q->data + (long)a * D, C, wk + (long)a * D * H, H, 0, u + (long)a * H, A * H);
        if (p2c) gemm(0, 0, n, H, D, 1, qr->data + (long)a * n * D, D, wk + (long)a * D * H, H, 0, wp + (long)a * n * H, H);
    }
    if (p2c)
        for (long ac = 0; ac < (long)A * n; ac++) {
            const real *r = qr->data + ac * D, *bka = bk ? bk + (ac / n) * D : NULL;
            real s = 0;
            for (int d = 0; d < D && bk; d++) s += bka[d] * r[d];
            bp[ac] = s;
        }
#pragma omp parallel for schedule(static) if (B > 1)
    for (int b = 0; b < B; b++) {
        const real *xb = x + (long)b * Tk * H, *qb = q->data + (long)b * C;
        real *xu = sc + (long)b * 2 * Tk * A, *S = xu + (long)Tk * A;
        if (c2c) gemm(0, 1, Tk, A, H, 1, xb, H, u + (long)b * A * H, H, 0, xu, A);
        for (int a = 0; a < A; a++) {
            const real *qa = qb + (long)a * D;
            real *Sa = S + (long)a * Tk;
            for (int j = 0; j < Tk; j++) {
                real s = c2c ? xu[(long)j * A + a] : 0; /* without q·bk: the same for every j, the softmax ignores it */
                if (c2p || p2c) {
                    const int cj = rc->c[j];
                    if (c2p) {
                        const real *r = kr->data + ((long)a * n + cj) * D;
                        real pc = 0;
#pragma omp simd reduction(+ : pc)
                        for (int d = 0; d < D; d++) pc += qa[d] * r[d];
                        s += pc;
                    }
                    if (p2c) {
                        const real *w = wp + ((long)a * n + cj) * H, *xj = xb + (long)j * H;
                        real pp = 0;
#pragma omp simd reduction(+ : pp)
                        for (int h = 0; h < H; h++) pp += xj[h] * w[h];
                        s += pp + bp[(long)a * n + cj];
                    }
                }
                Sa[j] = scale * s;
            }
            const int32_t *km = rc->mask + (long)b * Tk;
            if (rc->qmask[b]) softmax_row(Sa, Sa, Tk, km);
            else memset(Sa, 0, (size_t)Tk * sizeof(real));
            real sum = 0;
            for (int j = 0; j < Tk; j++) sum += Sa[j];
            ps[(long)b * A + a] = sum;
        }
        gemm(0, 0, A, H, Tk, 1, S, Tk, xb, H, 0, z + (long)b * A * H, H);
    }
    const int s3[3] = {B, 1, C};
    Tensor *ctx = tape_tensor(t, 3, s3, "ctx_one_query");
    for (int a = 0; a < A; a++)
        gemm(0, 1, B, D, H, 1, z + (long)a * H, A * H, p->wv->data + (long)a * D * H, H, 0, ctx->data + (long)a * D, C);
    for (int b = 0; b < B && p->bv; b++)
        for (int o = 0; o < C; o++) ctx->data[(long)b * C + o] += ps[(long)b * A + o / D] * p->bv->data[o];
    return ctx;
}

/* The block before its residual LayerNorm: the output projection o = ctx·Wo^T + bo [B, Tq, H]. */
static Tensor *attention_out(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *qin, Tensor *kv, const RelContext *rc) {
    const int A = cfg->num_attention_heads;
    Tensor *q = op_linear(t, qin, p->wq, p->bq); /* [B, T, A·D] */
    Tensor *ctx;                                 /* [B, T, A·D] */
    if (qin->shape[1] == 1 && kv->shape[1] > 1 && t->nograd > 0 && !t->training && !g_attention_unfused && !g_attention_stats) {
        /* one query row, nothing recorded or dropped: no keys or values (context_one_query) */
        Tensor *qr, *kr;
        rel_tables(t, cfg, p, rc, &qr, &kr);
        ctx = context_one_query(t, cfg, p, q, kv, rc, qr, kr);
        return op_linear(t, ctx, p->wo, p->bo);
    }
    Tensor *k = op_linear(t, kv, p->wk, p->bk);
    Tensor *v = op_linear(t, kv, p->wv, p->bv);
    if (g_attention_unfused || g_attention_stats) {
        /* the unfused reference, or the attention statistics (which read P before the dropout): the heads
         * split into [B, A, T, D] copies, P itself, its dropout, P·V and the merge as separate ops */
        Tensor *q4 = op_split_heads(t, q, A), *k4 = op_split_heads(t, k, A), *v4 = op_split_heads(t, v, A);
        Tensor *probs = attention_probs(t, cfg, p, q4, k4, rc, g_attention_unfused);
        if (g_attention_stats && rc->qmask == rc->mask) attention_stats_add(g_attention_stats, probs, rc->mask);
        probs = op_dropout_batch(t, probs, (real)cfg->attention_probs_dropout_prob);
        ctx = op_merge_heads(t, op_matmul(t, probs, v4, 0, 0));
    } else {
        /* P, its attention dropout and the context in one op, reading and writing the projections'
         * [B, T, A·D] layout in place */
        Tensor *qr, *kr;
        rel_tables(t, cfg, p, rc, &qr, &kr);
        ctx = op_disentangled_attention_context(t, q, k, v, A, qr, kr, rc->c, cfg->att_terms, att_scale(cfg), rc->qmask, rc->mask,
                                                (real)cfg->attention_probs_dropout_prob);
    }
    return op_linear(t, ctx, p->wo, p->bo); /* [B, T, H] */
}

/* LN(Dropout_h(o) + qin): one op (with over, written over qin), or the three (the unfused reference) */
static Tensor *attention_ln(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *o, Tensor *qin, int over) {
    const real ph = (real)cfg->hidden_dropout_prob, eps = (real)cfg->layer_norm_eps;
    if (g_attention_unfused) return op_layernorm(t, op_add(t, op_dropout_batch(t, o, ph), qin), p->ln_g, p->ln_b, eps);
    return (over ? op_dropout_add_layernorm_over : op_dropout_add_layernorm)(t, o, ph, qin, p->ln_g, p->ln_b, eps);
}

Tensor *attention_forward(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *qin, Tensor *kv, const RelContext *rc) {
    return attention_ln(t, cfg, p, attention_out(t, cfg, p, qin, kv, rc), qin, 0);
}

Tensor *attention_forward_over(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *qin, Tensor *kv,
                               const RelContext *rc) {
    return attention_ln(t, cfg, p, attention_out(t, cfg, p, qin, kv, rc), qin, 1);
}

/* ---------------- the unfused reference ---------------- */

/* table [A, R, D] or [1, A, R, D] -> [B, A, R, D] (the same rows for every batch item) */
static Tensor *expand_table(Tape *t, Tensor *x, int B) {
    const int A = tdim(x, -3), R = tdim(x, -2), D = tdim(x, -1);
    const int s2[2] = {A * R, D}, s4[4] = {B, A, R, D};
    int32_t *rows = arena_alloc(&t->arena, (size_t)B * A * R * sizeof(int32_t));
    for (long i = 0; i < (long)B * A * R; i++) rows[i] = (int32_t)(i % ((long)A * R));
    return op_reshape(t, op_index_select(t, op_reshape(t, x, 2, s2), rows, B * A * R), 4, s4);
}

Tensor *attention_probs_unfused(Tape *t, Tensor *q, Tensor *k, Tensor *qr, Tensor *kr, const int32_t *c_idx, int terms,
                                real scale, const int32_t *qmask, const int32_t *kmask) {
    const int B = q->shape[0], Tq = q->shape[2], Tk = k->shape[2];
    Tensor *s = NULL;
    if (terms & ATT_C2C) s = op_matmul(t, q, k, 0, 1); /* c2c = q·k^T  [B, A, Tq, Tk] */
    if (terms & ATT_C2P) {
        Tensor *full = op_matmul(t, q, expand_table(t, kr, B), 0, 1); /* q·Kr^T  [B, A, Tq, R] */
        Tensor *g = op_gather_last(t, full, c_idx, Tq, Tk);           /* g[i,j] = full[i, c(i,j)] */
        s = s ? op_add(t, s, g) : g;
    }
    if (terms & ATT_P2C) {
        Tensor *full = op_matmul(t, k, expand_table(t, qr, B), 0, 1); /* k·Qr^T  [B, A, Tk, R] */
        int32_t *ct = arena_alloc(&t->arena, (size_t)Tq * Tk * sizeof(int32_t));
        for (int i = 0; i < Tq; i++)
            for (int j = 0; j < Tk; j++) ct[(long)j * Tq + i] = c_idx[(long)i * Tk + j];
        Tensor *g = op_transpose(t, op_gather_last(t, full, ct, Tk, Tq)); /* g[j,i] = full[j, c(i,j)], -> [i,j] */
        s = s ? op_add(t, s, g) : g;
    }
    return op_softmax_masked(t, op_scale(t, s, scale), qmask, kmask);
}
