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
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

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
#if defined(__AVX512F__)
/* Philox with one counter per 32-bit lane: RNG_LANES counters per vector, RNG_SETS vectors at once (independent
 * chains hide the multiplies' latency).  vpmuludq multiplies the even lanes, and after a shift the odd ones;
 * the 32-bit high and low words are blended back into one vector each. */
typedef __m512i rng_vec;
enum { RNG_LANES = 16 };
#define RNG_SET1(x) _mm512_set1_epi32((int)(x))
#define RNG_IOTA _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#define RNG_ADD _mm512_add_epi32
#define RNG_XOR _mm512_xor_si512
static inline void rng_mulv(rng_vec c, rng_vec M, rng_vec *hi, rng_vec *lo) {
    const rng_vec e = _mm512_mul_epu32(c, M), o = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), M);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e, 32), o);
    *lo = _mm512_mask_blend_epi32(0xAAAA, e, _mm512_slli_epi64(o, 32));
}
/* out[4·l + w] = word w of lane l: within each 128-bit lane q, u_k holds lane 4q + k's four words; the
 * 128-bit lanes are then transposed so that the q-th stored vector holds lanes 4q .. 4q + 3 */
static inline void rng_storev(const rng_vec c[4], uint32_t *out) {
    const rng_vec t0 = _mm512_unpacklo_epi32(c[0], c[1]), t1 = _mm512_unpackhi_epi32(c[0], c[1]);
    const rng_vec t2 = _mm512_unpacklo_epi32(c[2], c[3]), t3 = _mm512_unpackhi_epi32(c[2], c[3]);
    const rng_vec u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    const rng_vec u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    const rng_vec a = _mm512_shuffle_i32x4(u0, u1, 0x44), b = _mm512_shuffle_i32x4(u2, u3, 0x44);
    const rng_vec c2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), d = _mm512_shuffle_i32x4(u2, u3, 0xEE);
    _mm512_storeu_si512(out, _mm512_shuffle_i32x4(a, b, 0x88));
    _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(a, b, 0xDD));
    _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(c2, d, 0x88));
    _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(c2, d, 0xDD));
}
#elif defined(__AVX2__)
/* The same with AVX2: 8 lanes per vector. */
typedef __m256i rng_vec;
enum { RNG_LANES = 8 };
#define RNG_SET1(x) _mm256_set1_epi32((int)(x))
#define RNG_IOTA _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
#define RNG_ADD _mm256_add_epi32
#define RNG_XOR _mm256_xor_si256
static inline void rng_mulv(rng_vec c, rng_vec M, rng_vec *hi, rng_vec *lo) {
    const rng_vec e = _mm256_mul_epu32(c, M), o = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), M);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(e, 32), o, 0xAA);
    *lo = _mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA);
}
static inline void rng_storev(const rng_vec c[4], uint32_t *out) {
    const rng_vec t0 = _mm256_unpacklo_epi32(c[0], c[1]), t1 = _mm256_unpackhi_epi32(c[0], c[1]);
    const rng_vec t2 = _mm256_unpacklo_epi32(c[2], c[3]), t3 = _mm256_unpackhi_epi32(c[2], c[3]);
    const rng_vec u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const rng_vec u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(out + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}
#endif
#ifdef RNG_SET1
enum { RNG_SETS = 2, RNG_GROUP = RNG_SETS * RNG_LANES };
/* rng_block of the RNG_GROUP counters first, first + 1, ... (whose low words do not wrap), into
 * out[4·RNG_GROUP]: the rounds of rng_block, lane by lane. */
static inline void rng_blocks_group(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out) {
    const rng_vec M0 = RNG_SET1(0xD2511F53u), M1 = RNG_SET1(0xCD9E8D57u); /* vpmuludq reads the even lanes */
    rng_vec c[RNG_SETS][4];
    for (int v = 0; v < RNG_SETS; v++) {
        c[v][0] = RNG_ADD(RNG_SET1((uint32_t)first + (uint32_t)(v * RNG_LANES)), RNG_IOTA);
        c[v][1] = RNG_SET1(first >> 32);
        c[v][2] = RNG_SET1(stream);
        c[v][3] = RNG_SET1(stream >> 32);
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        for (int v = 0; v < RNG_SETS; v++) {
            rng_vec h0, l0, h1, l1;
            rng_mulv(c[v][0], M0, &h0, &l0);
            rng_mulv(c[v][2], M1, &h1, &l1);
            c[v][0] = RNG_XOR(RNG_XOR(h1, c[v][1]), RNG_SET1(k0));
            c[v][2] = RNG_XOR(RNG_XOR(h0, c[v][3]), RNG_SET1(k1));
            c[v][1] = l1;
            c[v][3] = l0;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    for (int v = 0; v < RNG_SETS; v++) rng_storev(c[v], out + 4 * RNG_LANES * v);
}
#endif
/* The blocks of counters first, first + 1, ..., first + count − 1, one after another in out[4·count].
 * With AVX-512 (AVX2), 32 (16) counters at a time in the vector rounds above (the same words: the known-answer and
 * counter-rule tests of tests/test_ops_values.c); the rest, and a run whose low word wraps, one by one. */
static inline void rng_blocks(uint64_t seed, uint64_t stream, uint64_t first, int count, uint32_t *out) {
    int k = 0;
#ifdef RNG_SET1
    for (; k + RNG_GROUP <= count && (uint32_t)(first + (uint64_t)k) <= UINT32_MAX - (RNG_GROUP - 1); k += RNG_GROUP)
        rng_blocks_group(seed, stream, first + (uint64_t)k, out + 4 * k);
#endif
    for (; k < count; k++) rng_block(seed, stream, first + (uint64_t)k, out + 4 * k);
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
