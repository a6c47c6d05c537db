/* init.h — parameter initialisation (spec §4.8) by Hugging Face name, with the counter-based RNG.
 *
 *   *LayerNorm.weight -> 1,  *bias (Linear biases, the LM-head vocab bias) -> 0,
 *   *._weight (GDES deltas E_Δ, P_Δ) -> 0,  every other weight (Linear, word/position/rel
 *   embeddings, the padding row included) -> N(0, initializer_range²).
 *
 * Element e of parameter number i draws rng_normal(seed, rng_stream(RNG_INIT, i, 0), e): the result
 * depends only on (seed, registration order, element), never on threads.
 */
#ifndef DEBERTA_MODEL_INIT_H
#define DEBERTA_MODEL_INIT_H
#include <stdint.h>
#include "autograd/tensor.h"

void model_init_params(ParamSet *ps, double initializer_range, uint64_t seed);
/* Tests and parity runs: also randomise what §4.8 sets to constants (LayerNorm weight 1 + 0.1·N,
 * biases 0.05·N, deltas 0.01·N) so every path carries signal.  Stream RNG_TEST. */
void model_perturb_params(ParamSet *ps, uint64_t seed);
#endif
