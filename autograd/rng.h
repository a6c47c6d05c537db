/* rng.h — counter-based random numbers.
 *
 * Every draw is a pure function of (seed, stream, counter): no hidden state, so results do not
 * depend on thread scheduling, and a resumed run draws exactly what an uninterrupted one would.
 * Convention: `stream` names the purpose and step (see rng_stream), `counter` the element index.
 * The generator is Philox4x32-10 (Salmon et al., SC'11), keyed by the seed.
 */
#ifndef DEBERTA_RNG_H
#define DEBERTA_RNG_H
#include <stdint.h>

/* Purposes, so that e.g. masking and dropout never share a stream. */
enum {
    RNG_INIT = 1,     /* parameter initialisation */
    RNG_SHUFFLE,      /* loader: order of sequences */
    RNG_MASK,         /* loader: masking positions / replacement tokens */
    RNG_DROPOUT,      /* dropout masks */
    RNG_SAMPLE,       /* generator sampling of replacements */
    RNG_TEST,         /* tests and gradient checks */
};

/* A stream id from (purpose, step, sub-index), e.g. (RNG_DROPOUT, step, call-site number). */
static inline uint64_t rng_stream(uint32_t purpose, uint64_t step, uint32_t sub) {
    return ((uint64_t)purpose << 56) ^ (step << 20) ^ (uint64_t)sub;
}

/* Four 32-bit random words for (seed, stream, counter). */
void rng_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);
/* 64 random bits. */
uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t counter);
/* Uniform double in [0, 1) with 53 random bits. */
double rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter);
/* Uniform integer in [0, n) (n > 0), unbiased by rejection on further counters. */
uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t counter, uint64_t n);
/* Standard normal (Box-Muller on two uniforms of one block). */
double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter);
#endif
