/* tokenizer.h — byte-fallback BPE with a SentencePiece-style word-boundary marker.
 *
 * Normalisation: none.  encode() works on raw bytes and decode(encode(x)) == x for every byte string
 * (empty, invalid UTF-8, NUL bytes included).
 *
 * Words (pre-tokenisation).  Every byte has a class: L = ASCII letters and every byte >= 0x80 (so a
 * UTF-8 character is never cut), D = digits, W = whitespace (space \t \n \v \f \r), P = everything
 * else.  The text is cut into words, left to right:
 *   - a space followed by a non-W byte starts a word that is that space (the boundary marker, shown
 *     as U+2581 "▁" in piece names) plus the maximal run of bytes of the next byte's class;
 *   - other whitespace forms runs: a maximal run of W bytes, stopping before a space that is
 *     followed by a non-W byte;
 *   - otherwise a word is a maximal run of one class.
 * Merges never cross words.  No dummy prefix space is added.
 *
 * Units.  A word is split into UTF-8 characters (RFC 3629: no overlongs, no surrogates); a character
 * in the tokenizer's alphabet becomes its character token; any other character, and every byte of an
 * invalid sequence, becomes byte tokens <0xNN> (byte fallback).  Byte tokens never take part in merges.
 *
 * Ids: [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3 [MASK]=4, byte tokens 5..260 (id 5+b for byte b), then the
 * alphabet's character tokens, then one token per merge in merge order (rank r -> id first_merge+r).
 * Encoding applies merges lowest rank first (leftmost occurrence first among equal ranks).
 */
#ifndef DEBERTA_TOKENIZER_H
#define DEBERTA_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

enum {
    TOK_PAD = 0, TOK_CLS = 1, TOK_SEP = 2, TOK_UNK = 3, TOK_MASK = 4,
    TOK_N_SPECIAL = 5,
    TOK_BYTE0 = 5,          /* id of byte 0x00; byte b has id TOK_BYTE0 + b */
    TOK_FIRST_CHAR = 261,   /* first character token */
};

typedef struct Tokenizer Tokenizer;

typedef struct {
    int vocab_size;          /* total ids including specials and bytes (default 8192) */
    double char_coverage;    /* fraction of character occurrences the alphabet must cover (0.9995) */
    int max_chars;           /* cap on alphabet size; 0 = (vocab_size - 261) / 2 */
    int min_pair_count;      /* stop merging when the best pair is rarer (default 2) */
    /* optional progress report: stage name and fraction done in [0,1] */
    void (*progress)(const char *stage, double frac, void *ctx);
    void *progress_ctx;
} TokTrainConfig;

void tok_train_config_default(TokTrainConfig *cfg);

/* Trains on n_docs texts (docs[i] of lens[i] bytes).  Uses all OpenMP threads for counting.
 * Deterministic: the result depends only on the texts and cfg (not on thread count or doc order
 * within equal multisets of words).  Returns NULL with a message in err when the config is invalid. */
Tokenizer *tokenizer_train(const char *const *docs, const size_t *lens, size_t n_docs,
                           const TokTrainConfig *cfg, char *err, size_t errlen);

/* Standalone file (docs/FORMATS.md "Tokenizer file").  load returns NULL + message on any problem. */
Tokenizer *tokenizer_from_bytes(const uint8_t *buf, size_t len, const char *what, char *err, size_t errlen);
Tokenizer *tokenizer_load(const char *path, char *err, size_t errlen);
int tokenizer_save(const Tokenizer *tk, const char *path, char *err, size_t errlen); /* 0 = ok */
const uint8_t *tokenizer_bytes(const Tokenizer *tk, size_t *len); /* the file's bytes */
uint64_t tokenizer_hash(const Tokenizer *tk);                     /* FNV-1a 64 of the file bytes */
void tokenizer_hash_hex(const Tokenizer *tk, char out[17]);
/* The tokenizer identity of a tokenizer file's bytes: FNV-1a 64 of all of them, 16 lowercase hex
 * digits (= tokenizer_hash_hex of the parsed file; stored in shards, checkpoints and config.txt). */
void tokenizer_hash_bytes(const uint8_t *bytes, size_t n, char out[17]);
void tokenizer_free(Tokenizer *tk);

int tokenizer_vocab_size(const Tokenizer *tk);
int tokenizer_n_chars(const Tokenizer *tk);
int tokenizer_n_merges(const Tokenizer *tk);
void tokenizer_merge(const Tokenizer *tk, int rank, int32_t *left, int32_t *right);
/* Bytes of token id (specials: their names; byte tokens: the one byte).  NULL for bad ids. */
const char *tokenizer_piece(const Tokenizer *tk, int32_t id, size_t *len);

/* Word splitting (exposed for tests): writes word end offsets into ends (capacity len) and
 * returns the number of words. */
size_t tok_split_words(const uint8_t *text, size_t len, size_t *ends);
/* Length of the valid UTF-8 character at p (1..4 of its n bytes), or 0 when the bytes there are not one
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF); SentencePiece and the task readers
 * use it too. */
int utf8_valid_len(const uint8_t *p, size_t n);

/* Per-thread encoder: scratch space and a cache of word encodings. */
typedef struct TokEncoder TokEncoder;
TokEncoder *tok_encoder_new(const Tokenizer *tk);
void tok_encoder_free(TokEncoder *enc);
/* Encodes text; the result stays valid until the next call on this encoder. */
const int32_t *tok_encode(TokEncoder *enc, const char *text, size_t len, size_t *n_ids);
/* Words of at least this many bytes use the heap-based merge loop (tests set 1 or a huge value). */
void tok_encoder_set_long_word(TokEncoder *enc, size_t nbytes);

/* Convenience: encode into a fresh malloc'd array. */
int32_t *tokenizer_encode(const Tokenizer *tk, const char *text, size_t len, size_t *n_ids);
/* Encodes n texts with all OpenMP threads; ids[i] (malloc'd) and n_ids[i] per text. */
void tokenizer_encode_batch(const Tokenizer *tk, const char *const *texts, const size_t *lens, size_t n,
                            int32_t **ids, size_t *n_ids);
/* Decodes ids into a malloc'd NUL-terminated buffer (*len bytes, NUL not counted).  Special tokens are
 * written as their names ("[SEP]"); ids outside the vocabulary are skipped. */
char *tokenizer_decode(const Tokenizer *tk, const int32_t *ids, size_t n, size_t *len);

/* Hugging Face tokenizer.json (docs/FORMATS.md "Hugging Face tokenizer.json"). */
int tokenizer_write_hf_json(const Tokenizer *tk, const char *path, char *err, size_t errlen);
#endif
