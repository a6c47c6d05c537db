/* task_eval.h — a fine-tuned model (an encoder and its task head) run over a task set, its predictions
 * and scores (train/eval/task_metrics.h), and the baselines beside them.  Used by `deberta finetune`
 * (dev and test) and `deberta predict`.
 *
 * Rows: one per example (classification, regression), or one per word (tagging: the word's first
 * sub-token; the positions whose word_ids start a word, or whose label is not TASK_IGNORE when the
 * set has no word ids).  A row is labelled when its gold label is not TASK_IGNORE (regression: a
 * finite target); only labelled rows are scored.  Tagging rows of one example form one sequence for
 * the entity scores.
 *
 * Baselines (fitted on train, scored on the same labelled rows):
 *   majority      the most frequent label of train (regression: the mean of train's targets)
 *   word_tag      tagging: each word's most frequent tag in train, unknown words the majority tag
 *                 (data/task.h task_word_tag_predict; a word = its sub-token ids)
 *   naive_bayes   classification: multinomial naive Bayes over the example's bag of tokens (the
 *                 task's sub-word ids, [CLS]/[SEP]/padding left out; both texts of a pair), Laplace
 *                 smoothing (add one over the tokens seen in train), tokens unseen in train ignored,
 *                 ties to the smaller label
 */
#ifndef DEBERTA_TRAIN_TASK_EVAL_H
#define DEBERTA_TRAIN_TASK_EVAL_H
#include <stdint.h>
#include "autograd/tape.h"
#include "data/task.h"
#include "model/encoder.h"
#include "model/task_head.h"
#include "train/eval/task_metrics.h"

typedef struct TaskPreds {
    long n;                  /* rows */
    int32_t *gold;           /* [n] classification/tagging: gold label or TASK_IGNORE */
    int32_t *pred;           /* [n] predicted label (argmax) */
    float *prob;             /* [n] its softmax probability */
    double *gold_v, *pred_v; /* [n] regression: target (NaN when unlabelled) and prediction */
    int64_t *ex;             /* [n] example of the row */
    int32_t *pos;            /* [n] position in the example (tagging), else 0 */
    double loss;             /* mean loss (cross-entropy or squared error) over the labelled rows; NaN if none */
    long n_labelled;
    double first_batch_seconds; /* wall time of the first batch (the one that maps the tape's memory) */
    long long computed_positions; /* sum over batches of examples x the batch's padded length */
    long long first_batch_positions; /* the first batch's share of it */
} TaskPreds;

/* Runs the encoder and its head over every example of ts in batches of B (dropout off, no gradients).
 * The examples run shortest first, B at a time, each batch padded only to its longest example (its
 * last non-padding position): the rows come out in example order all the same, and equal a pass at
 * the full length T up to summation order (padded keys are masked, relative positions depend only on
 * i − j).  task_eval_run_ordered(..., by_length = 0, ...) is that pass: file order, every batch T long. */
void task_eval_run(Encoder *enc, TaskHead *head, Tape *t, const TaskSet *ts, int B, TaskPreds *out);
void task_eval_run_ordered(Encoder *enc, TaskHead *head, Tape *t, const TaskSet *ts, int B, int by_length, TaskPreds *out);
void task_preds_free(TaskPreds *p);

/* The scores of the labelled rows (m->loss = p->loss). */
void task_preds_metrics(const TaskSet *ts, const TaskPreds *p, TaskMetrics *m);
/* The number model selection maximises on dev: accuracy, or Pearson for regression (-2 when NaN). */
double task_metrics_score(const TaskMetrics *m);

#define TASK_MAX_BASELINES 3
typedef struct TaskBaselines {
    int n;
    char key[TASK_MAX_BASELINES][24];   /* "majority", "word_tag", "naive_bayes" */
    char what[TASK_MAX_BASELINES][160]; /* for the results line */
    TaskMetrics m[TASK_MAX_BASELINES];
} TaskBaselines;


/* The results of a test evaluation: adds the model's scores and every baseline's (keys prefixed
 * "baseline_<key>_") to rec, and writes into text the line "HEAD: <scores> (n N) | baselines:
 * majority class 'X' <acc>, ...TAIL" (regression: the baseline's MSE) and one line per baseline with
 * all its scores. */
void task_report(const TaskSet *train, const TaskSet *test, const TaskMetrics *model, const char *head, const char *tail,
                 MetricsRecord *rec, char *text, size_t cap);
#endif
