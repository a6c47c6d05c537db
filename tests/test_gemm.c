/* test_gemm.c — gemm (autograd/gemm.h) against a naive product in long double for every transpose
 * pair, both betas, and each way of cutting the product among threads (one call, by rows, by
 * columns), on shapes that leave ragged last blocks; leading dimensions wider than the matrices.
 * The own AVX-512 kernel (autograd/sgemm_avx512.h, float) is checked by calling it directly on every
 * CPU that executes AVX-512F, whichever kernel gemm would choose there (OpenBLAS where its kernel set
 * has AVX-512): on shapes that cross its KC, MC and NC blocks and its register-tile edges, for beta 0
 * over a C full of NaN, and for the same bits whatever the cut among threads.  Without AVX-512F those
 * two tests are skipped and the suite exits 77.  Also the OpenBLAS kernel set build/deberta sets for itself
 * where OpenBLAS falls back to one without AVX2 (gemm_blas_core_fix). */
#include "tests/testutil.h"
#include <omp.h>
#include <string.h>
#include "autograd/gemm.h"
#include "autograd/gemm_dnnl.h"
#include "autograd/sgemm_avx512.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"

#define TOL (REAL_IS_DOUBLE ? 1e-12 : 2e-5)

static void fill(real *x, long n, uint64_t seed) {
    for (long i = 0; i < n; i++) x[i] = (real)(rng_uniform(seed, 7, (uint64_t)i) - 0.5);
}

/* 0: gemm with `threads` threads; 1: the own AVX-512 kernel called directly; 2: oneDNN's product called
 * directly (float build only; oneDNN takes alpha 1 only). */
static int call_own;
static int dnnl_declined, dnnl_tried; /* shapes oneDNN declined (it would run its reference code) / tried */
#define ALPHA (call_own == 2 ? 1 : 0.75)

/* C = alpha·op(A)·op(B) + beta·C0 with gemm (or the own kernel) and naively; A and B stored with 3 spare
 * columns; with beta 0, C0 is NaN inside the product's columns. */
static void check_product(int ta, int tb, int M, int N, int K, real beta, int threads, int want_split) {
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    const int lda = ac + 3, ldb = bc + 3, ldc = N + 3;
    real *A = xmalloc((size_t)ar * lda * sizeof(real)), *B = xmalloc((size_t)br * ldb * sizeof(real));
    real *C = xmalloc((size_t)M * ldc * sizeof(real)), *C0 = xmalloc((size_t)M * ldc * sizeof(real));
    fill(A, (long)ar * lda, 1);
    fill(B, (long)br * ldb, 2);
    fill(C0, (long)M * ldc, 3);
    if (beta == 0) /* beta 0 must not read C */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C0[(long)i * ldc + j] = (real)NAN;
    memcpy(C, C0, (size_t)M * ldc * sizeof(real));
    assert_int_equal(gemm_split(M, N, K, threads), want_split);
    if (call_own) {
#if !REAL_IS_DOUBLE
        if (call_own == 1) assert_true(sgemm_avx512(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C, ldc));
        else {
            dnnl_tried++;
            if (!gemm_dnnl(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, NULL, 0)) { /* declined: C untouched, BLAS computes it */
                dnnl_declined++;
                for (long i = 0; i < (long)M * ldc; i++)
                    if (memcmp(&C[i], &C0[i], sizeof(real)))
                        fail_msg("ta %d tb %d M %d N %d K %d: oneDNN declined the product but wrote C", ta, tb, M, N, K);
                goto done;
            }
        }
#endif
    } else {
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        gemm(ta, tb, M, N, K, (real)0.75, A, lda, B, ldb, beta, C, ldc);
        omp_set_num_threads(saved);
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N + 3; j++) {
            const real got = C[(long)i * ldc + j];
            if (j >= N) { /* the padding columns of C are not touched */
                if (got != C0[(long)i * ldc + j]) fail_msg("ta %d tb %d: C[%d, %d] (padding) written", ta, tb, i, j);
                continue;
            }
            long double s = 0;
            for (int k = 0; k < K; k++)
                s += (long double)(ta ? A[(long)k * lda + i] : A[(long)i * lda + k]) *
                     (tb ? B[(long)j * ldb + k] : B[(long)k * ldb + j]);
            const long double want = (long double)ALPHA * s + (beta == 0 ? 0 : (long double)beta * C0[(long)i * ldc + j]);
            if (!(fabsl((long double)got - want) <= TOL * (1 + fabsl(want))))
                fail_msg("ta %d tb %d M %d N %d K %d beta %g threads %d: C[%d, %d] = %.9g, want %.9Lg", ta, tb, M, N, K,
                         (double)beta, threads, i, j, (double)got, want);
        }
done:
    free(A);
    free(B);
    free(C);
    free(C0);
}

static void every_transpose_beta_and_split(void **state) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int b = 0; b < 2; b++) {
                const real beta = b ? 1 : 0;
                check_product(ta, tb, 333, 130, 90, beta, 2, GEMM_BY_ROWS);  /* ragged last row block */
                check_product(ta, tb, 333, 130, 90, beta, 3, GEMM_BY_ROWS);  /* three blocks */
                check_product(ta, tb, 70, 301, 120, beta, 2, GEMM_BY_COLS);  /* few rows: by columns */
                check_product(ta, tb, 70, 100, 40, beta, 2, GEMM_ONE_CALL);  /* small: one call */
                check_product(ta, tb, 333, 130, 90, beta, 1, GEMM_ONE_CALL); /* one thread */
            }
}

#if !REAL_IS_DOUBLE
/* The CPU can run the own kernel; else the test is skipped (exit 77). */
static void need_avx512f(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) test_skip("the own AVX-512 kernel's tests: this CPU lacks AVX-512F");
}

/* The own kernel alone: K across several KC slices (the later ones add to C), M across MC blocks, N
 * across NC blocks and ragged register tiles (12 rows, 32 columns) everywhere. */
static void own_kernel_blocks_and_edges(void **state) {
    need_avx512f();
    call_own = 1;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int b = 0; b < 2; b++) {
                check_product(ta, tb, 301, 45, 600, b ? 1 : 0, 1, GEMM_ONE_CALL); /* 3 KC slices, 3 MC blocks */
                check_product(ta, tb, 13, 2081, 70, b ? 1 : 0, 1, GEMM_ONE_CALL); /* 2 NC blocks, 1-row edge tile */
                check_product(ta, tb, 1, 1, 1, b ? 1 : 0, 1, GEMM_ONE_CALL);
            }
    call_own = 0;
}

/* oneDNN's product alone (whichever kernel gemm chose here): every transpose and beta, leading
 * dimensions wider than the matrices, beta 0 over a C full of NaN, a 1×1×1 product; a beta other than
 * 0 or 1 is declined with C untouched.  A shape for which this CPU's oneDNN would run its reference
 * code is declined too (C untouched, checked); the count is printed.  Skipped (exit 77) in a build
 * without oneDNN, or when oneDNN declines every shape. */
static void onednn_every_transpose_and_beta(void **state) {
    if (!gemm_dnnl_available()) test_skip("oneDNN's product: this build has no oneDNN");
    call_own = 2;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int b = 0; b < 2; b++) {
                check_product(ta, tb, 301, 45, 600, b ? 1 : 0, 1, GEMM_ONE_CALL);
                check_product(ta, tb, 13, 2081, 70, b ? 1 : 0, 1, GEMM_ONE_CALL);
                check_product(ta, tb, 1, 1, 1, b ? 1 : 0, 1, GEMM_ONE_CALL);
            }
    call_own = 0;
    printf("oneDNN: %d of %d products declined (its reference code on this CPU; BLAS computes those)\n", dnnl_declined,
           dnnl_tried);
    if (dnnl_declined == dnnl_tried) test_skip("oneDNN declined every product on this CPU");
    float a[4] = {1, 2, 3, 4}, c[4] = {5, 6, 7, 8};
    assert_false(gemm_dnnl(0, 0, 2, 2, 2, a, 2, a, 2, 0.5f, c, 2, NULL, 0));
    assert_true(c[0] == 5 && c[1] == 6 && c[2] == 7 && c[3] == 8);
}

/* C = op(A)·op(B) cut into `parts` blocks of rows (by_rows) or of columns, 32-aligned as gemm.c cuts
 * them, each block one direct call of the own kernel on its own OpenMP thread (its own packing
 * buffer).  A is M×K (K×M when ta), B is K×N (N×K when tb), both dense. */
static void own_split(int ta, int tb, int by_rows, int parts, int M, int N, int K, const float *A, const float *B, float *C) {
    const int len = by_rows ? M : N, lda = ta ? M : K, ldb = tb ? K : N;
    int per = (len + parts - 1) / parts;
    per = (per + 31) / 32 * 32;
    int ok = 1;
#pragma omp parallel for num_threads(parts) schedule(static, 1) reduction(&& : ok)
    for (int p = 0; p < parts; p++) {
        const int lo = p * per < len ? p * per : len, hi = lo + per < len ? lo + per : len;
        if (hi <= lo) continue;
        if (by_rows)
            ok = ok && sgemm_avx512(ta, tb, hi - lo, N, K, 1, ta ? A + lo : A + (long)lo * lda, lda, B, ldb, 0, C + (long)lo * N, N);
        else
            ok = ok && sgemm_avx512(ta, tb, M, hi - lo, K, 1, A, lda, tb ? B + (long)lo * ldb : B + lo, ldb, 0, C + lo, N);
    }
    assert_true(ok);
}

/* With the own kernel every element is summed in the same order wherever its tile lies, so the
 * product has the same bits in one call and cut by rows or by columns among two or three threads. */
static void own_kernel_same_bits_any_split(void **state) {
    need_avx512f();
    const int M = 333, N = 301, K = 530;
    float *A = xmalloc((size_t)M * K * sizeof(float)), *B = xmalloc((size_t)K * N * sizeof(float));
    float *C1 = xmalloc((size_t)M * N * sizeof(float)), *C2 = xmalloc((size_t)M * N * sizeof(float));
    fill(A, (long)M * K, 4);
    fill(B, (long)K * N, 5);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            own_split(ta, tb, 1, 1, M, N, K, A, B, C1);
            for (int parts = 2; parts <= 3; parts++)
                for (int by_rows = 0; by_rows < 2; by_rows++) {
                    memset(C2, 0, (size_t)M * N * sizeof(float));
                    own_split(ta, tb, by_rows, parts, M, N, K, A, B, C2);
                    if (memcmp(C1, C2, (size_t)M * N * sizeof(float)))
                        fail_msg("ta %d tb %d: cut by %s into %d, the bits differ from one call", ta, tb, by_rows ? "rows" : "columns", parts);
                }
        }
    free(A);
    free(B);
    free(C1);
    free(C2);
}
#endif

/* Twice the same product: the same bits (the split depends only on the shape and thread count). */
static void repeatable(void **state) {
    const int M = 500, N = 200, K = 300;
    real *A = xmalloc((size_t)M * K * sizeof(real)), *B = xmalloc((size_t)K * N * sizeof(real));
    real *C1 = xmalloc((size_t)M * N * sizeof(real)), *C2 = xmalloc((size_t)M * N * sizeof(real));
    fill(A, (long)M * K, 4);
    fill(B, (long)K * N, 5);
    gemm(0, 0, M, N, K, 1, A, K, B, N, 0, C1, N);
    gemm(0, 0, M, N, K, 1, A, K, B, N, 0, C2, N);
    assert_memory_equal(C1, C2, (size_t)M * N * sizeof(real));
    free(A);
    free(B);
    free(C1);
    free(C2);
}

/* gemm_linear: Y = X·W^T + bias, then GELU, against the naive product in long double, with and without the
 * bias and the GELU, cut each way (by rows, by columns: the bias's columns follow the block; one call; a
 * product small enough to leave oneDNN for the fallback that starts Y as the bias), leading dimensions wider
 * than the matrices, Y full of NaN before; and where gemm's kernel is oneDNN or the own kernel, the same
 * bits at 1, 2 and 3 threads. */
static void linear_bias_gelu(void **state) {
    static const int shapes[][4] = {/* M, N, K, threads */ {333, 130, 90, 2}, {333, 130, 90, 3}, {70, 301, 120, 2},
                                    {70, 100, 40, 2},      {333, 130, 90, 1}, {256, 1024, 256, 2}};
    const int saved = omp_get_max_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int gelu = 0; gelu <= 1; gelu++)
            for (int with_bias = 0; with_bias <= 1; with_bias++) {
                const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], th = shapes[s][3];
                const int ldx = K + 3, ldw = K + 2, ldy = N + 3;
                real *X = xmalloc((size_t)M * ldx * sizeof(real)), *W = xmalloc((size_t)N * ldw * sizeof(real));
                real *b = xmalloc((size_t)N * sizeof(real)), *Y = xmalloc((size_t)M * ldy * sizeof(real));
                real *Y1 = xmalloc((size_t)M * ldy * sizeof(real));
                fill(X, (long)M * ldx, 11);
                fill(W, (long)N * ldw, 12);
                fill(b, N, 13);
                for (long i = 0; i < (long)M * ldy; i++) Y[i] = (real)NAN;
                omp_set_num_threads(th);
                gemm_linear(M, N, K, X, ldx, W, ldw, with_bias ? b : NULL, gelu, Y, ldy);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N + 3; j++) {
                        const real got = Y[(long)i * ldy + j];
                        if (j >= N) {
                            if (!isnan(got)) fail_msg("M %d N %d K %d: Y[%d, %d] (padding) written", M, N, K, i, j);
                            continue;
                        }
                        long double v = with_bias ? b[j] : 0;
                        for (int k = 0; k < K; k++) v += (long double)X[(long)i * ldx + k] * W[(long)j * ldw + k];
                        const long double want = gelu ? 0.5L * v * (1 + erfl(v / sqrtl(2))) : v;
                        if (!(fabsl((long double)got - want) <= TOL * (1 + fabsl(want))))
                            fail_msg("M %d N %d K %d threads %d bias %d gelu %d: Y[%d, %d] = %.9g, want %.9Lg", M, N, K, th,
                                     with_bias, gelu, i, j, (double)got, want);
                    }
                if (!REAL_IS_DOUBLE && (!strcmp(gemm_kernel_name(), "oneDNN") || !strcmp(gemm_kernel_name(), "own AVX-512")))
                    for (int t = 1; t <= 3; t++) {
                        omp_set_num_threads(t);
                        gemm_linear(M, N, K, X, ldx, W, ldw, with_bias ? b : NULL, gelu, Y1, ldy);
                        for (int i = 0; i < M; i++)
                            if (memcmp(Y + (long)i * ldy, Y1 + (long)i * ldy, (size_t)N * sizeof(real)))
                                fail_msg("M %d N %d K %d bias %d gelu %d: row %d at %d threads differs from %d threads'", M, N,
                                         K, with_bias, gelu, i, t, th);
                    }
                free(X);
                free(W);
                free(b);
                free(Y);
                free(Y1);
            }
    omp_set_num_threads(saved);
}

/* Where gemm's kernel is oneDNN or the own kernel, a product has the same bits at 1, 2 and 3 threads: the
 * model's shapes (tiny's linear layers forward, input gradient and both weight gradients, which take a
 * transposed A; the LM head and a relative-table projection, cut by columns).  Skipped (exit 77) where
 * gemm runs OpenBLAS, whose results may differ between thread counts (gemm.h). */
#if !REAL_IS_DOUBLE
static void same_bits_any_thread_count(void **state) {
    if (strcmp(gemm_kernel_name(), "oneDNN") && strcmp(gemm_kernel_name(), "own AVX-512"))
        test_skip("the same bits across thread counts: gemm runs %s here", gemm_kernel_name());
    static const int shapes[][5] = {{0, 1, 2048, 1024, 256}, {0, 0, 2048, 256, 1024}, {1, 0, 1024, 256, 2048},
                                    {1, 0, 256, 1024, 2048}, {0, 1, 300, 8192, 256},  {0, 1, 127, 256, 256}};
    const int saved = omp_get_max_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int ta = shapes[s][0], tb = shapes[s][1], M = shapes[s][2], N = shapes[s][3], K = shapes[s][4];
        real *A = xmalloc((size_t)M * K * sizeof(real)), *B = xmalloc((size_t)K * N * sizeof(real));
        real *C1 = xmalloc((size_t)M * N * sizeof(real)), *C2 = xmalloc((size_t)M * N * sizeof(real));
        fill(A, (long)M * K, 6);
        fill(B, (long)K * N, 7);
        omp_set_num_threads(1);
        gemm(ta, tb, M, N, K, 1, A, ta ? M : K, B, tb ? K : N, 0, C1, N);
        for (int th = 2; th <= 3; th++) {
            omp_set_num_threads(th);
            gemm(ta, tb, M, N, K, 1, A, ta ? M : K, B, tb ? K : N, 0, C2, N);
            if (memcmp(C1, C2, (size_t)M * N * sizeof(real)))
                fail_msg("ta %d tb %d M %d N %d K %d: the bits at %d threads differ from 1 thread's", ta, tb, M, N, K, th);
        }
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
    omp_set_num_threads(saved);
}
#endif

/* The kernel set build/deberta sets for OpenBLAS (train/cli/omp_policy.c): Haswell for every fallback set
 * without AVX2 on a CPU with AVX2 and FMA, in any letter case; nothing for the sets OpenBLAS picks on CPUs it
 * knows, nor on a CPU without AVX2 + FMA, nor when OpenBLAS names no set. */
static void blas_core_fix(void **state) {
    const char *fallback[] = {"Prescott", "PRESCOTT", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai", "Generic",
                              "generic", "Sandybridge"};
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++) {
        const char *fix = gemm_blas_core_fix(fallback[i], 1);
        if (!fix || strcmp(fix, "Haswell")) fail_msg("%s on an AVX2 CPU: got %s, want Haswell", fallback[i], fix ? fix : "NULL");
        assert_null(gemm_blas_core_fix(fallback[i], 0));
    }
    const char *known[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator", ""};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const char *fix = gemm_blas_core_fix(known[i], 1);
        if (fix) fail_msg("%s: got %s, want OpenBLAS's choice kept", known[i], fix);
    }
    assert_null(gemm_blas_core_fix(NULL, 1));
}

int main(void) {
    printf("gemm: this run's kernel is %s\n", gemm_kernel_name());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_transpose_beta_and_split),
        cmocka_unit_test(repeatable),
        cmocka_unit_test(blas_core_fix),
        cmocka_unit_test(linear_bias_gelu),
#if !REAL_IS_DOUBLE /* the kernels are float's; the double build never calls them */
        cmocka_unit_test(same_bits_any_thread_count),
        cmocka_unit_test(own_kernel_blocks_and_edges),
        cmocka_unit_test(own_kernel_same_bits_any_split),
        cmocka_unit_test(onednn_every_transpose_and_beta),
#endif
    };
    return test_exit(cmocka_run_group_tests_name("gemm", tests, NULL, NULL));
}
