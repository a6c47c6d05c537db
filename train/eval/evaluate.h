/* evaluate.h — held-out metrics of the ELECTRA pair: MLM loss/accuracy, RTD loss/accuracy/AUC and
 * their baselines, without gradients and with a fixed sampling stream per batch. */
#ifndef DEBERTA_TRAIN_EVALUATE_H
#define DEBERTA_TRAIN_EVALUATE_H
#include <stdint.h>
#include "autograd/tape.h"
#include "data/loader.h"
#include "model/electra.h"

/* Held-out metrics of the pair on up to max_batches batches of `val` (rewound first).
 * Data parallel (train/dist.h): every rank evaluates its slice of each global batch (val opened
 * with the rank and world), sampling keyed as for the global batch; the sums, the target
 * frequencies and the (logit, label) pairs of the AUC are combined, so every rank returns the
 * result one process with the global batch would (up to summation order). */
typedef struct EvalResult {
    double mlm_loss, mlm_acc;       /* mean over masked tokens */
    double rtd_loss, rtd_acc, rtd_auc; /* rtd_loss: mean BCE (before λ) over real tokens */
    double baseline_mlm_acc;        /* most frequent masked target's share */
    double baseline_rtd_acc;        /* share of real tokens that are "original" (label 0) */
    long rtd_flagged;               /* real tokens the discriminator calls "replaced" (logit > 0) */
    double rtd_precision;           /* share of the flagged tokens that were replaced (NaN if none) */
    long n_masked, n_tokens, n_batches;
    AttentionStats disc_att;        /* the discriminator's attention statistics, sums (model/attention.h) */
    int disc_layers;                /* slots of disc_att filled */
} EvalResult;

/* A scored token: the discriminator's logit and its label (1 = replaced). */
typedef struct Scored {
    float logit;
    int y;
} Scored;
/* ROC AUC by the rank-sum (Mann-Whitney) statistic with tied scores given their average rank; sorts s
 * by logit.  NaN when one class is empty. */
double eval_auc(Scored *s, long n);

EvalResult evaluate(Electra *m, Loader *val, Tape *t, int B, int T, long max_batches, uint64_t seed);
#endif
