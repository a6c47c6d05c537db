/* test_gemm.c — gemm (autograd/gemm.h) against a naive product in long double for every transpose
 * pair, both betas, and each way of cutting the product among threads (one call, by rows, by
 * columns), on shapes that leave ragged last blocks; leading dimensions wider than the matrices.
 * On a CPU with AVX-512 the float build's gemm runs the own kernel (autograd/sgemm_avx512.h): it is
 * also checked alone, on shapes that cross its KC, MC and NC blocks and its register-tile edges, for
 * beta 0 over a C full of NaN, and for the same bits whatever the thread split. */
#include "tests/testutil.h"
#include <omp.h>
#include <string.h>
#include "autograd/gemm.h"
#include "autograd/sgemm_avx512.h"
#include "autograd/rng.h"
#include "autograd/util.h"

#define TOL (REAL_IS_DOUBLE ? 1e-12 : 2e-5)

static void fill(real *x, long n, uint64_t seed) {
    for (long i = 0; i < n; i++) x[i] = (real)(rng_uniform(seed, 7, (uint64_t)i) - 0.5);
}

/* 0: gemm with `threads` threads; 1: the own AVX-512 kernel called alone (float build only). */
static int call_own;

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
        assert_true(sgemm_avx512(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C, ldc));
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
            const long double want = 0.75L * s + (beta == 0 ? 0 : (long double)beta * C0[(long)i * ldc + j]);
            if (!(fabsl((long double)got - want) <= TOL * (1 + fabsl(want))))
                fail_msg("ta %d tb %d M %d N %d K %d beta %g threads %d: C[%d, %d] = %.9g, want %.9Lg", ta, tb, M, N, K,
                         (double)beta, threads, i, j, (double)got, want);
        }
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

/* The own kernel alone: K across several KC slices (the later ones add to C), M across MC blocks, N
 * across NC blocks and ragged register tiles (12 rows, 32 columns) everywhere. */
static void own_kernel_blocks_and_edges(void **state) {
    if (REAL_IS_DOUBLE || !sgemm_avx512_available()) skip();
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

/* With the own kernel every element is summed in the same order wherever its tile lies, so the
 * product has the same bits on one thread and split by rows or by columns among two or three. */
static void own_kernel_same_bits_any_split(void **state) {
    if (REAL_IS_DOUBLE || !sgemm_avx512_available()) skip();
    const int M = 333, N = 301, K = 530;
    real *A = xmalloc((size_t)M * K * sizeof(real)), *B = xmalloc((size_t)K * N * sizeof(real));
    real *C1 = xmalloc((size_t)M * N * sizeof(real)), *C2 = xmalloc((size_t)M * N * sizeof(real));
    fill(A, (long)M * K, 4);
    fill(B, (long)K * N, 5);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    gemm(0, 1, M, N, K, 1, A, K, B, K, 0, C1, N);
    for (int nt = 2; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        assert_int_equal(gemm_split(M, N, K, nt), GEMM_BY_ROWS);
        gemm(0, 1, M, N, K, 1, A, K, B, K, 0, C2, N);
        assert_memory_equal(C1, C2, (size_t)M * N * sizeof(real));
    }
    omp_set_num_threads(2);
    assert_int_equal(gemm_split(100, N, K, 2), GEMM_BY_COLS);
    gemm(0, 1, 100, N, K, 1, A, K, B, K, 0, C2, N); /* the first 100 rows */
    assert_memory_equal(C1, C2, (size_t)100 * N * sizeof(real));
    omp_set_num_threads(saved);
    free(A);
    free(B);
    free(C1);
    free(C2);
}

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_transpose_beta_and_split),
        cmocka_unit_test(repeatable),
        cmocka_unit_test(own_kernel_blocks_and_edges),
        cmocka_unit_test(own_kernel_same_bits_any_split),
    };
    return cmocka_run_group_tests_name("gemm", tests, NULL, NULL);
}
