/* attention.h — DeBERTa-V3 disentangled self-attention block (spec §1.4–§1.7, §2.2 first half).
 *
 *   q, k, v  = split_heads(query_proj(qin)), split_heads(key_proj(kv)), split_heads(value_proj(kv))
 *   R̃        = Dropout_h(R̂)          R̂ = LN_rel(rel_embeddings[reachable rows]), once per forward
 *   Kr, Qr   = key_proj(R̃), query_proj(R̃)            (share_att_key: the layer's own projections)
 *   P        = masked softmax(scale·(c2c + c2p + p2c))  one fused op (autograd/ops_attention.h),
 *              scale = 1/sqrt(D · number of terms), mask[b,i,j] = m[b,i]·m[b,j]
 *   ctx      = merge_heads(Dropout_a(P) · v)
 *   out      = LN_attn(Dropout_h(dense(ctx)) + qin)     residual = the QUERY input
 *
 * qin and kv may differ (the EMD passes position-enhanced queries against fixed key/value states);
 * both are [B, T, H] with the same T and the same padding mask.
 */
#ifndef DEBERTA_MODEL_ATTENTION_H
#define DEBERTA_MODEL_ATTENTION_H
#include <stdint.h>
#include "autograd/ops.h"
#include "autograd/ops_attention.h"
#include "model/config.h"

/* Parameters of one attention block (HF names under "<layer>.attention."). */
typedef struct AttentionParams {
    Tensor *wq, *bq;       /* self.query_proj  [A·D, H], [A·D] */
    Tensor *wk, *bk;       /* self.key_proj */
    Tensor *wv, *bv;       /* self.value_proj */
    Tensor *wo, *bo;       /* output.dense     [H, A·D], [H] */
    Tensor *ln_g, *ln_b;   /* output.LayerNorm [H] */
} AttentionParams;

/* What every layer of one encoder forward shares (spec §2.3): the padding mask, the relative
 * index and the LayerNorm'd reachable rows of the relative table. */
typedef struct RelContext {
    int B, T;
    const int32_t *mask;  /* [B·T] 0/1 (arena copy) */
    const int32_t *qmask; /* [B·Tq] 0/1 of the queries: mask itself, or for a query input of Tq < T rows
                           * (position i < Tq of each sequence, c's first Tq rows) their own */
    int terms;            /* ATT_* */
    int32_t *c;           /* [T·T] c(i,j) − r0: row of `rel`; NULL without position terms */
    int r0, n_rows;       /* reachable table rows r0 .. r0 + n_rows − 1 */
    Tensor *rel;          /* [n_rows, H] LN_rel(W_rel[r0 : r0 + n_rows]); NULL without position terms */
} RelContext;

/* Builds the shared context: copies mask into the arena, computes c(i,j) for T×T, selects the
 * reachable rows of rel_w [2S, H] and LayerNorms them (if cfg->norm_rel_ebd) with (g, b). */
void relctx_build(Tape *t, RelContext *rc, const ModelConfig *cfg, Tensor *rel_w, Tensor *rel_ln_g, Tensor *rel_ln_b,
                  const int32_t *mask, int B, int T);

/* The whole block: qin, kv [B, T, H] -> out [B, T, H] (after the residual LayerNorm). */
Tensor *attention_forward(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *qin, Tensor *kv, const RelContext *rc);
/* The same in a no-grad scope whose caller reads qin no more: the output is written over qin
 * (op_dropout_add_layernorm_over; with the unfused reference, a new tensor as attention_forward's). */
Tensor *attention_forward_over(Tape *t, const ModelConfig *cfg, const AttentionParams *p, Tensor *qin, Tensor *kv,
                               const RelContext *rc);

/* Readable reference of op_disentangled_attention_probs (same arguments, same result up to
 * rounding): matmul + gather_last (+ transpose for p2c) + add + scale + softmax_masked.
 * qr/kr [A, R, D] or [1, A, R, D] are expanded over the batch with index_select.  Unlike the
 * fused op it materialises [B, A, T, R] projections and the separate score terms. */
Tensor *attention_probs_unfused(Tape *t, Tensor *q, Tensor *k, Tensor *qr, Tensor *kr, const int32_t *c_idx, int terms,
                                real scale, const int32_t *qmask, const int32_t *kmask);

/* Set (for benchmarks/tests) to make attention_forward use the unfused composition. */
extern int g_attention_unfused;

/* Attention diagnostic (evaluation only; NULL = off).  While set, each attention_forward call adds
 * the statistics of its probabilities P (before attention dropout) to slot `next` and advances it;
 * the caller sets next = 0 before a forward, so slot l is layer l.  Per valid query row i (and head):
 *   entropy       −Σ_j P[i,j] log P[i,j]
 *   norm_entropy  entropy / log(number of valid keys)       (1 = uniform, 0 = one key)
 *   self          P[i,i];   near  P[i,i−1] + P[i,i+1];   local  Σ_{0<|i−j|≤3} P[i,j]
 * summed over rows; divide by rows[l] for means. */
#define ATTN_STATS_MAX_LAYERS 32
typedef struct AttentionStats {
    int next;
    double entropy[ATTN_STATS_MAX_LAYERS], norm_entropy[ATTN_STATS_MAX_LAYERS];
    double self[ATTN_STATS_MAX_LAYERS], near[ATTN_STATS_MAX_LAYERS], local[ATTN_STATS_MAX_LAYERS];
    double rows[ATTN_STATS_MAX_LAYERS];
} AttentionStats;
extern AttentionStats *g_attention_stats;
/* Adds the statistics of P [B, A, T, T] (query rows with mask 0 skipped; mask [B·T]) to slot st->next. */
void attention_stats_add(AttentionStats *st, const Tensor *P, const int32_t *mask);
#endif
