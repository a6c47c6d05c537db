/* spm.h — a SentencePiece model file (.model) reader and an encoder exact to sentencepiece for
 * unigram models.
 *
 * The file is a protocol-buffer ModelProto (docs/FORMATS.md "SentencePiece model file"); it is decoded
 * by hand (no protobuf dependency): the pieces with score and type, the trainer spec fields that
 * change encoding (model_type, byte_fallback, treat_whitespace_as_suffix, unk/bos/eos/pad ids) and
 * the normalizer spec (name, precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces,
 * escape_whitespaces).  Only unigram models are accepted.
 *
 * Encoding = sentencepiece's SentencePieceProcessor::Encode for a unigram model, no sampling, no
 * bos/eos:
 *   1. normalise: longest-match rules of the precompiled charsmap (a darts-clone double-array trie
 *      over the input bytes whose values index a blob of NUL-terminated replacement strings; none for
 *      the identity normaliser), user-defined pieces copied as they are, malformed UTF-8 -> U+FFFD
 *      one byte at a time; leading, trailing and repeated spaces dropped (remove_extra_whitespaces);
 *      a dummy "▁" prefix (add_dummy_prefix); ' ' -> U+2581 (escape_whitespaces);
 *   2. Viterbi over the pieces' scores (user-defined pieces score length·max_score − 0.1, unused
 *      pieces are skipped; a character no piece starts with becomes [unk] with score
 *      min_score − 10), with sentencepiece's float/double arithmetic so that ties break alike;
 *   3. with byte_fallback an [unk] becomes the <0xNN> pieces of its bytes; without, runs of [unk]
 *      merge into one.
 * Control pieces never come out of encoding (text "[CLS]" is ordinary characters).
 */
#ifndef DEBERTA_SPM_H
#define DEBERTA_SPM_H
#include <stddef.h>
#include <stdint.h>

enum { SPM_NORMAL = 1, SPM_UNKNOWN = 2, SPM_CONTROL = 3, SPM_USER_DEFINED = 4, SPM_UNUSED = 5, SPM_BYTE = 6 };

typedef struct SpmModel SpmModel;

/* Parses and validates a .model file (what names it in messages).  NULL + one-line message in err on
 * any problem: truncated or malformed protobuf, not unigram, no/duplicate [unk], duplicate pieces,
 * byte pieces without byte_fallback (or missing with it), a broken charsmap. */
SpmModel *spm_from_bytes(const uint8_t *buf, size_t len, const char *what, char *err, size_t errlen);
SpmModel *spm_load(const char *path, char *err, size_t errlen);
void spm_free(SpmModel *m);

int spm_vocab_size(const SpmModel *m);
const char *spm_piece(const SpmModel *m, int id, size_t *len); /* NULL for a bad id */
int spm_type(const SpmModel *m, int id);
int spm_piece_to_id(const SpmModel *m, const char *piece, size_t len); /* -1 when absent */
int spm_unk_id(const SpmModel *m);
const uint8_t *spm_bytes(const SpmModel *m, size_t *len); /* the file's bytes */

/* Ids of text (steps 1-3), malloc'd (NULL when empty); thread-safe on a shared model. */
int32_t *spm_encode(const SpmModel *m, const char *text, size_t len, size_t *n_ids);
#endif
