/* batch.h — one (rank-local) batch of masked sequences, as the loader hands it to the model. */
#ifndef DEBERTA_BATCH_H
#define DEBERTA_BATCH_H
#include <stdint.h>

typedef struct {
    int B, T;                 /* batch size, sequence length */
    int32_t *input_ids;       /* [B*T] after masking ([MASK] or replacement at masked positions), 0-padded */
    int32_t *attention_mask;  /* [B*T] 1 = real token, 0 = padding */
    int32_t *labels;          /* [B*T] original id at masked positions, 0 elsewhere (labels > 0 <=> masked) */
    int n_masked;             /* number of positions with labels > 0 */
    int n_tokens;             /* number of positions with attention_mask = 1 */
} Batch;

/* Allocates the three [B*T] arrays (zeroed); batch_free releases them. */
void batch_alloc(Batch *b, int B, int T);
void batch_free(Batch *b);
#endif
