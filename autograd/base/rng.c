/* rng.c — draws built on Philox4x32-10 (rng_block, inline in rng.h) */
#include "autograd/base/rng.h"
#include <math.h>

uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t counter) {
    uint32_t b[4];
    rng_block(seed, stream, counter, b);
    return ((uint64_t)b[0] << 32) | b[1];
}

double rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter) {
    return (double)(rng_u64(seed, stream, counter) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t counter, uint64_t n) {
    /* Rejection sampling; retries walk a disjoint part of the counter space (high bit set). */
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t c = counter;
    for (uint64_t tries = 0;; tries++) {
        uint64_t x = rng_u64(seed, stream, c);
        if (x < limit) return x % n;
        c = counter ^ ((tries + 1) << 48) ^ (1ull << 63);
    }
}

double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter) {
    uint32_t b[4];
    rng_block(seed, stream, counter, b);
    double u1 = ((((uint64_t)b[0] << 21) ^ b[1]) & ((1ull << 53) - 1)) * 0x1.0p-53;
    double u2 = ((((uint64_t)b[2] << 21) ^ b[3]) & ((1ull << 53) - 1)) * 0x1.0p-53;
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
