/* gemm.c — one product split by blocks of C across the OpenMP threads (gemm.h). */
#include <omp.h>
#include "autograd/gemm.h"
#include "autograd/sgemm_avx512.h"

enum {
    GEMM_ROW_ALIGN = 32,          /* block edges on a multiple of the BLAS kernels' unroll */
    GEMM_MIN_ROWS = 64,           /* fewest rows (or columns) a thread's block may have */
};
static const double GEMM_MIN_WORK = 1 << 21; /* M·N·K below this: one call, the split does not pay */

static inline CBLAS_TRANSPOSE tr(int t) { return t ? CblasTrans : CblasNoTrans; }

/* One single-threaded product: the own AVX-512 kernel where it runs (float build), else BLAS. */
static void gemm1(int own, int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb,
                  real beta, real *C, int ldc) {
#if !REAL_IS_DOUBLE
    if (own && sgemm_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
#endif
    cblas_gemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Block i of n of a length-`len` dimension, edges aligned: [*lo, *hi). */
static void block(int len, int n, int i, int *lo, int *hi) {
    int per = (len + n - 1) / n;
    per = (per + GEMM_ROW_ALIGN - 1) / GEMM_ROW_ALIGN * GEMM_ROW_ALIGN;
    *lo = i * per < len ? i * per : len;
    *hi = *lo + per < len ? *lo + per : len;
}

int gemm_split(int M, int N, int K, int nt) {
    if (nt <= 1 || (double)M * N * K < GEMM_MIN_WORK) return GEMM_ONE_CALL;
    if (M >= GEMM_MIN_ROWS * nt) return GEMM_BY_ROWS;
    return N >= GEMM_MIN_ROWS * nt ? GEMM_BY_COLS : GEMM_ONE_CALL;
}

/* Does this process run the own kernel (float build, chosen once by sgemm_avx512_available)? */
static int own_kernel(void) { return !REAL_IS_DOUBLE && sgemm_avx512_available(); }

const char *gemm_kernel_name(void) { return own_kernel() ? "own AVX-512" : "OpenBLAS"; }

void threads_set(int n) {
    if (n <= 0) return;
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

void gemm(int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb, real beta,
          real *C, int ldc) {
    const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    const int how = gemm_split(M, N, K, nt);
    const int own = own_kernel();
    if (how == GEMM_ONE_CALL) {
        gemm1(own, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int lo, hi;
        block(how == GEMM_BY_ROWS ? M : N, nt, omp_get_thread_num(), &lo, &hi);
        if (hi > lo) {
            if (how == GEMM_BY_ROWS) /* rows lo..hi of op(A) and of C */
                gemm1(own, ta, tb, hi - lo, N, K, alpha, ta ? A + lo : A + (long)lo * lda, lda, B, ldb, beta,
                      C + (long)lo * ldc, ldc);
            else /* columns lo..hi of op(B) and of C */
                gemm1(own, ta, tb, M, hi - lo, K, alpha, A, lda, tb ? B + (long)lo * ldb : B + lo, ldb, beta, C + lo,
                      ldc);
        }
    }
}
