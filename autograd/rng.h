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

/* Four 32-bit random words for (seed, stream, counter): Philox4x32-10.  Inline so that a loop over
 * consecutive counters (rng_blocks) is vectorised by the compiler, one counter per SIMD lane. */
static inline void rng_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}
/* The blocks of counters first, first + 1, ..., first + count − 1, one after another in out[4·count]. */
static inline void rng_blocks(uint64_t seed, uint64_t stream, uint64_t first, int count, uint32_t *out) {
    for (int k = 0; k < count; k++) rng_block(seed, stream, first + (uint64_t)k, out + 4 * k);
}
/* 64 random bits. */
uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t counter);
/* Uniform double in [0, 1) with 53 random bits. */
double rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter);
/* Uniform integer in [0, n) (n > 0), unbiased by rejection on further counters. */
uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t counter, uint64_t n);
/* Standard normal (Box-Muller on two uniforms of one block). */
double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter);
#endif
