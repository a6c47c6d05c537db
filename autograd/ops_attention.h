/* ops_attention.h — the fused disentangled-attention op (DeBERTa, spec §1.6–§1.7).
 *
 * Letters: B batch, A heads, Tq queries, Tk keys, D head size, R rows of the relative table that are
 * passed in (the caller projects only the rows reachable at the current length and shifts c).
 *
 *   S[b,a,i,j] = c2c  q[b,a,i]·k[b,a,j]                    (if ATT_C2C)
 *              + c2p  q[b,a,i]·kr[a,c(i,j)]                 (if ATT_C2P)  = (q·kr^T)[i, c(i,j)]
 *              + p2c  k[b,a,j]·qr[a,c(i,j)]                 (if ATT_P2C)  = (k·qr^T)[j, c(i,j)]
 *   P[b,a,i,:] = masked softmax over j of scale·S[b,a,i,:]   kept iff qmask[b,i] && kmask[b,j]
 *
 * c2p and p2c are a [T, R] matmul against the table followed by a gather: no T×T×D tensor exists.
 * Masked entries are exactly 0 and a fully masked row (a padded query) is all zeros, never NaN.
 * Memory: the output P (B·A·Tq·Tk) plus, in backward only, per thread dS (Tq·Tk) and the gathered
 * gradients d(q·kr^T), d(k·qr^T) of one (b,a) pair ((Tq+Tk)·R) — of all pairs (B·A·(Tq+Tk)·R) when the
 * heads do not divide among the threads — tape_scratch buffers that go back to the tape's pool when
 * the call returns; with P·V fused in (op_disentangled_attention_context) P is kept for the backward and
 * each thread also holds one pair's dropped probabilities (Tq·Tk) in forward and backward.  See
 * docs/ARCHITECTURE.md, "Model".
 */
#ifndef DEBERTA_OPS_ATTENTION_H
#define DEBERTA_OPS_ATTENTION_H
#include <stdint.h>
#include "autograd/tape.h"

/* Attention terms, a bitmask (model/config.h uses the same). */
enum { ATT_C2C = 1, ATT_C2P = 2, ATT_P2C = 4, ATT_ALL = 7 };

/* q [B,A,Tq,D], k [B,A,Tk,D]; qr, kr [A,R,D] or [1,A,R,D] (qr needed iff p2c, kr iff c2p, else NULL);
 * c_idx [Tq,Tk] int32 in [0,R) (NULL iff neither c2p nor p2c); qmask [B·Tq], kmask [B·Tk] 0/1 or NULL.
 * Returns P [B,A,Tq,Tk].  c_idx is copied when a backward needs it. */
Tensor *op_disentangled_attention_probs(Tape *t, Tensor *q, Tensor *k, Tensor *qr, Tensor *kr, const int32_t *c_idx,
                                        int terms, real scale, const int32_t *qmask, const int32_t *kmask);
/* The same followed by op_dropout_batch(P, p), in one op: the same masks (the call takes the dropout
 * stream op_dropout_batch would take at this point, n_random++ in training also for p == 0), the
 * same values and gradients (fused == separate: tests/test_model_attention.c); P is kept for the
 * backward, the dropout's gradient is applied inside the softmax backward, and no dP tensor is made.
 * Returns dropout(P), or P itself when the dropout is the identity (not training, p == 0). */
Tensor *op_disentangled_attention_dropout(Tape *t, Tensor *q, Tensor *k, Tensor *qr, Tensor *kr, const int32_t *c_idx,
                                          int terms, real scale, const int32_t *qmask, const int32_t *kmask, real p);
/* op_disentangled_attention_dropout on q [B,Tq,A·D], k [B,Tk,A·D] with A = heads: the heads interleaved in
 * each row, as the linear layers write them, read in place (no split_heads copy); the same values and
 * gradients, bit for bit (tests/test_model_attention.c), and dq, dk in that layout. */
Tensor *op_disentangled_attention_dropout_bth(Tape *t, Tensor *q, Tensor *k, int heads, Tensor *qr, Tensor *kr,
                                              const int32_t *c_idx, int terms, real scale, const int32_t *qmask,
                                              const int32_t *kmask, real p);
/* op_disentangled_attention_dropout_bth followed by op_attention_context(Pd, v), in one op: returns the
 * context ctx [B,Tq,A·D] = dropout(P) · v per (b, a) on the D columns of head a, v [B,Tk,A·D] (a tensor
 * other than q and k).  Each pair's dropped probabilities exist only in the thread's scratch while the
 * pair's product is made, and their gradient only while the pair's backward runs (recomputed from P and
 * the keep mask): no [B,A,Tq,Tk] tensor besides P.  The same values and gradients as the two ops, bit
 * for bit (tests/test_model_attention.c). */
Tensor *op_disentangled_attention_context(Tape *t, Tensor *q, Tensor *k, Tensor *v, int heads, Tensor *qr, Tensor *kr,
                                          const int32_t *c_idx, int terms, real scale, const int32_t *qmask,
                                          const int32_t *kmask, real p);
/* ctx [B,Tq,A·D] = P [B,A,Tq,Tk] · v [B,Tk,A·D] per (b, a) on the D columns of head a: the values and
 * gradients of op_merge_heads(op_matmul(P, op_split_heads(v, A), 0, 0)) without the two copies. */
Tensor *op_attention_context(Tape *t, Tensor *p, Tensor *v);
/* 1: the backward always lets threads own (b,a) pairs (ops_attention.c, da_backward_pairs), as it does
 * when the heads do not divide among the threads; 0 (default): threads own heads when they divide.  The
 * two are bitwise equal (tests compare them). */
extern int g_attention_by_pairs;
/* 1: the c2p and p2c gradients are scattered element by element instead of added run by run (runs of
 * equal c(i,j); ops_attention.c: for c2p read by da_check_index when the forward runs, for p2c in the
 * backward); the two are bitwise equal (tests compare them). */
extern int g_attention_scatter;
/* Runs of equal c(i,j) this long on average (default 4) or longer: the forward adds the position terms run
 * by run (one broadcast c2p value, a contiguous stretch of the p2c product) instead of gathering entry by
 * entry, and the backward sums each c2p run in one chain instead of four rows' chains side by side.  The
 * ways are bitwise equal (tests compare the default with 0: always by runs). */
extern int g_attention_run_min;
#endif
