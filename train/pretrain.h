/* pretrain.h — the ELECTRA-style pretraining run (spec §4.6): a fresh run or a resumed one, the
 * loop over train/step.c's step, metrics, evaluation (train/eval/evaluate.c) and checkpoints.
 *
 * Randomness is addressed by (seed, step): dropout streams by step·64 + 2·micro + phase, sampling
 * streams by step·64 + micro, masking by the loader's own (seed, epoch, sequence).  With the loader
 * position, the optimizer counters and the parameters/moments in the checkpoint, a resumed run
 * computes exactly what an uninterrupted one would.
 */
#ifndef DEBERTA_PRETRAIN_H
#define DEBERTA_PRETRAIN_H
#include <stddef.h>
#include "data/loader.h"
#include "model/config.h"
#include "train/options.h"
#include "train/run.h"

/* --init-from: the checkpoint, opened once by the command line for its model config (checkpoint_open);
 * the run reads its tokenizer from st and its parameters from ck. */
typedef struct PretrainInit {
    Checkpoint *ck;
    CheckpointState st;
} PretrainInit;

/* The model config of a fresh run: the defaults, or the config of the checkpoint init_from (opened
 * into init, which the run then reads; "" = none), then the model flags in their order: "--config",
 * FILE and "--KEY", VALUE pairs (model/config.h; --preset too), then validated.  0; 1 (a --config file
 * that cannot be read) or 2 (a bad key or value, a config that does not validate) with one line in
 * err.  An --init-from checkpoint that cannot be read is fatal. */
int pretrain_model_config(const char *init_from, char **flags, int n_flags, ModelConfig *cfg, PretrainInit *init, char *err, size_t errlen);
/* Closes --init-from's checkpoint (a no-op when none was opened). */
void pretrain_init_close(PretrainInit *init);

/* Runs (or resumes) a pretraining run: threads and the wait policy's name from env, init NULL or
 * --init-from's checkpoint.  argc/argv are recorded in RUNDIR/cmdline.txt.  Returns the process exit
 * code. */
int pretrain_run(const ModelConfig *cfg, const TrainOptions *o, const RunEnv *env, PretrainInit *init, int argc, char **argv);

/* Whether a model of config c can read the data of L: every id of the data is a row of the model
 * (the model may have more: the published DeBERTa-V3 have 128,100 rows for 128,001 ids) and the
 * special ids ([PAD] [CLS] [SEP] [UNK] [MASK]) are the same.  0, or -1 with the first difference in
 * err, e.g. "mask_id is 4 in the model but 1503 in the shards". */
int config_check_data(const ModelConfig *c, const Loader *L, char *err, size_t errlen);
#endif
