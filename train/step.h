/* step.h — one ELECTRA-style pretraining step (spec §4.6): the loop (train/pretrain.c) and
 * `deberta bench` call the same function.
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
 *
 * Data parallel (train/dist.h, N ranks, micro-batches of B sequences each): micro-batch i of rank r
 * is rows [r·B, (r+1)·B) of global micro-batch i (the loader's slice).  At the start of the step the
 * ranks gather each other's counts of masked and real tokens per micro-batch, so that
 *   - dropout of batch-shaped activations is drawn for global rows (ElectraInput.row0 = r·B) and the
 *     relative-position table's dropout is the same on every rank (it is one tensor per micro-batch);
 *   - the k-th masked position draws the replacement of masked position masked0 + k of the global
 *     micro-batch (masked0 = masked positions of ranks 0..r-1);
 *   - the losses are normalised by global counts: the MLM mean is over the global micro-batch's
 *     masked tokens, the RTD mean over its real tokens (backward seeds n_local/n_global / accum);
 *   - each model update sums the group's gradient over the ranks with one allreduce (in decoupled
 *     mode the generator's after its backward, the discriminator's after its own), so the clipping
 *     norm, the non-finite guard and the update are the same on every rank.  A rank whose loss is
 *     not finite poisons its gradient with a NaN: every rank then sees a non-finite norm and skips.
 * N ranks × B therefore compute what one process with N·B computes, up to the summation order of
 * the gradient (the statistics below are global too).
 */
#ifndef DEBERTA_TRAIN_STEP_H
#define DEBERTA_TRAIN_STEP_H
#include <stdint.h>
#include "data/batch.h"
#include "model/electra.h"
#include "train/optim.h"
#include "train/zero.h"

#define STREAMS_PER_STEP 64 /* dropout/sampling sub-streams of one step: 2 per micro-batch */

/* The model's view of a loader batch (the model takes plain arrays, not data/ types). */
static inline ElectraInput electra_input(const Batch *b) {
    return (ElectraInput){b->B, b->T, b->input_ids, b->attention_mask, b->labels, 0, 0};
}

/* Wall-clock phases of a step (seconds), for the benchmark.  Joint mode books the discriminator
 * forward (and the summed loss) under D_FWD, the one backward under D_BWD, the update under D_OPT. */
enum { PHASE_G_FWD, PHASE_SAMPLE, PHASE_G_BWD, PHASE_G_OPT, PHASE_D_FWD, PHASE_D_BWD, PHASE_D_OPT, PHASE_SYNC, PHASE_COUNT };

typedef struct StepStats {
    double g_loss, d_loss;      /* means over micro-batches (d_loss before λ), over all ranks */
    long mlm_ok, n_masked, rtd_ok, n_tokens; /* over all ranks */
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
    const Zero *zero;           /* ZeRO-1 sharding of the groups (train/zero.h), or NULL */
} StepCtx;

/* One step (spec §4.6, see the top of this file); update = 0 runs forward/backward only. */
StepStats pretrain_step(const StepCtx *c, long step, int update);

#endif
