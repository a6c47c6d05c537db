#!/bin/sh
# bench-avx2-kernel.sh [ROUNDS (5)] — would an own AVX2 sgemm kernel beat OpenBLAS at the attention op's
# per-head products?  The measurement behind docs/PERFORMANCE.md's AVX2 section (issue #35): a kernel of
# autograd/sgemm_avx512.c's design (pack op(B) into NR-column panels, read A's rows in place when op(A) = A
# and K fits one slice, else pack it; a register tile of MR × NR) rewritten for AVX2 + FMA with a 6 × 16
# tile (12 accumulators of the 16 ymm registers), against cblas_sgemm on ONE thread, best of ROUNDS, at
# the shapes of tiny's attention (Tq × Tk × D = 128 × 128 × 64 and its transposes; T 512), with A and B
# contiguous and with the rows 4× further apart (the heads interleaved in [B, T, A·D]).  A prototype kept
# for the measurement only: the model never calls it (it was level with OpenBLAS at best).  Needs a CPU
# with AVX2 + FMA; built with -mavx2 -mfma (no AVX-512 anywhere in it); OpenBLAS runs its own choice of
# kernels (OPENBLAS_CORETYPE=Haswell holds it to AVX2 on an AVX-512 CPU).
set -eu
ROUNDS=${1:-5}
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo || { echo "bench-avx2-kernel: this CPU lacks AVX2 or FMA" >&2; exit 1; }
W=$(mktemp -d /tmp/bench-avx2-kernel.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat > "$W/k.c" <<'CEOF'
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
enum { MR = 6, NR = 16, KC = 256, MC = 144, NC = 2048 };

/* dst[k·width + r] = src[r·ld + k] for r < n, 0 for n <= r < width */
static void interleave(float *restrict dst, int width, int n, const float *src, long ld, int kc) {
    for (int r = 0; r < width; r++)
        for (int k = 0; k < kc; k++) dst[k * width + r] = r < n ? src[r * ld + k] : 0;
}
static void pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc, float *restrict out) {
    for (int p = 0; p < mc; p += MR) {
        const int m = mc - p < MR ? mc - p : MR;
        float *dst = out + (long)p * kc;
        if (!ta) { interleave(dst, MR, m, A + (long)(i0 + p) * lda + k0, lda, kc); continue; }
        for (int k = 0; k < kc; k++)
            for (int r = 0; r < MR; r++) dst[k * MR + r] = r < m ? A[(long)(k0 + k) * lda + i0 + p + r] : 0;
    }
}
static void pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *restrict out) {
    for (int p = 0; p < nc; p += NR) {
        const int n = nc - p < NR ? nc - p : NR;
        float *dst = out + (long)p * kc;
        if (tb) { interleave(dst, NR, n, B + (long)(j0 + p) * ldb + k0, ldb, kc); continue; }
        for (int k = 0; k < kc; k++)
            for (int j = 0; j < NR; j++) dst[k * NR + j] = j < n ? B[(long)(k0 + k) * ldb + j0 + p + j] : 0;
    }
}
/* C[m × n] = beta·C + alpha·(A · panel b), row r of A at k being a[r·ar + k·ak] (rows from m on read row m − 1) */
__attribute__((target("avx2,fma"), noinline)) /* inlined into the driver, gcc spilled two accumulators */
static void kernel(int kc, const float *restrict a, long ar, long ak, const float *restrict b, float *c, int ldc, float alpha,
                   float beta, int m, int n) {
    __m256 acc[MR][2];
    long off[MR];
    for (int r = 0; r < MR; r++) {
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        off[r] = (r < m ? r : m - 1) * ar;
    }
    for (int k = 0; k < kc; k++, a += ak, b += NR) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        for (int r = 0; r < MR; r++) {
            const __m256 av = _mm256_broadcast_ss(a + off[r]);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    const __m256i lane = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane), m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lane);
    for (int r = 0; r < m; r++) {
        float *cr = c + (long)r * ldc;
        __m256 x0 = _mm256_mul_ps(_mm256_set1_ps(alpha), acc[r][0]), x1 = _mm256_mul_ps(_mm256_set1_ps(alpha), acc[r][1]);
        if (beta != 0) {
            x0 = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(cr, m0), x0);
            x1 = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(cr + 8, m1), x1);
        }
        _mm256_maskstore_ps(cr, m0, x0);
        _mm256_maskstore_ps(cr + 8, m1, x1);
    }
}
static void own(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    static float *pa;
    if (!pa && !(pa = aligned_alloc(64, sizeof(float) * ((size_t)MC * KC + (size_t)KC * NC)))) exit(1);
    float *pb = pa + (size_t)MC * KC;
    const int direct_a = !ta && K <= KC;
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            pack_b(tb, B, ldb, pc, kc, jc, nc, pb);
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                if (!direct_a) pack_a(ta, A, lda, ic, mc, pc, kc, pa);
                for (int jr = 0; jr < nc; jr += NR)
                    for (int ir = 0; ir < mc; ir += MR)
                        kernel(kc, direct_a ? A + (long)(ic + ir) * lda + pc : pa + (long)ir * kc, direct_a ? lda : 1,
                               direct_a ? 1 : MR, pb + (long)jr * kc, C + (long)(ic + ir) * ldc + jc + jr, ldc, 1,
                               pc ? 1 : 0, mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR);
            }
        }
    }
}
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
    const int rounds = atoi(argv[1]);
    const struct { int ta, tb, M, N, K; } s[] = {{0, 1, 128, 128, 64}, {0, 0, 128, 64, 128}, {1, 0, 128, 64, 128}, {0, 1, 512, 512, 64},
                                                 {0, 0, 512, 64, 512}, {1, 0, 512, 64, 512}, {0, 1, 512, 128, 64}};
    const long len = 1L << 22;
    float *A = malloc(4 * len), *B = malloc(4 * len), *C = malloc(4 * len), *C2 = malloc(4 * len);
    if (!A || !B || !C || !C2) return 1;
    srand(1);
    for (long i = 0; i < len; i++) A[i] = rand() / (float)RAND_MAX - 0.5f, B[i] = rand() / (float)RAND_MAX - 0.5f;
    printf("OpenBLAS core %s, one thread, best of %d\n", openblas_get_corename(), rounds);
    for (int ldx = 1; ldx <= 4; ldx += 3)
        for (unsigned i = 0; i < sizeof s / sizeof s[0]; i++) {
            const int ta = s[i].ta, tb = s[i].tb, M = s[i].M, N = s[i].N, K = s[i].K;
            const int lda = (ta ? M : K) * ldx, ldb = (tb ? K : N) * ldx;
            const double flop = 2.0 * M * N * K;
            const int reps = (int)(2e9 / flop) + 1;
            double best[2] = {1e30, 1e30}, maxdiff = 0;
            for (int r = 0; r < rounds; r++)
                for (int w = 0; w < 2; w++) {
                    const double t0 = now();
                    for (int k = 0; k < reps; k++)
                        if (w) own(ta, tb, M, N, K, A, lda, B, ldb, C2, N);
                        else cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                                         1, A, lda, B, ldb, 0, C, N);
                    const double t = (now() - t0) / reps;
                    if (t < best[w]) best[w] = t;
                }
            for (long j = 0; j < (long)M * N; j++) maxdiff = fmax(maxdiff, fabs(C[j] - C2[j]));
            printf("%s%s %4d x %4d x %4d, rows %dx apart: OpenBLAS %6.1f, own AVX2 %6.1f GFLOP/s, own/OpenBLAS %.2f (max |diff| %.1e)\n",
                   ta ? "A^T" : "A", tb ? "B^T" : "B", M, N, K, ldx, flop / best[0] * 1e-9, flop / best[1] * 1e-9,
                   best[0] / best[1], maxdiff);
            if (!(maxdiff <= 1e-4)) { printf("the own kernel's product is wrong\n"); return 1; }
        }
    return 0;
}
CEOF
${CC:-cc} -O3 -mavx2 -mfma -o "$W/k" "$W/k.c" -lopenblas -lm
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$W/k" "$ROUNDS"
