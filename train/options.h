/* options.h — the training options of a run (TrainOptions) and their one key table: the
 * `deberta pretrain` flags, their checks and messages, and the `train_*` lines of RUNDIR/config.txt
 * and of the checkpoint's config text (written by train_options_to_text, read back on --resume by
 * train_options_from_text) all come from the same rows, as model/config.c does for ModelConfig.
 */
#ifndef DEBERTA_TRAIN_OPTIONS_H
#define DEBERTA_TRAIN_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include "data/loader.h"
#include "train/optim.h"

typedef struct TrainOptions {
    char data[4096];
    char out[4096];
    char init_from[4096];   /* a fresh run's parameters from this checkpoint (an import's, or a run's); "" = initialised */
    int resume;
    long steps;             /* total training steps (schedule length) */
    double minutes;         /* > 0: choose `steps` to fit this many minutes (measured before training) */
    int batch;              /* sequences per micro-batch */
    int accum;              /* micro-batches per step */
    uint64_t seed;
    int threads;
    MaskMode mask_mode;
    double mask_prob;
    OptimConfig opt;        /* generator (and joint) optimizer; opt.lr < 0 until resolved */
    double d_lr;            /* discriminator peak lr; 0: same as opt.lr (< 0 until resolved) */
    long warmup;            /* < 0: 10% of steps, at most 10000 */
    double decay_frac;      /* > 0: warm-up, stable, then linear decay over the last decay_frac of the
                             *   steps (OPTIM_SCHED_WSD); 0: the optimizer's own schedule */
    long eval_every, eval_batches, save_every, log_every;
    long keep_every;        /* > 0: also keep RUNDIR/checkpoint-<step>.h5 every this many steps */
    int max_bad_steps;      /* stop after this many consecutive skipped steps */
    int short_seq_len;      /* sequence-length curriculum: > 0 and below max_seq_len: the first */
                            /*   (< 0 until resolved: the default, train_options_resolve) */
    double short_frac;      /*   round(short_frac · steps) steps use sequences of short_seq_len tokens, */
                            /*   batch·T/short_seq_len of them per micro-batch (about the same tokens) */
    long stop_after;        /* > 0: stop (with a checkpoint) after this many steps of this invocation (tests) */
    long ranks;             /* data-parallel ranks of the run (0 = one process); set by the run, not a flag */
    long zero;              /* 1: ZeRO-1, each rank keeps the AdamW moments of its shard only (data parallel) */
} TrainOptions;

void train_options_default(TrainOptions *o);

/* The curriculum's short phase: its number of steps (0 = none for this run and model length T) and
 * its micro-batch size. */
/* The default curriculum: 32-token sequences for the first half of the steps when max_seq_len >= 128. */
enum { TRAIN_AUTO_SHORT_SEQ_LEN = 32, TRAIN_AUTO_CURRICULUM_MIN_T = 128 };
/* The default peak rates: the generator's (and a joint run's single optimizer's), and the
 * discriminator's as a multiple of the generator's. */
#define TRAIN_GENERATOR_LR 2.5e-4
#define TRAIN_JOINT_LR 5e-4
#define TRAIN_D_LR_FACTOR 2.0
/* A fresh run, once the model is known: what was not given becomes the default; short_seq_len < 0
 * the curriculum of max_seq_len, opt.lr < 0 and d_lr < 0 the rates above (joint: the training mode
 * is TRAIN_JOINT, one optimizer; d_lr is then 0). */
void train_options_resolve(TrainOptions *o, int max_seq_len, int joint);
long train_short_steps(const TrainOptions *o, int T);
int train_short_batch(const TrainOptions *o, int T);

/* Applies one `--flag value` of the table (flag without the leading "--").  Returns 1 if it was one
 * (*resume_ok: whether --resume accepts it), 0 if the table has no such flag, -1 with a message
 * ("--steps wants a positive integer, got 'x'") on a bad value. */
int train_options_set_flag(TrainOptions *o, const char *flag, const char *value, int *resume_ok, char *err, size_t errlen);

/* The persisted options as `train_<key> = value` lines (heap string). */
char *train_options_to_text(const TrainOptions *o);
/* Reads the train_* lines of a config text back (other keys are skipped, as are train_* lines
 * without a value).  Returns 0, or -1 with a message naming an unknown train_* key. */
int train_options_from_text(TrainOptions *o, const char *text, char *err, size_t errlen);
#endif
