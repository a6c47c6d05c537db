/* optim.c — the optimizer registry and what every optimizer shares: groups, shards, the gradient
 * norm, schedules, the step's frame.  See optim.h for the exact semantics; the steps themselves are
 * in optim_adam.c (adamw, xadam) and optim_lamb.c (lamb). */
#include "train/optim.h"
#include "autograd/base/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

/* ---- the registry ---- */

extern const Optimizer optim_lamb;
const Optimizer *const OPTIMIZERS[] = {&optim_adamw, &optim_xadam, &optim_lamb, NULL};

const Optimizer *optim_find(const char *name) {
    for (int i = 0; OPTIMIZERS[i]; i++)
        if (!strcmp(OPTIMIZERS[i]->name, name)) return OPTIMIZERS[i];
    return NULL;
}

const char *optim_names(char *buf, size_t n, const char *sep) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; OPTIMIZERS[i] && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? sep : "", OPTIMIZERS[i]->name);
    return buf;
}

void optim_help(FILE *f, const char *indent) {
    for (int i = 0; OPTIMIZERS[i]; i++) fprintf(f, "%s%-6s %s\n", indent, OPTIMIZERS[i]->name, OPTIMIZERS[i]->about);
}

static int index_parse(void *base, void *p, const char *v) {
    for (int i = 0; OPTIMIZERS[i]; i++)
        if (!strcmp(OPTIMIZERS[i]->name, v)) return *(int *)p = i, 0;
    return -1;
}
static const char *index_name(const void *base, const void *p) {
    const int i = *(const int *)p;
    return i >= 0 && i < (int)(sizeof OPTIMIZERS / sizeof OPTIMIZERS[0]) - 1 ? OPTIMIZERS[i]->name : "?";
}
const KeyCodec OPTIM_INDEX_CODEC = {index_parse, index_name};

void optim_config_default(OptimConfig *c, const Optimizer *opt) {
    memset(c, 0, sizeof *c);
    c->opt = opt ? opt : OPTIMIZERS[0];
    c->schedule = (OptimSchedule)c->opt->schedule;
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

void optim_moments_init(OptimMoments *mo, const ParamSet *ps, const Optimizer *opt) {
    if (!ps->finalized) fatal("optimizer state: the parameter set is not finalized");
    memset(mo, 0, sizeof *mo);
    mo->opt = opt ? opt : OPTIMIZERS[0];
    mo->n = mo->opt->n_state;
    mo->total = ps->total;
    const size_t bytes = (size_t)(ps->total ? ps->total : 1) * sizeof(real);
    for (int i = 0; i < mo->n; i++) mo->buf[i] = xcalloc_pages(bytes); /* untouched until the first update: ZeRO-1 never touches the others' shards */
}

void optim_moments_free(OptimMoments *mo) {
    const size_t bytes = (size_t)(mo->total ? mo->total : 1) * sizeof(real);
    for (int i = 0; i < mo->n; i++) xfree_pages(mo->buf[i], bytes);
    memset(mo, 0, sizeof *mo);
}

/* 1 when optimizer o keeps the state that mo holds (the same buffers by name) */
static int same_state(const Optimizer *o, const OptimMoments *mo) {
    if (o->n_state != mo->n) return 0;
    for (int i = 0; i < mo->n; i++)
        if (strcmp(o->state[i], mo->opt->state[i])) return 0;
    return 1;
}

/* 1 when parameter t belongs to the group of names starting with prefix (NULL: every parameter) */
static int in_group(const Tensor *t, const char *prefix) { return !prefix || !strncmp(t->name, prefix, strlen(prefix)); }

void optim_group_init(OptimGroup *g, const char *name, const OptimConfig *cfg, ParamSet *ps, OptimMoments *mo, const char *prefix) {
    int n = 0;
    for (int i = 0; i < ps->n; i++) n += in_group(ps->params[i], prefix);
    if (!n) fatal("optimizer group '%s': no parameter name starts with '%s'", name, prefix ? prefix : "");
    if (!ps->finalized) fatal("optimizer group '%s': the parameter set is not finalized", name);
    if (!mo || mo->total != ps->total) fatal("optimizer group '%s': the moments are not those of this parameter set", name);
    if (!same_state(cfg->opt, mo)) fatal("optimizer group '%s': %s keeps other state than the buffers of %s", name, cfg->opt->name, mo->opt->name);
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
        for (int b = 0; b < mo->n; b++) p->s[b] = mo->buf[b] + ps->offset[i];
        p->decay = optim_name_decays(p->t->name ? p->t->name : "");
        p->lr_scale = 1;
        g->n_elems += p->t->n;
        nc += (int)((p->t->n + OPTIM_CHUNK - 1) / OPTIM_CHUNK);
    }
    g->chunks = xcalloc((size_t)nc, sizeof(OptimChunk));
    g->partial = xcalloc((size_t)nc * OPTIM_PARTIALS, sizeof(double));
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

OptimStepResult optim_step(OptimGroup *g) {
    OptimStepResult r = {0};
    r.grad_norm = optim_grad_norm(g);
    if (!isfinite(r.grad_norm)) {
        r.skipped = 1;
        return r;
    }
    r.lr = optim_lr_at(&g->cfg, g->step);
    g->cfg.opt->step(g, r.lr, r.grad_norm);
    g->step++;
    return r;
}

void optim_each_chunk(OptimGroup *g, void (*fn)(OptimGroup *g, int c, const void *ctx), const void *ctx) {
#pragma omp parallel for schedule(static)
    for (int k = g->own0; k < g->own1; k++) fn(g, k, ctx);
}

real optim_clip_scale(const OptimConfig *c, double grad_norm) {
    /* torch.nn.utils.clip_grad_norm_: clip_coef = max_norm/(norm + 1e-6), clamped to 1 */
    real gscale = 1;
    if (c->max_grad_norm > 0) {
        const double coef = c->max_grad_norm / (grad_norm + 1e-6);
        if (coef < 1.0) gscale = (real)coef;
    }
    return gscale;
}
