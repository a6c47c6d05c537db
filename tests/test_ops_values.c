/* test_ops_values.c — forward values (hand-computed or analytic) of every op beyond
 * matmul/linear, the special backward rules (padding row, masked softmax rows, repeated indices),
 * Philox known answers, the dropout mask rule and its select (rselect), dropout statistics and reproducibility, fused == unfused, bitwise repeatability across thread
 * counts, and no allocation in a step after the warm-up step. */
#include "tests/testutil.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gradcheck/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/rmath.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"

static Tape T;
static int setup(void **s) { tape_init(&T, 1 << 20); return 0; }
static int teardown(void **s) { tape_free(&T); return 0; }

/* float build: values to ~1e-6 relative; double build: tighter */
#define TOL (REAL_IS_DOUBLE ? 1e-12 : 2e-6)

__attribute__((noinline)) static Tensor *leaf(int ndim, const int *shape, const double *v) {
    Tensor *x = gradcheck_leaf(ndim, shape, 1, "x");
    if (v)
        for (long i = 0; i < x->n; i++) x->data[i] = (real)v[i];
    return x;
}
static void expect(const Tensor *y, const double *want, long n, double tol) {
    assert_true(n <= y->n); /* the first n elements */
    for (long i = 0; i < n; i++) {
        if (!(fabs((double)y->data[i] - want[i]) <= tol * fmax(1, fabs(want[i]))))
            fail_msg("element %ld: got %.9g, want %.9g", i, (double)y->data[i], want[i]);
    }
}
static void expect_grad(const Tensor *x, const double *want, double tol) {
    for (long i = 0; i < x->n; i++)
        if (!(fabs((double)x->grad[i] - want[i]) <= tol * fmax(1, fabs(want[i]))))
            fail_msg("grad %ld: got %.9g, want %.9g", i, (double)x->grad[i], want[i]);
}
static void ones_backward(Tensor *y) {
    real *g = xmalloc((size_t)y->n * sizeof(real));
    for (long i = 0; i < y->n; i++) g[i] = 1;
    tape_backward_from(&T, y, g);
    free(g);
}

static void elementwise_values(void **state) {
    tape_reset(&T);
    const int s2[1] = {2}, s3[1] = {3}, s22[2] = {2, 2};
    Tensor *a = leaf(1, s2, (double[]){1, 2}), *b = leaf(1, s2, (double[]){3, 4});
    expect(op_add(&T, a, b), (double[]){4, 6}, 2, TOL);
    expect(op_scale(&T, op_add(&T, a, a), (real)2.5), (double[]){5, 10}, 2, TOL);
    Tensor *x = leaf(2, s22, (double[]){1, 2, 3, 4}), *bias = leaf(1, s2, (double[]){10, 20});
    expect(op_bias_add(&T, x, bias), (double[]){11, 22, 13, 24}, 4, TOL);
    Tensor *p = leaf(1, s3, (double[]){1, 2, 3}), *q = leaf(1, s3, (double[]){4, -5, 6});
    expect(op_mul(&T, p, q), (double[]){4, -10, 18}, 3, TOL);
    /* gelu(x) = 0.5 x (1 + erf(x/√2)): Φ(1) = 0.841344746068543, Φ(2) = 0.977249868051821 */
    const int s4[1] = {4};
    Tensor *g = leaf(1, s4, (double[]){0, 1, -1, 2});
    expect(op_gelu(&T, g), (double[]){0, 0.841344746068543, -0.158655253931457, 1.954499736103642}, 4, TOL);
    Tensor *gx = leaf(1, s2, (double[]){0.25, -0.5}), *gb = leaf(1, s2, (double[]){0.75, -0.5});
    expect(op_bias_gelu(&T, gx, gb), (double[]){0.841344746068543, -0.158655253931457}, 2, TOL);
    /* backward: d(a+b)=1 each; d(p*q)/dp = q */
    tape_reset(&T);
    ones_backward(op_mul(&T, p, q));
    expect_grad(p, (double[]){4, -5, 6}, TOL);
    expect_grad(q, (double[]){1, 2, 3}, TOL);
    /* gelu'(0) = 0.5, gelu'(1) = Φ(1) + φ(1) = 0.841344746 + 0.241970725 */
    tape_reset(&T);
    ones_backward(op_gelu(&T, g));
    assert_near(g->grad[0], 0.5, TOL);
    assert_near(g->grad[1], 0.841344746068543 + 0.241970724519143, 10 * TOL);
    Tensor *all[] = {a, b, x, bias, p, q, g, gx, gb};
    for (unsigned i = 0; i < ARRAY_LEN(all); i++) gradcheck_leaf_free(all[i]);
}

static void layernorm_values(void **state) {
    tape_reset(&T);
    const int sx[2] = {2, 4}, sc[1] = {4};
    /* row 0: mean 2.5, var 1.25, xhat = (x − 2.5)/√1.25; row 1 constant: xhat = 0 */
    Tensor *x = leaf(2, sx, (double[]){1, 2, 3, 4, 7, 7, 7, 7});
    Tensor *g = leaf(1, sc, (double[]){1, 2, 1, 2}), *b = leaf(1, sc, (double[]){0, 0, 1, 1});
    Tensor *y = op_layernorm(&T, x, g, b, 0);
    const double r = 1 / sqrt(1.25);
    /* (row 1 has var 0: with eps = 0 it is not finite; only row 0 is checked here) */
    expect(y, (double[]){-1.5 * r, -0.5 * r * 2, 0.5 * r + 1, 1.5 * r * 2 + 1}, 4, 10 * TOL);
    tape_reset(&T);
    y = op_layernorm(&T, x, g, b, (real)1e-5);
    const double r2 = 1 / sqrt(1.25 + 1e-5);
    expect(y, (double[]){-1.5 * r2, -1.0 * r2, 0.5 * r2 + 1, 3 * r2 + 1, 0, 0, 1, 1}, 8, 10 * TOL);
    /* d/db = Σ rows of dy = 2 each; d/dg = Σ_r xhat = row-0 xhat */
    ones_backward(y);
    expect_grad(b, (double[]){2, 2, 2, 2}, TOL);
    expect_grad(g, (double[]){-1.5 * r2, -0.5 * r2, 0.5 * r2, 1.5 * r2}, 10 * TOL);
    gradcheck_leaf_free(x);
    gradcheck_leaf_free(g);
    gradcheck_leaf_free(b);
}

static void softmax_values_and_masks(void **state) {
    tape_reset(&T);
    const int s[3] = {2, 2, 3};
    /* batch 0: every key kept, row 1 has a huge score (max subtraction keeps it finite);
     * batch 1: every key masked (its scores −inf and NaN must not leak) */
    Tensor *x = leaf(3, s, (double[]){1, 2, 3, 1, 1e30, 3, -INFINITY, NAN, 0, 5, 5, 5});
    const int32_t kmask[6] = {1, 1, 1, 0, 0, 0};
    const int32_t qmask[4] = {1, 1, 1, 1};
    Tensor *y = op_softmax_masked(&T, x, qmask, kmask);
    expect(y, (double[]){0.0900305731703805, 0.244728471054798, 0.665240955774822, 0, 1, 0}, 6, TOL);
    for (int i = 6; i < 12; i++) assert_true(y->data[i] == 0);
    tape_reset(&T);
    /* row 1 of batch 0 with key 1 masked: [e^-2, 0, 1]/(1 + e^-2) */
    const int32_t kq[6] = {1, 0, 1, 1, 1, 1}, qq[4] = {0, 1, 1, 1};
    x->data[6] = 0;
    x->data[7] = 0; /* batch 1 now finite */
    y = op_softmax_masked(&T, x, qq, kq);
    for (int i = 0; i < 3; i++) assert_true(y->data[i] == 0); /* masked query row */
    expect(y, (double[]){0, 0, 0, 0.119202922022118, 0, 0.880797077977882}, 6, TOL);
    /* backward: masked entries and masked rows get exactly zero gradient, nothing is NaN */
    real g[12];
    for (int i = 0; i < 12; i++) g[i] = (real)(i + 1);
    tape_backward_from(&T, y, g);
    assert_true(x->grad[0] == 0 && x->grad[1] == 0 && x->grad[2] == 0 && x->grad[4] == 0);
    for (int i = 0; i < 12; i++) assert_false(isnan(x->grad[i]));
    /* Σ_j dx = 0 on a kept row */
    assert_near(x->grad[3] + x->grad[5], 0, REAL_TOL(1e-5, 1e-14));
    gradcheck_leaf_free(x);
}

static void indexing_values(void **state) {
    tape_reset(&T);
    const int st[2] = {3, 2};
    Tensor *table = leaf(2, st, (double[]){0, 1, 2, 3, 4, 5});
    int32_t ids[3] = {2, 0, 2};
    Tensor *e = op_embedding(&T, table, ids, 3, 0);
    ids[0] = 1; /* the op copied the ids: the caller may reuse its buffer */
    expect(e, (double[]){4, 5, 0, 1, 4, 5}, 6, 0);
    ones_backward(e);
    expect_grad(table, (double[]){0, 0, 0, 0, 2, 2}, 0); /* row 0 is padding: no gradient */
    /* gather_last with one shared index row and a repeated index */
    tape_reset(&T);
    Tensor *x = leaf(2, st, (double[]){10, 11, 20, 21, 30, 31});
    const int32_t idx[3] = {1, 1, 0};
    Tensor *gth = op_gather_last(&T, x, idx, 1, 3);
    expect(gth, (double[]){11, 11, 10, 21, 21, 20, 31, 31, 30}, 9, 0);
    ones_backward(gth);
    expect_grad(x, (double[]){1, 2, 1, 2, 1, 2}, 0);
    /* index_select with repeats */
    tape_reset(&T);
    memset(x->grad, 0, 6 * sizeof(real));
    const int32_t rows[3] = {2, 2, 0};
    Tensor *sel = op_index_select(&T, x, rows, 3);
    expect(sel, (double[]){30, 31, 30, 31, 10, 11}, 6, 0);
    ones_backward(sel);
    expect_grad(x, (double[]){1, 1, 0, 0, 2, 2}, 0);
    gradcheck_leaf_free(table);
    gradcheck_leaf_free(x);
}

static void loss_values(void **state) {
    tape_reset(&T);
    const int s[2] = {2, 3};
    Tensor *lg = leaf(2, s, (double[]){0, 0, 0, 1, 2, 3});
    const int32_t tg[2] = {1, 2};
    Tensor *ce = op_cross_entropy(&T, lg, tg);
    assert_int_equal(ce->ndim, 0);
    /* (ln 3 + (−ln softmax([1,2,3])[2])) / 2 */
    expect(ce, (double[]){(log(3.0) + 0.407605964444380) / 2}, 1, TOL);
    tape_backward(&T, ce, 1);
    /* d/dlogits = (softmax − onehot)/N */
    expect_grad(lg, (double[]){1.0 / 6, 1.0 / 6 - 0.5, 1.0 / 6, 0.0900305731703805 / 2, 0.244728471054798 / 2,
                               (0.665240955774822 - 1) / 2},
                TOL);
    /* huge logits stay finite */
    tape_reset(&T);
    const int s1[2] = {1, 2};
    Tensor *big = leaf(2, s1, (double[]){1000, 0});
    const int32_t t1[1] = {1};
    expect(op_cross_entropy(&T, big, t1), (double[]){1000}, 1, TOL);
    /* bce: x = [0, 2, −3, 5], y = [1, 0, 1, ·], valid = [1, 1, 1, 0] */
    tape_reset(&T);
    const int s4[1] = {4};
    Tensor *bl = leaf(1, s4, (double[]){0, 2, -3, 5});
    const int32_t by[4] = {1, 0, 1, 7}, bv[4] = {1, 1, 1, 0};
    Tensor *bce = op_bce_logits(&T, bl, by, bv);
    const double want = (log(2.0) + 2 + log1p(exp(-2.0)) + 3 + log1p(exp(-3.0))) / 3;
    expect(bce, &want, 1, TOL);
    tape_backward(&T, bce, 1);
    /* (sigmoid(x) − y)/3 for valid, 0 for invalid */
    expect_grad(bl, (double[]){(0.5 - 1) / 3, 1 / (1 + exp(-2.0)) / 3, (1 / (1 + exp(3.0)) - 1) / 3, 0}, TOL);
    tape_reset(&T);
    const int32_t none[4] = {0, 0, 0, 0};
    expect(op_bce_logits(&T, bl, by, none), (double[]){0}, 1, 0);
    Tensor *huge = leaf(1, s4, (double[]){100, -100, 100, -100});
    const int32_t hy[4] = {0, 1, 1, 0};
    expect(op_bce_logits(&T, huge, hy, NULL), (double[]){50}, 1, TOL);
    /* sum, mean */
    expect(op_sum(&T, lg), (double[]){6}, 1, TOL);
    Tensor *m = op_mean(&T, lg);
    expect(m, (double[]){1}, 1, TOL);
    tape_reset(&T);
    memset(lg->grad, 0, 6 * sizeof(real));
    tape_backward(&T, op_mean(&T, lg), 1);
    expect_grad(lg, (double[]){1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}, TOL);
    gradcheck_leaf_free(lg);
    gradcheck_leaf_free(big);
    gradcheck_leaf_free(bl);
    gradcheck_leaf_free(huge);
}

static void shape_values(void **state) {
    tape_reset(&T);
    const int s[2] = {2, 3};
    Tensor *x = leaf(2, s, (double[]){1, 2, 3, 4, 5, 6});
    Tensor *tr = op_transpose(&T, x);
    assert_int_equal(tr->shape[0], 3);
    assert_int_equal(tr->shape[1], 2);
    expect(tr, (double[]){1, 4, 2, 5, 3, 6}, 6, 0);
    const int ns[3] = {3, 1, -1};
    Tensor *r = op_reshape(&T, x, 3, ns);
    assert_ptr_equal(r->data, x->data); /* a view */
    assert_int_equal(r->shape[2], 2);
    real g[6] = {1, 2, 3, 4, 5, 6};
    tape_backward_from(&T, r, g);
    expect_grad(x, (double[]){1, 2, 3, 4, 5, 6}, 0);
    /* split_heads [1, 2, 4] H = 2: y[0, h, t, d] = x[0, t, 2h + d] */
    tape_reset(&T);
    const int s3[3] = {1, 2, 4};
    Tensor *h = leaf(3, s3, (double[]){0, 1, 2, 3, 4, 5, 6, 7});
    Tensor *sp = op_split_heads(&T, h, 2);
    assert_int_equal(sp->ndim, 4);
    assert_int_equal(sp->shape[1], 2);
    assert_int_equal(sp->shape[3], 2);
    expect(sp, (double[]){0, 1, 4, 5, 2, 3, 6, 7}, 8, 0);
    Tensor *mg = op_merge_heads(&T, sp);
    assert_int_equal(mg->shape[2], 4);
    expect(mg, (double[]){0, 1, 2, 3, 4, 5, 6, 7}, 8, 0);
    gradcheck_leaf_free(x);
    gradcheck_leaf_free(h);
}

/* Philox4x32-10 against the known-answer vectors published with Random123 (Salmon et al., SC'11;
 * kat_vectors): key = the seed's low and high words, counter = (counter lo, hi, stream lo, hi). */
static void philox_known_answers(void **state) {
    static const struct { uint64_t seed, stream, counter; uint32_t out[4]; } kat[] = {
        {0, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {~0ull, ~0ull, ~0ull, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull, {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t w[4], many[4 * 5];
        rng_block(kat[i].seed, kat[i].stream, kat[i].counter, w);
        assert_memory_equal(w, kat[i].out, sizeof w);
        /* rng_blocks: block k of a run is rng_block of counter first + k (here across the 2^64 wrap) */
        rng_blocks(kat[i].seed, kat[i].stream, kat[i].counter - 2, 5, many);
        assert_memory_equal(many + 8, kat[i].out, sizeof w);
        /* longer runs take the vector path (groups of 32 counters with AVX-512, 16 with AVX2) and the
         * one-by-one rest; the second run's low counter word wraps after 41 blocks, so its second group
         * falls back to one by one before the wrap */
        const uint64_t firsts[2] = {kat[i].counter ^ 1000, 0x7ffffffffull - 40};
        for (int f = 0; f < 2; f++) {
            uint32_t run[4 * 53], one[4];
            rng_blocks(kat[i].seed, kat[i].stream, firsts[f], 53, run);
            for (int k = 0; k < 53; k++) {
                rng_block(kat[i].seed, kat[i].stream, firsts[f] + (uint64_t)k, one);
                if (memcmp(run + 4 * k, one, sizeof one))
                    fail_msg("vector %zu, run %d: block %d differs from rng_block", i, f, k);
            }
        }
    }
}

/* The keep mask is the documented counter rule (ops_dropout.c): element i of a tensor that starts
 * at global element g0 is kept iff word (g0 + i) % 4 of rng_block(seed, stream, (g0 + i) / 4) is
 * >= floor(p · 2^32), for every length, for slices of a data-parallel batch that start inside a
 * block, and on the threaded path (n large). */
static void dropout_mask_is_the_counter_rule(void **state) {
    static const struct { int rows, cols, row0, global_rows; } cases[] = {
        {1, 1003, 0, 0}, {3, 7, 5, 16}, {2, 5, 1, 4}, {7, 14287, 3, 13}, {1, 100003, 0, 0},
    };
    const real p = (real)0.3;
    const uint32_t thr = (uint32_t)(0.3 * 4294967296.0);
    T.training = 1;
    T.step = 41;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int sh[2] = {cases[c].rows, cases[c].cols};
        Tensor *x = leaf(2, sh, NULL);
        for (long i = 0; i < x->n; i++) x->data[i] = (real)(1 + i % 7);
        tape_reset(&T);
        T.row0 = cases[c].row0;
        T.rows = cases[c].global_rows ? cases[c].rows : 0;
        const uint64_t stream = rng_stream(RNG_DROPOUT, T.step, 0);
        Tensor *y = cases[c].global_rows ? op_dropout_batch(&T, x, p) : op_dropout(&T, x, p);
        const int64_t g0 = cases[c].global_rows ? (int64_t)cases[c].row0 * cases[c].cols : 0;
        long bad = 0;
        for (long i = 0; i < x->n; i++) {
            uint32_t w[4];
            rng_block(T.seed, stream, (uint64_t)((g0 + i) / 4), w);
            const real want = w[(g0 + i) % 4] >= thr ? x->data[i] * (1 / (1 - p)) : 0;
            bad += y->data[i] != want;
        }
        if (bad) fail_msg("case %zu (%d x %d, row0 %d): %ld elements differ from the counter rule", c, cases[c].rows,
                          cases[c].cols, cases[c].row0, bad);
        gradcheck_leaf_free(x);
    }
    T.row0 = 0;
    T.rows = 0;
    T.training = 0;
    T.step = 0;
}

static void dropout_rate_reproducibility_and_identity(void **state) {
    const int s[1] = {100000};
    Tensor *x = leaf(1, s, NULL);
    const long n = x->n; /* (tensor headers in the arena die at tape_reset) */
    for (long i = 0; i < x->n; i++) x->data[i] = 1;
    /* not training: identity, no node, no draw */
    tape_reset(&T);
    T.training = 0;
    assert_ptr_equal(op_dropout(&T, x, (real)0.3), x);
    assert_int_equal(T.n_random, 0);
    assert_int_equal(T.n_nodes, 0);
    /* training: keep rate 0.7 within 5 sigma, kept values 1/0.7 */
    T.training = 1;
    T.step = 17;
    Tensor *y = op_dropout(&T, x, (real)0.3);
    assert_int_equal(T.n_random, 1);
    long kept = 0;
    for (long i = 0; i < y->n; i++) {
        if (y->data[i] != 0) {
            kept++;
            assert_true(y->data[i] == (real)1 / (1 - (real)0.3));
        }
    }
    double rate = (double)kept / y->n, sigma = sqrt(0.7 * 0.3 / y->n);
    if (!(fabs(rate - 0.7) <= 5 * sigma)) fail_msg("keep rate %.5f, expected 0.7 +- %.5f", rate, 5 * sigma);
    real *first = xmalloc(n * sizeof(real));
    memcpy(first, y->data, n * sizeof(real));
    /* the second call of the step draws another mask */
    Tensor *y2 = op_dropout(&T, x, (real)0.3);
    assert_int_equal(T.n_random, 2);
    assert_true(memcmp(first, y2->data, n * sizeof(real)) != 0);
    /* same (seed, step, call index) after a reset: the same mask; another step: another mask */
    tape_reset(&T);
    assert_int_equal(T.n_random, 0);
    Tensor *y3 = op_dropout(&T, x, (real)0.3);
    assert_memory_equal(first, y3->data, n * sizeof(real));
    tape_reset(&T);
    T.step = 18;
    Tensor *y4 = op_dropout(&T, x, (real)0.3);
    assert_true(memcmp(first, y4->data, n * sizeof(real)) != 0);
    /* p = 0 in training: identity, but the call index still advances (call sites keep their k) */
    tape_reset(&T);
    assert_ptr_equal(op_dropout(&T, x, 0), x);
    assert_int_equal(T.n_random, 1);
    /* backward: dx = mask / (1 − p) */
    tape_reset(&T);
    T.step = 17;
    memset(x->grad, 0, x->n * sizeof(real));
    Tensor *y5 = op_dropout(&T, x, (real)0.3);
    ones_backward(y5);
    for (long i = 0; i < x->n; i++) assert_true(x->grad[i] == first[i]);
    T.training = 0;
    T.step = 0;
    free(first);
    gradcheck_leaf_free(x);
}

/* Fused ops equal their unfused compositions (values and gradients). */
static void fused_equals_unfused(void **state) {
    const int sx[2] = {37, 50}, sb[1] = {50};
    Tensor *x = gradcheck_leaf(2, sx, 1, "x"), *b = gradcheck_leaf(1, sb, 1, "b");
    gradcheck_fill_uniform(x, 1, -3, 3);
    gradcheck_fill_uniform(b, 2, -1, 1);
    real *gx = xmalloc(x->n * sizeof(real)), *gb = xmalloc(b->n * sizeof(real)), *y1 = xmalloc(x->n * sizeof(real));
    tape_reset(&T);
    Tensor *y = op_bias_gelu(&T, x, b);
    memcpy(y1, y->data, x->n * sizeof(real));
    ones_backward(y);
    memcpy(gx, x->grad, x->n * sizeof(real));
    memcpy(gb, b->grad, b->n * sizeof(real));
    memset(x->grad, 0, x->n * sizeof(real));
    memset(b->grad, 0, b->n * sizeof(real));
    tape_reset(&T);
    y = op_gelu(&T, op_bias_add(&T, x, b));
    /* same rounding of x + b, then gelu; vector (libmvec) and scalar erf may differ by a few ulp */
    for (long i = 0; i < x->n; i++) assert_near(y1[i], y->data[i], REAL_TOL(1e-6, 1e-15));
    ones_backward(y);
    for (long i = 0; i < x->n; i++) assert_near(gx[i], x->grad[i], REAL_TOL(1e-6, 1e-14));
    for (long i = 0; i < b->n; i++) assert_near(gb[i], b->grad[i], REAL_TOL(1e-4, 1e-13));
    free(gx);
    free(gb);
    free(y1);
    gradcheck_leaf_free(x);
    gradcheck_leaf_free(b);
}

/* The leaves of the dropout_add_layernorm tests: y0, x0 [3, 100, 96] in [-2, 2], the gain in [0.5, 1.5] and
 * the bias in [-0.5, 0.5] [96], drawn with seeds seed .. seed + 3. */
static void daln_leaves(Tensor *lv[4], int requires_grad, uint64_t seed) {
    const int sx[3] = {3, 100, 96}, sc[1] = {96};
    const char *names[4] = {"y0", "x0", "g", "b"};
    const double lo[4] = {-2, -2, 0.5, -0.5}, hi[4] = {2, 2, 1.5, 0.5};
    for (int i = 0; i < 4; i++) {
        lv[i] = i < 2 ? gradcheck_leaf(3, sx, requires_grad, names[i]) : gradcheck_leaf(1, sc, requires_grad, names[i]);
        gradcheck_fill_uniform(lv[i], seed + (uint64_t)i, lo[i], hi[i]);
    }
}

/* op_dropout_add_layernorm == op_layernorm(op_add(op_dropout_batch(y, p), res)) bit for bit: output, every
 * gradient (res's both assigned and added to: res also feeds a later op), the dropout stream taken; in
 * training with p 0.1 (rows straddling the dropout's 256-element chunks, a data-parallel slice with
 * row0 > 0), with p 0 and outside training (the identity), with and without g, b. */
static void dropout_add_layernorm_equals_three_ops(void **state) {
    enum { NB = 3 };
    Tensor *lv[4];
    daln_leaves(lv, 1, 21);
    Tensor *y0 = lv[0], *x0 = lv[1], *g = lv[2], *b = lv[3];
    const long n = y0->n;
    real *w = xmalloc(n * sizeof(real)), *out0 = xmalloc(n * sizeof(real)), *g0[4];
    for (int i = 0; i < 4; i++) g0[i] = xmalloc(lv[i]->n * sizeof(real));
    for (long e = 0; e < n; e++) w[e] = (real)(rng_uniform(7, rng_stream(RNG_TEST, 9, 0), e) - 0.5);
    const double probs[4] = {0.1, 0.1, 0, 0.1};
    const int training[4] = {1, 1, 1, 0}, affine[4] = {1, 0, 1, 1};
    long dropped = 0;
    for (int c = 0; c < 4; c++) {
        uint32_t nr[2];
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < 4; i++) memset(lv[i]->grad, 0, lv[i]->n * sizeof(real));
            tape_reset(&T);
            T.training = training[c];
            T.step = 4;
            T.n_random = 2;
            T.rows = c == 0 ? NB : 0; /* case 0: rows 5.. of a larger batch */
            T.row0 = c == 0 ? 5 : 0;
            Tensor *y = op_scale(&T, y0, (real)2), *res = op_scale(&T, x0, (real)0.75);
            Tensor *gg = affine[c] ? g : NULL, *bb = affine[c] ? b : NULL;
            Tensor *o = pass == 0 ? op_dropout_add_layernorm(&T, y, (real)probs[c], res, gg, bb, (real)1e-5)
                                  : op_layernorm(&T, op_add(&T, op_dropout_batch(&T, y, (real)probs[c]), res), gg, bb, (real)1e-5);
            nr[pass] = T.n_random;
            Tensor *top = op_add(&T, o, op_scale(&T, res, (real)0.5)); /* res's gradient: assigned here, added by o's */
            tape_backward_from(&T, top, w);
            if (pass == 0) {
                memcpy(out0, o->data, n * sizeof(real));
                for (int i = 0; i < 4; i++) memcpy(g0[i], lv[i]->grad, lv[i]->n * sizeof(real));
                continue;
            }
            assert_int_equal(nr[0], nr[1]);
            for (long e = 0; e < n; e++)
                if (o->data[e] != out0[e]) fail_msg("case %d: out[%ld] fused %.9g, three ops %.9g", c, e, (double)out0[e], (double)o->data[e]);
            for (int i = 0; i < 4; i++)
                for (long e = 0; e < lv[i]->n; e++)
                    if (lv[i]->grad[e] != g0[i][e])
                        fail_msg("case %d: grad %d [%ld] fused %.9g, three ops %.9g", c, i, e, (double)g0[i][e], (double)lv[i]->grad[e]);
            if (c == 0)
                for (long e = 0; e < n; e++) dropped += y0->grad[e] == 0;
        }
    }
    assert_true(dropped > n / 20 && dropped < n / 5); /* the dropout did drop (~10 %) */
    T.training = 0;
    T.rows = 0;
    T.row0 = 0;
    for (int i = 0; i < 4; i++) {
        free(g0[i]);
        gradcheck_leaf_free(lv[i]);
    }
    free(w);
    free(out0);
}

/* op_dropout_add_layernorm_over in a no-grad scope: its output shares res's data and holds
 * op_dropout_add_layernorm's bits, with the same dropout stream taken; in training with p 0.1 and outside
 * training, with and without g, b. */
static void dropout_add_layernorm_over_writes_res(void **state) {
    Tensor *lv[4];
    daln_leaves(lv, 0, 31);
    Tensor *y0 = lv[0], *x0 = lv[1], *g = lv[2], *b = lv[3];
    const long n = y0->n;
    real *want = xmalloc(n * sizeof(real));
    for (int c = 0; c < 3; c++) {
        const int training = c != 1, affine = c != 2;
        uint32_t nr[2];
        for (int pass = 0; pass < 2; pass++) {
            tape_reset(&T);
            T.training = training;
            T.step = 4;
            T.n_random = 2;
            tape_nograd_begin(&T);
            Tensor *y = op_scale(&T, y0, (real)2), *res = op_scale(&T, x0, (real)0.75);
            Tensor *gg = affine ? g : NULL, *bb = affine ? b : NULL;
            Tensor *o = pass == 0 ? op_dropout_add_layernorm(&T, y, (real)0.1, res, gg, bb, (real)1e-5)
                                  : op_dropout_add_layernorm_over(&T, y, (real)0.1, res, gg, bb, (real)1e-5);
            tape_nograd_end(&T);
            nr[pass] = T.n_random;
            if (pass == 0) {
                memcpy(want, o->data, n * sizeof(real));
                continue;
            }
            if (o->data != res->data || o->n != n) fail_msg("case %d: the output is not written over res", c);
            assert_int_equal(nr[0], nr[1]);
            for (long e = 0; e < n; e++)
                if (o->data[e] != want[e]) fail_msg("case %d: out[%ld] over res %.9g, the op %.9g", c, e, (double)o->data[e], (double)want[e]);
        }
    }
    T.training = 0;
    free(want);
    for (int i = 0; i < 4; i++) gradcheck_leaf_free(lv[i]);
}

/* A graph of every non-BLAS op, big enough for the kernels to run multi-threaded. */
enum { GR = 512, GC = 96, GV = 40 };
static Tensor *LX, *LT, *LG, *LB;
static int32_t G_ids[GR], G_tg[GR], G_idx[8 * GC], G_valid[GR], G_bt[GR * GC];

static void graph_leaves(void) {
    const int sx[2] = {GR, GC}, st[2] = {GV, GC}, sc[1] = {GC};
    LX = gradcheck_leaf(2, sx, 1, "x");
    LT = gradcheck_leaf(2, st, 1, "table");
    LG = gradcheck_leaf(1, sc, 1, "g");
    LB = gradcheck_leaf(1, sc, 1, "b");
    gradcheck_fill_uniform(LX, 11, -1, 1);
    gradcheck_fill_uniform(LT, 12, -1, 1);
    gradcheck_fill_uniform(LG, 13, 0.5, 1.5);
    gradcheck_fill_uniform(LB, 14, -0.5, 0.5);
    for (int i = 0; i < GR; i++) {
        G_ids[i] = (i * 7) % GV;
        G_tg[i] = (i * 5) % GC;
        G_valid[i] = i % 3 != 0;
    }
    for (int i = 0; i < 8 * GC; i++) G_idx[i] = (i * 13) % GC;
    for (int i = 0; i < GR * GC; i++) G_bt[i] = (i * 31) % 7 < 3;
}
static void graph_free(void) {
    gradcheck_leaf_free(LX);
    gradcheck_leaf_free(LT);
    gradcheck_leaf_free(LG);
    gradcheck_leaf_free(LB);
}

/* One training step of the graph on tape t: forward, backward, leaves' grads zeroed first.
 * Returns the loss. */
static real graph_step(Tape *t) {
    memset(LX->grad, 0, LX->n * sizeof(real));
    memset(LT->grad, 0, LT->n * sizeof(real));
    memset(LG->grad, 0, LG->n * sizeof(real));
    memset(LB->grad, 0, LB->n * sizeof(real));
    t->training = 1;
    t->step = 3;
    const int s3[3] = {4, GR / 4, GC}, s2[2] = {GR, GC}, sm3[3] = {8, GR / 8, GC}, flat[1] = {GR * GC};
    Tensor *h = op_add(t, op_embedding(t, LT, G_ids, GR, 1), LX);             /* [R, C] */
    h = op_layernorm(t, h, LG, LB, (real)1e-5);
    h = op_bias_gelu(t, h, LB);
    h = op_dropout(t, h, (real)0.1);
    h = op_mul(t, h, op_scale(t, op_gelu(t, LX), (real)0.5));
    Tensor *h4 = op_split_heads(t, op_reshape(t, h, 3, s3), 4);                 /* [4, 4, R/4, C/4] */
    h4 = op_transpose(t, op_transpose(t, h4));
    h = op_reshape(t, op_merge_heads(t, h4), 2, s2);                            /* [R, C] */
    Tensor *gth = op_reshape(t, op_gather_last(t, h, G_idx, 8, GC), 3, sm3);    /* [8, R/8, C] */
    Tensor *sm = op_reshape(t, op_softmax_masked(t, gth, G_valid, NULL), 2, s2);
    Tensor *sel = op_index_select(t, sm, G_tg, GR / 2);                          /* [R/2, C] */
    Tensor *ce = op_cross_entropy(t, sel, G_tg);
    Tensor *bce = op_bce_logits(t, op_reshape(t, h, 1, flat), G_bt, NULL);
    Tensor *loss = op_add(t, op_add(t, ce, bce), op_add(t, op_scale(t, op_sum(t, sm), (real)1e-3), op_mean(t, h)));
    tape_backward(t, loss, 1);
    t->training = 0;
    return loss->data[0];
}

/* Bitwise identical loss and gradients with 1, 2 and 3 threads: every kernel either writes
 * disjoint outputs or reduces in an order fixed independently of the thread count. */
static void bitwise_repeatable_across_thread_counts(void **state) {
    graph_leaves();
    const int max_threads = omp_get_max_threads();
    real loss[3];
    real *grads[3];
    const long ng = LX->n + LT->n + LG->n + LB->n;
    for (int k = 0; k < 3; k++) {
        omp_set_num_threads(k + 1);
        tape_reset(&T);
        loss[k] = graph_step(&T);
        grads[k] = xmalloc(ng * sizeof(real));
        real *g = grads[k];
        memcpy(g, LX->grad, LX->n * sizeof(real));
        memcpy(g + LX->n, LT->grad, LT->n * sizeof(real));
        memcpy(g + LX->n + LT->n, LG->grad, LG->n * sizeof(real));
        memcpy(g + LX->n + LT->n + LG->n, LB->grad, LB->n * sizeof(real));
    }
    omp_set_num_threads(max_threads);
    assert_true(isfinite(loss[0]));
    for (int k = 1; k < 3; k++) {
        assert_memory_equal(&loss[0], &loss[k], sizeof(real));
        assert_memory_equal(grads[0], grads[k], ng * sizeof(real));
    }
    /* the padding row 1 of the table got no gradient, the others did */
    for (int c = 0; c < GC; c++) assert_true(LT->grad[GC + c] == 0);
    for (int k = 0; k < 3; k++) free(grads[k]);
    graph_free();
}

/* After one warm-up step (graph, backward, tape_reset: the arena grows to the step's peak) an
 * identical second step performs no heap allocation through the x* helpers. */
static void second_step_does_no_allocation(void **state) {
    graph_leaves();
    Tape t2;
    tape_init(&t2, 4096); /* far too small: the first step overflows */
    graph_step(&t2);
    tape_reset(&t2);
    const size_t cap_after_warmup = t2.arena.cap;
    const uint64_t before = g_alloc_count;
    real l2 = graph_step(&t2);
    tape_reset(&t2);
    real l3 = graph_step(&t2);
    tape_reset(&t2);
    assert_true(g_alloc_count == before);
    assert_true(t2.arena.cap == cap_after_warmup);
    assert_memory_equal(&l2, &l3, sizeof(real));
    tape_free(&t2);
    graph_free();
}

/* rselect (autograd/rmath.h), the dropout kernels' mask select: the bits of k ? v : other for every pair of
 * special and ordinary values (±0, ±inf, NaN, subnormal, 1.5), both masks. */
static void rselect_is_the_conditional(void **state) {
    const real vals[] = {0, -(real)0, INFINITY, -INFINITY, NAN, -(real)1.5, (real)1.5, (REAL_IS_DOUBLE ? 4.9e-324 : 1.4e-45f)};
    const int nv = (int)(sizeof vals / sizeof vals[0]);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < nv; i++)
            for (int j = 0; j < nv; j++) {
                const real got = rselect((uint8_t)k, vals[i], vals[j]), want = k ? vals[i] : vals[j];
                if (memcmp(&got, &want, sizeof got)) fail_msg("rselect(%d, %g, %g) = %g: not the bits of %g", k, (double)vals[i], (double)vals[j], (double)got, (double)want);
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(elementwise_values),
        cmocka_unit_test(layernorm_values),
        cmocka_unit_test(softmax_values_and_masks),
        cmocka_unit_test(indexing_values),
        cmocka_unit_test(loss_values),
        cmocka_unit_test(shape_values),
        cmocka_unit_test(philox_known_answers),
        cmocka_unit_test(dropout_mask_is_the_counter_rule),
        cmocka_unit_test(rselect_is_the_conditional),
        cmocka_unit_test(dropout_rate_reproducibility_and_identity),
        cmocka_unit_test(fused_equals_unfused),
        cmocka_unit_test(dropout_add_layernorm_equals_three_ops),
        cmocka_unit_test(dropout_add_layernorm_over_writes_res),
        cmocka_unit_test(bitwise_repeatable_across_thread_counts),
        cmocka_unit_test(second_step_does_no_allocation),
    };
    return cmocka_run_group_tests_name("ops_values", tests, setup, teardown);
}
