/* sgemm_avx512.c — the project's own single-threaded sgemm for CPUs with AVX-512 (sgemm_avx512.h).
 *
 * The classic blocked layout: for each NC-wide block of columns of C and each KC-deep slice of the
 * inner dimension, op(B)'s KC×NC block is packed into panels of NR columns (k-major, NR floats per
 * k); for each MC-tall block of rows, op(A)'s MC×KC block is packed into panels of MR rows (MR floats
 * per k); a register-blocked MR×NR kernel then runs over every pair of panels.  Packing absorbs the
 * transposes, so one kernel serves every op(A), op(B).  Edges are packed with zeros and stored through
 * lane masks and a row count.
 *
 * Every element of C is summed over k in order, KC terms at a time in one register, each slice then
 * added to C: the same sequence whatever the element's place in the tiles, so the result does not
 * depend on how gemm.c cuts C among threads.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>
#include <omp.h>
#include "autograd/sgemm_avx512.h"
#include "autograd/base/util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

enum {
    MR = 12,             /* rows of the register tile: 12 × 2 accumulators of 16 floats */
    NR = 32,             /* columns of the register tile: two 512-bit vectors */
    KC = 256,            /* inner slice: an A panel (12 KiB) and a B panel (32 KiB) stay in L1 */
    MC = 144,            /* rows per packed A block (144 KiB, in L2) */
    NC = 2048,           /* columns per packed B block (2 MiB, in L3) */
    SG_MAX_THREADS = 256 /* thread numbers with a packing buffer; beyond: OpenBLAS */
};

/* One packing buffer per OpenMP thread number, allocated at its first product (the first step) and kept. */
static float *pack_buf[SG_MAX_THREADS];

/* OpenBLAS's own AVX-512 kernel sets (0.3.21 and later): where it runs one, it is the faster. */
static int blas_has_avx512(void) {
    static const char *const names[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    const char *core = openblas_get_corename();
    for (size_t i = 0; core && i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(core, names[i])) return 1;
    return 0;
}

static int avail;
static pthread_once_t avail_once = PTHREAD_ONCE_INIT;
static void avail_init(void) {
    __builtin_cpu_init();
    avail = __builtin_cpu_supports("avx512f") && !blas_has_avx512();
}

/* Decided once per process (the first call may come from inside a parallel region). */
int sgemm_avx512_available(void) {
    pthread_once(&avail_once, avail_init);
    return avail;
}

/* dst[k·width + r] = src[r·ld + k] for r < n, 0 for n <= r < width (k < kc): n rows of src become
 * the interleaved columns of a panel. */
static void interleave(float *restrict dst, int width, int n, const float *src, long ld, int kc) {
    for (int r = 0; r < width; r++) {
        if (r < n) {
            const float *row = src + r * ld;
            for (int k = 0; k < kc; k++) dst[k * width + r] = row[k];
        } else {
            for (int k = 0; k < kc; k++) dst[k * width + r] = 0;
        }
    }
}

/* The two 16-lane masks of the first n (<= 32) columns of a tile. */
__attribute__((target("avx512f"))) static inline void lane_masks(int n, __mmask16 *m0, __mmask16 *m1) {
    *m0 = (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1);
    *m1 = (__mmask16)(n >= 32 ? 0xFFFF : n > 16 ? (1u << (n - 16)) - 1 : 0);
}

/* op(A)[i][k] for rows i0.., k0..: panels of MR rows, zero-padded to MR. */
__attribute__((target("avx512f"))) static void pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc,
                                                      float *restrict out) {
    for (int p = 0; p < mc; p += MR) {
        const int m = mc - p < MR ? mc - p : MR;
        float *dst = out + (long)p * kc;
        if (ta) { /* op(A) = A^T: row i of op(A) is column i of A, MR consecutive floats per k */
            for (int k = 0; k < kc; k++) {
                const float *src = A + (long)(k0 + k) * lda + i0 + p;
                int r = 0;
                for (; r < m; r++) dst[k * MR + r] = src[r];
                for (; r < MR; r++) dst[k * MR + r] = 0;
            }
        } else {
            interleave(dst, MR, m, A + (long)(i0 + p) * lda + k0, lda, kc);
        }
    }
}

/* interleave for an NR-wide panel, two 16-lane gathers per k (rows at most 2^31 bytes apart). */
__attribute__((target("avx512f"))) static void interleave_nr(float *restrict dst, int n, const float *src, long ld, int kc) {
    __mmask16 m0, m1;
    lane_masks(n, &m0, &m1);
    const __m512i step = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)ld));
    const __m512i step16 = _mm512_add_epi32(step, _mm512_set1_epi32((int)(16 * ld)));
    for (int k = 0; k < kc; k++) {
        _mm512_store_ps(dst + k * NR, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m0, step, src + k, 4));
        _mm512_store_ps(dst + k * NR + 16, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m1, step16, src + k, 4));
    }
}

/* op(B)[k][j] for k0.., columns j0..: panels of NR columns, zero-padded to NR. */
__attribute__((target("avx512f"))) static void pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nc,
                                                      float *restrict out) {
    for (int p = 0; p < nc; p += NR) {
        const int n = nc - p < NR ? nc - p : NR;
        float *dst = out + (long)p * kc;
        if (!tb) { /* row k of op(B) is row k of B: NR consecutive floats */
            __mmask16 m0, m1;
            lane_masks(n, &m0, &m1);
            for (int k = 0; k < kc; k++) {
                const float *src = B + (long)(k0 + k) * ldb + j0 + p;
                _mm512_store_ps(dst + k * NR, _mm512_maskz_loadu_ps(m0, src));
                _mm512_store_ps(dst + k * NR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
            }
        } else if ((long)NR * ldb <= 1L << 30) { /* op(B) = B^T: column j of op(B) is row j of B */
            interleave_nr(dst, n, B + (long)(j0 + p) * ldb + k0, ldb, kc);
        } else {
            interleave(dst, NR, n, B + (long)(j0 + p) * ldb + k0, ldb, kc);
        }
    }
}

/* C[0..m)[0..n) = beta·C + alpha·(A · b-panel) over kc; beta == 0 never reads C.  Row r of A at k is
 * a[r·ar + k·ak]: a packed panel (ar 1, ak MR) or, unpacked, the rows of a row-major op(A) (ar lda, ak 1;
 * rows from m on read row m − 1, their sums are never stored).  The sums are the same either way. */
__attribute__((target("avx512f"), always_inline)) static inline void kernel_at(int kc, const float *restrict a, long ar, long ak,
                                                                             const float *restrict b, float *c, int ldc,
                                                                             float alpha, float beta, int m, int n) {
    __m512 acc[MR][2];
    long off[MR];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
        off[r] = (r < m ? r : m - 1) * ar;
    }
    for (int k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            const __m512 av = _mm512_set1_ps(a[off[r]]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
        a += ak;
        b += NR;
    }
    __mmask16 m0, m1;
    lane_masks(n, &m0, &m1);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        if (r >= m) break;
        float *cr = c + (long)r * ldc;
        __m512 x0 = _mm512_mul_ps(va, acc[r][0]), x1 = _mm512_mul_ps(va, acc[r][1]);
        if (beta != 0) {
            x0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), x0);
            x1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), x1);
        }
        _mm512_mask_storeu_ps(cr, m0, x0);
        _mm512_mask_storeu_ps(cr + 16, m1, x1);
    }
}

/* A packed panel (zero-padded to MR rows). */
__attribute__((target("avx512f"))) static void kernel(int kc, const float *restrict a, const float *restrict b, float *c, int ldc,
                                                      float alpha, float beta, int m, int n) {
    kernel_at(kc, a, 1, MR, b, c, ldc, alpha, beta, m, n);
}

/* Rows of a row-major op(A) read in place, lda apart. */
__attribute__((target("avx512f"))) static void kernel_rows(int kc, const float *restrict a, int lda, const float *restrict b,
                                                           float *c, int ldc, float alpha, float beta, int m, int n) {
    kernel_at(kc, a, lda, 1, b, c, ldc, alpha, beta, m, n);
}

int sgemm_avx512(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc) {
    const int t = omp_get_thread_num();
    if (M <= 0 || N <= 0 || K <= 0 || t >= SG_MAX_THREADS) return 0;
    if (!pack_buf[t]) /* the project's allocator: counted by the no-allocation-in-the-step checks */
        pack_buf[t] = xmalloc_aligned(sizeof(float) * ((size_t)MC * KC + (size_t)KC * NC));
    float *pa = pack_buf[t], *pb = pa + (size_t)MC * KC;
    /* op(A) = A with K in one slice (the attention op's per-head products): packing A would cost as much as
     * a good part of the product, so the kernel reads A's rows in place (the same sums) */
    const int direct_a = !ta && K <= KC;
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            const float bt = pc == 0 ? beta : 1.0f;
            pack_b(tb, B, ldb, pc, kc, jc, nc, pb);
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                if (direct_a) { /* one slice of a row-major op(A): its rows are read where they are */
                    for (int jr = 0; jr < nc; jr += NR)
                        for (int ir = 0; ir < mc; ir += MR)
                            kernel_rows(kc, A + (long)(ic + ir) * lda + pc, lda, pb + (long)jr * kc,
                                        C + (long)(ic + ir) * ldc + jc + jr, ldc, alpha, bt, mc - ir < MR ? mc - ir : MR,
                                        nc - jr < NR ? nc - jr : NR);
                    continue;
                }
                pack_a(ta, A, lda, ic, mc, pc, kc, pa);
                for (int jr = 0; jr < nc; jr += NR)
                    for (int ir = 0; ir < mc; ir += MR)
                        kernel(kc, pa + (long)ir * kc, pb + (long)jr * kc, C + (long)(ic + ir) * ldc + jc + jr, ldc, alpha,
                               bt, mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR);
            }
        }
    }
    return 1;
}

#else
int sgemm_avx512_available(void) { return 0; }
int sgemm_avx512(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc) {
    return 0;
}
#endif
