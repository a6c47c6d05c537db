/* task_head.h — the fine-tuning heads on top of an encoder's last hidden state, as Hugging Face
 * DebertaV2ForTokenClassification / DebertaV2ForSequenceClassification define them:
 *
 *   token     logits[b, i] = W_c · Dropout_h(h[b, i]) + b_c                        [B·T, L]
 *   sequence  p = GELU(W_p · Dropout_p(c[b]) + b_p)         (ContextPooler)
 *             c[b] = h[b, 0], the first token [CLS]   (pooler POOL_CLS, Hugging Face's)
 *             c[b] = mean of h[b, i] over the non-pad tokens i (mask[b, i] != 0), [CLS] and [SEP]
 *                    included                          (pooler POOL_MEAN; no Hugging Face class has it)
 *             logits[b] = W_c · Dropout_h(p) + b_c                                  [B, L]
 *   regression the sequence head with one output (L = 1), as DebertaV2ForSequenceClassification with
 *             num_labels 1: value[b] = logits[b, 0]
 *   loss      mean cross-entropy over the rows whose label is not HEAD_IGNORE (-100), as torch's
 *             CrossEntropyLoss(ignore_index=-100); 0 when no row counts.
 *             regression: mean squared error over the B rows, as torch's MSELoss on logits.view(-1)
 *             (task_head_mse).
 *
 * Parameters (names after a caller-given prefix, "" for the HF folders):
 *   classifier.weight [L, H], classifier.bias [L];  sequence also pooler.dense.weight [H, H], pooler.dense.bias [H].
 * Labels are plain int32 arrays: token [B·T], sequence [B].
 */
#ifndef DEBERTA_MODEL_TASK_HEAD_H
#define DEBERTA_MODEL_TASK_HEAD_H
#include <stdint.h>
#include "autograd/tape.h"

#define HEAD_IGNORE (-100)

typedef enum { HEAD_TOKEN = 0, HEAD_SEQUENCE = 1, HEAD_REGRESSION = 2 } HeadKind;
typedef enum { POOL_CLS = 0, POOL_MEAN = 1 } HeadPooler;   /* what a sequence/regression head reads */

typedef struct TaskHead {
    HeadKind kind;
    HeadPooler pooler;         /* POOL_CLS after task_head_register; set it before the first forward */
    int H, n_labels;
    real p_pool, p_cls;        /* dropout before the pooler dense and before the classifier */
    Tensor *pool_w, *pool_b;   /* pooler.dense (sequence only, else NULL) */
    Tensor *cls_w, *cls_b;     /* classifier */
} TaskHead;

/* Registers the head's parameters in ps (not yet finalized).  HEAD_REGRESSION: n_labels must be 1. */
void task_head_register(TaskHead *h, ParamSet *ps, HeadKind kind, int H, int n_labels, real p_pool, real p_cls,
                        const char *prefix);

typedef struct TaskHeadOut {
    Tensor *logits;            /* token [B·T, L]; sequence [B, L] */
    Tensor *loss;              /* scalar (NULL without labels) */
    int n_counted;             /* rows that entered the loss */
} TaskHeadOut;

/* hidden [B, T, H] -> logits (and the loss when labels != NULL).  mask [B·T] (1 = a token, 0 = padding)
 * is read by POOL_MEAN only (NULL: every position counts).  Labels outside [0, L) other than HEAD_IGNORE
 * end the process with one error line.  Returns out->loss (or the logits without labels). */
Tensor *task_head_forward(Tape *t, const TaskHead *h, Tensor *hidden, int B, int T, const int32_t *mask, const int32_t *labels,
                          TaskHeadOut *out);
/* HEAD_REGRESSION: hidden [B, T, H] -> out->logits [B, 1] and out->loss = mean_b (logits[b] - targets[b])^2
 * (targets [B], finite).  Returns out->loss. */
Tensor *task_head_mse(Tape *t, const TaskHead *h, Tensor *hidden, int B, int T, const int32_t *mask, const real *targets,
                      TaskHeadOut *out);
/* "cls" -> POOL_CLS, "mean" -> POOL_MEAN; -1 for anything else. */
int task_head_pooler_parse(const char *s);
const char *task_head_pooler_name(HeadPooler p);
#endif
