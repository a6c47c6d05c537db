/* gradcheck.c — see gradcheck.h */
#include "autograd/gradcheck/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

Tensor *gradcheck_leaf(int ndim, const int *shape, int requires_grad, const char *name) {
    Tensor *x = xcalloc(1, sizeof(Tensor));
    x->ndim = ndim;
    for (int i = 0; i < ndim; i++) x->shape[i] = shape[i];
    x->n = shape_numel(ndim, shape);
    x->data = xcalloc_aligned((size_t)(x->n ? x->n : 1) * sizeof(real));
    x->grad = requires_grad ? xcalloc_aligned((size_t)(x->n ? x->n : 1) * sizeof(real)) : NULL;
    x->requires_grad = requires_grad;
    x->is_param = 1; /* not arena memory */
    x->name = name;
    return x;
}

void gradcheck_leaf_free(Tensor *x) {
    if (!x) return;
    free(x->data);
    free(x->grad);
    free(x);
}

void gradcheck_fill_uniform(Tensor *x, uint64_t stream, double lo, double hi) {
    for (long i = 0; i < x->n; i++) x->data[i] = (real)(lo + (hi - lo) * rng_uniform(42, rng_stream(RNG_TEST, stream, 0), i));
}

double gradcheck_step(void) { return REAL_IS_DOUBLE ? 1e-4 : 1e-2; }
double gradcheck_tolerance(void) { return REAL_IS_DOUBLE ? 1e-7 : 5e-2; }

/* Output weights w for L = Σ y ⊙ w: fixed per output size. */
static real *out_weights(Tape *t, long n) {
    real *w = arena_alloc(&t->arena, (size_t)n * sizeof(real));
    for (long i = 0; i < n; i++) w[i] = (real)(2.0 * rng_uniform(7, rng_stream(RNG_TEST, 99, 0), i) - 1.0);
    return w;
}

/* L at the current leaf values, forward only. */
static double eval_loss(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx) {
    tape_reset(t);
    tape_nograd_begin(t);
    Tensor *y = f(t, leaves, n, ctx);
    tape_nograd_end(t);
    real *w = out_weights(t, y->n);
    long double s = 0;
    for (long i = 0; i < y->n; i++) s += (long double)y->data[i] * w[i];
    return (double)s;
}

/* Analytic gradients into the leaves' grad buffers (zeroed first); with `viewed`, the graph gets
 * each leaf through a reshape view, so the op's backward writes into fresh buffers. */
static void analytic_pass(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx, int viewed) {
    for (int i = 0; i < n; i++)
        if (leaves[i]->requires_grad) memset(leaves[i]->grad, 0, (size_t)leaves[i]->n * sizeof(real));
    tape_reset(t);
    Tensor **in = leaves;
    if (viewed) {
        in = arena_alloc(&t->arena, (size_t)(n ? n : 1) * sizeof(Tensor *));
        for (int i = 0; i < n; i++) in[i] = leaves[i] ? op_reshape(t, leaves[i], leaves[i]->ndim, leaves[i]->shape) : NULL;
    }
    Tensor *y = f(t, in, n, ctx);
    if (!y->requires_grad) return; /* output independent of every leaf: all gradients are zero */
    tape_backward_from(t, y, out_weights(t, y->n));
}

/* Both passes; returns 0 if their gradients are equal (the first pass's stay in the leaves). */
static int analytic(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx) {
    analytic_pass(t, f, leaves, n, ctx, 1);
    real **viewed = xcalloc(n ? n : 1, sizeof(real *)); /* the viewed pass's gradients */
    for (int i = 0; i < n; i++)
        if (leaves[i] && leaves[i]->requires_grad) {
            viewed[i] = xmalloc((size_t)(leaves[i]->n ? leaves[i]->n : 1) * sizeof(real));
            memcpy(viewed[i], leaves[i]->grad, (size_t)leaves[i]->n * sizeof(real));
        }
    analytic_pass(t, f, leaves, n, ctx, 0);
    int differ = 0;
    for (int i = 0; i < n; i++) {
        for (long e = 0; viewed[i] && e < leaves[i]->n; e++) differ |= viewed[i][e] != leaves[i]->grad[e];
        free(viewed[i]);
    }
    free(viewed);
    return differ;
}

static double metric(double a, double num) {
    double d = fabs(a - num), s = fmax(fmax(fabs(a), fabs(num)), GC_FLOOR);
    return d / s;
}

static void add_result(GCResult *r, double a, double num) {
    double e = metric(a, num);
    if (e > r->max_err || isnan(e)) r->max_err = isnan(e) ? INFINITY : e;
    if (fabs(a - num) > r->max_abs) r->max_abs = fabs(a - num);
    r->n_checked++;
}

GCResult gradcheck_elements(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx, long max_elems) {
    GCResult r = {0};
    const double h = gradcheck_step();
    const int differ = analytic(t, f, leaves, n, ctx);
    for (int li = 0; li < n; li++) {
        Tensor *x = leaves[li];
        if (!x->requires_grad) continue;
        long stride = (max_elems > 0 && x->n > max_elems) ? x->n / max_elems : 1;
        for (long e = 0; e < x->n; e += stride) {
            real orig = x->data[e];
            double l[4];
            const double off[4] = {2 * h, h, -h, -2 * h};
            for (int k = 0; k < 4; k++) {
                x->data[e] = (real)(orig + off[k]);
                l[k] = eval_loss(t, f, leaves, n, ctx);
            }
            x->data[e] = orig;
            double num = (-l[0] + 8 * l[1] - 8 * l[2] + l[3]) / (12 * h);
            add_result(&r, x->grad[e], num);
        }
    }
    if (differ) r.max_err = INFINITY; /* assigned and accumulated gradients differ */
    r.ok = r.max_err <= gradcheck_tolerance();
    return r;
}

GCResult gradcheck_direction(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx, int directions, uint64_t seed) {
    GCResult r = {0};
    const double h = gradcheck_step();
    const int differ = analytic(t, f, leaves, n, ctx);
    for (int d = 0; d < directions; d++) {
        /* direction: uniform in [-1, 1] per element, normalised to unit length over all leaves */
        long double norm2 = 0, dot = 0;
        for (int li = 0; li < n; li++) {
            if (!leaves[li]->requires_grad) continue;
            for (long e = 0; e < leaves[li]->n; e++) {
                double v = 2 * rng_uniform(seed, rng_stream(RNG_TEST, 1000 + d, li), e) - 1;
                norm2 += v * v;
            }
        }
        double inv = 1.0 / sqrtl(norm2);
        real **orig = xcalloc(n, sizeof(real *));
        for (int li = 0; li < n; li++) {
            Tensor *x = leaves[li];
            if (!x->requires_grad) continue;
            orig[li] = xmalloc((size_t)x->n * sizeof(real));
            memcpy(orig[li], x->data, (size_t)x->n * sizeof(real));
            for (long e = 0; e < x->n; e++) {
                double v = (2 * rng_uniform(seed, rng_stream(RNG_TEST, 1000 + d, li), e) - 1) * inv;
                dot += (long double)x->grad[e] * v;
            }
        }
        double l[4];
        const double off[4] = {2 * h, h, -h, -2 * h};
        for (int k = 0; k < 4; k++) {
            for (int li = 0; li < n; li++) {
                Tensor *x = leaves[li];
                if (!x->requires_grad) continue;
                for (long e = 0; e < x->n; e++) {
                    double v = (2 * rng_uniform(seed, rng_stream(RNG_TEST, 1000 + d, li), e) - 1) * inv;
                    x->data[e] = (real)(orig[li][e] + off[k] * v);
                }
            }
            l[k] = eval_loss(t, f, leaves, n, ctx);
        }
        for (int li = 0; li < n; li++) {
            if (!orig[li]) continue;
            memcpy(leaves[li]->data, orig[li], (size_t)leaves[li]->n * sizeof(real));
            free(orig[li]);
        }
        free(orig);
        double num = (-l[0] + 8 * l[1] - 8 * l[2] + l[3]) / (12 * h);
        add_result(&r, (double)dot, num);
    }
    if (differ) r.max_err = INFINITY; /* assigned and accumulated gradients differ */
    r.ok = r.max_err <= gradcheck_tolerance();
    return r;
}
