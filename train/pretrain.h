/* pretrain.h — the ELECTRA-style pretraining loop (spec §4.6) and held-out evaluation.
 *
 * One step, decoupled mode (default):
 *   1. G: zero G grads; for each micro-batch: generator forward on the masked batch, backward of
 *      the MLM loss / accum, draw replacements from the (pre-update) generator's softmax;
 *      clip + update G (skipped if the gradient norm is not finite).
 *   2. D: zero D grads; for each micro-batch: discriminator forward on the replaced ids — under GDES
 *      its table is stopgrad(E_G) + E_Δ with the already-updated E_G —, backward of λ·RTD / accum;
 *      clip + update D.
 * Joint mode: one group; loss = MLM + λ·RTD per micro-batch; one update.
 *
 * Randomness is addressed by (seed, step): dropout streams by step·64 + 2·micro + phase, sampling
 * streams by step·64 + micro, masking by the loader's own (seed, epoch, sequence).  With the loader
 * position, the optimizer counters and the parameters/moments in the checkpoint, a resumed run
 * computes exactly what an uninterrupted one would.
 */
#ifndef DEBERTA_PRETRAIN_H
#define DEBERTA_PRETRAIN_H
#include <stdint.h>
#include "data/loader.h"
#include "model/electra.h"
#include "train/optim.h"

typedef struct TrainOptions {
    char data[4096];
    char out[4096];
    int resume;
    long steps;             /* total training steps (schedule length) */
    double minutes;         /* > 0: choose `steps` to fit this many minutes (measured before training) */
    int batch;              /* sequences per micro-batch */
    int accum;              /* micro-batches per step */
    uint64_t seed;
    int threads;
    MaskMode mask_mode;
    double mask_prob;
    OptimConfig opt;        /* generator (and joint) optimizer */
    double d_lr;            /* discriminator peak lr; <= 0: same as opt.lr */
    long warmup;            /* < 0: 10% of steps, at most 10000 */
    long eval_every, eval_batches, save_every, log_every, keep_every;
    int max_bad_steps;      /* stop after this many consecutive skipped steps */
    long stop_after;        /* > 0: stop (with a checkpoint) after this many steps of this invocation (tests) */
} TrainOptions;

void train_options_default(TrainOptions *o);

/* The model's view of a loader batch (the model takes plain arrays, not data/ types). */
static inline ElectraInput electra_input(const Batch *b) {
    return (ElectraInput){b->B, b->T, b->input_ids, b->attention_mask, b->labels};
}

/* Held-out metrics of the pair on up to max_batches batches of `val` (rewound first). */
typedef struct EvalResult {
    double mlm_loss, mlm_acc;       /* mean over masked tokens */
    double rtd_loss, rtd_acc, rtd_auc; /* rtd_loss: mean BCE (before λ) over real tokens */
    double baseline_mlm_acc;        /* most frequent masked target's share */
    double baseline_rtd_acc;        /* share of real tokens that are "original" (label 0) */
    long rtd_flagged;               /* real tokens the discriminator calls "replaced" (logit > 0) */
    double rtd_precision;           /* share of the flagged tokens that were replaced (NaN if none) */
    long n_masked, n_tokens, n_batches;
} EvalResult;

EvalResult evaluate(Electra *m, Loader *val, Tape *t, int B, int T, long max_batches, uint64_t seed);

/* ---- one training step (the loop calls it; `deberta bench` times it) ---- */

/* Wall-clock phases of a step (seconds), for the benchmark.  Joint mode books the discriminator
 * forward (and the summed loss) under D_FWD, the one backward under D_BWD, the update under D_OPT. */
enum { PHASE_G_FWD, PHASE_SAMPLE, PHASE_G_BWD, PHASE_G_OPT, PHASE_D_FWD, PHASE_D_BWD, PHASE_D_OPT, PHASE_COUNT };

typedef struct StepStats {
    double g_loss, d_loss;      /* means over micro-batches (d_loss before λ) */
    long mlm_ok, n_masked, rtd_ok, n_tokens;
    OptimStepResult g, d;
    int skipped;
    const char *why;
    double phase[PHASE_COUNT];  /* seconds spent in each phase of this step */
} StepStats;

/* Everything one step touches.  groups: {generator, discriminator} (decoupled) or {all} (joint),
 * by m->cfg.training_mode; micro[accum] already filled (masked batches); replaced[accum] [B·T]
 * scratch for the sampled ids. */
typedef struct StepCtx {
    Electra *m;
    Tape *t;
    OptimGroup *groups;
    Batch *micro;
    int32_t **replaced;
    int accum;
    uint64_t seed;              /* run seed: sampling streams */
} StepCtx;

/* One step (spec §4.6, see the top of this file); update = 0 runs forward/backward only. */
StepStats pretrain_step(const StepCtx *c, long step, int update);

/* Runs (or resumes) a pretraining run.  argc/argv are recorded in RUNDIR/cmdline.txt.  Returns the
 * process exit code. */
int pretrain_run(const ModelConfig *cfg, const TrainOptions *o, int argc, char **argv);

/* The config as `key = value` text (heap string). */
char *config_to_text(const ModelConfig *c);
#endif
