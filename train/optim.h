/* optim.h — the optimizer registry, optimizer groups, global-norm clipping, LR schedules and the
 * optimizer's state buffers.
 *
 * An optimizer is a registry entry (`Optimizer`, listed in optim.c's OPTIMIZERS): its name (for
 * `--optimizer` and config.txt), its per-parameter state buffers (how many and their names: the
 * checkpoint's /optim/<name>/<param>), the schedule it defaults to, and its step over a group.
 * Everything else asks the entry: the option parsers (optim_find), the checkpoint (the buffers by
 * name), ZeRO-1 (shards every buffer alike), the memory estimate (n_state × sizeof(real) per
 * parameter) and the run loops.  "How to add an optimizer": docs/ARCHITECTURE.md.
 *
 * A group is a list of parameters of one ParamSet, each with its state pointing into the flat
 * buffers of an OptimMoments laid out as the ParamSet.  The decoupled ELECTRA recipe (spec §4.6) uses two groups over one
 * ParamSet (prefix "generator." and "discriminator."); joint mode uses one group over everything.
 *
 * The entries, one family per file with its exact update in the file's header comment:
 * train/optim_adam.c (adamw: torch.optim.AdamW, the default; xadam: the official DeBERTa XAdam,
 * spec §4.7, §11), and one file per further optimizer (train/optim_<name>.c).
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
#include <stdio.h>
#include "autograd/base/keytable.h"
#include "autograd/tensor.h"

#define OPTIM_CHUNK 16384
#define OPTIM_MAX_STATE 4    /* state buffers per parameter, at most */
#define OPTIM_PARTIALS 3     /* per-chunk partial sums a group keeps: the gradient norm's, and two for a step's own norms */

typedef struct Optimizer Optimizer;
typedef struct OptimGroup OptimGroup;

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
    const Optimizer *opt;  /* the registry entry */
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
    real *s[OPTIM_MAX_STATE]; /* its state, inside OptimMoments.buf[i] (the Adam family: s[0] = m, s[1] = v) */
    int decay;        /* 1: weight decay applies */
    double lr_scale;  /* its rate is lr_scale × the group's (1 from optim_group_init; fine-tuning's layer-wise decay) */
} OptimParam;

typedef struct OptimChunk {
    int p;            /* index into OptimGroup.p */
    long begin, end;  /* element range inside that parameter */
} OptimChunk;

struct OptimGroup {
    char name[64];    /* "generator", "discriminator", "all": used in checkpoints and logs */
    OptimConfig cfg;
    OptimParam *p;
    int n;
    long n_elems;     /* real elements in the group */
    OptimChunk *chunks;
    int n_chunks;
    double *partial;  /* per-chunk partial sums: OPTIM_PARTIALS × n_chunks (the first n_chunks: the gradient norm's) */
    int own0, own1;   /* the chunks this process updates: all, or its ZeRO-1 shard (optim_group_shard) */
    int world;        /* > 1: sharded over that many ranks */
    void (*sum_partials)(double *partial, int n); /* sharded: sums the norm's partials over the ranks (train/zero.h) */
    long step;        /* updates done so far (skipped steps do not count); saved in checkpoints */
};

typedef struct OptimStepResult {
    double grad_norm; /* global L2 norm of the group's gradient before clipping */
    double lr;        /* learning rate used (0 when skipped) */
    int skipped;      /* 1: the norm was NaN/Inf, nothing was changed (caller logs, zero-grads) */
} OptimStepResult;

/* ---- the registry ---- */
struct Optimizer {
    const char *name;                    /* `--optimizer NAME`, `train_optimizer = NAME` */
    const char *about;                   /* one line for --help */
    int n_state;                         /* per-parameter state buffers (≤ OPTIM_MAX_STATE), zero before the first update */
    const char *state[OPTIM_MAX_STATE];  /* their names: the checkpoint's /optim/<name>/<param> */
    int schedule;                        /* the OptimSchedule optim_config_default gives it */
    /* One update of the group's own chunks (g->own0 .. g->own1) at rate lr (the schedule's; each
     * parameter's is lr × lr_scale), given the gradient's global norm (finite): clipping included,
     * g->step not yet counted.  Sharded (g->world > 1), norms over the ranks go through
     * g->sum_partials.  No heap allocation. */
    void (*step)(OptimGroup *g, double lr, double grad_norm);
};
extern const Optimizer optim_adamw, optim_xadam;
#define OPTIM_ADAMW (&optim_adamw)
#define OPTIM_XADAM (&optim_xadam)
/* The registry in order, NULL-terminated; the first is the default. */
extern const Optimizer *const OPTIMIZERS[];
/* The entry named name, or NULL. */
const Optimizer *optim_find(const char *name);
/* The names joined by sep ("adamw|xadam"), into buf. */
const char *optim_names(char *buf, size_t n, const char *sep);
/* One line per entry, "<indent>NAME  about", to f (the commands' --help). */
void optim_help(FILE *f, const char *indent);
/* The codec of an `int` option field holding a registry index (0: the default): FinetuneOptions.optimizer. */
extern const KeyCodec OPTIM_INDEX_CODEC;

/* Spec defaults: β1 0.9, β2 0.999, eps 1e-6, weight decay 0.01, max_grad_norm 1.0, lr 5e-5, and
 * the schedule the entry names (LINEAR for adamw, WARMUP_LINEAR for xadam); opt NULL: the default. */
void optim_config_default(OptimConfig *c, const Optimizer *opt);
/* 1 if weight decay applies to a parameter of this name (not "bias", not "LayerNorm.weight"). */
int optim_name_decays(const char *name);
/* The state of every parameter of a ParamSet for one optimizer: its n_state flat 64-byte-aligned
 * buffers laid out as the ParamSet's (parameter i at ps->offset[i]), zero before the first update.
 * They belong to the optimizer, not to the model; the checkpoint saves buffer i as
 * /optim/<opt->state[i]>.  Groups of optimizers with the same state names may share them. */
typedef struct OptimMoments {
    const Optimizer *opt; /* whose state (its names) */
    real *buf[OPTIM_MAX_STATE];
    int n;                /* = opt->n_state */
    long total;           /* = ps->total */
} OptimMoments;
void optim_moments_init(OptimMoments *mo, const ParamSet *ps, const Optimizer *opt);   /* ps must be finalized; opt NULL: the default */
void optim_moments_free(OptimMoments *mo);

/* Group of every parameter of ps whose name starts with prefix (NULL or "" = all of them), with
 * its state in mo (initialised for ps, with the state names of cfg->opt).  ps must be finalized.
 * Fatal if the prefix selects nothing. */
void optim_group_init(OptimGroup *g, const char *name, const OptimConfig *cfg, ParamSet *ps, OptimMoments *mo, const char *prefix);
void optim_group_free(OptimGroup *g);

/* ZeRO-1 (train/zero.h owns the collectives): rank `rank` of `world` updates (and keeps state for)
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

/* ---- for the optimizers' steps ---- */
/* fn(g, c, ctx) for each of the group's own chunks c, in parallel (each writes its chunk only). */
void optim_each_chunk(OptimGroup *g, void (*fn)(OptimGroup *g, int c, const void *ctx), const void *ctx);
/* torch.nn.utils.clip_grad_norm_'s factor: min(1, max_norm/(norm + 1e-6)); 1 when max_norm ≤ 0. */
real optim_clip_scale(const OptimConfig *c, double grad_norm);
#endif
