/* task_input.h — labelled (or unlabelled) text examples read from the user's files in one of the
 * task-input formats (data/task_format.h: the registry, one module per format; today JSON Lines, CSV,
 * TSV, CoNLL).  Used by `deberta prep-task` (labels required) and by `deberta predict` (labels
 * optional).  The readers know nothing of tokenizers or task files: they yield in-memory examples,
 * each with the line of the file it starts on (docs/FORMATS.md, "Task inputs").  This file is the
 * reader core: what every format shares (the checks of the spec against the format, a byte-order
 * mark, the arena, the example list); each format's rules are in its module's header comment.
 *
 * Every byte of every text, label and key is checked to be UTF-8 (RFC 3629); a UTF-8 byte-order mark
 * at the start of the file is skipped.  Line ends: \n or \r\n.
 *
 * Errors: -1 and one line in err, "PATH:LINE: what is wrong" (PATH alone when no line applies), e.g.
 *   "train.tsv:7: no column 'sentence' (the header has: label, text)"   (reported on the header's line)
 *   "train.jsonl:3: not JSON: '}' expected near 'x' (column 18)"
 *   "train.conll:12: 1 column, --tag-column 4 needs at least 4"
 *   "train.csv:9: invalid UTF-8 (byte 0xff at offset 3 of the field)"
 *   "train.csv:41: unterminated quoted field (opened on this line)"
 *   "dev.jsonl:5: empty text at key 'text'"
 * Nothing is written; on error *out is left empty.
 */
#ifndef DEBERTA_TASK_INPUT_H
#define DEBERTA_TASK_INPUT_H
#include <stddef.h>

struct TaskFormat;

typedef struct TaskInputSpec {
    const struct TaskFormat *format;  /* task_format_find("jsonl") ... */
    int tagging;                  /* 0: sequence examples (text [+ pair] + label); 1: token examples */
    int need_labels;              /* 1: a missing label is an error; 0: labels optional (predict) */
    /* sequence examples (JSONL keys, CSV/TSV header names) */
    const char *text_field;       /* required */
    const char *text_pair_field;  /* NULL: single texts */
    const char *label_field;      /* NULL: no labels read (need_labels must be 0) */
    /* token examples */
    const char *tokens_field;     /* JSONL; NULL = "tokens" */
    const char *tags_field;       /* JSONL; NULL = "tags" */
    int token_column;             /* CoNLL, 1-based; 0 = 1 */
    int tag_column;               /* CoNLL, 1-based; 0 = the last column */
} TaskInputSpec;

typedef struct TaskExample {
    long line;                    /* 1-based line of the file where the example starts */
    /* sequence examples */
    const char *text;             /* NUL-terminated UTF-8, never empty */
    const char *text_pair;        /* NULL without text_pair_field */
    const char *label;            /* as written in the file; NULL when unlabelled */
    /* token examples */
    int n_words;                  /* >= 1 */
    const char *const *words;     /* n_words non-empty UTF-8 strings */
    const char *const *tags;      /* n_words labels, or NULL when unlabelled */
} TaskExample;

typedef struct TaskExamples {
    TaskExample *ex;
    size_t n;
    int has_labels;               /* every example has its label(s) */
    const struct TaskFormat *format;  /* the format they were read from */
    void *arena_;                 /* owns every string and array (task_examples_free) */
} TaskExamples;

/* Reads every example of the file at path (named `path` in messages).  0, or -1 with one line. */
int task_input_read(const char *path, const TaskInputSpec *spec, TaskExamples *out, char *err, size_t errlen);
/* The same on bytes in memory (the fuzz targets; name is used in messages). */
int task_input_read_mem(const char *buf, size_t len, const char *name, const TaskInputSpec *spec, TaskExamples *out,
                        char *err, size_t errlen);
void task_examples_free(TaskExamples *e);

/* 1 when s[0..n) is valid UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF);
 * else 0 and *bad = the offset of the first bad byte. */
int utf8_valid(const char *s, size_t n, size_t *bad);
#endif
