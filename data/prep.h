/* prep.h — the text -> shards pipeline behind `deberta prep`: read .txt/.jsonl inputs
 * (data/corpus.h), split documents into train/val deterministically from the seed, train the
 * tokenizer on the train documents (or load one: ours, or a SentencePiece unigram model), encode with
 * all threads and write OUT/train-NNNNN.h5, OUT/val-NNNNN.h5 and OUT/tokenizer.bin + OUT/tokenizer.json
 * (ours) or OUT/spm.model (a copy of the SentencePiece model).
 * Same inputs and settings give byte-identical outputs, whatever the thread count.
 */
#ifndef DEBERTA_PREP_H
#define DEBERTA_PREP_H
#include <stddef.h>
#include <stdint.h>
#include "data/tokfile.h"

typedef struct PrepConfig {
    const char *const *inputs;  /* files or folders */
    int n_inputs;
    const char *out;            /* output folder, created if missing */
    const char *tokenizer;      /* reuse this tokenizer.bin, or encode with this SentencePiece .model; NULL = train one */
    long long vocab_size;       /* of the trained tokenizer */
    double val_fraction;        /* in [0, 1) */
    long long shard_tokens;     /* start a new shard after this many tokens */
    uint64_t seed;              /* of the train/val split */
    /* optional: documents whose fingerprint (data/brown.h, text_fingerprint) is one of these go to
     * val as well, whatever the seed drew (the Brown texts the fine-tuning tasks use for dev/test) */
    const uint64_t *holdout;
    size_t n_holdout;
    /* optional: stage name and fraction done in [0, 1] (reading, tokenizer training, encoding) */
    void (*progress)(const char *stage, double frac, void *ctx);
    void *progress_ctx;
} PrepConfig;

typedef struct PrepResult {
    size_t n_files, n_docs, n_train, n_val;
    size_t n_held_out;          /* input documents found in the holdout list (all of them are in val) */
    size_t text_bytes;
    long long tokens_train, tokens_val;
    int shards_train, shards_val;
    int vocab_size;             /* of the tokenizer written */
    TokFileKind kind;
    SpecialIds special;         /* its special ids (stored in every shard) */
    int mask_appended;          /* a SentencePiece model without a [MASK] piece (data/tokfile.h) */
    char tokenizer_hash[17];
    double seconds_tokenizer, seconds_encode;  /* training or loading; encoding + writing */
} PrepResult;

/* Runs the pipeline.  Returns 0, or -1 with one line in err (no "error: " prefix). */
int prep_run(const PrepConfig *c, PrepResult *r, char *err, size_t errlen);
#endif
