/* predict.h — a fine-tuned model on new text (`deberta predict`): the records of a file read as
 * prep-task reads them (data/task_input.h; labels optional), encoded with the checkpoint's own
 * tokenizer, run through the encoder and its head (train/eval/task_eval.h), one prediction per record.
 *
 * The task comes from the checkpoint alone: ft_task, ft_head (the kind), ft_labels, ft_pair (text
 * pairs) and max_seq_len (T).  A checkpoint from before ft_pair falls back to the task files it was
 * trained on (--data TASKDIR, default its ft_data): their train.h5.  Given --data is always checked
 * against the checkpoint (the task, head, labels, pairing, T and tokenizer must agree).
 *
 * Output (predict_write), one JSON line per record, in file order:
 *   classification  {"line": N, "label": "pos", "prob": 0.93[, "gold": "neg"]}
 *   regression      {"line": N, "value": 3.71[, "gold": 4.0]}
 *   tagging         {"line": N, "words": [...], "tags": [...], "probs": [...][, "gold": [...]]}
 */
#ifndef DEBERTA_TRAIN_PREDICT_H
#define DEBERTA_TRAIN_PREDICT_H
#include <stdio.h>
#include "data/task.h"
#include "data/task_input.h"
#include "train/eval/task_eval.h"

typedef struct PredictOptions {
    char input[4096];          /* the records (required) */
    char format[16];           /* a name of data/task_format.h (required) */
    char data[4096];           /* "" or the task files the model was fine-tuned on (a check; old checkpoints' task) */
    char output[4096];         /* "" = stdout */
    char text_field[256], text_pair_field[256], label_field[256], tokens_field[256], tags_field[256]; /* "" = not given */
    int token_column, tag_column;
    int batch;                 /* examples per forward */
    int threads;               /* 0: the default */
} PredictOptions;

void predict_options_default(PredictOptions *o);
/* One `--flag value` of the option table (flag without "--"): 1 if it was one, 0 if the table has no
 * such flag, -1 with a message ("--batch 'x' must be a positive integer") on a bad value. */
int predict_options_set_flag(PredictOptions *o, const char *flag, const char *value, char *err, size_t errlen);

typedef struct Predictions {
    TaskExamples ex;           /* the records as read */
    TaskSet ts;                /* their examples (ts.example[i]: the record of example i) */
    TaskPreds p;               /* the rows, in example order */
    int batch;
    double seconds;            /* the forward passes */
    long long tokens;          /* non-padding tokens of the examples */
} Predictions;

enum { PREDICT_ERROR = -1, PREDICT_USAGE = -2 };
/* Runs the model of the checkpoint ckpt over the records of o->input.  0; or PREDICT_ERROR with one
 * line in err (a bad checkpoint, input, task files, --output), PREDICT_USAGE with a command-line
 * mistake (fields that do not fit the task).  Nothing is written. */
int predict_run(const char *ckpt, const PredictOptions *o, Predictions *out, char *err, size_t errlen);
/* One JSON line per record to output (written to output.tmp-PID, renamed at the end), or stdout
 * when output is NULL or "".  0, or -1 with one line in err (nothing left behind). */
int predict_write(const Predictions *pr, const char *output, char *err, size_t errlen);
/* The speed lines (examples/s, tokens/s; the batches after the first) and, when the records had
 * labels, the scores (train/eval/task_metrics.h), to f.  wait: the OpenMP wait policy, as logs name it. */
void predict_report(const Predictions *pr, const char *input, const char *wait, FILE *f);
void predictions_free(Predictions *pr);
#endif
