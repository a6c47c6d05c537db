/* prep_options.c — `deberta prep`'s options, the hold-out and the summary; see prep_options.h. */
#include "data/prep_options.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include "data/brown.h"
#include "data/tokenizer.h"

/* ---------------------------------------------------------------- the option table */

void prep_options_default(PrepOptions *o) {
    memset(o, 0, sizeof *o);
    o->vocab_size = PREP_DEFAULT_VOCAB;
    o->shard_tokens = PREP_DEFAULT_SHARD_TOKENS;
    o->seed = PREP_DEFAULT_SEED;
    o->val_fraction = PREP_DEFAULT_VAL_FRACTION;
}

#define F(m) KEY_FIELD(PrepOptions, m)
#define STR(fl, m) {NULL, fl, NULL, KEY_STR, F(m), 0, 0, "", 0, NULL}
static const KeyRow KEYS[] = {
    STR("out", out), STR("tokenizer", tokenizer), STR("holdout-brown", holdout_brown),
    {NULL, "vocab-size", NULL, KEY_LONG, F(vocab_size), TOK_FIRST_CHAR + 1, 1 << 24, "an integer in [262, 16777216]", 0, NULL},
    {NULL, "shard-tokens", NULL, KEY_LONG, F(shard_tokens), 1, 0, "a positive integer", 0, NULL},
    {NULL, "seed", NULL, KEY_U64, F(seed), 0, 0, "a non-negative integer", 0, NULL},
    {NULL, "threads", NULL, KEY_INT, F(threads), 1, 4096, "an integer in [1, 4096]", 0, NULL},
    {NULL, "val-fraction", NULL, KEY_DOUBLE, F(val_fraction), 0, 1, "a number in [0, 1)", 0, NULL},
};
#undef STR
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int prep_options_set_flag(PrepOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    const int c = key_set_flag(KEYS, N_KEYS, o, flag, value, err, errlen);
    if (c > 0 && !strcmp(flag, "vocab-size")) o->vocab_given = 1;
    return c;
}

/* ---------------------------------------------------------------- the run */

/* The fingerprints of the Brown texts of the fine-tuning tasks' dev and test splits (heap; *n of them). */
static uint64_t *holdout_read(const char *dir, size_t *n) {
    char err[2048];
    BrownText *bt;
    size_t nb;
    if (brown_read_dir(dir, &bt, &nb, err, sizeof err)) fatal("--holdout-brown: %s", err);
    uint64_t *h = xmalloc((nb ? nb : 1) * sizeof(uint64_t));
    *n = 0;
    for (size_t i = 0; i < nb; i++)
        if (bt[i].split != BROWN_TRAIN) h[(*n)++] = brown_fingerprint(&bt[i]);
    brown_free(bt, nb);
    free(bt);
    return h;
}

int prep_corpus(const PrepOptions *o, const char *const *inputs, int n_inputs, void (*progress)(const char *stage, double frac, void *ctx),
                PrepResult *r, size_t *n_holdout) {
    char err[2048];
    const char *out = o->out, *holdout_dir = o->holdout_brown[0] ? o->holdout_brown : NULL;
    PrepConfig pc = {.inputs = inputs, .n_inputs = n_inputs, .out = out, .tokenizer = o->tokenizer[0] ? o->tokenizer : NULL,
                     .vocab_size = o->vocab_size, .val_fraction = o->val_fraction, .shard_tokens = o->shard_tokens, .seed = o->seed,
                     .progress = progress, .progress_ctx = NULL};
    uint64_t *holdout = holdout_dir ? holdout_read(holdout_dir, &pc.n_holdout) : NULL;
    pc.holdout = holdout;
    *n_holdout = pc.n_holdout;
    /* OUT/holdout-brown.txt says the shards were made with the hold-out: removed before prep writes
     * anything, written again only after a successful prep with --holdout-brown */
    char marker[4200];
    if (snprintf(marker, sizeof marker, "%s/holdout-brown.txt", out) >= (int)sizeof marker) fatal("--out %s: path too long", out);
    if (unlink(marker) != 0 && errno != ENOENT && errno != ENOTDIR) fatal("output %s: cannot remove %s (%s)", out, marker, strerror(errno));
    const int rc = prep_run(&pc, r, err, sizeof err);
    free(holdout);
    if (rc != 0) fatal("%s", err);
    if (holdout_dir) {
        AtomicFile a;
        if (atomic_open(&a, marker) != 0) fatal("output %s: cannot write %s (%s)", out, marker, strerror(errno));
        fprintf(a.f, "# deberta prep --holdout-brown: the dev/test texts of the Brown tasks are in val, not in train\n"
                     "holdout_brown = %s\nholdout_texts = %zu\nholdout_in_inputs = %zu\ntokenizer_hash = %s\n",
                holdout_dir, pc.n_holdout, r->n_held_out, r->tokenizer_hash);
        if (atomic_commit(&a) != 0) fatal("output %s: cannot write %s (%s)", out, marker, strerror(errno));
    }
    return 0;
}

void prep_report(const PrepOptions *o, const PrepResult *r, size_t n_holdout, double seconds, FILE *f) {
    const char *tok_path = o->tokenizer[0] ? o->tokenizer : NULL;
    if (o->holdout_brown[0])
        fprintf(f, "prep: %zu documents are dev/test texts of the Brown tasks (%s): %zu of them were in the inputs, now in val\n", n_holdout,
                o->holdout_brown, r->n_held_out);
    if (tok_path && o->vocab_given && o->vocab_size != r->vocab_size)
        warn("prep: --vocab-size %ld ignored; %s has %d tokens", o->vocab_size, tok_path, r->vocab_size);
    if (!tok_path && r->vocab_size < o->vocab_size)
        warn("prep: the corpus supports only %d tokens (asked %ld): no pair occurs twice more", r->vocab_size, o->vocab_size);
    if (r->kind == TOKFILE_SPM)
        fprintf(f, "prep: SentencePiece model %s: [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d%s\n", o->tokenizer, r->special.pad, r->special.cls,
                r->special.sep, r->special.unk, r->special.mask,
                r->mask_appended ? " (the model has no [MASK] piece: the id after its last piece, as DeBERTa-V3 tokenizers add it)" : "");
    fprintf(f, "prep: %zu files, %zu docs (%zu train, %zu val), %.1f MB text -> %lld tokens (%lld train in %d shards, "
               "%lld val in %d shards), vocab %d, tokenizer %s (%s %.2f s), encode+write %.2f s, total %.2f s -> %s\n",
            r->n_files, r->n_docs, r->n_train, r->n_val, (double)r->text_bytes / 1e6, r->tokens_train + r->tokens_val, r->tokens_train,
            r->shards_train, r->tokens_val, r->shards_val, r->vocab_size, r->tokenizer_hash, tok_path ? "loaded" : "trained",
            r->seconds_tokenizer, r->seconds_encode, seconds, o->out);
}
