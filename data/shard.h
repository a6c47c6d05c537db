/* shard.h — HDF5 token shards (layout in docs/FORMATS.md "Shard").
 *
 * A shard holds whole documents: `tokens` (uint16 when vocab_size <= 65536, else int32; chunked,
 * shuffle + deflate), `doc_offsets` (int64, n_docs + 1, from 0 to n_tokens), `tokenizer` (uint8, the
 * tokenizer file's bytes) and root attributes (format, version, vocab size, tokenizer hash, special
 * ids, counts, split, index).  Files are written byte-identically for identical inputs (no object
 * timestamps) under a temporary name and renamed when complete.
 *
 * Every function that can fail returns an error code or NULL and writes one line naming the file and
 * the problem into err; nothing here exits the process.
 */
#ifndef DEBERTA_SHARD_H
#define DEBERTA_SHARD_H
#include <stddef.h>
#include <stdint.h>
#include "data/tokfile.h"

#define SHARD_FORMAT "deberta.c-shard"
#define SHARD_VERSION 2 /* 2: Fletcher-32 checksums on tokens and doc_offsets, attribute max_token_id */
#define SHARD_CHUNK 65536 /* elements per chunk of tokens and doc_offsets */

typedef struct {
    int64_t vocab_size;
    const uint8_t *tokenizer;  /* tokenizer file bytes (stored in the shard) */
    size_t tokenizer_len;
    const char *split;         /* "train" or "val" */
    int64_t index;             /* shard number within the split */
    const SpecialIds *special; /* the tokenizer's special ids; NULL: ours (special_ids_bpe) */
} ShardInfo;

/* Writes path (via path.tmp + rename).  n_docs >= 1; doc_offsets has n_docs + 1 entries. */
int shard_write(const char *path, const int32_t *tokens, const int64_t *doc_offsets, int64_t n_docs,
                const ShardInfo *info, char *err, size_t errlen);

typedef struct Shard Shard;
/* Opens and validates: format, version, datasets and dtypes, shapes against the counts, the embedded
 * tokenizer (either kind, data/tokfile.h): its hash, vocab size and special ids against the
 * attributes, doc_offsets (0, monotonic, last == n_tokens; streamed), and, when
 * check_ids, every token id < vocab_size (streamed chunk by chunk).  NULL + message on failure. */
Shard *shard_open(const char *path, int check_ids, char *err, size_t errlen);
void shard_close(Shard *s);
int64_t shard_n_tokens(const Shard *s);
int64_t shard_n_docs(const Shard *s);
int64_t shard_vocab_size(const Shard *s);
const char *shard_tokenizer_hash(const Shard *s); /* 16 hex digits */
TokFileKind shard_tokenizer_kind(const Shard *s);
SpecialIds shard_special_ids(const Shard *s);
/* The ids never masked (tokfile.h): ascending, *n of them; valid while the shard is open. */
const int32_t *shard_never_masked(const Shard *s, int *n);
/* Reads tokens[start, start+count) into out (hyperslab); ids are checked against vocab_size. */
int shard_read_tokens(Shard *s, int64_t start, int64_t count, int32_t *out, char *err, size_t errlen);
/* Reads doc_offsets[start, start+count). */
int shard_read_offsets(Shard *s, int64_t start, int64_t count, int64_t *out, char *err, size_t errlen);
/* The stored tokenizer file bytes (malloc'd). */
uint8_t *shard_read_tokenizer(Shard *s, size_t *len, char *err, size_t errlen);
#endif
