/* loader.h — streams shards into packed, shuffled, masked batches (docs/FORMATS.md "Loader").
 *
 * Packing.  Per shard, the documents in file order form a stream d0 [SEP] d1 [SEP] ... d_last [SEP].
 * The stream is cut into chunks of L = T-2 tokens (the last chunk of a shard may be shorter); chunk k
 * becomes sequence k of that shard: [CLS] chunk [SEP], padded with [PAD]=0 to T.  Sequences never
 * span shards.  A shard of n_tokens tokens and n_docs documents has ceil((n_tokens+n_docs)/L) sequences.
 *
 * Order.  With shuffling (train): per epoch e, the shard order is a permutation drawn from
 * (seed, RNG_SHUFFLE, e); within a shard, sequences are grouped in windows of `window` consecutive
 * sequences, the window order is permuted, and the sequences inside each window are permuted.  Memory
 * is one window of tokens plus the doc_offsets of one shard, independent of the corpus size.
 * Without shuffling (val): file order.  Global position q (counted over all ranks) is sequence
 * (q mod N) of epoch q div N, N = number of sequences of the split.
 *
 * Ranks.  A global batch is G = B*world consecutive positions; rank r takes positions
 * [P + r*B, P + (r+1)*B) of the global batch starting at P.  Disjoint across ranks by construction.
 *
 * Special ids ([CLS], [SEP], [PAD], [MASK]) are the shards' (their tokenizer's, data/tokfile.h): ours
 * 0..4, or a SentencePiece model's.  "Non-special" below = not one of the ids the tokenizer never
 * masks (the five special ids and a SentencePiece model's control pieces).
 *
 * Masking (spec §4.2, §11) uses rng_* keyed by (seed, RNG_MASK with the epoch, global sequence id), so
 * it is a pure function of (seed, epoch, sequence) — dynamic per epoch and exact on resume.
 *   official: num = min(max_preds, max(1, rint(p*n))), n = real length incl. [CLS]/[SEP],
 *             max_preds = ceil(T*p/10)*10; candidates are non-special tokens, taken in windows of
 *             int(1/p) candidates, one position drawn uniformly per window, the first num windows
 *             masked, all with [MASK].
 *   random:   the same num, chosen uniformly without replacement among candidates, all [MASK].
 *   bert:     the selection of `random`; each chosen position becomes [MASK] with prob. 0.8, a uniform
 *             non-special token with prob. 0.1 (the k-th non-special id, k uniform: with our tokenizer
 *             id 5 + k), and keeps its token with prob. 0.1.
 *   none:     no masking (labels all 0).
 */
#ifndef DEBERTA_LOADER_H
#define DEBERTA_LOADER_H
#include <stddef.h>
#include <stdint.h>
#include "data/batch.h"
#include "data/tokfile.h"

typedef enum { MASK_OFFICIAL = 0, MASK_RANDOM = 1, MASK_BERT = 2, MASK_NONE = 3 } MaskMode;

typedef struct {
    int T, B;             /* sequence length (>= 3) and per-rank batch size */
    uint64_t seed;
    MaskMode mask_mode;   /* default MASK_OFFICIAL */
    double mask_prob;     /* default 0.15 */
    int rank, world;      /* data-parallel slice; default 0, 1 */
    int shuffle;          /* -1 = by split (train yes, val no), 0 = no, 1 = yes */
    int window;           /* sequences per shuffle window; default 1024 */
} LoaderConfig;

void loader_config_default(LoaderConfig *cfg);
/* "official" | "random" | "bert" | "none" -> 0, or -1 when unknown. */
int mask_mode_parse(const char *s, MaskMode *out);
const char *mask_mode_name(MaskMode m);

/* Resume state: plain int64s (a checkpoint stores it as an int64 array of LOADER_STATE_LEN). */
#define LOADER_STATE_LEN 8
#define LOADER_STATE_VERSION 1
typedef struct {
    int64_t version;      /* LOADER_STATE_VERSION */
    int64_t position;     /* global sequence position of the next batch (all ranks) */
    int64_t epoch;        /* position / n_sequences (informational) */
    int64_t seed;
    int64_t n_sequences;  /* of the split; must match on restore */
    int64_t T;            /* must match on restore */
    int64_t mask_mode;    /* must match on restore */
    int64_t reserved;
} LoaderState;

typedef struct Loader Loader;

/* Opens DIR/<split>-NNNNN.h5 (split "train" or "val"), validating every shard.  loader_open exits
 * with one error line on failure; loader_open_err returns NULL and a message instead. */
Loader *loader_open(const char *dir, const char *split, const LoaderConfig *cfg);
Loader *loader_open_err(const char *dir, const char *split, const LoaderConfig *cfg, char *err, size_t errlen);
void loader_close(Loader *L);

/* Fills b (allocated with batch_alloc(b, B, T)).  Returns 1, or 0 at the end of a single-pass
 * (unshuffled val) loader; train loaders wrap around epochs forever.  Exits on read errors. */
int loader_next(Loader *L, Batch *b);
void loader_rewind(Loader *L);                        /* back to position 0 */
void loader_get_state(const Loader *L, LoaderState *s);
int loader_set_state(Loader *L, const LoaderState *s, char *err, size_t errlen); /* 0 = ok */

int64_t loader_n_sequences(const Loader *L);          /* of the split (all ranks) */
double loader_epoch(const Loader *L);                 /* position / n_sequences */
int loader_vocab_size(const Loader *L);
/* The tokenizer identity (16 hex digits) shared by every shard of the split. */
const char *loader_tokenizer_hash(const Loader *L);
/* The tokenizer file bytes stored in the first shard (malloc'd). */
uint8_t *loader_tokenizer_bytes(const Loader *L, size_t *len);
/* The shards' special ids and tokenizer kind. */
SpecialIds loader_special_ids(const Loader *L);
TokFileKind loader_tokenizer_kind(const Loader *L);

/* What masking needs of the tokenizer: the id space, [MASK], and the ids never masked nor drawn as a
 * replacement (ascending; is_special, when not NULL, is the same set as a [vocab_size] 0/1 table). */
typedef struct MaskVocab {
    int vocab_size;
    int32_t mask_id;
    const int32_t *special;
    int n_special;
    const uint8_t *is_special;
} MaskVocab;

/* Masks one sequence in place (exposed for tests): ids[0..T) with n real tokens; writes labels[0..T).
 * Returns the number of masked positions.  mask_sequence_vocab takes the tokenizer's ids;
 * mask_sequence is it for our tokenizer (special 0..4, [MASK] 4). */
int mask_sequence_vocab(int32_t *ids, int32_t *labels, int n, int T, MaskMode mode, double p, const MaskVocab *v,
                        uint64_t seed, uint64_t stream, uint64_t counter_base);
int mask_sequence(int32_t *ids, int32_t *labels, int n, int T, MaskMode mode, double p, int vocab_size,
                  uint64_t seed, uint64_t stream, uint64_t counter_base);
#endif
