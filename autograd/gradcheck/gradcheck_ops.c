/* gradcheck_ops.c — one or more finite-difference cases per op (see gradcheck_ops.h).
 * Each case builds small random leaves (edge cases included: size-1 dims, fully masked rows,
 * repeated indices), checks every element, frees its leaves and returns the result. */
#include "autograd/gradcheck/gradcheck_ops.h"
#include "autograd/gradcheck/gradcheck_attention.h"
#include "autograd/ops.h"
#include "autograd/ops_attention.h"
#include "autograd/base/util.h"

/* Build leaves from shapes, run the element check, free the leaves. */
static GCResult run_leaves(Tape *t, GraphFn f, void *ctx, int n, const int ndims[], const int shapes[][4]) {
    Tensor *leaves[TAPE_MAX_INPUTS];
    for (int i = 0; i < n; i++) {
        leaves[i] = gradcheck_leaf(ndims[i], shapes[i], 1, "leaf");
        gradcheck_fill_uniform(leaves[i], 100 + i, -1.0, 1.0);
    }
    GCResult r = gradcheck_elements(t, f, leaves, n, ctx, 0);
    for (int i = 0; i < n; i++) gradcheck_leaf_free(leaves[i]);
    return r;
}

/* ---- matmul ---- */
typedef struct { int ta, tb; } MMCtx;
static Tensor *g_matmul(Tape *t, Tensor **x, int n, void *ctx) {
    MMCtx *c = ctx;
    return op_matmul(t, x[0], x[1], c->ta, c->tb);
}
#define MM_CASE(NAME, TA, TB, ND_A, SA, ND_B, SB)                                  \
    static GCResult NAME(Tape *t) {                                                \
        MMCtx c = {TA, TB};                                                        \
        const int nd[2] = {ND_A, ND_B};                                            \
        const int sh[2][4] = {SA, SB};                                             \
        return run_leaves(t, g_matmul, &c, 2, nd, sh);                              \
    }
#define S(...) {__VA_ARGS__}
MM_CASE(gradcheck_mm_nn, 0, 0, 3, S(2, 3, 4), 3, S(2, 4, 5))
MM_CASE(gradcheck_mm_tn, 1, 0, 3, S(2, 4, 3), 3, S(2, 4, 5))
MM_CASE(gradcheck_mm_nt, 0, 1, 3, S(2, 3, 4), 3, S(2, 5, 4))
MM_CASE(gradcheck_mm_tt, 1, 1, 4, S(2, 2, 4, 3), 4, S(2, 2, 5, 4))
MM_CASE(gradcheck_mm_shared, 0, 1, 3, S(3, 2, 4), 2, S(5, 4))
MM_CASE(gradcheck_mm_shared_t, 1, 0, 3, S(3, 4, 2), 2, S(4, 5))
MM_CASE(gradcheck_mm_ones, 0, 0, 2, S(1, 1), 2, S(1, 1))

/* ---- linear ---- */
static Tensor *g_linear(Tape *t, Tensor **x, int n, void *ctx) { return op_linear(t, x[0], x[1], n > 2 ? x[2] : NULL); }
static GCResult gradcheck_linear(Tape *t) {
    const int nd[3] = {3, 2, 1};
    const int sh[3][4] = {{2, 3, 4}, {5, 4}, {5}};
    return run_leaves(t, g_linear, NULL, 3, nd, sh);
}
static GCResult gradcheck_linear_nobias(Tape *t) {
    const int nd[2] = {2, 2};
    const int sh[2][4] = {{1, 4}, {1, 4}};
    return run_leaves(t, g_linear, NULL, 2, nd, sh);
}

/* Build leaves (requires_grad per rg[i], values uniform in [lo, hi)), run the element check,
 * free them.  Leaves with rg[i] == 0 are constants of the graph (e.g. masks). */
static GCResult run_case(Tape *t, GraphFn f, void *ctx, int n, const int ndims[], const int shapes[][4], const int rg[],
                         double lo, double hi) {
    Tensor *leaves[TAPE_MAX_INPUTS];
    for (int i = 0; i < n; i++) {
        leaves[i] = gradcheck_leaf(ndims[i], shapes[i], rg ? rg[i] : 1, "leaf");
        gradcheck_fill_uniform(leaves[i], 200 + i, lo, hi);
    }
    GCResult r = gradcheck_elements(t, f, leaves, n, ctx, 0);
    for (int i = 0; i < n; i++) gradcheck_leaf_free(leaves[i]);
    return r;
}
#define ONE(ND, SH) (const int[]){ND}, (const int[][4]){SH}
#define TWO(NA, SA, NB, SB) (const int[]){NA, NB}, (const int[][4]){SA, SB}

/* ---- elementwise ---- */
static Tensor *g_add(Tape *t, Tensor **x, int n, void *c) { return op_add(t, x[0], x[1]); }
static Tensor *g_add_self(Tape *t, Tensor **x, int n, void *c) { return op_add(t, x[0], x[0]); }
static Tensor *g_bias_add(Tape *t, Tensor **x, int n, void *c) { return op_bias_add(t, x[0], x[1]); }
static Tensor *g_scale(Tape *t, Tensor **x, int n, void *c) { return op_scale(t, x[0], (real)-1.75); }
static Tensor *g_mul(Tape *t, Tensor **x, int n, void *c) { return op_mul(t, x[0], x[1]); }
static Tensor *g_mul_self(Tape *t, Tensor **x, int n, void *c) { return op_mul(t, x[0], x[0]); }
static Tensor *g_gelu(Tape *t, Tensor **x, int n, void *c) { return op_gelu(t, x[0]); }
static Tensor *g_bias_gelu(Tape *t, Tensor **x, int n, void *c) { return op_bias_gelu(t, x[0], x[1]); }

static GCResult gradcheck_add(Tape *t) { return run_case(t, g_add, NULL, 2, TWO(3, S(2, 3, 4), 3, S(2, 3, 4)), NULL, -1, 1); }
static GCResult gradcheck_add_self(Tape *t) { return run_case(t, g_add_self, NULL, 1, ONE(2, S(1, 1)), NULL, -1, 1); }
static GCResult gradcheck_bias_add(Tape *t) { return run_case(t, g_bias_add, NULL, 2, TWO(3, S(2, 3, 4), 1, S(4)), NULL, -1, 1); }
static GCResult gradcheck_bias_add_1(Tape *t) { return run_case(t, g_bias_add, NULL, 2, TWO(2, S(1, 1), 1, S(1)), NULL, -1, 1); }
static GCResult gradcheck_scale(Tape *t) { return run_case(t, g_scale, NULL, 1, ONE(2, S(3, 4)), NULL, -1, 1); }
static GCResult gradcheck_mul(Tape *t) { return run_case(t, g_mul, NULL, 2, TWO(2, S(3, 5), 2, S(3, 5)), NULL, -2, 2); }
static GCResult gradcheck_mul_self(Tape *t) { return run_case(t, g_mul_self, NULL, 1, ONE(1, S(7)), NULL, -2, 2); }
static GCResult gradcheck_gelu(Tape *t) { return run_case(t, g_gelu, NULL, 1, ONE(2, S(4, 6)), NULL, -4, 4); }
static GCResult gradcheck_gelu_1(Tape *t) { return run_case(t, g_gelu, NULL, 1, ONE(1, S(1)), NULL, -1, 1); }
static GCResult gradcheck_bias_gelu(Tape *t) { return run_case(t, g_bias_gelu, NULL, 2, TWO(3, S(2, 5, 20), 1, S(20)), NULL, -3, 3); }
static GCResult gradcheck_bias_gelu_1(Tape *t) { return run_case(t, g_bias_gelu, NULL, 2, TWO(2, S(1, 1), 1, S(1)), NULL, -3, 3); }

/* ---- layernorm ---- */
static Tensor *g_layernorm(Tape *t, Tensor **x, int n, void *c) { return op_layernorm(t, x[0], x[1], x[2], (real)1e-5); }
static Tensor *g_layernorm_plain(Tape *t, Tensor **x, int n, void *c) { return op_layernorm(t, x[0], NULL, NULL, (real)1e-3); }
static GCResult gradcheck_layernorm(Tape *t) {
    return run_case(t, g_layernorm, NULL, 3, (const int[]){3, 1, 1}, (const int[][4]){{2, 3, 6}, {6}, {6}}, NULL, -2, 2);
}
static GCResult gradcheck_layernorm_c1(Tape *t) {
    return run_case(t, g_layernorm, NULL, 3, (const int[]){2, 1, 1}, (const int[][4]){{3, 1}, {1}, {1}}, NULL, -2, 2);
}
static GCResult gradcheck_layernorm_plain(Tape *t) { return run_case(t, g_layernorm_plain, NULL, 1, ONE(2, S(4, 5)), NULL, -2, 2); }

/* ---- softmax ---- */
typedef struct { const int32_t *q, *k; } SMCtx;
static Tensor *g_softmax(Tape *t, Tensor **x, int n, void *ctx) {
    SMCtx *c = ctx;
    return op_softmax_masked(t, x[0], c->q, c->k);
}
static GCResult gradcheck_softmax_partial(Tape *t) {
    /* B=2, H=2, Tq=3, Tk=4: a masked query row, masked keys, rows with a single kept key */
    static const int32_t q[6] = {1, 1, 0, 1, 1, 1}, k[8] = {1, 0, 1, 1, 0, 1, 0, 0};
    SMCtx c = {q, k};
    return run_case(t, g_softmax, &c, 1, ONE(4, S(2, 2, 3, 4)), NULL, -3, 3);
}
static GCResult gradcheck_softmax_full(Tape *t) {
    /* B=2, Tq=2, Tk=3 (3-D): batch 1 has every key masked -> all-zero rows */
    static const int32_t k[6] = {1, 1, 1, 0, 0, 0};
    SMCtx c = {NULL, k};
    return run_case(t, g_softmax, &c, 1, ONE(3, S(2, 2, 3)), NULL, -3, 3);
}
static GCResult gradcheck_softmax_nomask(Tape *t) {
    SMCtx c = {NULL, NULL};
    return run_case(t, g_softmax, &c, 1, ONE(2, S(3, 5)), NULL, -3, 3);
}
static GCResult gradcheck_softmax_1(Tape *t) {
    SMCtx c = {NULL, NULL};
    return run_case(t, g_softmax, &c, 1, ONE(4, S(1, 1, 1, 1)), NULL, -3, 3);
}

/* ---- indexing ---- */
typedef struct { const int32_t *ids; int n, pad, rows, last; } IdxCtx;
static Tensor *g_embedding(Tape *t, Tensor **x, int n, void *ctx) {
    IdxCtx *c = ctx;
    return op_embedding(t, x[0], c->ids, c->n, c->pad);
}
/* With a padding row the lookup still returns table[pad] but passes it no gradient, so the graph
 * zeroes those output rows with a constant mask (leaf 1): then both gradients of table[pad] are 0
 * and the check compares the others.  That the padding row gets exactly no gradient even when
 * its output rows have one is tested in tests/test_ops.c. */
static Tensor *g_embedding_pad(Tape *t, Tensor **x, int n, void *ctx) {
    IdxCtx *c = ctx;
    return op_mul(t, op_embedding(t, x[0], c->ids, c->n, c->pad), x[1]);
}
static GCResult gradcheck_embedding(Tape *t) {
    static const int32_t ids[6] = {1, 3, 1, 0, 3, 1}; /* repeated ids; rows 2 and 4 unused */
    IdxCtx c = {ids, 6, -1, 0, 0};
    return run_case(t, g_embedding, &c, 1, ONE(2, S(5, 3)), NULL, -1, 1);
}
static GCResult gradcheck_embedding_pad(Tape *t) {
    static const int32_t ids[5] = {2, 0, 2, 1, 0}; /* padding id 0, twice */
    IdxCtx c = {ids, 5, 0, 0, 0};
    Tensor *leaves[2];
    leaves[0] = gradcheck_leaf(2, (const int[]){3, 4}, 1, "table");
    gradcheck_fill_uniform(leaves[0], 300, -1, 1);
    leaves[1] = gradcheck_leaf(2, (const int[]){5, 4}, 0, "keep");
    for (int k = 0; k < 5; k++)
        for (int j = 0; j < 4; j++) leaves[1]->data[k * 4 + j] = ids[k] == 0 ? 0 : 1;
    GCResult r = gradcheck_elements(t, g_embedding_pad, leaves, 2, &c, 0);
    gradcheck_leaf_free(leaves[0]);
    gradcheck_leaf_free(leaves[1]);
    return r;
}
static Tensor *g_gather(Tape *t, Tensor **x, int n, void *ctx) {
    IdxCtx *c = ctx;
    return op_gather_last(t, x[0], c->ids, c->rows, c->last);
}
static GCResult gradcheck_gather_cyclic(Tape *t) {
    /* x [2, 3, 5] = 6 rows of W=5, idx [3, 4] reused cyclically, with repeated indices */
    static const int32_t idx[12] = {0, 4, 4, 2, 1, 1, 1, 1, 3, 0, 2, 3};
    IdxCtx c = {idx, 0, 0, 3, 4};
    return run_case(t, g_gather, &c, 1, ONE(3, S(2, 3, 5)), NULL, -1, 1);
}
static GCResult gradcheck_gather_full(Tape *t) {
    /* x [2, 3] with one index row per row (idx_rows = R), J > W */
    static const int32_t idx[8] = {2, 0, 0, 1, 1, 1, 2, 2};
    IdxCtx c = {idx, 0, 0, 2, 4};
    return run_case(t, g_gather, &c, 1, ONE(2, S(2, 3)), NULL, -1, 1);
}
static GCResult gradcheck_gather_1(Tape *t) {
    static const int32_t idx[3] = {0, 0, 0};
    IdxCtx c = {idx, 0, 0, 1, 3};
    return run_case(t, g_gather, &c, 1, ONE(2, S(1, 1)), NULL, -1, 1);
}
static Tensor *g_index_select(Tape *t, Tensor **x, int n, void *ctx) {
    IdxCtx *c = ctx;
    return op_index_select(t, x[0], c->ids, c->n);
}
static GCResult gradcheck_index_select(Tape *t) {
    static const int32_t rows[5] = {2, 0, 2, 3, 2};
    IdxCtx c = {rows, 5, 0, 0, 0};
    return run_case(t, g_index_select, &c, 1, ONE(2, S(4, 3)), NULL, -1, 1);
}
static GCResult gradcheck_index_select_3d(Tape *t) {
    static const int32_t rows[1] = {3};
    IdxCtx c = {rows, 1, 0, 0, 0};
    return run_case(t, g_index_select, &c, 1, ONE(3, S(2, 2, 1)), NULL, -1, 1);
}

/* ---- dropout, in training mode: the mask is fixed by (seed, step, call index), and every
 * evaluation of the harness starts with tape_reset, which sets the call index back to 0 ---- */
static Tensor *g_dropout(Tape *t, Tensor **x, int n, void *ctx) {
    const double *p = ctx;
    int was = t->training;
    t->training = 1;
    Tensor *y = op_dropout(t, x[0], (real)*p);
    t->training = was;
    return y;
}
static GCResult gradcheck_dropout(Tape *t) {
    double p = 0.4;
    return run_case(t, g_dropout, &p, 1, ONE(2, S(6, 7)), NULL, -1, 1);
}
static GCResult gradcheck_dropout_p0(Tape *t) {
    double p = 0;
    return run_case(t, g_dropout, &p, 1, ONE(1, S(1)), NULL, -1, 1);
}

/* ---- dropout_add_layernorm: LN(dropout(y) + res), in training mode (the mask fixed as for dropout) ---- */
typedef struct {
    double p;
    int affine;
} DALNCase;
static Tensor *g_dropout_add_layernorm(Tape *t, Tensor **x, int n, void *ctx) {
    const DALNCase *c = ctx;
    int was = t->training;
    t->training = 1;
    Tensor *y = op_dropout_add_layernorm(t, x[0], (real)c->p, x[1], c->affine ? x[2] : NULL, c->affine ? x[3] : NULL, (real)1e-5);
    t->training = was;
    return y;
}
static GCResult gradcheck_dropout_add_layernorm(Tape *t) {
    DALNCase c = {0.3, 1};
    return run_case(t, g_dropout_add_layernorm, &c, 4, (const int[]){3, 3, 1, 1}, (const int[][4]){{2, 3, 6}, {2, 3, 6}, {6}, {6}},
                    NULL, -2, 2);
}
static GCResult gradcheck_dropout_add_layernorm_p0(Tape *t) {
    DALNCase c = {0, 0};
    return run_case(t, g_dropout_add_layernorm, &c, 2, (const int[]){2, 2}, (const int[][4]){{4, 5}, {4, 5}}, NULL, -2, 2);
}

/* ---- attention_context: P · V with V and the result in [B, T, A·D] ---- */
static Tensor *g_attention_context(Tape *t, Tensor **x, int n, void *c) { return op_attention_context(t, x[0], x[1]); }
static GCResult gradcheck_attention_context(Tape *t) {
    return run_case(t, g_attention_context, NULL, 2, (const int[]){4, 3}, (const int[][4]){{2, 2, 3, 4}, {2, 4, 6}}, NULL, -1, 1);
}
static GCResult gradcheck_attention_context_1(Tape *t) {
    return run_case(t, g_attention_context, NULL, 2, (const int[]){4, 3}, (const int[][4]){{1, 1, 1, 2}, {1, 2, 1}}, NULL, -1, 1);
}

/* ---- losses and reductions ---- */
typedef struct { const int32_t *tg, *valid; } LossCtx;
static Tensor *g_ce(Tape *t, Tensor **x, int n, void *ctx) { return op_cross_entropy(t, x[0], ((LossCtx *)ctx)->tg); }
static Tensor *g_bce(Tape *t, Tensor **x, int n, void *ctx) {
    LossCtx *c = ctx;
    return op_bce_logits(t, x[0], c->tg, c->valid);
}
static GCResult gradcheck_ce(Tape *t) {
    static const int32_t tg[4] = {0, 4, 2, 2};
    LossCtx c = {tg, NULL};
    return run_case(t, g_ce, &c, 1, ONE(2, S(4, 5)), NULL, -3, 3);
}
static GCResult gradcheck_ce_small(Tape *t) {
    static const int32_t tg[1] = {1};
    LossCtx c = {tg, NULL};
    return run_case(t, g_ce, &c, 1, ONE(2, S(1, 2)), NULL, -3, 3);
}
static GCResult gradcheck_bce(Tape *t) {
    /* invalid entries may hold any target (here −100) */
    static const int32_t tg[10] = {1, 0, 0, 1, 1, 0, -100, 1, 0, 1}, valid[10] = {1, 1, 0, 1, 1, 1, 0, 1, 0, 1};
    LossCtx c = {tg, valid};
    return run_case(t, g_bce, &c, 1, ONE(2, S(2, 5)), NULL, -4, 4);
}
static GCResult gradcheck_bce_none_valid(Tape *t) {
    static const int32_t tg[3] = {1, 0, 1}, valid[3] = {0, 0, 0};
    LossCtx c = {tg, valid};
    return run_case(t, g_bce, &c, 1, ONE(1, S(3)), NULL, -4, 4);
}
static Tensor *g_sum(Tape *t, Tensor **x, int n, void *c) { return op_sum(t, x[0]); }
static Tensor *g_mean(Tape *t, Tensor **x, int n, void *c) { return op_mean(t, x[0]); }
static GCResult gradcheck_sum(Tape *t) { return run_case(t, g_sum, NULL, 1, ONE(3, S(2, 3, 4)), NULL, -1, 1); }
static GCResult gradcheck_mean(Tape *t) { return run_case(t, g_mean, NULL, 1, ONE(3, S(2, 3, 2)), NULL, -1, 1); }
static GCResult gradcheck_mean_1(Tape *t) { return run_case(t, g_mean, NULL, 1, ONE(1, S(1)), NULL, -1, 1); }

/* ---- shapes (followed by a mul with a second leaf so that the layout of the result matters) ---- */
static Tensor *g_reshape(Tape *t, Tensor **x, int n, void *c) {
    const int sh[2] = {3, -1};
    return op_mul(t, op_reshape(t, x[0], 2, sh), x[1]);
}
static Tensor *g_transpose(Tape *t, Tensor **x, int n, void *c) { return op_mul(t, op_transpose(t, x[0]), x[1]); }
static Tensor *g_split(Tape *t, Tensor **x, int n, void *ctx) { return op_mul(t, op_split_heads(t, x[0], *(int *)ctx), x[1]); }
static Tensor *g_merge(Tape *t, Tensor **x, int n, void *c) { return op_mul(t, op_merge_heads(t, x[0]), x[1]); }
static GCResult gradcheck_reshape(Tape *t) { return run_case(t, g_reshape, NULL, 2, TWO(3, S(2, 3, 2), 2, S(3, 4)), NULL, -1, 1); }
static GCResult gradcheck_transpose(Tape *t) { return run_case(t, g_transpose, NULL, 2, TWO(3, S(2, 3, 4), 3, S(2, 4, 3)), NULL, -1, 1); }
static GCResult gradcheck_transpose_1(Tape *t) {
    return run_case(t, g_transpose, NULL, 2, TWO(4, S(2, 1, 3, 1), 4, S(2, 1, 1, 3)), NULL, -1, 1);
}
static GCResult gradcheck_transpose_big(Tape *t) { /* more than one 32x32 tile each way */
    return run_case(t, g_transpose, NULL, 2, TWO(2, S(33, 35), 2, S(35, 33)), NULL, -1, 1);
}
static GCResult gradcheck_split_heads(Tape *t) {
    int h = 2;
    return run_case(t, g_split, &h, 2, TWO(3, S(2, 3, 6), 4, S(2, 2, 3, 3)), NULL, -1, 1);
}
static GCResult gradcheck_split_heads_1(Tape *t) {
    int h = 1;
    return run_case(t, g_split, &h, 2, TWO(3, S(1, 2, 1), 4, S(1, 1, 2, 1)), NULL, -1, 1);
}
static GCResult gradcheck_merge_heads(Tape *t) {
    return run_case(t, g_merge, NULL, 2, TWO(4, S(2, 3, 2, 2), 3, S(2, 2, 6)), NULL, -1, 1);
}

const GCCase gradcheck_op_cases[] = {
    {"matmul", "[2,3,4]x[2,4,5]", gradcheck_mm_nn},
    {"matmul", "[2,4,3]^T x[2,4,5]", gradcheck_mm_tn},
    {"matmul", "[2,3,4]x[2,5,4]^T", gradcheck_mm_nt},
    {"matmul", "[2,2,4,3]^T x[2,2,5,4]^T", gradcheck_mm_tt},
    {"matmul", "[3,2,4]x[5,4]^T shared B", gradcheck_mm_shared},
    {"matmul", "[3,4,2]^T x[4,5] shared B", gradcheck_mm_shared_t},
    {"matmul", "[1,1]x[1,1]", gradcheck_mm_ones},
    {"linear", "[2,3,4]x[5,4]^T+[5]", gradcheck_linear},
    {"linear", "[1,4]x[1,4]^T no bias", gradcheck_linear_nobias},
    {"add", "[2,3,4]+[2,3,4]", gradcheck_add},
    {"add", "x+x [1,1] (same tensor)", gradcheck_add_self},
    {"bias_add", "[2,3,4]+[4]", gradcheck_bias_add},
    {"bias_add", "[1,1]+[1]", gradcheck_bias_add_1},
    {"scale", "-1.75*[3,4]", gradcheck_scale},
    {"mul", "[3,5]*[3,5]", gradcheck_mul},
    {"mul", "x*x [7] (same tensor)", gradcheck_mul_self},
    {"gelu", "[4,6] in [-4,4]", gradcheck_gelu},
    {"gelu", "[1]", gradcheck_gelu_1},
    {"bias_gelu", "gelu([2,5,20]+[20])", gradcheck_bias_gelu},
    {"bias_gelu", "gelu([1,1]+[1])", gradcheck_bias_gelu_1},
    {"layernorm", "[2,3,6] g[6] b[6] eps 1e-5", gradcheck_layernorm},
    {"layernorm", "[3,1] C=1", gradcheck_layernorm_c1},
    {"layernorm", "[4,5] no g/b eps 1e-3", gradcheck_layernorm_plain},
    {"softmax_masked", "[2,2,3,4] q+k masks, 1-key rows", gradcheck_softmax_partial},
    {"softmax_masked", "[2,2,3] batch 1 fully masked", gradcheck_softmax_full},
    {"softmax_masked", "[3,5] no mask", gradcheck_softmax_nomask},
    {"softmax_masked", "[1,1,1,1]", gradcheck_softmax_1},
    {"embedding", "[5,3] 6 ids, repeated", gradcheck_embedding},
    {"embedding", "[3,4] 5 ids, padding 0 twice", gradcheck_embedding_pad},
    {"gather_last", "[2,3,5] idx[3,4] cyclic, repeated", gradcheck_gather_cyclic},
    {"gather_last", "[2,3] idx[2,4] J>W", gradcheck_gather_full},
    {"gather_last", "[1,1] idx[1,3] all 0", gradcheck_gather_1},
    {"index_select", "[4,3] 5 rows, repeated", gradcheck_index_select},
    {"index_select", "[2,2,1] rows {3}", gradcheck_index_select_3d},
    {"dropout", "[6,7] p=0.4 training", gradcheck_dropout},
    {"dropout", "[1] p=0 (identity)", gradcheck_dropout_p0},
    {"dropout_add_layernorm", "LN(drop([2,3,6]) + [2,3,6]) g b p=0.3 training", gradcheck_dropout_add_layernorm},
    {"dropout_add_layernorm", "[4,5] no g/b p=0 (identity)", gradcheck_dropout_add_layernorm_p0},
    {"cross_entropy", "[4,5]", gradcheck_ce},
    {"cross_entropy", "[1,2]", gradcheck_ce_small},
    {"bce_logits", "[2,5] 3 invalid", gradcheck_bce},
    {"bce_logits", "[3] none valid", gradcheck_bce_none_valid},
    {"sum", "[2,3,4]", gradcheck_sum},
    {"mean", "[2,3,2]", gradcheck_mean},
    {"mean", "[1]", gradcheck_mean_1},
    {"reshape", "[2,3,2]->[3,-1]", gradcheck_reshape},
    {"transpose", "[2,3,4]", gradcheck_transpose},
    {"transpose", "[2,1,3,1]", gradcheck_transpose_1},
    {"transpose", "[33,35] (tiles)", gradcheck_transpose_big},
    {"split_heads", "[2,3,6] H=2", gradcheck_split_heads},
    {"split_heads", "[1,2,1] H=1", gradcheck_split_heads_1},
    {"merge_heads", "[2,3,2,2]", gradcheck_merge_heads},
    {"attention_context", "P[2,2,3,4] v[2,4,6]", gradcheck_attention_context},
    {"attention_context", "P[1,1,1,2] v[1,2,1]", gradcheck_attention_context_1},
    GC_ATTENTION_CASES /* autograd/gradcheck/gradcheck_attention.c */
};
const int gradcheck_n_op_cases = (int)ARRAY_LEN(gradcheck_op_cases);
