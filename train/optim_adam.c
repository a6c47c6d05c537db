/* optim_adam.c — the registry entries adamw and xadam (spec §4.7, §11): their element kernels over
 * a flat range and their steps.
 *
 *   adamw  torch.optim.AdamW, in torch's order of operations:
 *                  p *= 1 − lr·wd                       (decoupled decay, decay params only)
 *                  m  = lerp(m, g, 1−β1);  v = β2·v + (1−β2)·g²
 *                  p −= lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)     t = 1, 2, ...
 *          clipping as torch.nn.utils.clip_grad_norm_: g *= min(1, max_norm/(‖g‖ + 1e-6)).
 *          Schedule OPTIM_SCHED_LINEAR (optim.h).
 *   xadam  the official DeBERTa XAdam:  no bias correction, eps outside the sqrt,
 *                  u = m/(sqrt(v) + eps);  if decay: u += wd·p;  p −= lr_t·u
 *          clipping as the official fp32 path: g /= max(1, ‖g‖/max_norm).
 *          Schedule OPTIM_SCHED_WARMUP_LINEAR (optim.h; the first update has lr 0).
 * State: m (s[0]) and v (s[1]). */
#include "train/optim.h"
#include <math.h>

#if REAL_IS_DOUBLE
#define sqrtr sqrt
#else
#define sqrtr sqrtf
#endif

/* ---- element kernels ----
 * The scalar loops below are the definition.  gcc does not vectorize them (sqrt may set errno, and
 * the project builds without -ffast-math or -fno-math-errno), so with AVX the same operations, in
 * the same order, run 8 (float) or 4 (double) lanes at a time: +, ×, ÷ and sqrt are correctly
 * rounded per lane, so the results are bitwise those of the scalar loop (tested). */
#if defined(__AVX__)
#include <immintrin.h>
#if REAL_IS_DOUBLE
typedef __m256d vreal;
#define VL 4
#define vld _mm256_loadu_pd
#define vst _mm256_storeu_pd
#define vset _mm256_set1_pd
#define vadd _mm256_add_pd
#define vsub _mm256_sub_pd
#define vmul _mm256_mul_pd
#define vdiv _mm256_div_pd
#define vsqrt _mm256_sqrt_pd
#else
typedef __m256 vreal;
#define VL 8
#define vld _mm256_loadu_ps
#define vst _mm256_storeu_ps
#define vset _mm256_set1_ps
#define vadd _mm256_add_ps
#define vsub _mm256_sub_ps
#define vmul _mm256_mul_ps
#define vdiv _mm256_div_ps
#define vsqrt _mm256_sqrt_ps
#endif
#endif

/* torch.optim.AdamW (_single_tensor_adamw, non-capturable), element by element in its order.
 * decay_mul is 1 for no-decay parameters (p·1 is exact). */
static void adamw_chunk(real *restrict w, const real *restrict gr, real *restrict m, real *restrict v, long n, real decay_mul, real b1,
                        real one_m_b1, real b2, real one_m_b2, real bc2_sqrt, real eps, real neg_step_size, real gscale) {
    long i = 0;
#if defined(__AVX__)
    const vreal Vdm = vset(decay_mul), Vb1 = vset(b1), V1b1 = vset(one_m_b1), Vb2 = vset(b2), V1b2 = vset(one_m_b2),
                Vbc = vset(bc2_sqrt), Veps = vset(eps), Vns = vset(neg_step_size), Vgs = vset(gscale);
    for (; i + VL <= n; i += VL) {
        const vreal g = vmul(vld(gr + i), Vgs);
        const vreal p = vmul(vld(w + i), Vdm);
        const vreal mi = vadd(vmul(vld(m + i), Vb1), vmul(V1b1, g));
        const vreal vi = vadd(vmul(vld(v + i), Vb2), vmul(vmul(V1b2, g), g));
        const vreal denom = vadd(vdiv(vsqrt(vi), Vbc), Veps);
        vst(w + i, vadd(p, vdiv(vmul(Vns, mi), denom)));
        vst(m + i, mi);
        vst(v + i, vi);
    }
#endif
    for (; i < n; i++) {
        const real g = gr[i] * gscale;                     /* clip_grad_norm_: grad.mul_(clip_coef) */
        const real p = w[i] * decay_mul;                   /* param.mul_(1 - lr*wd) */
        const real mi = m[i] * b1 + one_m_b1 * g;          /* exp_avg.mul_(b1).add_(g, alpha=1-b1) */
        const real vi = v[i] * b2 + one_m_b2 * g * g;      /* exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2) */
        const real denom = sqrtr(vi) / bc2_sqrt + eps;     /* (v.sqrt() / sqrt(bc2)).add_(eps) */
        w[i] = p + neg_step_size * mi / denom;             /* param.addcdiv_(m, denom, value=-lr/bc1) */
        m[i] = mi;
        v[i] = vi;
    }
}

/* Official XAdam.update_param with bias_correction = 0 (spec §4.7); wd is 0 for no-decay
 * parameters (u + 0·p = u exactly for finite p). */
static void xadam_chunk(real *restrict w, const real *restrict gr, real *restrict m, real *restrict v, long n, real lr, real wd, real b1,
                        real one_m_b1, real b2, real one_m_b2, real eps, real gscale_div) {
    long i = 0;
#if defined(__AVX__)
    const vreal Vlr = vset(lr), Vwd = vset(wd), Vb1 = vset(b1), V1b1 = vset(one_m_b1), Vb2 = vset(b2), V1b2 = vset(one_m_b2),
                Veps = vset(eps), Vgd = vset(gscale_div);
    for (; i + VL <= n; i += VL) {
        const vreal g = vdiv(vld(gr + i), Vgd);
        const vreal mi = vadd(vmul(vld(m + i), Vb1), vmul(V1b1, g));
        const vreal vi = vadd(vmul(vld(v + i), Vb2), vmul(vmul(V1b2, g), g));
        const vreal wi = vld(w + i);
        const vreal u = vadd(vdiv(mi, vadd(vsqrt(vi), Veps)), vmul(Vwd, wi));
        vst(w + i, vsub(wi, vmul(Vlr, u)));
        vst(m + i, mi);
        vst(v + i, vi);
    }
#endif
    for (; i < n; i++) {
        const real g = gr[i] / gscale_div;                 /* grad / grad_scale */
        const real mi = m[i] * b1 + one_m_b1 * g;
        const real vi = v[i] * b2 + one_m_b2 * g * g;
        const real u = mi / (sqrtr(vi) + eps) + wd * w[i]; /* update = m/(sqrt(v)+eps); update += wd·p */
        w[i] -= lr * u;                                    /* p.add_(-lr·update) */
        m[i] = mi;
        v[i] = vi;
    }
}

/* The scalars of one adamw or xadam update (the same for every chunk). */
typedef struct AdamArgs {
    double lr, wd, bc1;
    real b1, one_m_b1, b2, one_m_b2, eps, bc2_sqrt, gscale;
} AdamArgs;

static AdamArgs adam_args(const OptimGroup *g, double lr) {
    const OptimConfig *c = &g->cfg;
    const AdamArgs a = {.lr = lr, .wd = c->weight_decay, .b1 = (real)c->beta1, .one_m_b1 = (real)(1.0 - c->beta1), .b2 = (real)c->beta2,
                        .one_m_b2 = (real)(1.0 - c->beta2), .eps = (real)c->eps};
    return a;
}

static void adamw_on_chunk(OptimGroup *g, int k, const void *ctx) {
    const AdamArgs *a = ctx;
    const OptimChunk *ch = &g->chunks[k];
    const OptimParam *p = &g->p[ch->p];
    const long b = ch->begin;
    const double lr_p = a->lr * p->lr_scale; /* lr itself at scale 1 */
    const real decay_mul = (real)(1.0 - lr_p * a->wd), neg_step = (real)(-(lr_p / a->bc1));
    adamw_chunk(p->t->data + b, p->t->grad + b, p->s[0] + b, p->s[1] + b, ch->end - b, p->decay ? decay_mul : (real)1, a->b1, a->one_m_b1,
                a->b2, a->one_m_b2, a->bc2_sqrt, a->eps, neg_step, a->gscale);
}

static void adamw_step(OptimGroup *g, double lr, double grad_norm) {
    AdamArgs a = adam_args(g, lr);
    a.gscale = optim_clip_scale(&g->cfg, grad_norm);
    const long t = g->step + 1;
    a.bc1 = 1.0 - pow(g->cfg.beta1, (double)t);
    a.bc2_sqrt = (real)sqrt(1.0 - pow(g->cfg.beta2, (double)t));
    optim_each_chunk(g, adamw_on_chunk, &a);
}

static void xadam_on_chunk(OptimGroup *g, int k, const void *ctx) {
    const AdamArgs *a = ctx;
    const OptimChunk *ch = &g->chunks[k];
    const OptimParam *p = &g->p[ch->p];
    const long b = ch->begin;
    const real lr_p = (real)(a->lr * p->lr_scale);
    xadam_chunk(p->t->data + b, p->t->grad + b, p->s[0] + b, p->s[1] + b, ch->end - b, lr_p, p->decay ? (real)a->wd : (real)0, a->b1,
                a->one_m_b1, a->b2, a->one_m_b2, a->eps, a->gscale);
}

static void xadam_step(OptimGroup *g, double lr, double grad_norm) {
    AdamArgs a = adam_args(g, lr);
    /* official fp32 path: grad_scale = max(1, norm / max_norm), g = grad / grad_scale */
    a.gscale = 1;
    if (g->cfg.max_grad_norm > 0 && grad_norm / g->cfg.max_grad_norm > 1.0) a.gscale = (real)(grad_norm / g->cfg.max_grad_norm);
    optim_each_chunk(g, xadam_on_chunk, &a);
}

const Optimizer optim_adamw = {"adamw", "torch AdamW (linear warm-up and decay)", 2, {"m", "v"}, OPTIM_SCHED_LINEAR, adamw_step};
const Optimizer optim_xadam = {"xadam", "the official DeBERTa XAdam (its warmup_linear schedule)", 2, {"m", "v"}, OPTIM_SCHED_WARMUP_LINEAR, xadam_step};
