/* fill_mask.h — the generator fills every [MASK] of a query (`deberta fill-mask`): its k most probable
 * tokens with their probabilities, as Hugging Face's fill-mask pipeline lists them.
 *
 * A query is cut at each literal "[MASK]"; the pieces are encoded with the model's own tokenizer (BPE
 * or SentencePiece, data/tokfile.h) — the piece before a [MASK] without its trailing spaces, as
 * Hugging Face's mask token strips them (lstrip) — and joined by the [MASK] id:
 * [CLS] piece [MASK] piece … [SEP].  One forward of the generator per query (dropout off); each masked
 * row's probabilities are softmax(logits) in double, ranked by probability, then id. */
#ifndef DEBERTA_TRAIN_FILL_MASK_H
#define DEBERTA_TRAIN_FILL_MASK_H
#include <stdio.h>
#include "autograd/tape.h"
#include "data/tokfile.h"
#include "model/electra.h"

#define FILL_MASK_TEXT "[MASK]"

typedef struct FillMaskQuery {
    char *text;
    long line;            /* its line in the input file; 0: a text given directly */
    int32_t *ids;         /* [n]: [CLS] … [SEP] (fill_mask_encode) */
    int n, n_masks;
} FillMaskQuery;

typedef struct FillMaskTop {
    double p;
    int32_t id;
} FillMaskTop;

/* q->ids, q->n, q->n_masks from q->text; -1 with a message ("has no [MASK] to fill", "is N tokens
 * long …") when it has no [MASK] or is longer than max_len. */
int fill_mask_encode(const TokFile *tk, FillMaskQuery *q, int max_len, char *err, size_t errlen);
/* One forward of m's generator over q (encoded): for each of its [MASK]s in order, the k (≤ the
 * vocabulary) most probable tokens into top[mask·k + i].  t: a tape not recording gradients is made
 * of it (tape_reset first). */
void fill_mask_top(Electra *m, Tape *t, const TokFile *tk, const FillMaskQuery *q, int k, FillMaskTop *top);
/* The text of token id for display (SentencePiece's "▁" as a space); heap, never NULL. */
char *fill_mask_token_text(const TokFile *tk, int32_t id);

/* The queries: text (one), or the non-blank lines of the file input; each checked (UTF-8, a [MASK],
 * the length against max_len) and encoded before anything is returned.  Errors are fatal, one line
 * naming the file's line. */
FillMaskQuery *fill_mask_read_queries(const char *text, const char *input, const TokFile *tk, int max_len, long *n);
void fill_mask_queries_free(FillMaskQuery *qs, long n);
/* Every query through m's generator, written to out: "query N: TEXT" and one line per [MASK] of
 * "'token' probability" pairs, or (json) one object per line: {"query", "input_ids", "masks":
 * [[{"token", "token_str", "score"}, …], …]}.  Returns 0, or -1 when out could not be written. */
int fill_mask_write(FILE *out, Electra *m, const TokFile *tk, const FillMaskQuery *qs, long n, int top_k, int json);
#endif
