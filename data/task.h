/* task.h — labelled data for fine-tuning: the Brown tasks built from tagged texts, their HDF5 task
 * files (layout in docs/FORMATS.md, "Task files") and the baselines computed from them.
 *
 * Two tasks, both over the texts of one split (brown.h: the fixed split by text number):
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
#define TASK_VERSION 1
#define TASK_IGNORE (-100)     /* label of positions that do not count (the -100 of torch's cross-entropy) */
#define TASK_MAX_LABELS 64
#define TASK_LABEL_LEN 32

typedef enum { TASK_POS = 0, TASK_GENRE = 1 } TaskKind;

typedef struct TaskSet {
    TaskKind kind;
    char split[8];                 /* "train", "dev", "test" */
    int T;                         /* sequence length */
    int n_labels;
    char label_names[TASK_MAX_LABELS][TASK_LABEL_LEN];
    int64_t N;                     /* examples */
    int32_t *ids;                  /* [N·T] token ids, [PAD] = 0 after the example */
    int32_t *labels;               /* pos: [N·T] (TASK_IGNORE where nothing counts); genre: [N] */
    int32_t *doc;                  /* [N] index into doc_names */
    int n_docs;
    char (*doc_names)[8];          /* n_docs text names ("ca03") */
    uint64_t *doc_fingerprints;    /* n_docs brown.h fingerprints of the texts */
    uint8_t *tokenizer;            /* the tokenizer file's bytes */
    size_t tokenizer_len;
    char tokenizer_hash[17];
    int64_t vocab_size;
} TaskSet;

const char *task_kind_name(TaskKind k);              /* "pos", "genre" */
int task_kind_parse(const char *s, TaskKind *k);     /* 0, or -1 for an unknown name */

/* Builds the examples of one split from the tagged texts.  T >= 3.  0, or -1 with a message. */
int task_build(TaskKind kind, const BrownText *texts, size_t n_texts, int split, const Tokenizer *tk, int T,
               TaskSet *out, char *err, size_t errlen);
/* Writes path atomically (path.tmp, fsync, rename); same content -> same bytes. */
int task_write(const char *path, const TaskSet *ts, char *err, size_t errlen);
/* Reads and validates everything (format, version, task, shapes, integer dtypes, ids in the
 * vocabulary, every example starting with [CLS], labels in [0, n_labels) or TASK_IGNORE for pos,
 * the embedded tokenizer and its hash).  0, or -1 with "task PATH: ..." in err. */
int task_read(const char *path, TaskSet *ts, char *err, size_t errlen);
/* 0 when b is another split of the same task as a (kind, T, labels, tokenizer), else -1 + message. */
int task_check_same(const TaskSet *a, const char *pa, const TaskSet *b, const char *pb, char *err, size_t errlen);
void task_free(TaskSet *ts);

/* Number of positions (pos) or examples (genre) that carry a label. */
int64_t task_n_labelled(const TaskSet *ts);
/* The label of example n at position i (genre: i ignored). */
static inline int32_t task_label(const TaskSet *ts, int64_t n, int i) {
    return ts->kind == TASK_POS ? ts->labels[n * ts->T + i] : ts->labels[n];
}

/* ---- baselines ---- */
/* The most frequent label of train (ties: the smaller label). */
int task_majority_label(const TaskSet *train);
/* Accuracy on eval of always predicting `label`. */
double task_constant_accuracy(const TaskSet *eval, int label);
/* pos: most frequent tag per word on train (a word = its sub-token ids), the majority tag for words
 * not seen in train; accuracy on eval. */
double task_word_tag_accuracy(const TaskSet *train, const TaskSet *eval);
#endif
