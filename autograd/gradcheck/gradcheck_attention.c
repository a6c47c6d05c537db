/* gradcheck_attention.c — see gradcheck_attention.h */
#include "autograd/gradcheck/gradcheck_attention.h"
#include "autograd/ops_attention.h"
#include <math.h>

typedef struct {
    int terms;
    const int32_t *c, *qmask, *kmask;
    real scale;
    real dropout; /* > 0: the fused-dropout form, in training mode (the mask is fixed by seed, step, call) */
    int same_qk;  /* k is the q tensor itself (leaf x[1] unused) */
    int bth;      /* q, k are [B, T, A·D] (op_disentangled_attention_dropout_bth, A heads) */
    int context;  /* with bth: op_disentangled_attention_context, leaf x[4] = v */
} DACtx;

/* leaves: q, k, qr, kr (and v) */
static Tensor *g_attention(Tape *t, Tensor **x, int n, void *ctx) {
    const DACtx *c = ctx;
    Tensor *k = c->same_qk ? x[0] : x[1];
    if (c->context) {
        const int was = t->training;
        t->training = 1;
        Tensor *y = op_disentangled_attention_context(t, x[0], k, x[4], c->bth, x[2], x[3], c->c, c->terms, c->scale, c->qmask,
                                                      c->kmask, c->dropout);
        t->training = was;
        return y;
    }
    if (c->dropout <= 0) return op_disentangled_attention_probs(t, x[0], k, x[2], x[3], c->c, c->terms, c->scale, c->qmask, c->kmask);
    const int was = t->training;
    t->training = 1;
    Tensor *y = c->bth ? op_disentangled_attention_dropout_bth(t, x[0], k, c->bth, x[2], x[3], c->c, c->terms, c->scale, c->qmask,
                                                               c->kmask, c->dropout)
                       : op_disentangled_attention_dropout(t, x[0], k, x[2], x[3], c->c, c->terms, c->scale, c->qmask, c->kmask,
                                                           c->dropout);
    t->training = was;
    return y;
}

/* B=2, A=2, D=3, R=5; Tq, Tk given; masks optional; table rank 3 or 4; dropout > 0: fused dropout;
 * same_qk: k is q (Tq = Tk); bth: q, k are [B, T, A·D] (op_disentangled_attention_dropout_bth); bth == 2:
 * the fused context too (op_disentangled_attention_context, v [B, Tk, A·D], training, dropout >= 0). */
static GCResult run_case_p(Tape *t, int terms, int Tq, int Tk, const int32_t *qmask, const int32_t *kmask, int table4, real dropout,
                           int same_qk, int bth) {
    enum { B = 2, A = 2, D = 3, R = 5 };
    int32_t c[8 * 8];
    /* a relative-style index with repeats: clamp(i − j + 2, 0, R − 1) */
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) {
            int v = i - j + 2;
            c[i * Tk + j] = v < 0 ? 0 : v > R - 1 ? R - 1 : v;
        }
    const int sq[4] = {B, A, Tq, D}, sk[4] = {B, A, Tk, D}, sq3[3] = {B, Tq, A * D}, sk3[3] = {B, Tk, A * D};
    const int st3[3] = {A, R, D}, st4[4] = {1, A, R, D};
    Tensor *x[5];
    const int nx = bth == 2 ? 5 : 4;
    if (bth == 2) x[4] = gradcheck_leaf(3, sk3, 1, "v");
    x[0] = bth ? gradcheck_leaf(3, sq3, 1, "q") : gradcheck_leaf(4, sq, 1, "q");
    x[1] = bth ? gradcheck_leaf(3, sk3, 1, "k") : gradcheck_leaf(4, sk, 1, "k");
    x[2] = table4 ? gradcheck_leaf(4, st4, 1, "qr") : gradcheck_leaf(3, st3, 1, "qr");
    x[3] = table4 ? gradcheck_leaf(4, st4, 1, "kr") : gradcheck_leaf(3, st3, 1, "kr");
    for (int i = 0; i < nx; i++) gradcheck_fill_uniform(x[i], 200 + i, -1.0, 1.0);
    /* the op ignores the table of a term that is off: not checked */
    if (!(terms & ATT_P2C)) x[2]->requires_grad = 0;
    if (!(terms & ATT_C2P)) x[3]->requires_grad = 0;
    if (same_qk) x[1]->requires_grad = 0;
    int nterms = !!(terms & ATT_C2C) + !!(terms & ATT_C2P) + !!(terms & ATT_P2C);
    DACtx ctx = {terms, c, qmask, kmask, (real)(1.0 / sqrt(3.0 * nterms)), dropout, same_qk, bth ? A : 0, bth == 2};
    GCResult r = gradcheck_elements(t, g_attention, x, nx, &ctx, 0);
    for (int i = 0; i < nx; i++) gradcheck_leaf_free(x[i]);
    return r;
}

static GCResult run_case(Tape *t, int terms, int Tq, int Tk, const int32_t *qmask, const int32_t *kmask, int table4) {
    return run_case_p(t, terms, Tq, Tk, qmask, kmask, table4, 0, 0, 0);
}

/* g_attention reads x[2]/x[3] only when the term is on (the op ignores qr/kr otherwise). */
GCResult gradcheck_attention_c2c(Tape *t) { return run_case(t, ATT_C2C, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_c2p(Tape *t) { return run_case(t, ATT_C2P, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_p2c(Tape *t) { return run_case(t, ATT_P2C, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_c2c_c2p(Tape *t) { return run_case(t, ATT_C2C | ATT_C2P, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_c2c_p2c(Tape *t) { return run_case(t, ATT_C2C | ATT_P2C, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_c2p_p2c(Tape *t) { return run_case(t, ATT_C2P | ATT_P2C, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_all(Tape *t) { return run_case(t, ATT_ALL, 4, 4, NULL, NULL, 0); }
GCResult gradcheck_attention_all_padded(Tape *t) {
    /* batch 0: last query row and last key padded; batch 1: fully padded (every row all zeros) */
    static const int32_t m[8] = {1, 1, 1, 0, 0, 0, 0, 0};
    return run_case(t, ATT_ALL, 4, 4, m, m, 0);
}
GCResult gradcheck_attention_rect(Tape *t) {
    static const int32_t qm[6] = {1, 1, 0, 1, 1, 1}, km[10] = {1, 1, 1, 1, 0, 1, 0, 1, 1, 1};
    return run_case(t, ATT_ALL, 3, 5, qm, km, 1);
}
GCResult gradcheck_attention_dropout(Tape *t) {
    static const int32_t m[8] = {1, 1, 1, 0, 1, 1, 1, 1};
    return run_case_p(t, ATT_ALL, 4, 4, m, m, 0, (real)0.3, 0, 0);
}
/* q, k in the projections' [B, T, A·D] layout, padded, with the fused dropout; and q = k in it */
GCResult gradcheck_attention_bth(Tape *t) {
    static const int32_t qm[6] = {1, 1, 0, 1, 1, 1}, km[10] = {1, 1, 1, 1, 0, 1, 0, 1, 1, 1};
    return run_case_p(t, ATT_ALL, 3, 5, qm, km, 0, (real)0.3, 0, 1);
}
GCResult gradcheck_attention_bth_same_qk(Tape *t) { return run_case_p(t, ATT_ALL, 4, 4, NULL, NULL, 0, (real)0.2, 1, 1); }
/* one tensor as q and k: its gradient is written by the q and the k parts of the backward */
GCResult gradcheck_attention_same_qk(Tape *t) { return run_case_p(t, ATT_ALL, 4, 4, NULL, NULL, 0, 0, 1, 0); }
GCResult gradcheck_attention_same_qk_p2c(Tape *t) { return run_case_p(t, ATT_P2C, 4, 4, NULL, NULL, 0, 0, 1, 0); }
/* the fused context: P, dropout and P · v in one op, padded, Tq != Tk; without a dropout (p = 0); with
 * one term and q = k */
GCResult gradcheck_attention_context_fused(Tape *t) {
    static const int32_t qm[6] = {1, 1, 0, 1, 1, 1}, km[10] = {1, 1, 1, 1, 0, 1, 0, 1, 1, 1};
    return run_case_p(t, ATT_ALL, 3, 5, qm, km, 0, (real)0.3, 0, 2);
}
GCResult gradcheck_attention_context_nodrop(Tape *t) { return run_case_p(t, ATT_ALL, 4, 4, NULL, NULL, 1, 0, 0, 2); }
GCResult gradcheck_attention_context_c2p_same_qk(Tape *t) { return run_case_p(t, ATT_C2P, 4, 4, NULL, NULL, 0, (real)0.2, 1, 2); }
