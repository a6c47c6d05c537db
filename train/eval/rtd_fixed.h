/* rtd_fixed.h — the fixed-corruption RTD evaluation: the discriminator scored on validation
 * sequences corrupted once, by a stand-in bigram generator, and stored beside the shards
 * (DIR/rtd-fixed.h5, written by scripts/rtd_fixed.py; layout in docs/FORMATS.md).  Unlike the live RTD
 * figures, which depend on how strong each run's own generator is, these are comparable across
 * recipes, runs and checkpoints, and with the count detector on the very same tokens (the file's
 * counter_* attributes). */
#ifndef DEBERTA_TRAIN_RTD_FIXED_H
#define DEBERTA_TRAIN_RTD_FIXED_H
#include <stdint.h>
#include "autograd/tape.h"
#include "model/electra.h"

#define RTD_FIXED_FILE "rtd-fixed.h5"
#define RTD_FIXED_FORMAT "deberta.c-rtd-fixed"
#define RTD_FIXED_VERSION 1

typedef struct RtdFixed {
    int N, T;                 /* sequences, tokens per sequence */
    int32_t *ids;             /* [N·T] corrupted ids (what the discriminator reads) */
    int32_t *original;        /* [N·T] the ids before the corruption */
    int32_t *mask;            /* [N·T] attention mask 0/1 */
    int8_t *scored;           /* [N·T] 1 = a non-special real token (the tokens the figures are over) */
    int8_t *replaced;         /* [N·T] 1 = the token differs from the original */
    int64_t vocab_size, n_scored, n_replaced, counter_flagged;
    double counter_auc, counter_precision, counter_accuracy, baseline_accuracy;
    char tokenizer_hash[17];
} RtdFixed;

typedef struct RtdFixedResult {
    double auc;               /* ROC AUC of the discriminator's logits over the scored tokens */
    double accuracy;          /* logit > 0 called "replaced" */
    double baseline;          /* share of scored tokens that are original */
    long flagged;             /* scored tokens with logit > 0 */
    double precision;         /* share of the flagged that were replaced (NaN if none) */
    long n_scored, n_replaced;
} RtdFixedResult;

/* DIR/rtd-fixed.h5 when it exists: 1 = read (and checked against the model: vocabulary, tokenizer
 * hash when given), 0 = absent (f zeroed), 2 = not for this model (seq_len above its max_seq_len: f
 * zeroed, a note in err), -1 = error in err. */
int rtd_fixed_open_dir(const char *dir, const ModelConfig *cfg, const char *tokenizer_hash, RtdFixed *f, char *err, size_t errlen);
void rtd_fixed_free(RtdFixed *f);

/* The discriminator (dropout off, no gradients) on every sequence, B at a time. */
RtdFixedResult rtd_fixed_eval(const Electra *m, Tape *t, const RtdFixed *f, int B);
#endif
