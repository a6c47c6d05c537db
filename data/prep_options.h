/* prep_options.h — `deberta prep` as a library call: its options and their one table (the flags, their
 * checks and messages), the pipeline (data/prep.h prep_run) with the Brown hold-out and its marker
 * file, and the summary lines. */
#ifndef DEBERTA_PREP_OPTIONS_H
#define DEBERTA_PREP_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "data/prep.h"

#define PREP_DEFAULT_VOCAB 8192
#define PREP_DEFAULT_VAL_FRACTION 0.01
#define PREP_DEFAULT_SHARD_TOKENS 16777216L
#define PREP_DEFAULT_SEED 1234

typedef struct PrepOptions {
    char out[4096];            /* the output folder (required) */
    char tokenizer[4096];      /* "" = train one; else a tokenizer.bin or a SentencePiece .model */
    char holdout_brown[4096];  /* "" or the tagged Brown texts whose dev/test texts go to val */
    long vocab_size, shard_tokens;
    uint64_t seed;
    int threads;               /* 0: the default */
    double val_fraction;
    int vocab_given;           /* --vocab-size was given (a warning when a loaded tokenizer differs) */
} PrepOptions;

void prep_options_default(PrepOptions *o);
/* One `--flag value` of the option table (flag without "--"): 1 if it was one, 0 if the table has no
 * such flag, -1 with a message ("--vocab-size '100' must be an integer in [262, 16777216]"). */
int prep_options_set_flag(PrepOptions *o, const char *flag, const char *value, char *err, size_t errlen);

/* The pipeline over inputs[0..n_inputs) (files or folders) into o->out.  With o->holdout_brown, the
 * dev/test texts of the Brown tasks go to val and OUT/holdout-brown.txt records it (removed before
 * anything is written, written after a successful prep); *n_holdout gets the number of such texts.
 * progress may be NULL.  0; errors are one line and exit the process (fatal). */
int prep_corpus(const PrepOptions *o, const char *const *inputs, int n_inputs, void (*progress)(const char *stage, double frac, void *ctx),
                PrepResult *r, size_t *n_holdout);
/* The summary: the hold-out line, the warnings (stderr), the SentencePiece ids, the totals (seconds:
 * the whole command). */
void prep_report(const PrepOptions *o, const PrepResult *r, size_t n_holdout, double seconds, FILE *f);
#endif
