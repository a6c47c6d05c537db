/* gradcheck_model.h — whole-model finite-difference cases (run by `deberta gradcheck` after the op
 * cases, and by tests/test_model_gradcheck.c): for each of the 7 subsets of attention terms,
 *   layer    one post-LN layer (attention + FFN) with different query and key/value inputs (the EMD
 *            call), padding (one fully padded sequence), the rel table rows and its LayerNorm;
 *   encoder  a 2-layer encoder with padding: embeddings, every parameter;
 * and the fine-tuning heads (model/task_head.h), token, sequence and regression (MSE), each alone on a hidden-state leaf
 * with dropout on in training mode (labels with -100s; also every label -100: loss 0, zero gradient)
 * and on the 2-layer encoder (all terms).
 * Small dims (H 8, 2 heads of 4, FFN 16, V 12, B 2, T 5, PB 4, MRP 8 -> 8 table rows, 7 reachable);
 * up to GC_MODEL_ELEMS evenly spaced elements of every leaf plus 3 random-direction checks.
 * Double build: max relative error <= 1e-7 (gradcheck_tolerance).  Float build: smoke test. */
#ifndef DEBERTA_MODEL_GRADCHECK_MODEL_H
#define DEBERTA_MODEL_GRADCHECK_MODEL_H
#include "autograd/gradcheck/gradcheck_ops.h"

#define GC_MODEL_ELEMS 12
#define GC_MODEL_FLOAT_TOL 0.25  /* float build: smoke test only */

extern const GCCase gradcheck_model_cases[];
extern const int gradcheck_n_model_cases;
#endif
