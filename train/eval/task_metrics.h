/* task_metrics.h — the scores a fine-tuned model (and each baseline) gets on a labelled split, as
 * the field reports them:
 *
 *   every classification  accuracy; macro-F1 over the labels that occur as gold or predicted
 *                         (scikit-learn's f1_score(average="macro"));
 *   two labels            Matthews correlation (0 when a margin of the 2x2 table is empty) and the F1
 *                         of label 1, the positive class (GLUE's CoLA and MRPC);
 *   regression            mean squared error, Pearson and Spearman correlation (ranks of tied values
 *                         averaged; NaN when one side is constant) (GLUE's STS-B);
 *   BIO / IOB2 tag sets   entity precision, recall and F1 as CoNLL-2003's conlleval counts them: an
 *                         entity is a maximal span B-X I-X* (an I-X that does not continue an entity
 *                         of type X starts one), correct when type and both ends match; each sequence
 *                         (an example's labelled positions in order) is scored on its own.
 *
 * Pure functions of arrays; no model, no files.  scripts/check_metrics.py recomputes every number
 * from the same arrays (tests/e2e-task-metrics.sh).
 */
#ifndef DEBERTA_TRAIN_TASK_METRICS_H
#define DEBERTA_TRAIN_TASK_METRICS_H
#include <stdint.h>
#include <stdio.h>
#include "data/task.h"
#include "train/metrics.h"

typedef struct TaskMetrics {
    long n;                          /* scored rows (examples, or tagged words) */
    double loss;                     /* the model's mean loss; NaN for a baseline */
    int regression;
    double acc, macro_f1;            /* classification */
    int binary;                      /* two labels: mcc and pos_f1 are set */
    double mcc, pos_f1;
    double mse, pearson, spearman;   /* regression */
    int entities;                    /* BIO tag set: the entity scores are set */
    long ent_gold, ent_pred, ent_correct;
    double ent_p, ent_r, ent_f1;
} TaskMetrics;

/* Macro-F1 of an LxL confusion matrix (rows gold, columns predicted). */
double tm_macro_f1(const long *confusion, int L);

/* Accuracy, macro-F1, and for L == 2 the MCC and positive-class F1.  gold/pred in [0, L). */
void tm_classification(const int32_t *gold, const int32_t *pred, long n, int L, TaskMetrics *m);

/* MSE, Pearson, Spearman of n pairs. */
void tm_regression(const double *gold, const double *pred, long n, TaskMetrics *m);

/* 1 when the label names form a BIO tag set: each is "O", "B-X" or "I-X", with at least one B-. */
int tm_is_bio(const char (*names)[TASK_LABEL_LEN], int L);
/* Entity scores over sequences: the rows seq_start[s] .. seq_start[s+1]-1 are sequence s
 * (n_seq + 1 offsets).  Sets m->entities and the ent_* fields. */
void tm_entities(const int32_t *gold, const int32_t *pred, const long *seq_start, long n_seq, const char (*names)[TASK_LABEL_LEN],
                 int L, TaskMetrics *m);

/* "acc 0.9123  macro-F1 0.8012  MCC 0.4 ..." (the fields that are set) into buf. */
void tm_format(const TaskMetrics *m, char *buf, size_t cap);
/* The fields that are set as metrics.jsonl keys, each name prefixed by `prefix` ("" or "baseline_nb_"). */
void tm_record(MetricsRecord *r, const char *prefix, const TaskMetrics *m);
#endif
