/* tokfile.h — a tokenizer file of either kind the data pipeline takes: the project's own BPE
 * (tokenizer.bin, data/tokenizer.h) or a SentencePiece unigram model (.model, data/spm.h, e.g. the
 * spm.model of a published DeBERTa-V3).  What prep, the shards and the loader need of it: the id
 * space, the special ids, the ids that are never masked, and its bytes (whose FNV-1a 64 hash is the
 * tokenizer identity, data/tokenizer.h tokenizer_hash_bytes).
 *
 * Special ids.  Ours are [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3 [MASK]=4.  A SentencePiece model names them
 * as DeBERTa-V3's does: the pieces "[PAD]", "[CLS]", "[SEP]" and "[UNK]" (the latter the model's
 * unknown piece) must exist; "[MASK]" is a piece when the model has one (a user-defined symbol, say),
 * and otherwise the id after the last piece, as DeBERTa's and Hugging Face's tokenizers append it (the
 * published spm.model has 128,000 pieces and no [MASK]: [MASK] = 128000, 128,001 ids).  Id 0 must be
 * special: labels use 0 for "not masked" (docs/FORMATS.md, Loader).
 *
 * Never masked and never drawn as a random replacement: the five special ids and, for a SentencePiece
 * model, its control pieces (which encoding never produces, e.g. <s> </s>).
 */
#ifndef DEBERTA_TOKFILE_H
#define DEBERTA_TOKFILE_H
#include <stddef.h>
#include <stdint.h>
#include "data/spm.h"
#include "data/tokenizer.h"

typedef struct SpecialIds {
    int32_t pad, cls, sep, unk, mask;
} SpecialIds;

/* Our tokenizer's. */
static inline SpecialIds special_ids_bpe(void) { return (SpecialIds){TOK_PAD, TOK_CLS, TOK_SEP, TOK_UNK, TOK_MASK}; }

typedef enum { TOKFILE_BPE = 1, TOKFILE_SPM = 2 } TokFileKind;

typedef struct TokFile {
    TokFileKind kind;
    Tokenizer *bpe;         /* kind BPE, else NULL */
    SpmModel *spm;          /* kind SPM, else NULL */
    int vocab_size;         /* ids [0, vocab_size): BPE its tokens; SPM its pieces, + 1 when [MASK] is appended */
    SpecialIds sp;
    int mask_appended;      /* SPM: the model has no [MASK] piece; [MASK] is the id after the last piece */
    int32_t *special;       /* ascending: the five special ids and the control pieces */
    int n_special;
    char hash[17];          /* the tokenizer identity: FNV-1a 64 of the file's bytes */
} TokFile;

/* Parses and validates a tokenizer file of either kind (what names it in messages).  NULL + one line
 * in err on any problem, e.g. "tokenizer m.model: the SentencePiece model has no piece '[CLS]' (...)". */
TokFile *tokfile_from_bytes(const uint8_t *buf, size_t len, const char *what, char *err, size_t errlen);
TokFile *tokfile_load(const char *path, char *err, size_t errlen);
/* Takes ownership of a trained or loaded BPE tokenizer. */
TokFile *tokfile_from_bpe(Tokenizer *tk);
void tokfile_free(TokFile *t);
const uint8_t *tokfile_bytes(const TokFile *t, size_t *len);
#endif
