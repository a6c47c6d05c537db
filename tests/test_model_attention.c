/* test_model_attention.c — the fused disentangled-attention op against (1) a direct loop over the
 * spec §1.6 formula and (2) the unfused composition of generic ops (forward and every input
 * gradient), for all 7 term subsets with padding; the one-query context of a forward that records nothing
 * (the [CLS] layer) against the op; and the memory bound of one attention block
 * (docs/ARCHITECTURE.md, "Model"): the arena peak of forward + backward stays under the formula
 * and far under the size of a single T×T×C tensor, so none exists. */
#include "tests/testutil.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gradcheck/gradcheck.h"
#include "autograd/base/rng.h"
#include "model/attention.h"
#include "model/encoder.h"
#include "model/init.h"

static Tape T;
static int setup(void **s) { tape_init(&T, 1 << 20); return 0; }
static int teardown(void **s) { tape_free(&T); return 0; }

#if REAL_IS_DOUBLE
#define TOL 1e-12
#else
#define TOL 2e-6
#endif

enum { B = 2, A = 2, TQ = 7, TK = 7, D = 4, R = 9 };

typedef struct {
    Tensor *q, *k, *qr, *kr;
    int32_t c[TQ * TK];
    int32_t qm[B * TQ], km[B * TK];
} Inputs;

static void make_inputs(Inputs *in, int seed) {
    const int sq[4] = {B, A, TQ, D}, sk[4] = {B, A, TK, D}, st[3] = {A, R, D};
    in->q = gradcheck_leaf(4, sq, 1, "q");
    in->k = gradcheck_leaf(4, sk, 1, "k");
    in->qr = gradcheck_leaf(3, st, 1, "qr");
    in->kr = gradcheck_leaf(3, st, 1, "kr");
    gradcheck_fill_uniform(in->q, seed + 1, -2, 2);
    gradcheck_fill_uniform(in->k, seed + 2, -2, 2);
    gradcheck_fill_uniform(in->qr, seed + 3, -2, 2);
    gradcheck_fill_uniform(in->kr, seed + 4, -2, 2);
    for (int i = 0; i < TQ; i++)
        for (int j = 0; j < TK; j++) {
            int v = i - j + 4; /* relative-style with clamping at both ends */
            in->c[i * TK + j] = v < 0 ? 0 : v > R - 1 ? R - 1 : v;
        }
    /* batch 0: two padded positions at the end; batch 1: no padding */
    for (int i = 0; i < TQ; i++) in->qm[i] = in->km[i] = i < TQ - 2;
    for (int i = 0; i < TQ; i++) in->qm[TQ + i] = in->km[TK + i] = 1;
}

static void free_inputs(Inputs *in) {
    gradcheck_leaf_free(in->q);
    gradcheck_leaf_free(in->k);
    gradcheck_leaf_free(in->qr);
    gradcheck_leaf_free(in->kr);
}

/* What the first pass of a comparison keeps: the output (NULL: not compared) and the gradients. */
typedef struct {
    real *out, *grad[5];
} Kept;

/* The comparisons below, one pattern: the backward of Σ o ⊙ w (w uniform in [−½, ½), from seed and
 * test stream sub), then on the first pass keep o and the gradients of x[0 .. n), on a later pass
 * compare with them: a difference beyond tol (0: bit for bit; NaN always) fails, naming `what`. */
static void backward_keep_or_compare(Tensor *o, Tensor *const *x, int n, int seed, int sub, int first, const Kept *k, double tol,
                                     const char *what) {
    real *w = arena_alloc(&T.arena, o->n * sizeof(real));
    for (long e = 0; e < o->n; e++) w[e] = (real)(rng_uniform(seed, rng_stream(RNG_TEST, sub, 0), e) - 0.5);
    tape_backward_from(&T, o, w);
    if (first) {
        if (k->out) memcpy(k->out, o->data, o->n * sizeof(real));
        for (int i = 0; i < n; i++) memcpy(k->grad[i], x[i]->grad, x[i]->n * sizeof(real));
        return;
    }
    for (long e = 0; k->out && e < o->n; e++)
        if (!(fabs(o->data[e] - k->out[e]) <= tol))
            fail_msg("%s: output [%ld] %.9g, first pass %.9g", what, e, (double)o->data[e], (double)k->out[e]);
    for (int i = 0; i < n; i++)
        for (long e = 0; e < x[i]->n; e++)
            if (!(fabs(x[i]->grad[e] - k->grad[i][e]) <= tol))
                fail_msg("%s: gradient of %s [%ld] %.9g, first pass %.9g", what, x[i]->name ? x[i]->name : "?", e, (double)x[i]->grad[e],
                         (double)k->grad[i][e]);
}

static void zero_grads(Tensor *const *x, int n) {
    for (int i = 0; i < n; i++) memset(x[i]->grad, 0, x[i]->n * sizeof(real));
}

/* A pass of the threaded comparisons: the thread count, zero gradients, an empty tape at `step`. */
static void pass_begin(Tensor *const *x, int n, int threads, int step) {
    omp_set_num_threads(threads);
    zero_grads(x, n);
    tape_reset(&T);
    T.step = step;
}

/* Direct formula (spec §1.6–§1.7), in double. */
static void naive_probs(double *P, const Inputs *in, int terms, double scale) {
    for (int b = 0; b < B; b++)
        for (int a = 0; a < A; a++)
            for (int i = 0; i < TQ; i++) {
                double s[TK], mx = -1e300;
                int any = 0;
                for (int j = 0; j < TK; j++) {
                    const real *qi = in->q->data + (((long)b * A + a) * TQ + i) * D;
                    const real *kj = in->k->data + (((long)b * A + a) * TK + j) * D;
                    const int c = in->c[i * TK + j];
                    const real *krc = in->kr->data + ((long)a * R + c) * D, *qrc = in->qr->data + ((long)a * R + c) * D;
                    double v = 0;
                    for (int d = 0; d < D; d++) {
                        if (terms & ATT_C2C) v += (double)qi[d] * kj[d];
                        if (terms & ATT_C2P) v += (double)qi[d] * krc[d];
                        if (terms & ATT_P2C) v += (double)kj[d] * qrc[d];
                    }
                    s[j] = v * scale;
                    if (in->qm[b * TQ + i] && in->km[b * TK + j]) {
                        if (s[j] > mx) mx = s[j];
                        any = 1;
                    }
                }
                double sum = 0;
                for (int j = 0; j < TK; j++) {
                    int kept = any && in->qm[b * TQ + i] && in->km[b * TK + j];
                    s[j] = kept ? exp(s[j] - mx) : 0;
                    sum += s[j];
                }
                for (int j = 0; j < TK; j++) P[(((long)b * A + a) * TQ + i) * TK + j] = sum > 0 ? s[j] / sum : 0;
            }
}

static void fused_matches_formula(void **state) {
    Inputs in;
    make_inputs(&in, 10);
    static double P[B * A * TQ * TK];
    for (int terms = 1; terms <= 7; terms++) {
        tape_reset(&T);
        const double scale = 1 / sqrt(3.0 * D);
        Tensor *p = op_disentangled_attention_probs(&T, in.q, in.k, in.qr, in.kr, in.c, terms, (real)scale, in.qm, in.km);
        naive_probs(P, &in, terms, scale);
        for (long e = 0; e < p->n; e++)
            if (!(fabs(p->data[e] - P[e]) <= TOL)) fail_msg("terms %s: P[%ld] = %.9g, formula %.9g", config_terms_str(terms), e, (double)p->data[e], P[e]);
        /* padded query rows are all zeros, kept rows sum to 1 */
        for (int a = 0; a < A; a++) {
            double s = 0;
            for (int j = 0; j < TK; j++) s += p->data[((0 * A + a) * TQ + TQ - 1) * TK + j];
            assert_true(s == 0);
            s = 0;
            for (int j = 0; j < TK; j++) s += p->data[((1 * A + a) * TQ + 0) * TK + j];
            assert_true(fabs(s - 1) < 10 * TOL);
        }
    }
    free_inputs(&in);
}

/* forward probs and the gradients of Σ P ⊙ W w.r.t. q, k, qr, kr: fused vs unfused */
static void fused_equals_unfused(void **state) {
    Inputs in;
    make_inputs(&in, 20);
    Tensor *x[4] = {in.q, in.k, in.qr, in.kr};
    static real g_fused[4][B * A * TQ * D];
    static real pf[B * A * TQ * TK];
    const Kept kept = {pf, {g_fused[0], g_fused[1], g_fused[2], g_fused[3]}};
    for (int terms = 1; terms <= 7; terms++) {
        const real scale = (real)(1 / sqrt(2.0 * D));
        char what[128];
        snprintf(what, sizeof what, "terms %s, unfused (first pass fused)", config_terms_str(terms));
        for (int pass = 0; pass < 2; pass++) {
            zero_grads(x, 4);
            tape_reset(&T);
            Tensor *p = pass == 0 ? op_disentangled_attention_probs(&T, in.q, in.k, in.qr, in.kr, in.c, terms, scale, in.qm, in.km)
                                  : attention_probs_unfused(&T, in.q, in.k, in.qr, in.kr, in.c, terms, scale, in.qm, in.km);
            backward_keep_or_compare(p, x, 4, 3, 1, pass == 0, &kept, TOL, what);
            if (pass == 0) continue;
            /* a table of a term that is off gets no gradient */
            if (!(terms & ATT_P2C))
                for (long e = 0; e < in.qr->n; e++) assert_true(in.qr->grad[e] == 0);
        }
    }
    free_inputs(&in);
}

/* The dropout fused into the op == the op followed by op_dropout_batch: the same stream (the call
 * takes the next n_random in training, also with p == 0), the same mask for a data-parallel slice
 * (row0 > 0), the same values and the same gradients, bit for bit up to the sign of zero. */
static void fused_dropout_equals_op_then_dropout(void **state) {
    Inputs in;
    make_inputs(&in, 30);
    Tensor *x[4] = {in.q, in.k, in.qr, in.kr};
    static real g0[4][B * A * TQ * D];
    static real p0[B * A * TQ * TK];
    const Kept kept = {p0, {g0[0], g0[1], g0[2], g0[3]}};
    const real scale = (real)(1 / sqrt(3.0 * D));
    const real probs[3] = {(real)0.3, 0, (real)0.1};
    T.training = 1;
    T.step = 5;
    for (int c = 0; c < 3; c++) {
        char what[128];
        snprintf(what, sizeof what, "p %g case %d, op then dropout (first pass fused)", (double)probs[c], c);
        for (int pass = 0; pass < 2; pass++) {
            zero_grads(x, 4);
            tape_reset(&T); /* (clears rows and row0) */
            T.n_random = 7;
            T.rows = c == 2 ? B : 0; /* case 2: this process holds global rows 3.. of a larger batch */
            T.row0 = c == 2 ? 3 : 0;
            Tensor *p = pass == 0 ? op_disentangled_attention_dropout(&T, in.q, in.k, in.qr, in.kr, in.c, ATT_ALL, scale, in.qm, in.km,
                                                                      probs[c])
                                  : op_dropout_batch(&T, op_disentangled_attention_probs(&T, in.q, in.k, in.qr, in.kr, in.c, ATT_ALL,
                                                                                        scale, in.qm, in.km),
                                                     probs[c]);
            assert_int_equal(T.n_random, 8);
            backward_keep_or_compare(p, x, 4, 3, 2, pass == 0, &kept, 0, what);
            if (pass == 0) continue;
            long zeros = 0;
            for (long e = 0; e < p->n; e++) zeros += p->data[e] == 0;
            if (probs[c] > 0) assert_true(zeros > p->n / 20); /* the dropout did drop */
        }
    }
    /* not training: the identity after the op, no draw */
    T.training = 0;
    tape_reset(&T);
    Tensor *p = op_disentangled_attention_dropout(&T, in.q, in.k, in.qr, in.kr, in.c, ATT_ALL, scale, in.qm, in.km, (real)0.3);
    assert_int_equal(T.n_random, 0);
    Tensor *ref = op_disentangled_attention_probs(&T, in.q, in.k, in.qr, in.kr, in.c, ATT_ALL, scale, in.qm, in.km);
    assert_memory_equal(p->data, ref->data, p->n * sizeof(real));
    T.step = 0;
    free_inputs(&in);
}

/* The whole attention block: fused and unfused paths give the same output and parameter grads. */
/* A one-layer encoder of the "test" preset without dropout; terms 0: the preset's attention terms. */
static void one_layer(ModelConfig *cfg, ParamSet *ps, Encoder *e, int terms) {
    char err[256];
    config_preset(cfg, "test");
    if (terms) cfg->att_terms = terms;
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = 0;
    assert_int_equal(config_validate(cfg, err, sizeof err), 0);
    params_init(ps);
    encoder_register(e, ps, cfg, 1, "deberta.", 0);
    params_finalize(ps);
}

static void block_fused_equals_unfused(void **state) {
    ModelConfig cfg;
    ParamSet ps;
    Encoder e;
    one_layer(&cfg, &ps, &e, 0);
    model_init_params(&ps, 0.2, 5);
    model_perturb_params(&ps, 6);
    enum { BB = 2, TT = 11 };
    int32_t mask[BB * TT], ids[BB * TT];
    for (int i = 0; i < BB * TT; i++) {
        mask[i] = !(i >= TT && i % TT >= 8);
        ids[i] = mask[i] ? 1 + i % (cfg.vocab_size - 1) : 0;
    }
    static real out0[BB * TT * 16];
    real *g0 = malloc(ps.total * sizeof(real));
    for (int pass = 0; pass < 2; pass++) {
        g_attention_unfused = pass;
        params_zero_grad(&ps);
        tape_reset(&T);
        Tensor *y = encoder_forward(&T, &e, NULL, ids, mask, BB, TT, NULL);
        tape_backward_from(&T, y, y->data); /* loss = ½ Σ y² */
        if (pass == 0) {
            memcpy(out0, y->data, y->n * sizeof(real));
            memcpy(g0, ps.grad, ps.total * sizeof(real));
            continue;
        }
        for (long i = 0; i < y->n; i++) assert_true(fabs(y->data[i] - out0[i]) < 10 * TOL);
        for (long i = 0; i < ps.total; i++)
            if (!(fabs(ps.grad[i] - g0[i]) <= 100 * TOL)) fail_msg("grad element %ld: fused %.9g unfused %.9g", i, (double)g0[i], (double)ps.grad[i]);
    }
    g_attention_unfused = 0;
    free(g0);
    encoder_free(&e);
    params_free(&ps);
}

/* Memory of one attention block, forward + backward, in bytes (docs/ARCHITECTURE.md "Model"):
 *   M = sizeof(real)·(24·B·T·C + B·A·T·(T + 2R) + 12·R·C + threads·2T·(T + R)) + 12·T² + 4·(T + 1)  (+ headers)
 * (12·T² + 4·(T + 1): two int32 copies of c(i,j) and its run lists, at most one run per entry).  The
 * T×T×C tensor of the naive formulation alone would be B·T·T·C reals. */
static double attention_bound(long Bn, long An, long Tn, long Rn, long Cn) {
    return sizeof(real) * (24.0 * Bn * Tn * Cn + (double)Bn * An * Tn * (Tn + 2 * Rn) + 12.0 * Rn * Cn +
                           (double)omp_get_max_threads() * 2 * Tn * (Tn + Rn)) +
           12.0 * Tn * Tn + 4.0 * (Tn + 1);
}

/* The attention diagnostic on probabilities built by hand: uniform rows over the real keys give
 * entropy/log(n) = 1, self = 1/n and near = (neighbours inside the sequence)/n; rows that put all
 * their mass on the left neighbour give entropy 0, near = local = 1 (row 0 on itself: self = 1). */
static void attention_stats_by_hand(void **state) {
    enum { SB = 2, SA = 1, ST = 5 };
    const int32_t mask[SB * ST] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1}; /* sequence 0: 4 real tokens */
    const int s4[4] = {SB, SA, ST, ST};
    Tensor *P = gradcheck_leaf(4, s4, 0, "P");
    memset(P->data, 0, (size_t)P->n * sizeof(real));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) P->data[i * ST + j] = (real)0.25; /* seq 0, uniform over 4 keys */
    for (int i = 0; i < ST; i++) P->data[ST * ST + i * ST + (i > 0 ? i - 1 : 0)] = 1;  /* seq 1, left neighbour */
    AttentionStats st;
    memset(&st, 0, sizeof st);
    attention_stats_add(&st, P, mask);
    assert_int_equal(st.next, 1);
    assert_true(st.rows[0] == 4 + 5);
    /* seq 0: 4 rows, norm entropy 1 each; near = (1 + 2 + 2 + 1)/4 · 0.25; self 0.25 each
     * seq 1: rows 1..4 entropy 0, near 1, local 1; row 0: self 1 */
    assert_true(fabs(st.norm_entropy[0] - 4.0) < 1e-5);
    assert_true(fabs(st.near[0] - (6 * 0.25 + 4)) < 1e-5);
    assert_true(fabs(st.local[0] - (4 * 3 * 0.25 + 4)) < 1e-5);
    assert_true(fabs(st.self[0] - (4 * 0.25 + 1)) < 1e-5);
    gradcheck_leaf_free(P);
}

/* c [T, T] relative-style, clamped to [0, R) (repeats at both ends); m [B·T]: sequence 0 unpadded, the
 * others with their last 5 positions padded. */
static void schedule_inputs(int32_t *c, int32_t *m, int Bn, int Tn, int Rn) {
    for (int i = 0; i < Tn; i++)
        for (int j = 0; j < Tn; j++) {
            const int v = i - j + Rn / 2;
            c[i * Tn + j] = v < 0 ? 0 : v > Rn - 1 ? Rn - 1 : v;
        }
    for (int i = 0; i < Bn * Tn; i++) m[i] = i < Tn || i % Tn < Tn - 5;
}

/* The backward's two schedules (ops_attention.c): threads owning heads (the default when the heads divide
 * among the threads) and threads owning (b,a) pairs with the tables summed afterwards give the same
 * gradients bit for bit, with every term subset, padding and the fused dropout; also across thread
 * counts (1: heads, serial; 2: heads; 3 with A = 2: pairs), and with the c2p and p2c gradients' runs of
 * equal c(i,j) added run by run (this c's clamped ends: 38 % of the entries continue a run) or scattered
 * element by element.  The forward's probabilities too, and both with the position terms taken run by run
 * in the forward and the c2p runs summed one chain per row (g_attention_run_min 0; by default, at this c's
 * short runs, the forward gathers and the c2p chains of four rows run side by side).  The shape is large
 * enough to run in parallel (B·A·Tq·Tk >= 4096). */
static void backward_schedules_bitwise_equal(void **state) {
    enum { BB = 3, AA = 2, TT = 40, DD = 8, RR = 31 };
    const int sq[4] = {BB, AA, TT, DD}, st[3] = {AA, RR, DD};
    Tensor *x[4] = {gradcheck_leaf(4, sq, 1, "q"), gradcheck_leaf(4, sq, 1, "k"), gradcheck_leaf(3, st, 1, "qr"),
                    gradcheck_leaf(3, st, 1, "kr")};
    for (int i = 0; i < 4; i++) gradcheck_fill_uniform(x[i], 40 + i, -1, 1);
    static int32_t c[TT * TT], m[BB * TT];
    schedule_inputs(c, m, BB, TT, RR);
    static real g[4][BB * AA * TT * DD], out[BB * AA * TT * TT];
    const Kept kept = {out, {g[0], g[1], g[2], g[3]}};
    const int nt0 = omp_get_max_threads();
    /* (threads, g_attention_by_pairs, g_attention_scatter, g_attention_run_min) */
    const int runs[8][4] = {{2, 0, 0, 4}, {2, 1, 0, 4}, {1, 0, 0, 4}, {3, 0, 0, 4},
                            {2, 0, 1, 4}, {3, 0, 1, 4}, {2, 0, 0, 0},  {3, 1, 0, 0}};
    T.training = 1;
    for (int terms = 1; terms <= 7; terms++)
        for (int r = 0; r < 8; r++) {
            g_attention_by_pairs = runs[r][1];
            g_attention_scatter = runs[r][2];
            g_attention_run_min = runs[r][3];
            pass_begin(x, 4, runs[r][0], 3);
            Tensor *p = op_disentangled_attention_dropout(&T, x[0], x[1], x[2], x[3], c, terms, (real)0.2, m, m, (real)0.1);
            char what[112];
            snprintf(what, sizeof what, "terms %s, %d threads, by_pairs %d, scatter %d, run_min %d (first pass: the default)",
                     config_terms_str(terms), runs[r][0], runs[r][1], runs[r][2], runs[r][3]);
            backward_keep_or_compare(p, x, 4, 5, 3, r == 0, &kept, 0, what);
        }
    /* the gradients are not all zero (the comparison compared something) */
    double sum = 0;
    for (long e = 0; e < x[3]->n; e++) sum += fabs(x[3]->grad[e]);
    assert_true(sum > 0);
    omp_set_num_threads(nt0);
    g_attention_by_pairs = 0;
    g_attention_scatter = 0;
    g_attention_run_min = 4;
    T.training = 0;
    for (int i = 0; i < 4; i++) gradcheck_leaf_free(x[i]);
}

/* The op on q, k in the projections' [B, T, A·D] layout (op_disentangled_attention_dropout_bth) == the op on
 * their split_heads copies, and op_attention_context == merge_heads(matmul(P, split_heads(v))): the same
 * values and gradients bit for bit, for every term subset with padding and dropout, on 2 threads (heads
 * schedule), 3 (pairs) and with one tensor as q and k. */
static void interleaved_heads_equal_split_heads(void **state) {
    enum { BB = 3, AA = 2, TT = 40, DD = 8, RR = 31, HH = AA * DD };
    const int s3[3] = {BB, TT, HH}, st[3] = {AA, RR, DD}, sp[4] = {BB, AA, TT, TT};
    Tensor *x[5] = {gradcheck_leaf(3, s3, 1, "q"), gradcheck_leaf(3, s3, 1, "k"), gradcheck_leaf(3, st, 1, "qr"),
                    gradcheck_leaf(3, st, 1, "kr"), gradcheck_leaf(3, s3, 1, "v")};
    Tensor *P = gradcheck_leaf(4, sp, 1, "P");
    for (int i = 0; i < 5; i++) gradcheck_fill_uniform(x[i], 60 + i, -1, 1);
    gradcheck_fill_uniform(P, 66, 0, 1);
    static int32_t c[TT * TT], m[BB * TT];
    schedule_inputs(c, m, BB, TT, RR);
    static real out0[BB * AA * TT * TT], g0[5][BB * TT * HH], gP[BB * AA * TT * TT];
    const Kept kept = {out0, {g0[0], g0[1], g0[2], g0[3]}}, kept_ctx = {out0, {g0[4], gP}};
    const int nt0 = omp_get_max_threads();
    T.training = 1;
    for (int terms = 1; terms <= 8; terms++) /* 8: all terms with one tensor as q and k */
        for (int th = 2; th <= 3; th++)
            for (int pass = 0; pass < 2; pass++) {
                pass_begin(x, 5, th, 6);
                const int tm = terms == 8 ? ATT_ALL : terms;
                Tensor *q = x[0], *k = terms == 8 ? x[0] : x[1], *o;
                if (pass == 0) {
                    Tensor *q4 = op_split_heads(&T, q, AA), *k4 = k == q ? q4 : op_split_heads(&T, k, AA);
                    o = op_disentangled_attention_dropout(&T, q4, k4, x[2], x[3], c, tm, (real)0.2, m, m, (real)0.1);
                } else {
                    o = op_disentangled_attention_dropout_bth(&T, q, k, AA, x[2], x[3], c, tm, (real)0.2, m, m, (real)0.1);
                }
                char what[128];
                snprintf(what, sizeof what, "terms %d, %d threads, [B,T,A*D] (first pass split)", terms, th);
                backward_keep_or_compare(o, x, 4, 5, 4, pass == 0, &kept, 0, what);
            }
    /* the context */
    for (int th = 2; th <= 3; th++)
        for (int pass = 0; pass < 2; pass++) {
            Tensor *vp[2] = {x[4], P};
            pass_begin(vp, 2, th, T.step);
            Tensor *o = pass == 0 ? op_merge_heads(&T, op_matmul(&T, P, op_split_heads(&T, x[4], AA), 0, 0))
                                  : op_attention_context(&T, P, x[4]);
            char what[128];
            snprintf(what, sizeof what, "context, %d threads (first pass: three ops)", th);
            backward_keep_or_compare(o, vp, 2, 5, 5, pass == 0, &kept_ctx, 0, what);
        }
    omp_set_num_threads(nt0);
    T.training = 0;
    for (int i = 0; i < 5; i++) gradcheck_leaf_free(x[i]);
    gradcheck_leaf_free(P);
}

static void attention_memory_bound(void **state) {
    ModelConfig cfg;
    char err[256];
    config_preset(&cfg, "tiny");
    cfg.hidden_size = 64;
    cfg.num_attention_heads = 2;
    cfg.attention_head_size = 32;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0;
    assert_int_equal(config_validate(&cfg, err, sizeof err), 0);
    ParamSet ps;
    params_init(&ps);
    Encoder e;
    encoder_register(&e, &ps, &cfg, 1, "deberta.", 0);
    params_finalize(&ps);
    model_init_params(&ps, 0.02, 1);
    enum { BB = 2, TT = 128 };
    const int C = cfg.hidden_size, s3[3] = {BB, TT, C};
    Tensor *x = gradcheck_leaf(3, s3, 1, "x");
    gradcheck_fill_uniform(x, 9, -1, 1);
    int32_t mask[BB * TT];
    for (int i = 0; i < BB * TT; i++) mask[i] = i % TT < 100 || i < TT;
    Tape t;
    tape_init(&t, 1 << 16);
    t.arena.peak = 0;
    RelContext rc;
    relctx_build(&t, &rc, &cfg, e.rel, e.rel_ln_g, e.rel_ln_b, mask, BB, TT);
    Tensor *y = attention_forward(&t, &cfg, &e.layers[0].att, x, x, &rc);
    tape_backward_from(&t, y, y->data);
    const double peak = (double)t.arena.peak;
    const double bound = attention_bound(BB, cfg.num_attention_heads, TT, rc.n_rows, C) + 65536.0;
    const double ttc = (double)BB * TT * TT * C * sizeof(real);
    print_message("attention block B=%d A=%d T=%d R=%d C=%d: arena peak %.0f bytes, bound %.0f, one T*T*C tensor %.0f\n", BB,
                  cfg.num_attention_heads, TT, rc.n_rows, C, peak, bound, ttc);
    assert_true(peak <= bound);
    assert_true(peak < ttc / 2); /* no T×T×C tensor can exist */
    tape_free(&t);
    gradcheck_leaf_free(x);
    encoder_free(&e);
    params_free(&ps);
}

/* op_disentangled_attention_context == op_attention_context(op_disentangled_attention_dropout_bth(...), v):
 * the same context and gradients (q, k, qr, kr, v) bit for bit, for every term subset with padding,
 * with the attention dropout and without (p = 0), on 2 threads (heads schedule), 3 (pairs) and with one
 * tensor as q and k. */
static void fused_context_equals_two_ops(void **state) {
    enum { BB = 3, AA = 2, TT = 40, DD = 8, RR = 31, HH = AA * DD };
    const int s3[3] = {BB, TT, HH}, st[3] = {AA, RR, DD};
    Tensor *x[5] = {gradcheck_leaf(3, s3, 1, "q"), gradcheck_leaf(3, s3, 1, "k"), gradcheck_leaf(3, st, 1, "qr"),
                    gradcheck_leaf(3, st, 1, "kr"), gradcheck_leaf(3, s3, 1, "v")};
    for (int i = 0; i < 5; i++) gradcheck_fill_uniform(x[i], 70 + i, -1, 1);
    static int32_t c[TT * TT], m[BB * TT];
    schedule_inputs(c, m, BB, TT, RR);
    static real out0[BB * TT * HH], g0[5][BB * TT * HH];
    const Kept kept = {out0, {g0[0], g0[1], g0[2], g0[3], g0[4]}};
    const int nt0 = omp_get_max_threads();
    double gsum[5] = {0};
    T.training = 1;
    for (int terms = 1; terms <= 8; terms++) /* 8: all terms with one tensor as q and k */
        for (int drop = 0; drop < 2; drop++)
            for (int th = 2; th <= 3; th++)
                for (int pass = 0; pass < 2; pass++) {
                    pass_begin(x, 5, th, 6);
                    const int tm = terms == 8 ? ATT_ALL : terms;
                    const real p = drop ? (real)0.1 : 0;
                    Tensor *q = x[0], *k = terms == 8 ? x[0] : x[1], *o;
                    if (pass == 0)
                        o = op_attention_context(&T, op_disentangled_attention_dropout_bth(&T, q, k, AA, x[2], x[3], c, tm, (real)0.2, m, m, p),
                                                 x[4]);
                    else
                        o = op_disentangled_attention_context(&T, q, k, x[4], AA, x[2], x[3], c, tm, (real)0.2, m, m, p);
                    char what[128];
                    snprintf(what, sizeof what, "terms %d, p %g, %d threads, one op (first pass: two)", terms, (double)p, th);
                    backward_keep_or_compare(o, x, 5, 5, 6, pass == 0, &kept, 0, what);
                    for (int i = 0; pass == 1 && i < 5; i++)
                        for (long e = 0; e < x[i]->n; e++) gsum[i] += fabs(x[i]->grad[e]);
                }
    /* every input's gradient was compared somewhere where it is not zero */
    for (int i = 0; i < 5; i++) assert_true(gsum[i] > 0);
    omp_set_num_threads(nt0);
    T.training = 0;
    for (int i = 0; i < 5; i++) gradcheck_leaf_free(x[i]);
}

/* A forward that records nothing (a no-grad scope, no dropout: inference) keeps no [B, A, Tq, Tk] P: the
 * same context bit for bit as the recorded op, for every term subset on 2 and 3 threads, with less than
 * P's bytes of the arena taken (the recorded op takes more than P's). */
static void context_without_record_keeps_no_p(void **state) {
    (void)state;
    enum { BB = 12, AA = 2, TT = 40, DD = 8, RR = 31, HH = AA * DD };
    const int s3[3] = {BB, TT, HH}, st[3] = {AA, RR, DD};
    Tensor *x[5] = {gradcheck_leaf(3, s3, 1, "q"), gradcheck_leaf(3, s3, 1, "k"), gradcheck_leaf(3, st, 1, "qr"),
                    gradcheck_leaf(3, st, 1, "kr"), gradcheck_leaf(3, s3, 1, "v")};
    for (int i = 0; i < 5; i++) gradcheck_fill_uniform(x[i], 90 + i, -1, 1);
    static int32_t c[TT * TT], m[BB * TT];
    schedule_inputs(c, m, BB, TT, RR);
    const size_t pbytes = (size_t)BB * AA * TT * TT * sizeof(real);
    const int nt0 = omp_get_max_threads();
    for (int terms = 1; terms <= 7; terms++)
        for (int th = 2; th <= 3; th++) {
            omp_set_num_threads(th);
            tape_reset(&T);
            const size_t a0 = T.arena.used + T.arena.overflow_used;
            Tensor *o1 = op_disentangled_attention_context(&T, x[0], x[1], x[4], AA, x[2], x[3], c, terms, (real)0.2, m, m, 0);
            const size_t a1 = T.arena.used + T.arena.overflow_used;
            tape_nograd_begin(&T);
            Tensor *o2 = op_disentangled_attention_context(&T, x[0], x[1], x[4], AA, x[2], x[3], c, terms, (real)0.2, m, m, 0);
            tape_nograd_end(&T);
            const size_t a2 = T.arena.used + T.arena.overflow_used;
            assert_true(o1->requires_grad && !o2->requires_grad);
            assert_int_equal(memcmp(o1->data, o2->data, (size_t)o1->n * sizeof(real)), 0);
            if (!(a1 - a0 > pbytes && a2 - a1 < pbytes))
                fail_msg("terms %d, %d threads: arena taken %zu recorded, %zu not recorded; P is %zu bytes", terms, th, a1 - a0,
                         a2 - a1, pbytes);
        }
    omp_set_num_threads(nt0);
    tape_reset(&T);
    for (int i = 0; i < 5; i++) gradcheck_leaf_free(x[i]);
}

/* attention_forward with one query row per sequence in a forward that records nothing (context_one_query: no
 * keys or values, the head's Wkᵀq and Wkᵀqr[c] instead) against the same block recorded (the op on the projected
 * keys and values): every term subset, weights and biases of scale 0.5 (every term moves the output), padded
 * keys, and one sequence whose query is padded. */
static void one_query_context_equals_the_op(void **state) {
    (void)state;
    enum { BB = 3, TT = 13 };
    const double tol = sizeof(real) == 4 ? 1e-5 : 1e-11;
    for (int terms = 1; terms <= 7; terms++) {
        ModelConfig cfg;
        ParamSet ps;
        Encoder e;
        one_layer(&cfg, &ps, &e, terms);
        const uint64_t stream = rng_stream(RNG_TEST, 7100 + (uint64_t)terms, 0);
        for (long i = 0; i < ps.total; i++) ps.data[i] = (real)(0.5 * rng_normal(11, stream, (uint64_t)i));
        const int H = cfg.hidden_size, s3[3] = {BB, TT, H}, q3[3] = {BB, 1, H};
        int32_t mask[BB * TT], qmask[BB];
        for (int i = 0; i < BB * TT; i++) mask[i] = i % TT < TT - 4 * (i / TT); /* 13, 9 and 5 keys */
        tape_reset(&T);
        Tensor *x = tape_tensor(&T, 3, s3, "x"), *q0 = tape_tensor(&T, 3, q3, "q0");
        for (long i = 0; i < x->n; i++) x->data[i] = (real)rng_normal(12, stream, (uint64_t)i);
        for (int b = 0; b < BB; b++) {
            memcpy(q0->data + (long)b * H, x->data + (long)b * TT * H, (size_t)H * sizeof(real));
            qmask[b] = b != 1;
        }
        RelContext rc;
        relctx_build(&T, &rc, &cfg, e.rel, e.rel_ln_g, e.rel_ln_b, mask, BB, TT);
        rc.qmask = qmask;
        Tensor *want = attention_forward(&T, &cfg, &e.layers[0].att, q0, x, &rc); /* recorded: the op */
        tape_nograd_begin(&T);
        Tensor *got = attention_forward(&T, &cfg, &e.layers[0].att, q0, x, &rc);
        tape_nograd_end(&T);
        assert_int_equal(got->n, (long)BB * H);
        double worst = 0;
        for (long i = 0; i < got->n; i++) {
            const double d = fabs((double)got->data[i] - want->data[i]) / (1 + fabs((double)want->data[i]));
            if (!(d <= tol)) fail_msg("terms %d: output %ld (sequence %ld) is %.9g, the op's %.9g", terms, i, i / H,
                                      (double)got->data[i], (double)want->data[i]);
            if (d > worst) worst = d;
        }
        print_message("terms %d: largest difference %.2e\n", terms, worst);
        encoder_free(&e);
        params_free(&ps);
    }
    tape_reset(&T);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fused_matches_formula),
        cmocka_unit_test(fused_equals_unfused),
        cmocka_unit_test(fused_dropout_equals_op_then_dropout),
        cmocka_unit_test(block_fused_equals_unfused),
        cmocka_unit_test(backward_schedules_bitwise_equal),
        cmocka_unit_test(interleaved_heads_equal_split_heads),
        cmocka_unit_test(fused_context_equals_two_ops),
        cmocka_unit_test(context_without_record_keeps_no_p),
        cmocka_unit_test(one_query_context_equals_the_op),
        cmocka_unit_test(attention_memory_bound),
        cmocka_unit_test(attention_stats_by_hand),
    };
    return cmocka_run_group_tests_name("model_attention", tests, setup, teardown);
}
