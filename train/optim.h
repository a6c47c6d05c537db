/* optim.h — AdamW over a parameter group, global-norm clipping, LR schedules, and the moments.
 *
 * A group is a list of parameters of one ParamSet, each with its moments m, v pointing into the
 * flat buffers of an OptimMoments laid out as the ParamSet.  The decoupled ELECTRA recipe (spec §4.6) uses two groups over one
 * ParamSet (prefix "generator." and "discriminator."); joint mode uses one group over everything.
 *
 * Two optimizers (spec §4.7, §11):
 *   OPTIM_ADAMW  torch.optim.AdamW, in torch's order of operations:
 *                  p *= 1 − lr·wd                       (decoupled decay, decay params only)
 *                  m  = lerp(m, g, 1−β1);  v = β2·v + (1−β2)·g²
 *                  p −= lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)     t = 1, 2, ...
 *                clipping as torch.nn.utils.clip_grad_norm_: g *= min(1, max_norm/(‖g‖ + 1e-6)).
 *                Schedule OPTIM_SCHED_LINEAR (below).
 *   OPTIM_XADAM  the official DeBERTa XAdam:  no bias correction, eps outside the sqrt,
 *                  u = m/(sqrt(v) + eps);  if decay: u += wd·p;  p −= lr_t·u
 *                clipping as the official fp32 path: g /= max(1, ‖g‖/max_norm).
 *                Schedule OPTIM_SCHED_WARMUP_LINEAR (below; first update has lr 0).
 *
 * No weight decay for parameters whose name contains "bias" or "LayerNorm.weight" (the official
 * regexes; LayerNorm.bias matches "bias").
 *
 * Determinism: the group is cut into fixed chunks of OPTIM_CHUNK elements (independent of the
 * thread count); the squared norm is summed per chunk in double and the chunk sums are added in
 * order, so the norm — and hence the whole update — is bitwise the same for any thread count.
 * optim_step() does no heap allocation.
 */
#ifndef DEBERTA_OPTIM_H
#define DEBERTA_OPTIM_H
#include "autograd/tensor.h"

#define OPTIM_CHUNK 16384

typedef enum { OPTIM_ADAMW = 0, OPTIM_XADAM = 1 } OptimKind;

typedef enum {
    /* Linear warm-up then linear decay to 0, exactly transformers' get_linear_schedule_with_warmup
     * (a torch LambdaLR) evaluated at s = updates done so far (0 for the first update):
     *   s < W:  lr·s/W          s ≥ W:  lr·max(0, (T − s)/(T − W))
     * so with W > 0 the first update has lr 0 (as in transformers), lr peaks at s = W and the
     * last update (s = T−1) has lr/(T − W).  W = 0: lr·(T − s)/T from the first update. */
    OPTIM_SCHED_LINEAR = 0,
    /* The official warmup_linear (spec §4.7): x = s/T (wrapped into [0,1) as the official
     * x − int(x)), w = W/T;  x < w: lr·x/w,  else lr·(1 − x).  s = updates so far, so the first
     * update has lr 0; the multiplier jumps from ~1 to 1 − w at the end of warm-up. */
    OPTIM_SCHED_WARMUP_LINEAR = 1,
    OPTIM_SCHED_CONSTANT = 2, /* lr for every update (tests, ablations) */
    /* Warm-up, stable, decay: s < W: lr·s/W;  W ≤ s < T − D: lr;  s ≥ T − D: lr·max(0, (T − s)/D)
     * (D = decay_steps ≥ 1; the last update has lr/D).  `deberta pretrain --decay-frac F`. */
    OPTIM_SCHED_WSD = 3,
} OptimSchedule;

typedef struct OptimConfig {
    OptimKind kind;
    OptimSchedule schedule;
    double lr;             /* peak learning rate */
    double beta1, beta2, eps;
    double weight_decay;   /* applied to decay parameters only */
    double max_grad_norm;  /* ≤ 0: no clipping (the norm is still computed and returned) */
    long total_steps;      /* T: updates of this group over the whole run */
    long warmup_steps;     /* W */
    long decay_steps;      /* D: the final decay of OPTIM_SCHED_WSD */
} OptimConfig;

typedef struct OptimParam {
    Tensor *t;        /* data and grad (in the ParamSet) */
    real *m, *v;      /* its moments, inside OptimMoments.m / .v */
    int decay;        /* 1: weight decay applies */
    double lr_scale;  /* its rate is lr_scale × the group's (1 from optim_group_init; fine-tuning's layer-wise decay) */
} OptimParam;

typedef struct OptimChunk {
    int p;            /* index into OptimGroup.p */
    long begin, end;  /* element range inside that parameter */
} OptimChunk;

typedef struct OptimGroup {
    char name[64];    /* "generator", "discriminator", "all": used in checkpoints and logs */
    OptimConfig cfg;
    OptimParam *p;
    int n;
    long n_elems;     /* real elements in the group */
    OptimChunk *chunks;
    int n_chunks;
    double *partial;  /* per-chunk partial sums (n_chunks) */
    int own0, own1;   /* the chunks this process updates: all, or its ZeRO-1 shard (optim_group_shard) */
    int world;        /* > 1: sharded over that many ranks */
    void (*sum_partials)(double *partial, int n); /* sharded: sums the norm's partials over the ranks (train/zero.h) */
    long step;        /* updates done so far (skipped steps do not count); saved in checkpoints */
} OptimGroup;

typedef struct OptimStepResult {
    double grad_norm; /* global L2 norm of the group's gradient before clipping */
    double lr;        /* learning rate used (0 when skipped) */
    int skipped;      /* 1: the norm was NaN/Inf, nothing was changed (caller logs, zero-grads) */
} OptimStepResult;

/* Spec defaults: β1 0.9, β2 0.999, eps 1e-6, weight decay 0.01, max_grad_norm 1.0, lr 5e-5, and
 * the schedule that belongs to the kind (LINEAR for adamw, WARMUP_LINEAR for xadam). */
void optim_config_default(OptimConfig *c, OptimKind kind);
/* 1 if weight decay applies to a parameter of this name (not "bias", not "LayerNorm.weight"). */
int optim_name_decays(const char *name);
/* The moments of every parameter of a ParamSet: two flat 64-byte-aligned buffers laid out as the
 * ParamSet's (parameter i at ps->offset[i]), zero before the first update.  They belong to the
 * optimizer, not to the model; the checkpoint saves them as /optim/m and /optim/v. */
typedef struct OptimMoments {
    real *m, *v;
    long total;       /* = ps->total */
} OptimMoments;
void optim_moments_init(OptimMoments *mo, const ParamSet *ps);   /* ps must be finalized */
void optim_moments_free(OptimMoments *mo);

/* Group of every parameter of ps whose name starts with prefix (NULL or "" = all of them), with
 * its moments in mo (initialised for ps).  ps must be finalized.  Fatal if the prefix selects nothing. */
void optim_group_init(OptimGroup *g, const char *name, const OptimConfig *cfg, ParamSet *ps, OptimMoments *mo, const char *prefix);
void optim_group_free(OptimGroup *g);

/* ZeRO-1 (train/zero.h owns the collectives): rank `rank` of `world` updates (and keeps moments for)
 * only its shard, a contiguous run of whole chunks balanced by elements; the norm's per-chunk partial
 * sums are then summed over the ranks by g->sum_partials (each chunk's partial is non-zero on one rank
 * only, so the norm is the unsharded one). */
void optim_group_shard(OptimGroup *g, int rank, int world);
/* The elements (from the group's first element) of rank r's shard: *begin and the count returned.
 * The shards of ranks 0..world-1 tile the group's span of the flat buffers, padding included. */
long optim_shard_span(const OptimGroup *g, int r, long *begin);

/* Schedule multiplier × lr for the update that follows s updates (s = g->step before it). */
double optim_lr_at(const OptimConfig *c, long s);
/* Global L2 norm of the group's gradient (double accumulation, fixed order). */
double optim_grad_norm(OptimGroup *g);
/* Zero the group's gradients only (the other group's stay). */
void optim_zero_grad(OptimGroup *g);
/* Norm, non-finite check, clipping, update, step++.  A non-finite norm skips everything (parameters,
 * moments, gradients and step are left as they were) and returns skipped = 1. */
OptimStepResult optim_step(OptimGroup *g);
#endif
