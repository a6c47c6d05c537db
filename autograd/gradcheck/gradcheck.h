/* gradcheck.h — finite-difference checks of hand-written backward passes.
 *
 * A graph is given as a function that builds it on a tape from leaf tensors and returns its output
 * y.  The checked scalar is L = Σ y ⊙ w with a fixed random w, so every output element matters.
 *
 * Per-element check: each element x of every leaf with requires_grad is perturbed and
 *   numeric = (−L(x+2h) + 8L(x+h) − 8L(x−h) + L(x−2h)) / 12h     (4th-order central difference)
 * is compared with the analytic dL/dx from tape_backward.
 *
 * Random-direction check (whole models): one random direction d over all leaves;
 *   numeric = the same stencil along d, analytic = Σ grad · d.  Two to four extra forwards.
 *
 * The analytic gradients are computed twice: with the leaves as the op's inputs (their buffers
 * exist, every backward adds into them) and with each leaf seen through a reshape view (the op's
 * inputs then have no buffer yet: the backward's first write assigns, tape_grad_put).  The two must
 * be equal, element for element; a difference fails the check (max_err = inf).
 *
 * Error metric: err = |analytic − numeric| / max(|analytic|, |numeric|, GC_FLOOR): relative, with a
 * floor so that gradients that are exactly zero analytically compare absolutely.
 * Tolerances: the double build must reach ≤ 1e-7 per op; the float build runs the same cases with
 * a larger step as a smoke test (see gradcheck_tolerance()).
 */
#ifndef DEBERTA_GRADCHECK_H
#define DEBERTA_GRADCHECK_H
#include "autograd/tape.h"

#define GC_FLOOR 1e-3

typedef Tensor *(*GraphFn)(Tape *t, Tensor **leaves, int n_leaves, void *ctx);

typedef struct GCResult {
    double max_err;     /* max error (metric above) */
    double max_abs;     /* max |analytic − numeric| */
    long n_checked;     /* elements (or directions) checked */
    int ok;             /* max_err <= tolerance */
} GCResult;

/* Leaves for checks: heap tensors (data and grad) that survive tape resets. */
Tensor *gradcheck_leaf(int ndim, const int *shape, int requires_grad, const char *name);
void gradcheck_leaf_free(Tensor *x);
/* Fill with uniform values in [lo, hi) from the test RNG stream `stream`. */
void gradcheck_fill_uniform(Tensor *x, uint64_t stream, double lo, double hi);

double gradcheck_step(void);       /* h: 1e-4 (double) or 1e-2 (float) */
double gradcheck_tolerance(void);  /* 1e-7 (double) or 5e-2 (float) */

/* Checks every element of every leaf with requires_grad (max_elems_per_leaf > 0 limits it to
 * that many evenly spaced elements). */
GCResult gradcheck_elements(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx, long max_elems_per_leaf);
/* One random direction over all leaves with requires_grad (`directions` of them). */
GCResult gradcheck_direction(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx, int directions, uint64_t seed);
#endif
