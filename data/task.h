/* task.h — labelled data for fine-tuning: the HDF5 task files (layout in docs/FORMATS.md, "Task
 * files"), the Brown tasks built from tagged texts, and the baselines computed from task files.  The
 * tasks of the user's files are built by data/task_build.h.
 *
 * The Brown tasks, both over the texts of one split (brown.h: the fixed split by text number):
 *   pos    token classification: examples are whole sentences of a text packed into sequences of at
 *          most T tokens ([CLS] … [SEP], padded with [PAD]); a sentence longer than T − 2 tokens is cut at
 *          word boundaries.  The word's universal tag sits on its first sub-token; every other position
 *          ([CLS], [SEP], further sub-tokens, padding) has the label TASK_IGNORE.
 *   genre  sequence classification: each text's token stream is cut into consecutive windows of T − 2
 *          tokens ([CLS] window [SEP], no padding; the shorter rest is dropped, a text shorter than one
 *          window gives one padded example); the label is the text's genre.
 * Words are encoded one at a time with the project's tokenizer, each with its leading space when the
 * plain text has one (brown.h), so a word's sub-tokens are exactly its own.
 *
 * Errors are returned as one line naming the file and the problem; nothing here exits.
 */
#ifndef DEBERTA_TASK_H
#define DEBERTA_TASK_H
#include <stddef.h>
#include <stdint.h>
#include "data/brown.h"
#include "data/tokenizer.h"

#define TASK_FORMAT "deberta.c-task"
#define TASK_VERSION 2
#define TASK_IGNORE (-100)     /* label of positions that do not count (the -100 of torch's cross-entropy) */
#define TASK_MAX_LABELS 256
#define TASK_LABEL_LEN 64      /* label names: at most 63 bytes, no line break */

/* What one example is labelled with.  The Brown tasks: pos = tagging, genre = classification. */
typedef enum { TASK_TAGGING = 0, TASK_CLASSIFICATION = 1, TASK_REGRESSION = 2 } TaskKind;

typedef struct TaskSet {
    TaskKind kind;
    char name[32];                 /* the task's name: "pos", "genre", prep-task --name */
    char split[8];                 /* "train", "dev", "test" */
    int T;                         /* sequence length */
    int n_labels;                  /* regression: 1 */
    char label_names[TASK_MAX_LABELS][TASK_LABEL_LEN];
    int pair;                      /* examples are [CLS] a [SEP] b [SEP] */
    int32_t pad_id, cls_id, sep_id;
    int64_t N;                     /* examples */
    int32_t *ids;                  /* [N·T] token ids, pad_id after the example */
    int32_t *labels;               /* tagging [N·T] (TASK_IGNORE where nothing counts); classification [N]; regression NULL */
    float *targets;                /* regression [N]; else NULL */
    int32_t *word_ids;             /* tagging [N·T]: the word of each sub-token within its source record, -1 elsewhere; else NULL */
    int32_t *example;              /* [N] source record (Brown: the text, an index into doc_names) */
    int64_t *line;                 /* [N] 1-based line of the source file where the record starts (Brown: 0) */
    char source[512];              /* the input file (Brown: "brown:DIR") */
    char input_format[8];          /* the name of its format (data/task_format.h), or "brown" */
    int64_t split_seed;            /* -1: the split came from its own file (or the Brown split) */
    double split_dev_fraction, split_test_fraction;
    int64_t n_truncated, n_windows;
    int n_docs;                    /* Brown tasks only (else 0): */
    char (*doc_names)[8];          /* n_docs text names ("ca03") */
    uint64_t *doc_fingerprints;    /* n_docs brown.h fingerprints of the texts */
    char tokenizer_kind[4];        /* "bpe" or "spm" */
    uint8_t *tokenizer;            /* the tokenizer file's bytes */
    size_t tokenizer_len;
    char tokenizer_hash[17];
    int64_t vocab_size;
} TaskSet;

const char *task_kind_name(TaskKind k);              /* "tagging", "classification", "regression" */

/* The Brown tasks (kind TASK_TAGGING = pos, TASK_CLASSIFICATION = genre): the examples of one split
 * built from the tagged texts with our BPE.  T >= 3.  0, or -1 with a message. */
int task_build(TaskKind kind, const BrownText *texts, size_t n_texts, int split, const Tokenizer *tk, int T,
               TaskSet *out, char *err, size_t errlen);
/* Writes path atomically (path.tmp, fsync, rename); same content -> same bytes. */
int task_write(const char *path, const TaskSet *ts, char *err, size_t errlen);
/* Reads and validates everything (docs/FORMATS.md, "Task files": format, version, kind, shapes, dtypes,
 * ids in the vocabulary, every example starting with cls_id, labels in range, the embedded tokenizer
 * and its hash).  0, or -1 with "task PATH: ..." in err. */
int task_read(const char *path, TaskSet *ts, char *err, size_t errlen);
/* 0 when b is another split of the same task as a (kind, name, T, pair, labels, tokenizer), else -1 + message. */
int task_check_same(const TaskSet *a, const char *pa, const TaskSet *b, const char *pb, char *err, size_t errlen);
void task_free(TaskSet *ts);

/* The label names as one value of a config line (a fine-tuning checkpoint's ft_labels): comma-separated,
 * each name's ',', '#', '%', space and tab written %XX (a config line ends at '#' and is trimmed), so that
 * any tag set travels, ',' and '#' (Penn Treebank tags) included.  At most TASK_LABELS_TEXT bytes with
 * the NUL.  task_labels_decode: the inverse into names; the count, or -1 (empty or too long a name, more
 * than TASK_MAX_LABELS).  A name without those bytes is written as it is (older checkpoints read the same). */
#define TASK_LABELS_TEXT (TASK_MAX_LABELS * (3 * TASK_LABEL_LEN + 1))
void task_labels_encode(char names[][TASK_LABEL_LEN], int L, char *buf, size_t cap);
int task_labels_decode(const char *text, char names[][TASK_LABEL_LEN]);

/* Number of positions (tagging) or examples that carry a label. */
int64_t task_n_labelled(const TaskSet *ts);

/* ---- baselines (classification and tagging) ---- */
/* The most frequent label of train (ties: the smaller label). */
int task_majority_label(const TaskSet *train);
/* The length of example n: its last non-padding position + 1 (at least 1).  Evaluation and fine-tuning
 * pad a batch only to its longest example. */
int task_example_len(const TaskSet *ts, int64_t n);
/* Accuracy on eval of always predicting `label`. */
double task_constant_accuracy(const TaskSet *eval, int label);
/* tagging: most frequent tag per word on train (a word = its sub-token ids), the majority tag for words
 * not seen in train; accuracy on eval. */
double task_word_tag_accuracy(const TaskSet *train, const TaskSet *eval);
/* The same baseline's prediction at each labelled position of eval, in row-major order, into pred
 * [task_n_labelled(eval)]; returns their number (0 unless both are tagging sets). */
int64_t task_word_tag_predict(const TaskSet *train, const TaskSet *eval, int32_t *pred);
#endif
