/* gradcheck_attention.h — finite-difference cases of the fused disentangled-attention op, one per
 * subset of attention terms plus edge cases (fully padded query rows and sequences, Tq != Tk,
 * a [1, A, R, D] table).  Listed in gradcheck_op_cases (autograd/gradcheck/gradcheck_ops.c). */
#ifndef DEBERTA_GRADCHECK_ATTENTION_H
#define DEBERTA_GRADCHECK_ATTENTION_H
#include "autograd/gradcheck/gradcheck.h"

GCResult gradcheck_attention_c2c(Tape *t);
GCResult gradcheck_attention_c2p(Tape *t);
GCResult gradcheck_attention_p2c(Tape *t);
GCResult gradcheck_attention_c2c_c2p(Tape *t);
GCResult gradcheck_attention_c2c_p2c(Tape *t);
GCResult gradcheck_attention_c2p_p2c(Tape *t);
GCResult gradcheck_attention_all(Tape *t);
GCResult gradcheck_attention_all_padded(Tape *t);  /* one fully padded sequence, padded rows/keys */
GCResult gradcheck_attention_rect(Tape *t);        /* Tq != Tk, [1, A, R, D] tables */
GCResult gradcheck_attention_dropout(Tape *t);     /* the fused attention dropout (p 0.3, training) */
GCResult gradcheck_attention_same_qk(Tape *t);     /* one tensor as q and k, all terms */
GCResult gradcheck_attention_same_qk_p2c(Tape *t); /* the same, p2c only (no term writes the q part) */
GCResult gradcheck_attention_bth(Tape *t);         /* q, k as [B, T, A·D] (the projections' layout), dropout */
GCResult gradcheck_attention_bth_same_qk(Tape *t); /* the same with q = k */
GCResult gradcheck_attention_context_fused(Tape *t);        /* with P · v fused (Tq != Tk, padded, dropout) */
GCResult gradcheck_attention_context_nodrop(Tape *t);       /* the same, p = 0, [1,A,R,D] tables */
GCResult gradcheck_attention_context_c2p_same_qk(Tape *t);  /* the same, c2p only, q = k, dropout */

/* The cases above as a list (for `deberta gradcheck` and tests). */
#define GC_ATTENTION_CASES                                                                  \
    {"disentangled_attention", "c2c [2,2,4,3]", gradcheck_attention_c2c},                          \
    {"disentangled_attention", "c2p R=5", gradcheck_attention_c2p},                                \
    {"disentangled_attention", "p2c R=5", gradcheck_attention_p2c},                                \
    {"disentangled_attention", "c2c|c2p", gradcheck_attention_c2c_c2p},                            \
    {"disentangled_attention", "c2c|p2c", gradcheck_attention_c2c_p2c},                            \
    {"disentangled_attention", "c2p|p2c", gradcheck_attention_c2p_p2c},                            \
    {"disentangled_attention", "c2c|c2p|p2c", gradcheck_attention_all},                            \
    {"disentangled_attention", "all, padded rows + padded sequence", gradcheck_attention_all_padded}, \
    {"disentangled_attention", "all, Tq=3 Tk=5, [1,A,R,D] tables", gradcheck_attention_rect},         \
    {"disentangled_attention", "all, fused dropout p=0.3, padded", gradcheck_attention_dropout},   \
    {"disentangled_attention", "all, q = k (one tensor)", gradcheck_attention_same_qk},              \
    {"disentangled_attention", "p2c, q = k (one tensor)", gradcheck_attention_same_qk_p2c},            \
    {"disentangled_attention", "[B,T,A*D] q k, Tq=3 Tk=5, padded, dropout", gradcheck_attention_bth},  \
    {"disentangled_attention", "[B,T,A*D], q = k, dropout", gradcheck_attention_bth_same_qk},              \
    {"disentangled_attention_context", "Tq=3 Tk=5, padded, dropout", gradcheck_attention_context_fused},      \
    {"disentangled_attention_context", "p = 0, [1,A,R,D] tables", gradcheck_attention_context_nodrop},        \
    {"disentangled_attention_context", "c2p, q = k, dropout", gradcheck_attention_context_c2p_same_qk},
#endif
