/* ops.h — every differentiable op: op_xxx(tape, ...) allocates the output in the arena, runs the
 * forward kernel and records a tape node (when an input requires grad and no no-grad scope is on).
 *
 * Dimension letters: N rows, K inner, M/N matmul sizes, C channels (last dim), V vocab/classes.
 * Integer index arrays passed to ops are COPIED into the arena when a backward needs them, so the
 * caller may reuse its buffers after the call.
 * Misuse (shape mismatch, NULL, bad index) ends with one "error: op <name>: ..." line.
 */
#ifndef DEBERTA_OPS_H
#define DEBERTA_OPS_H
#include <stdint.h>
#include "autograd/tape.h"

/* ---- matmul (ops_matmul.c) ----
 * C = op(A) · op(B), op(X) = X or X^T on the last two dims.  A: [..., M, K] (or [..., K, M] if ta),
 * B: [..., K, N] (or [..., N, K] if tb) with the same leading dims as A, or 2-D (shared by every
 * batch item).  C: [..., M, N]. */
Tensor *op_matmul(Tape *t, Tensor *a, Tensor *b, int ta, int tb);
/* y = x · W^T + b.  x: [..., IN], W: [OUT, IN] (torch layout), b: [OUT] or NULL.  y: [..., OUT]. */
Tensor *op_linear(Tape *t, Tensor *x, Tensor *w, Tensor *b);
/* GELU(x · W^T + b), b [OUT]: op_bias_gelu(op_linear(x, W, NULL), b), the two ops when the tape records; when
 * it records nothing (a no-grad scope, or no input needs a gradient) one product with the bias and GELU
 * in its output pass (gemm_linear; under oneDNN its erf, so the last bits differ from the two ops'). */
Tensor *op_linear_gelu(Tape *t, Tensor *x, Tensor *w, Tensor *b);

/* ---- elementwise (ops_elementwise.c) ---- */
Tensor *op_add(Tape *t, Tensor *a, Tensor *b);          /* same shape: a + b (residual) */
Tensor *op_bias_add(Tape *t, Tensor *x, Tensor *b);     /* x [..., C] + b [C] */
Tensor *op_scale(Tape *t, Tensor *x, real s);           /* s · x */
Tensor *op_mul(Tape *t, Tensor *a, Tensor *b);          /* same shape: a ⊙ b */
Tensor *op_gelu(Tape *t, Tensor *x);                    /* exact: 0.5 x (1 + erf(x/√2)) */
Tensor *op_bias_gelu(Tape *t, Tensor *x, Tensor *b);    /* fused gelu(x + b), b [C] */

/* ---- normalisation (ops_norm.c) ----
 * LayerNorm over the last dim, biased variance: y = (x − mean)/sqrt(var + eps) · g + b. */
Tensor *op_layernorm(Tape *t, Tensor *x, Tensor *g, Tensor *b, real eps);
/* LN(dropout(y) + res) in one op: the values, dropout stream and gradients of
 * op_layernorm(op_add(op_dropout_batch(y, p), res), g, b, eps), bit for bit, without the dropped and
 * summed tensors (the backward recomputes a row of the sum from y, res and the mask).  y != res. */
Tensor *op_dropout_add_layernorm(Tape *t, Tensor *y, real p, Tensor *res, Tensor *g, Tensor *b, real eps);
/* The same values written over res (the returned tensor shares res's data), for a no-grad forward whose
 * caller reads res no more (fatal outside a no-grad scope): no new [.., C] tensor. */
Tensor *op_dropout_add_layernorm_over(Tape *t, Tensor *y, real p, Tensor *res, Tensor *g, Tensor *b, real eps);

/* ---- softmax (ops_softmax.c) ----
 * Softmax over the last dim of x [B, H, Tq, Tk] (or [B, Tq, Tk] with H = 1) with a pairwise mask:
 * position (i, j) of batch b is kept iff qmask[b*Tq + i] && kmask[b*Tk + j] (int32 0/1 arrays; NULL =
 * all kept).  Masked entries are 0; a fully masked row is all zeros (never NaN).  Row max is taken
 * over kept entries; masked scores never enter exp(). */
Tensor *op_softmax_masked(Tape *t, Tensor *x, const int32_t *qmask, const int32_t *kmask);

/* ---- indexing (ops_index.c) ---- */
/* out[n, :] = table[ids[n], :], ids: n_ids int32 in [0, V); out: [n_ids, C] (reshape as needed).
 * Backward scatter-adds into table rows; rows equal to padding_idx (>= 0) get no gradient. */
Tensor *op_embedding(Tape *t, Tensor *table, const int32_t *ids, int n_ids, int padding_idx);
/* out[r, j] = x[r, idx[r, j]] for x [..., W] seen as [R, W], idx [R, J] int32 in [0, W); out [..., J]
 * with out's last dim = J (out_last_dim).  Repeated indices accumulate in backward (c2p/p2c block).
 * If idx_rows < R the index matrix is reused cyclically: row r uses idx[r % idx_rows] (one shared
 * [Tq, Tk] index for all batch·head items). */
Tensor *op_gather_last(Tape *t, Tensor *x, const int32_t *idx, int idx_rows, int out_last_dim);
/* out[k, :] = x[rows[k], :] for x seen as [R, C]; out [n_rows, C].  Backward scatter-adds. */
Tensor *op_index_select(Tape *t, Tensor *x, const int32_t *rows, int n_rows);

/* ---- dropout (ops_dropout.c) ----
 * Inverted dropout with keep mask drawn from rng(tape->seed, rng_stream(RNG_DROPOUT, tape->step,
 * tape->n_random++), element index) (exact draw: ops_dropout.c): identity (returns x) when
 * !tape->training or p == 0; in training every call advances n_random, also with p == 0. */
Tensor *op_dropout(Tape *t, Tensor *x, real p);
/* The same for an activation whose outermost dimension is the batch (tape->rows rows, the first
 * being global row tape->row0): element i draws global element row0·(n/rows) + i, so a
 * data-parallel slice of a batch gets the masks of those rows in the whole batch. */
Tensor *op_dropout_batch(Tape *t, Tensor *x, real p);
/* For ops that fuse a dropout of their output (ops_attention.c), so that it draws exactly what
 * op_dropout / op_dropout_batch (batch = 1) of that output would:
 * dropout_begin checks p and the batch rows, and in training takes the call's stream (n_random++,
 * also for p == 0); it returns the element offset of x in the global batch, or −1 when the dropout
 * is the identity (not training, or p == 0).  dropout_apply writes y[i] = keep[i] ? x[i]/(1 − p) : 0
 * for the n elements that start at global element off (serial: callable inside a parallel loop). */
int64_t dropout_begin(Tape *t, const Tensor *x, real p, int batch, uint64_t *stream);
void dropout_apply(real *y, uint8_t *keep, const real *x, long n, real p, uint64_t seed, uint64_t stream, int64_t off);

/* ---- losses and reductions (ops_loss.c) ---- */
/* Mean over the N rows of −log softmax(logits[n])[target[n]]; logits [N, V], targets int32 in [0, V).
 * Fused log-softmax.  Scalar output. */
Tensor *op_cross_entropy(Tape *t, Tensor *logits, const int32_t *targets);
/* Mean over valid elements of BCE-with-logits: valid[i] != 0, target[i] in {0,1} (int32).  Numerically
 * stable form max(x,0) − x·y + log(1 + exp(−|x|)).  Scalar output (0 when nothing is valid). */
Tensor *op_bce_logits(Tape *t, Tensor *logits, const int32_t *targets, const int32_t *valid);
Tensor *op_sum(Tape *t, Tensor *x);   /* scalar */
Tensor *op_mean(Tape *t, Tensor *x);  /* scalar */

/* ---- shapes (ops_shape.c) ---- */
Tensor *op_reshape(Tape *t, Tensor *x, int ndim, const int *shape);  /* a view; backward adds */
Tensor *op_transpose(Tape *t, Tensor *x);                            /* swap the last two dims (copy) */
Tensor *op_split_heads(Tape *t, Tensor *x, int heads);   /* [B, T, H·D] -> [B, H, T, D] */
Tensor *op_merge_heads(Tape *t, Tensor *x);              /* [B, H, T, D] -> [B, T, H·D] */
#endif
