/* eval_checkpoint.h — `deberta eval` as a library call: a checkpoint's held-out metrics on the val split
 * of a shard folder (train/eval/evaluate.h: MLM and RTD with their baselines, the discriminator's attention
 * per layer), then the yardsticks beside the shards (train/eval/yardstick.h), as text. */
#ifndef DEBERTA_TRAIN_EVAL_CHECKPOINT_H
#define DEBERTA_TRAIN_EVAL_CHECKPOINT_H
#include <stddef.h>
#include <stdio.h>

typedef struct EvalOptions {
    char ckpt[4096];     /* the checkpoint (required) */
    char data[4096];     /* the shard folder (required) */
    long batches;        /* val batches evaluated */
    int batch;           /* sequences per batch */
    int threads;         /* 0: the default */
} EvalOptions;

void eval_options_default(EvalOptions *o);
/* One `--flag value` of the option table (flag without "--"): 1 if it was one, 0 if the table has no
 * such flag, -1 with a message ("--batch 'x' must be a positive integer") on a bad value. */
int eval_options_set_flag(EvalOptions *o, const char *flag, const char *value, char *err, size_t errlen);

/* Loads the checkpoint, checks the shards against it (tokenizer, special ids), evaluates and writes
 * the report to f.  0; errors (a bad checkpoint, shards of another tokenizer) are one line and exit
 * the process (fatal). */
int eval_checkpoint(const EvalOptions *o, FILE *f);
#endif
