/* gradcheck_attention.h — finite-difference cases of the fused disentangled-attention op, one per
 * subset of attention terms plus edge cases (fully padded query rows and sequences, Tq != Tk,
 * a [1, A, R, D] table).  Listed in gc_op_cases (autograd/gradcheck_ops.c). */
#ifndef DEBERTA_GRADCHECK_ATTENTION_H
#define DEBERTA_GRADCHECK_ATTENTION_H
#include "autograd/gradcheck.h"

GCResult gc_attention_c2c(Tape *t);
GCResult gc_attention_c2p(Tape *t);
GCResult gc_attention_p2c(Tape *t);
GCResult gc_attention_c2c_c2p(Tape *t);
GCResult gc_attention_c2c_p2c(Tape *t);
GCResult gc_attention_c2p_p2c(Tape *t);
GCResult gc_attention_all(Tape *t);
GCResult gc_attention_all_padded(Tape *t);  /* one fully padded sequence, padded rows/keys */
GCResult gc_attention_rect(Tape *t);        /* Tq != Tk, [1, A, R, D] tables */

/* The cases above as a list (for `deberta gradcheck` and tests). */
#define GC_ATTENTION_CASES                                                                  \
    {"disentangled_attention", "c2c [2,2,4,3]", gc_attention_c2c},                          \
    {"disentangled_attention", "c2p R=5", gc_attention_c2p},                                \
    {"disentangled_attention", "p2c R=5", gc_attention_p2c},                                \
    {"disentangled_attention", "c2c|c2p", gc_attention_c2c_c2p},                            \
    {"disentangled_attention", "c2c|p2c", gc_attention_c2c_p2c},                            \
    {"disentangled_attention", "c2p|p2c", gc_attention_c2p_p2c},                            \
    {"disentangled_attention", "c2c|c2p|p2c", gc_attention_all},                            \
    {"disentangled_attention", "all, padded rows + padded sequence", gc_attention_all_padded}, \
    {"disentangled_attention", "all, Tq=3 Tk=5, [1,A,R,D] tables", gc_attention_rect},
#endif
