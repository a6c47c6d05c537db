/* finetune.h — fine-tuning an encoder + task head on a task (data/task.h) and evaluating it.
 *
 * The model: a DeBERTa-V3 encoder registered as "deberta.*" with its own word and position tables,
 * plus the task head (model/task_head.h: "classifier.*", and "pooler.*" for sequence tasks) — the
 * parameter names of Hugging Face DebertaV2ForTokenClassification / …ForSequenceClassification.
 * Initialised from a pretraining checkpoint (the discriminator's encoder by default, or the
 * generator's; the discriminator's tables as an export materialises them: E_G + E_Δ under GDES, E_G
 * under ES) or from scratch (spec §4.8 init of a preset); the head is always freshly initialised.
 *
 * One step: B examples at global positions step·B … (example q is number q mod N of epoch q div N, in
 * the order of a Fisher–Yates permutation drawn from (seed, epoch); with --length-groups G the G·B
 * positions of each window are then sorted by their examples' lengths and cut into G batches, drawn in
 * a seeded order), padded to the batch's longest example; encoder + head forward with
 * dropout (stream (seed, step)), mean cross-entropy over labelled positions, backward, AdamW with
 * linear warm-up and decay (train/optim.h), clipping.  The state is the parameters, the moments, the
 * step and the best dev score, so a resumed run computes exactly what an uninterrupted one would.
 *
 * RUNDIR: config.txt, cmdline.txt, metrics.jsonl, checkpoint.h5 (latest), best.h5 (the parameters of
 * the best dev evaluation so far), results.txt (the final test results and the baselines).
 */
#ifndef DEBERTA_TRAIN_FINETUNE_H
#define DEBERTA_TRAIN_FINETUNE_H
#include <stdint.h>
#include "autograd/tape.h"
#include "data/task.h"
#include "model/config.h"
#include "model/encoder.h"
#include "model/task_head.h"
#include "train/checkpoint.h"
#include "train/run.h"
#include "train/eval/task_metrics.h"

typedef struct FinetuneOptions {
    char init[4096];          /* RUN/checkpoint.h5, or "scratch" */
    char init_model[16];      /* "discriminator" (default) or "generator" */
    char preset[32];          /* scratch: model preset */
    char data[4096];          /* task folder: train.h5, dev.h5, test.h5 */
    char out[4096];
    char task[16];            /* "pos" | "genre": must match the task files */
    int resume;
    long steps;
    int batch;
    uint64_t seed;
    int threads;
    double lr, weight_decay, max_grad_norm;
    int optimizer;            /* index in the optimizer registry (train/optim.h OPTIMIZERS); 0: the default, adamw */
    double dropout;           /* the fine-tuning model's hidden_dropout_prob (default 0), whatever the checkpoint's */
    double attention_dropout; /* its attention_probs_dropout_prob (default 0) */
    int reinit_layers;        /* the top N encoder layers keep their fresh init (--init CHECKPOINT only) */
    double layer_decay;       /* D in (0, 1): layer-wise rate decay (ft_layer_rate_scale); 1, or 0 (unset), one rate for all */
    int pooler;               /* HeadPooler: what a sequence or regression head reads ([CLS] or the mean of the tokens) */
    int length_groups;        /* G > 0: batches drawn G at a time and grouped by length (ft_length_window); 0: off */
    long warmup;              /* < 0: 10% of steps */
    long eval_every, log_every, save_every;
    long stop_after;          /* > 0: stop (with a checkpoint) after this many steps of this invocation */
} FinetuneOptions;

void finetune_options_default(FinetuneOptions *o);
/* Length groups: ex[0..G·B) (the permuted examples of window w) stably sorted by lens[] (each in
 * [1, T]), cut into G batches of B, and the batches put in an order drawn from (seed, w).  Each epoch
 * still covers every example once (but for a window that straddles two epochs), and each batch spans
 * a narrow range of lengths, so padding it to its longest wastes little. */
void ft_length_window(int64_t *ex, const int32_t *lens, int T, int G, int B, uint64_t seed, int64_t w);
/* Applies one `--flag value` of the option table (flag without "--"): 1 if it was one (*resume_ok:
 * whether --resume accepts it), 0 if the table has no such flag, -1 with a message ("--steps 'x' must
 * be a positive integer") on a bad value. */
int finetune_options_set_flag(FinetuneOptions *o, const char *flag, const char *value, int *resume_ok, char *err, size_t errlen);
/* The pooler of a fine-tuned checkpoint's config text (ft_pooler; a run from before the key: POOL_CLS), or
 * -1 for a value that is not cls or mean. */
int ft_config_pooler(const char *config_text);
/* The persisted options as `ft_<key> = value` lines, and back (resume). */
char *finetune_options_to_text(const FinetuneOptions *o);
int finetune_options_from_text(FinetuneOptions *o, const char *text, char *err, size_t errlen);

typedef struct FtModel {
    ModelConfig cfg;
    ParamSet ps;
    Encoder enc;
    TaskHead head;
} FtModel;

/* Registers and initialises (spec §4.8, seed) encoder + head.  cfg validated. */
void ft_model_build(FtModel *m, const ModelConfig *cfg, HeadKind kind, int n_labels, double dropout, uint64_t seed);
/* Registers them only, the values unset: for a model whose every parameter a checkpoint_load then reads
 * (it fails on a missing one), as predict and export do. */
void ft_model_register(FtModel *m, const ModelConfig *cfg, HeadKind kind, int n_labels, double dropout);
void ft_model_free(FtModel *m);
/* Copies the encoder ("discriminator" or "generator") of the open pretraining checkpoint ck (its state
 * st, checkpoint_open) into m (whose cfg must be the one ft_init_config gave for it), except its top
 * fresh_top layers, which keep m's fresh init as the head does (re-initialising the top layers for
 * fine-tuning: Zhang et al. 2021, "Revisiting Few-sample BERT Fine-tuning").  0, or -1 with a message. */
int ft_model_load_pretrained(FtModel *m, Checkpoint *ck, const CheckpointState *st, const char *which, int fresh_top, char *err,
                             size_t errlen);
/* Layer-wise learning-rate decay (ELECTRA's fine-tuning, Clark et al. 2020): the multiple of the peak rate
 * for parameter `name` of an FtModel with n_layers encoder layers — D^(L−l) for encoder layer l (the top
 * layer D, the bottom D^L), D^(L+1) for the embeddings and the relative-position table with its LayerNorm
 * (which every layer reads), 1 for the head.  decay 0 or 1: 1 for every parameter. */
double ft_layer_rate_scale(const char *name, int n_layers, double decay);
/* The model config of a pretraining checkpoint's encoder (num_hidden_layers = that model's depth), from
 * the checkpoint's state st (path names it in messages).  0, or -1 with a message. */
int ft_init_config(const char *path, const CheckpointState *st, const char *which, ModelConfig *cfg, char *err, size_t errlen);

typedef struct FtEval {
    double loss, acc, macro_f1;
    long n;                   /* labelled positions (tagging) or examples */
    double score;             /* what the best dev model maximises (task_eval.h task_metrics_score) */
    TaskMetrics m;            /* every score (train/eval/task_metrics.h) */
} FtEval;

/* Metrics on a whole split (no gradients, no dropout), in batches of B (train/eval/task_eval.h). */
FtEval ft_evaluate(FtModel *m, Tape *t, const TaskSet *ts, int B);

/* Runs (or resumes) a fine-tuning run, with the threads of env.  argc/argv go to RUNDIR/cmdline.txt.
 * Returns the exit code. */
int finetune_run(const FinetuneOptions *o, const RunEnv *env, int argc, char **argv);
#endif
