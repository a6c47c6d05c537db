/* rng.c — Philox4x32-10, see rng.h */
#include "autograd/rng.h"
#include <math.h>

static inline void philox_round(uint32_t ctr[4], const uint32_t key[2]) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t c0 = hi1 ^ ctr[1] ^ key[0];
    uint32_t c2 = hi0 ^ ctr[3] ^ key[1];
    ctr[0] = c0; ctr[1] = lo1; ctr[2] = c2; ctr[3] = lo0;
}

void rng_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)};
    for (int r = 0; r < 10; r++) {
        philox_round(ctr, key);
        key[0] += 0x9E3779B9u;
        key[1] += 0xBB67AE85u;
    }
    out[0] = ctr[0]; out[1] = ctr[1]; out[2] = ctr[2]; out[3] = ctr[3];
}

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
