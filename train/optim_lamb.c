/* optim_lamb.c — the registry entry lamb: LAMB (You et al. 2019, arXiv:1904.00962, Algorithm 2).
 *
 *   g  = clipped gradient (as adamw: g *= min(1, max_norm/(‖g‖ + 1e-6)))
 *   m  = β1·m + (1−β1)·g;   v = β2·v + (1−β2)·g²;   m̂ = m/(1−β1^t);   v̂ = v/(1−β2^t)
 *   u  = m̂/(sqrt(v̂) + eps) + wd·p                       (wd = 0 for no-decay parameters)
 *   p −= lr · r · u,   r = ‖p‖/‖u‖ over the whole parameter tensor (1 if either norm is 0, and for
 *                      no-decay parameters: TensorFlow Addons' exclude_from_layer_adaptation default)
 *
 * Two passes over the group's chunks: the first updates m, v and sums p² and u² per chunk (double,
 * in order); the per-chunk sums go through g->sum_partials under ZeRO-1 (a parameter's chunks may
 * sit on several ranks), so every rank sees every tensor's norms; the second pass recomputes u from
 * the stored m, v (the same function, the same bits) and applies it.  Scalar loops (not vectorized:
 * sqrt may set errno; about 2× adamw's time per element). */
#include "train/optim.h"
#include <math.h>
#include <string.h>

#if REAL_IS_DOUBLE
#define sqrtr sqrt
#else
#define sqrtr sqrtf
#endif

typedef struct LambArgs {
    double lr;
    real wd, b1, one_m_b1, b2, one_m_b2, eps, gscale, bc1, bc2;
} LambArgs;

/* u = m̂/(sqrt(v̂) + eps) + wd·p, m̂ = m/bc1, v̂ = v/bc2 */
static inline real lamb_u(real m, real v, real w, real wd, const LambArgs *a) { return (m / a->bc1) / (sqrtr(v / a->bc2) + a->eps) + wd * w; }

/* pass 1, chunk k: the moments; Σ p² and Σ u² of the chunk into partial[nc + k] and partial[2·nc + k] */
static void lamb_moments(OptimGroup *g, int k, const void *ctx) {
    const LambArgs *a = ctx;
    const OptimChunk *ch = &g->chunks[k];
    const OptimParam *p = &g->p[ch->p];
    const long b = ch->begin, n = ch->end - ch->begin;
    const real *w = p->t->data + b, *gr = p->t->grad + b, wd = p->decay ? a->wd : (real)0;
    real *m = p->s[0] + b, *v = p->s[1] + b;
    double sw = 0, su = 0;
    for (long i = 0; i < n; i++) {
        const real gi = gr[i] * a->gscale;
        m[i] = m[i] * a->b1 + a->one_m_b1 * gi;
        v[i] = v[i] * a->b2 + a->one_m_b2 * gi * gi;
        const real u = lamb_u(m[i], v[i], w[i], wd, a);
        sw += (double)w[i] * (double)w[i];
        su += (double)u * (double)u;
    }
    g->partial[g->n_chunks + k] = sw;
    g->partial[2 * g->n_chunks + k] = su;
}

/* the trust ratio ‖p‖/‖u‖ of chunk k's parameter: the sums of all its chunks, in order */
static double trust_ratio(const OptimGroup *g, int k) {
    const int nc = g->n_chunks, q = g->chunks[k].p;
    int c = k;
    while (c > 0 && g->chunks[c - 1].p == q) c--;
    double sw = 0, su = 0;
    for (; c < nc && g->chunks[c].p == q; c++) {
        sw += g->partial[nc + c];
        su += g->partial[2 * nc + c];
    }
    return sw > 0 && su > 0 ? sqrt(sw) / sqrt(su) : 1.0;
}

/* pass 2, chunk k: p −= lr·r·u */
static void lamb_apply(OptimGroup *g, int k, const void *ctx) {
    const LambArgs *a = ctx;
    const OptimChunk *ch = &g->chunks[k];
    const OptimParam *p = &g->p[ch->p];
    const long b = ch->begin, n = ch->end - ch->begin;
    real *w = p->t->data + b;
    const real *m = p->s[0] + b, *v = p->s[1] + b, wd = p->decay ? a->wd : (real)0;
    const real step = (real)(a->lr * p->lr_scale * (p->decay ? trust_ratio(g, k) : 1.0));
    for (long i = 0; i < n; i++) w[i] -= step * lamb_u(m[i], v[i], w[i], wd, a);
}

static void lamb_step(OptimGroup *g, double lr, double grad_norm) {
    const OptimConfig *c = &g->cfg;
    const double t = (double)(g->step + 1);
    const LambArgs a = {.lr = lr, .wd = (real)c->weight_decay, .b1 = (real)c->beta1, .one_m_b1 = (real)(1.0 - c->beta1), .b2 = (real)c->beta2,
                        .one_m_b2 = (real)(1.0 - c->beta2), .eps = (real)c->eps, .gscale = optim_clip_scale(c, grad_norm),
                        .bc1 = (real)(1.0 - pow(c->beta1, t)), .bc2 = (real)(1.0 - pow(c->beta2, t))};
    const int nc = g->n_chunks;
    if (g->world > 1) memset(g->partial + nc, 0, 2 * (size_t)nc * sizeof(double)); /* the other ranks' chunks */
    optim_each_chunk(g, lamb_moments, &a);
    if (g->world > 1 && g->sum_partials) g->sum_partials(g->partial + nc, 2 * nc);
    optim_each_chunk(g, lamb_apply, &a);
}

const Optimizer optim_lamb = {"lamb", "LAMB: adamw's update scaled per tensor by ||p||/||u|| (linear warm-up and decay)", 2, {"m", "v"},
                              OPTIM_SCHED_LINEAR, lamb_step};
