/* gradcheck_ops.c — one or more finite-difference cases per op (see gradcheck_ops.h).
 * Each case builds small random leaves (edge cases included: size-1 dims, fully masked rows,
 * repeated indices), checks every element, frees its leaves and returns the result. */
#include "autograd/gradcheck_ops.h"
#include "autograd/gradcheck_attention.h"
#include "autograd/ops.h"
#include "autograd/util.h"

/* Build leaves from shapes, run the element check, free the leaves. */
static GCResult run_leaves(Tape *t, GraphFn f, void *ctx, int n, const int ndims[], const int shapes[][4]) {
    Tensor *leaves[TAPE_MAX_INPUTS];
    for (int i = 0; i < n; i++) {
        leaves[i] = gc_leaf(ndims[i], shapes[i], 1, "leaf");
        gc_fill_uniform(leaves[i], 100 + i, -1.0, 1.0);
    }
    GCResult r = gradcheck_elements(t, f, leaves, n, ctx, 0);
    for (int i = 0; i < n; i++) gc_leaf_free(leaves[i]);
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
MM_CASE(gc_mm_nn, 0, 0, 3, S(2, 3, 4), 3, S(2, 4, 5))
MM_CASE(gc_mm_tn, 1, 0, 3, S(2, 4, 3), 3, S(2, 4, 5))
MM_CASE(gc_mm_nt, 0, 1, 3, S(2, 3, 4), 3, S(2, 5, 4))
MM_CASE(gc_mm_tt, 1, 1, 4, S(2, 2, 4, 3), 4, S(2, 2, 5, 4))
MM_CASE(gc_mm_shared, 0, 1, 3, S(3, 2, 4), 2, S(5, 4))
MM_CASE(gc_mm_shared_t, 1, 0, 3, S(3, 4, 2), 2, S(4, 5))
MM_CASE(gc_mm_ones, 0, 0, 2, S(1, 1), 2, S(1, 1))

/* ---- linear ---- */
static Tensor *g_linear(Tape *t, Tensor **x, int n, void *ctx) { return op_linear(t, x[0], x[1], n > 2 ? x[2] : NULL); }
static GCResult gc_linear(Tape *t) {
    const int nd[3] = {3, 2, 1};
    const int sh[3][4] = {{2, 3, 4}, {5, 4}, {5}};
    return run_leaves(t, g_linear, NULL, 3, nd, sh);
}
static GCResult gc_linear_nobias(Tape *t) {
    const int nd[2] = {2, 2};
    const int sh[2][4] = {{1, 4}, {1, 4}};
    return run_leaves(t, g_linear, NULL, 2, nd, sh);
}

const GCCase gc_op_cases[] = {
    {"matmul", "[2,3,4]x[2,4,5]", gc_mm_nn},
    {"matmul", "[2,4,3]^T x[2,4,5]", gc_mm_tn},
    {"matmul", "[2,3,4]x[2,5,4]^T", gc_mm_nt},
    {"matmul", "[2,2,4,3]^T x[2,2,5,4]^T", gc_mm_tt},
    {"matmul", "[3,2,4]x[5,4]^T shared B", gc_mm_shared},
    {"matmul", "[3,4,2]^T x[4,5] shared B", gc_mm_shared_t},
    {"matmul", "[1,1]x[1,1]", gc_mm_ones},
    {"linear", "[2,3,4]x[5,4]^T+[5]", gc_linear},
    {"linear", "[1,4]x[1,4]^T no bias", gc_linear_nobias},
    GC_ATTENTION_CASES /* autograd/gradcheck_attention.c */
};
const int gc_n_op_cases = (int)ARRAY_LEN(gc_op_cases);
