/* optim.c — AdamW / XAdam over a parameter group.  See optim.h for the exact semantics. */
#include "train/optim.h"
#include "autograd/base/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if REAL_IS_DOUBLE
#define sqrtr sqrt
#else
#define sqrtr sqrtf
#endif

void optim_config_default(OptimConfig *c, OptimKind kind) {
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->schedule = kind == OPTIM_XADAM ? OPTIM_SCHED_WARMUP_LINEAR : OPTIM_SCHED_LINEAR;
    c->lr = 5e-5;
    c->beta1 = 0.9;
    c->beta2 = 0.999;
    c->eps = 1e-6;
    c->weight_decay = 0.01;
    c->max_grad_norm = 1.0;
    c->total_steps = 1;
    c->warmup_steps = 0;
}

int optim_name_decays(const char *name) {
    return !(strstr(name, "bias") || strstr(name, "LayerNorm.weight"));
}

void optim_moments_init(OptimMoments *mo, const ParamSet *ps) {
    if (!ps->finalized) fatal("optimizer moments: the parameter set is not finalized");
    const size_t bytes = (size_t)(ps->total ? ps->total : 1) * sizeof(real);
    mo->m = xcalloc_pages(bytes); /* untouched until the first update: ZeRO-1 never touches the others' shards */
    mo->v = xcalloc_pages(bytes);
    mo->total = ps->total;
}

void optim_moments_free(OptimMoments *mo) {
    const size_t bytes = (size_t)(mo->total ? mo->total : 1) * sizeof(real);
    xfree_pages(mo->m, bytes);
    xfree_pages(mo->v, bytes);
    memset(mo, 0, sizeof *mo);
}

/* 1 when parameter t belongs to the group of names starting with prefix (NULL: every parameter) */
static int in_group(const Tensor *t, const char *prefix) { return !prefix || !strncmp(t->name, prefix, strlen(prefix)); }

void optim_group_init(OptimGroup *g, const char *name, const OptimConfig *cfg, ParamSet *ps, OptimMoments *mo, const char *prefix) {
    int n = 0;
    for (int i = 0; i < ps->n; i++) n += in_group(ps->params[i], prefix);
    if (!n) fatal("optimizer group '%s': no parameter name starts with '%s'", name, prefix ? prefix : "");
    if (!ps->finalized) fatal("optimizer group '%s': the parameter set is not finalized", name);
    if (!mo || mo->total != ps->total) fatal("optimizer group '%s': the moments are not those of this parameter set", name);
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->cfg = *cfg;
    g->p = xcalloc((size_t)n, sizeof(OptimParam));
    g->n = n;
    int nc = 0, j = 0;
    for (int i = 0; i < ps->n; i++) {
        if (!in_group(ps->params[i], prefix)) continue;
        OptimParam *p = &g->p[j++];
        p->t = ps->params[i];
        p->m = mo->m + ps->offset[i];
        p->v = mo->v + ps->offset[i];
        p->decay = optim_name_decays(p->t->name ? p->t->name : "");
        p->lr_scale = 1;
        g->n_elems += p->t->n;
        nc += (int)((p->t->n + OPTIM_CHUNK - 1) / OPTIM_CHUNK);
    }
    g->chunks = xcalloc((size_t)nc, sizeof(OptimChunk));
    g->partial = xcalloc((size_t)nc, sizeof(double));
    g->n_chunks = nc;
    g->own0 = 0;
    g->own1 = nc;
    g->world = 1;
    int c = 0;
    for (int k = 0; k < n; k++)
        for (long b = 0; b < g->p[k].t->n; b += OPTIM_CHUNK) {
            g->chunks[c].p = k;
            g->chunks[c].begin = b;
            g->chunks[c].end = MIN(b + OPTIM_CHUNK, g->p[k].t->n);
            c++;
        }
}

void optim_group_free(OptimGroup *g) {
    free(g->p);
    free(g->chunks);
    free(g->partial);
    memset(g, 0, sizeof *g);
}

double optim_lr_at(const OptimConfig *c, long s) {
    const double T = (double)(c->total_steps > 0 ? c->total_steps : 1);
    const double W = (double)(c->warmup_steps > 0 ? c->warmup_steps : 0);
    switch (c->schedule) {
    case OPTIM_SCHED_CONSTANT:
        return c->lr;
    case OPTIM_SCHED_WSD: {
        const double D = (double)(c->decay_steps > 0 ? c->decay_steps : 1);
        if ((double)s < W) return c->lr * (double)s / W;
        if ((double)s < T - D) return c->lr;
        return c->lr * fmax(0.0, (T - (double)s) / D);
    }
    case OPTIM_SCHED_LINEAR:
        if ((double)s < W) return c->lr * (double)s / W;
        if (T <= W) return 0.0;
        return c->lr * fmax(0.0, (T - (double)s) / (T - W));
    case OPTIM_SCHED_WARMUP_LINEAR: {
        /* official lr_schedulers.warmup_linear(step, total, warmup, ends=0) */
        double x = (double)s / T;
        x = x - (double)(long)x;
        const double w = W / T;
        if (x < w) return c->lr * x / w;
        return c->lr * (1.0 - x);
    }
    }
    return c->lr;
}

static double sumsq(const real *x, long n);

/* first chunk of shard r: the first chunk with at least r/world of the elements before it */
static int shard_start(const OptimGroup *g, int r, int world) {
    if (r <= 0) return 0;
    if (r >= world) return g->n_chunks;
    const double want = (double)g->n_elems * r / world;
    long before = 0;
    for (int c = 0; c < g->n_chunks; c++) {
        if ((double)before >= want) return c;
        before += g->chunks[c].end - g->chunks[c].begin;
    }
    return g->n_chunks;
}

void optim_group_shard(OptimGroup *g, int rank, int world) {
    for (int k = 1; k < g->n; k++)
        if (g->p[k].t->grad < g->p[k - 1].t->grad) fatal("optimizer group '%s': parameters not in buffer order, cannot shard", g->name);
    g->own0 = shard_start(g, rank, world);
    g->own1 = shard_start(g, rank + 1, world);
    g->world = world;
}

static long chunk_offset(const OptimGroup *g, int c) {
    if (c >= g->n_chunks) {
        const OptimParam *last = &g->p[g->n - 1];
        return (long)(last->t->grad + last->t->n - g->p[0].t->grad);
    }
    return (long)(g->p[g->chunks[c].p].t->grad + g->chunks[c].begin - g->p[0].t->grad);
}

long optim_shard_span(const OptimGroup *g, int r, long *begin) {
    const int world = g->world > 1 ? g->world : 1;
    *begin = chunk_offset(g, shard_start(g, r, world));
    return chunk_offset(g, shard_start(g, r + 1, world)) - *begin;
}

double optim_grad_norm(OptimGroup *g) {
    const int nc = g->n_chunks, c0 = g->own0, c1 = g->own1;
    if (g->world > 1) memset(g->partial, 0, (size_t)nc * sizeof(double));
#pragma omp parallel for schedule(static)
    for (int c = c0; c < c1; c++) {
        const OptimChunk *ch = &g->chunks[c];
        g->partial[c] = sumsq(g->p[ch->p].t->grad + ch->begin, ch->end - ch->begin);
    }
    if (g->world > 1 && g->sum_partials) g->sum_partials(g->partial, nc); /* x + 0 = x: every partial as one process has it */
    double s = 0;
    for (int c = 0; c < nc; c++) s += g->partial[c];
    return sqrt(s);
}

void optim_zero_grad(OptimGroup *g) {
    for (int k = 0; k < g->n; k++) memset(g->p[k].t->grad, 0, (size_t)g->p[k].t->n * sizeof(real));
}

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

/* Σ x² in double over 4 fixed lanes (element i goes to lane i mod 4, lanes summed (0+1)+(2+3)):
 * the same value with or without AVX, for any thread count. */
static double sumsq(const real *x, long n) {
    double acc[4] = {0, 0, 0, 0};
    long i = 0;
#if defined(__AVX__)
    __m256d a = _mm256_setzero_pd();
    for (; i + 4 <= n; i += 4) {
#if REAL_IS_DOUBLE
        const __m256d d = _mm256_loadu_pd(x + i);
#else
        const __m256d d = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
#endif
        a = _mm256_add_pd(a, _mm256_mul_pd(d, d));
    }
    _mm256_storeu_pd(acc, a);
#else
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) acc[l] += (double)x[i + l] * (double)x[i + l];
#endif
    for (int l = 0; i < n; i++, l++) acc[l] += (double)x[i] * (double)x[i];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

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

OptimStepResult optim_step(OptimGroup *g) {
    OptimStepResult r = {0};
    const OptimConfig *c = &g->cfg;
    r.grad_norm = optim_grad_norm(g);
    if (!isfinite(r.grad_norm)) {
        r.skipped = 1;
        return r;
    }
    const double lr = optim_lr_at(c, g->step);
    r.lr = lr;
    const real b1 = (real)c->beta1, one_m_b1 = (real)(1.0 - c->beta1), b2 = (real)c->beta2, one_m_b2 = (real)(1.0 - c->beta2);
    if (c->kind == OPTIM_ADAMW) {
        /* torch.nn.utils.clip_grad_norm_: clip_coef = max_norm/(norm + 1e-6), clamped to 1 */
        real gscale = 1;
        if (c->max_grad_norm > 0) {
            const double coef = c->max_grad_norm / (r.grad_norm + 1e-6);
            if (coef < 1.0) gscale = (real)coef;
        }
        const long t = g->step + 1;
        const double bc1 = 1.0 - pow(c->beta1, (double)t);
        const double bc2 = 1.0 - pow(c->beta2, (double)t);
        const real bc2_sqrt = (real)sqrt(bc2), eps = (real)c->eps;
#pragma omp parallel for schedule(static)
        for (int k = g->own0; k < g->own1; k++) {
            const OptimChunk *ch = &g->chunks[k];
            const OptimParam *p = &g->p[ch->p];
            const long b = ch->begin;
            const double lr_p = lr * p->lr_scale; /* lr itself at scale 1 */
            const real decay_mul = (real)(1.0 - lr_p * c->weight_decay), neg_step = (real)(-(lr_p / bc1));
            adamw_chunk(p->t->data + b, p->t->grad + b, p->m + b, p->v + b, ch->end - b, p->decay ? decay_mul : (real)1, b1, one_m_b1, b2,
                        one_m_b2, bc2_sqrt, eps, neg_step, gscale);
        }
    } else {
        /* official fp32 path: grad_scale = max(1, norm / max_norm), g = grad / grad_scale */
        real gdiv = 1;
        if (c->max_grad_norm > 0 && r.grad_norm / c->max_grad_norm > 1.0) gdiv = (real)(r.grad_norm / c->max_grad_norm);
        const real wd = (real)c->weight_decay, eps = (real)c->eps;
#pragma omp parallel for schedule(static)
        for (int k = g->own0; k < g->own1; k++) {
            const OptimChunk *ch = &g->chunks[k];
            const OptimParam *p = &g->p[ch->p];
            const long b = ch->begin;
            const real lr_p = (real)(lr * p->lr_scale);
            xadam_chunk(p->t->data + b, p->t->grad + b, p->m + b, p->v + b, ch->end - b, lr_p, p->decay ? wd : (real)0, b1, one_m_b1, b2,
                        one_m_b2, eps, gdiv);
        }
    }
    g->step++;
    return r;
}
